import { createHash } from "node:crypto";
import { ApiError } from "../../schemas/errors.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { writeAll } from "../runtime/file_io.ts";
import { guardedClient } from "./guard_proxy.ts";
import { checkTarget, notAllowed, parseTargetUrl } from "./target.ts";
import { openScratch } from "../runtime/scratch_files.ts";

/** Redirects an import follows before it gives up (221). */
export const MAX_IMPORT_REDIRECTS = 5;

/** What a URL import wrote to its file. */
export interface ImportedFile {
  size: number;
  sha256: string;
  /** A name for the image: the last segment of the final URL's path. */
  filename: string;
}

/** How an import is bounded. */
export interface ImportLimits {
  rules: AllowRule[];
  maxBytes: number;
  /** The whole import: every redirect, the headers and the body. */
  timeoutMs: number;
  /** Field the URL came from, named in error details. */
  field: string;
}

/**
 * Downloads an image named by URL into `path`, as a screenshot target is reached: through
 * the same guard proxy, which resolves each host itself, refuses any non-public address
 * (unless the allow list names it) and connects to the very address it checked. Redirects
 * are followed by hand (at most {@link MAX_IMPORT_REDIRECTS}), each hop parsed and checked
 * again; only http and https. The body stops being read past `maxBytes` (130, the partial
 * file is the caller's to remove). What the bytes are is left to the image pipeline, which
 * sniffs them: a Content-Type header is never trusted.
 *
 * Errors: 200 bad URL, 210 not allowed, 221 could not fetch (DNS, connect, HTTP status,
 * too many redirects), 231 timed out, 130 too large.
 */
export async function importUrl(
  raw: string,
  path: string,
  limits: ImportLimits,
): Promise<ImportedFile> {
  const { field } = limits;
  let url = parseTargetUrl(raw.trim(), field);
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const guarded = await guardedClient(limits.rules, {
    connectTimeoutMs: Math.min(5_000, limits.timeoutMs),
    username: "import",
  });
  const { client, guard } = guarded;
  const fail = (message: string, code: 221 | 231 = 221) =>
    new ApiError(code, { details: [{ path: field, message }] });
  try {
    for (let hop = 0;; hop++) {
      await checkTarget(url, limits.rules, field, 221);
      let res: Response;
      try {
        res = await fetch(url, {
          client,
          redirect: "manual",
          signal: deadline,
          headers: {
            "accept": "image/*",
            "user-agent": "imagehost-url-import/1",
          },
        });
      } catch {
        if (deadline.aborted) throw fail("the fetch timed out", 231);
        const refused = guard.events.at(-1);
        if (refused?.kind === "blocked") throw notAllowed(field);
        throw fail(
          refused?.kind === "dns"
            ? `cannot resolve ${url.hostname}`
            : `cannot connect to ${url.host}`,
          221,
        );
      }
      if (res.headers.get("x-screenshot-guard") === "blocked") {
        await res.body?.cancel();
        throw notAllowed(field);
      }
      if (
        res.status >= 300 && res.status < 400 && res.headers.has("location")
      ) {
        await res.body?.cancel();
        if (hop >= MAX_IMPORT_REDIRECTS) {
          throw fail(`more than ${MAX_IMPORT_REDIRECTS} redirects`);
        }
        let next: string;
        try {
          next = new URL(res.headers.get("location")!, url).href;
        } catch {
          throw fail("the server redirected to an invalid address");
        }
        url = parseTargetUrl(next, field);
        continue;
      }
      if (res.headers.has("x-screenshot-guard")) {
        await res.body?.cancel();
        throw fail(`cannot connect to ${url.host}`);
      }
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        throw fail(`the server answered HTTP ${res.status}`);
      }
      const announced = Number(res.headers.get("content-length") ?? NaN);
      if (announced > limits.maxBytes) {
        await res.body.cancel();
        throw tooLarge(field, limits.maxBytes);
      }
      const got = await saveBody(res.body, path, limits, deadline, fail);
      return { ...got, filename: nameOf(url) };
    }
  } finally {
    await guarded.close();
  }
}

/** Streams a body to `path`, hashing as it goes; 130 past the limit, 231 past the deadline. */
async function saveBody(
  body: ReadableStream<Uint8Array>,
  path: string,
  limits: ImportLimits,
  deadline: AbortSignal,
  fail: (message: string, code?: 221 | 231) => ApiError,
): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  const file = await openScratch(path, {
    write: true,
    create: true,
    truncate: true,
  });
  const reader = body.getReader();
  let size = 0;
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch {
        if (deadline.aborted) throw fail("the fetch timed out", 231);
        throw fail("the connection broke while reading the image");
      }
      if (chunk.done) break;
      size += chunk.value.length;
      if (size > limits.maxBytes) throw tooLarge(limits.field, limits.maxBytes);
      hash.update(chunk.value);
      await writeAll(file, chunk.value);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  } finally {
    file.close();
  }
  if (size === 0) throw fail("the server sent an empty body");
  return { size, sha256: hash.digest("hex") };
}

function tooLarge(field: string, max: number): ApiError {
  return new ApiError(130, {
    details: [{
      path: field,
      message: `the image is larger than ${max} bytes`,
    }],
  });
}

/** The last path segment, decoded, as a file name ("image" when there is none). */
export function nameOf(url: URL): string {
  const last = url.pathname.split("/").filter(Boolean).at(-1) ?? "";
  let name = last;
  try {
    name = decodeURIComponent(last);
  } catch { /* keep it encoded */ }
  // Control characters (code points below 32, and DEL) never belong in a title.
  const clean = [...name].filter((ch) => {
    const c = ch.codePointAt(0)!;
    return c >= 32 && c !== 127;
  }).join("");
  return clean.slice(0, 255) || "image";
}
