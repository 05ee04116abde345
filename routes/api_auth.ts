import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../app.ts";
import type { AppDeps } from "../services/deps.ts";
import { authenticateKey } from "../services/api_keys.ts";
import { ApiError } from "../schemas/errors.ts";

/** The Bearer token of the Authorization header; a malformed header counts as a bad key. */
function bearerKey(c: Context): string | undefined {
  const h = c.req.header("authorization");
  if (h === undefined) return undefined;
  const m = h.match(/^Bearer\s+(\S+)\s*$/i);
  if (!m) throw new ApiError(110);
  return m[1];
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
        if (body && typeof body === "object" && typeof body.key === "string") {
          key = body.key;
        }
      } else if (/^application\/x-www-form-urlencoded/i.test(ct)) {
        const body: Record<string, unknown> = await c.req.parseBody().catch(
          () => ({}),
        );
        if (typeof body.key === "string") key = body.key as string;
      }
      key ??= c.req.query("key");
    }
    const owner = await authenticateKey(deps.database.db, key, deps.clock);
    c.set("userId", owner.userId);
    c.set("apiKeyId", owner.keyId);
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
  const key = bearerKey(c) ?? bodyKey ?? c.req.query("key");
  const owner = await authenticateKey(deps.database.db, key, deps.clock);
  c.set("userId", owner.userId);
  c.set("apiKeyId", owner.keyId);
  return owner.userId;
}
