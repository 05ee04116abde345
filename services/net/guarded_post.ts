import type { AllowRule } from "../../schemas/allow_list.ts";
import { ApiError } from "../../schemas/errors.ts";
import { guardedClient } from "./guard_proxy.ts";
import { checkTarget, notAllowed, parseTargetUrl } from "./target.ts";

/** How a guarded POST went: the answer's status, or why there was none. */
export interface PostOutcome {
  /** The HTTP status answered, when one was. */
  status?: number;
  /** Why it did not count as delivered (a refusal, a timeout, a redirect, a status). */
  error?: string;
  ok: boolean;
}

/**
 * POSTs `body` to `raw` through the same guard as captures and URL imports (issue #50's
 * webhooks): the address is checked when the call is made and again by the guard when it
 * connects (pinned to the address it checked: no DNS rebinding), redirects are never
 * followed, and the whole call is bounded by `timeoutMs`. A 2xx is delivered; anything
 * else is an outcome with its reason, never a throw.
 */
export async function guardedPost(
  raw: string,
  body: string,
  headers: Record<string, string>,
  opts: { rules: AllowRule[]; timeoutMs: number },
): Promise<PostOutcome> {
  let url: URL;
  try {
    url = parseTargetUrl(raw, "webhook_url");
    await checkTarget(url, opts.rules, "webhook_url", 220);
  } catch (e) {
    return { ok: false, error: e instanceof ApiError ? reason(e) : String(e) };
  }
  const guarded = await guardedClient(opts.rules, {
    connectTimeoutMs: Math.min(5_000, opts.timeoutMs),
    username: "webhook",
  });
  const { client, guard } = guarded;
  try {
    const res = await fetch(url, {
      method: "POST",
      client,
      redirect: "manual",
      signal: AbortSignal.timeout(opts.timeoutMs),
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    await res.body?.cancel();
    if (res.headers.get("x-screenshot-guard") === "blocked") {
      return { ok: false, error: reason(notAllowed("webhook_url")) };
    }
    if (res.headers.has("x-screenshot-guard")) {
      return { ok: false, error: `cannot connect to ${url.host}` };
    }
    if (res.status >= 300 && res.status < 400) {
      return {
        ok: false,
        status: res.status,
        error: "redirects are not followed",
      };
    }
    if (res.status < 200 || res.status >= 300) {
      return { ok: false, status: res.status, error: `HTTP ${res.status}` };
    }
    return { ok: true, status: res.status };
  } catch (e) {
    const refused = guard.events.at(-1);
    if (refused?.kind === "blocked") {
      return { ok: false, error: reason(notAllowed("webhook_url")) };
    }
    return {
      ok: false,
      error: e instanceof DOMException && e.name === "TimeoutError"
        ? `no answer within ${opts.timeoutMs} ms`
        : `cannot connect to ${url.host}`,
    };
  } finally {
    await guarded.close();
  }
}

function reason(e: ApiError): string {
  const detail = e.details?.[0]?.message;
  return `${e.code} ${e.message}${detail ? `: ${detail}` : ""}`;
}
