import { ApiError, type ErrorCode } from "../../schemas/errors.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { isAllowedTarget, resolveHost } from "./address_guard.ts";

/** Only absolute http(s) URLs with a host; anything else is code 200. */
export function parseTargetUrl(raw: string, path = "url"): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ApiError(200, {
      details: [{ path, message: "not an absolute URL" }],
    });
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ApiError(200, {
      details: [{
        path,
        message: `scheme ${u.protocol} is not allowed; use http or https`,
      }],
    });
  }
  if (!u.hostname) {
    throw new ApiError(200, {
      details: [{ path, message: "URL has no host" }],
    });
  }
  return u;
}

/**
 * Refuses (210) a host that resolves to any address the guard would not connect to; a name
 * that does not resolve is `unreachable` (220 for screenshots, 221 for URL imports). The
 * guard checks again when it connects: this check only gives the clear error early.
 */
export async function checkTarget(
  u: URL,
  rules: AllowRule[],
  path = "url",
  unreachable: ErrorCode = 220,
): Promise<void> {
  let addrs: string[];
  try {
    addrs = await resolveHost(u.hostname);
  } catch {
    throw new ApiError(unreachable, {
      details: [{ path, message: `cannot resolve ${u.hostname}` }],
    });
  }
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  const bad = addrs.find((a) => !isAllowedTarget(a, port, rules));
  if (bad || addrs.length === 0) throw notAllowed(path);
}

/** 210: the target (or a hop, or a connection the guard refused) is not public. */
export function notAllowed(path = "url"): ApiError {
  return new ApiError(210, {
    details: [{ path, message: "the host resolves to a non-public address" }],
  });
}
