import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../app.ts";
import type { AppDeps } from "../services/deps.ts";
import { authenticateKey } from "../services/api_keys.ts";
import { ApiError } from "../schemas/errors.ts";
import { admitCall } from "../services/rate_limit.ts";

/** The Bearer token of the Authorization header; a malformed header counts as a bad key. */
function bearerKey(c: Context): string | undefined {
  const h = c.req.header("authorization");
  if (h === undefined) return undefined;
  const m = h.match(/^Bearer\s+(\S+)\s*$/i);
  if (!m) throw new ApiError(110);
  return m[1];
}

/**
 * A key given in the body or query, or undefined when it is absent or empty: an empty `key`
 * (a form's blank field, `{"key":""}`) must not hide a real key of lower precedence.
 */
function presentKey(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** True when the route reads a multipart body itself and authenticates afterwards. */
export function isMultipart(c: Context): boolean {
  return /^multipart\/form-data/i.test(c.req.header("content-type") ?? "");
}

/**
 * Authenticates every /api/1 request. Precedence: Authorization header, then the body's
 * `key` (JSON property or form field), then `?key=`. Multipart bodies are streamed by their
 * route, which calls {@link authenticateDeferred} once it has seen the body's fields.
 */
export function apiAuth(deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    let key = bearerKey(c);
    if (key === undefined) {
      if (isMultipart(c) && c.req.method === "POST") {
        return await next();
      }
      const ct = c.req.header("content-type") ?? "";
      if (/^application\/json/i.test(ct)) {
        // Parsed once: Hono caches the body, so the route's validator reads the same one.
        const body = await c.req.json().catch(() => undefined);
        if (body && typeof body === "object") key = presentKey(body.key);
      } else if (/^application\/x-www-form-urlencoded/i.test(ct)) {
        const body: Record<string, unknown> = await c.req.parseBody().catch(
          () => ({}),
        );
        key = presentKey(body.key);
      }
      key ??= presentKey(c.req.query("key"));
    }
    await admit(c, deps, key);
    await next();
  };
}

/**
 * Authentication for routes that stream a multipart body: the header key (if any) was not
 * yet checked, the body key was read from the form, the query key is the fallback.
 */
export async function authenticateDeferred(
  c: Context<AppEnv>,
  deps: AppDeps,
  bodyKey: string | undefined,
): Promise<string> {
  if (c.get("userId")) return c.get("userId");
  return await admit(
    c,
    deps,
    bearerKey(c) ?? presentKey(bodyKey) ?? presentKey(c.req.query("key")),
  );
}

/** Authenticates a key, counts the call against its rate limit, and records the caller. */
async function admit(
  c: Context<AppEnv>,
  deps: AppDeps,
  key: string | undefined,
) {
  const owner = await authenticateKey(deps.database.db, key, deps.clock);
  const limit = deps.config.RATE_LIMIT_PER_MINUTE;
  if (limit > 0) {
    const state = await admitCall(
      deps.database.db,
      owner.keyId,
      limit,
      deps.clock,
    );
    c.header("X-RateLimit-Limit", String(state.limit));
    c.header("X-RateLimit-Remaining", String(state.remaining));
  }
  c.set("userId", owner.userId);
  c.set("apiKeyId", owner.keyId);
  return owner.userId;
}
