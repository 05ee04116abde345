/**
 * The HTTP side of authentication: which credentials a request carries (by precedence)
 * and what the answer sets (the caller in the context, the rate headers). Who the caller
 * is and whether they may is one call to the app's Authenticator
 * (services/accounts/authenticator.ts).
 */

import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { ApiError } from "../schemas/errors.ts";
import type { AddressThrottle } from "../services/accounts/address_throttle.ts";
import {
  Authenticator,
  type Caller,
  type Credentials,
} from "../services/accounts/authenticator.ts";
import { clientAddress } from "./client_address.ts";
import { safeEqual } from "../services/accounts/crypto.ts";
import { SESSION_TOKEN_HEADER, sessionUser } from "./session.ts";
import { ownOrigin } from "./pages/layout.tsx";
import { STREAMED_BODY_PATHS } from "./body_limit.ts";
import { bodyKindOf } from "../services/bodies/budgets.ts";
import { getCookie, setCookie } from "hono/cookie";
import { createGuest, findGuest } from "../services/accounts/guests.ts";

/** The Bearer token of the Authorization header; a malformed header counts as a bad key. */
function bearerKey(c: Context): string | undefined {
  const h = c.req.header("authorization");
  if (h === undefined) return undefined;
  const m = h.match(/^Bearer\s+(\S+)\s*$/i);
  if (!m) throw new ApiError(110);
  return m[1];
}

/**
 * The key of the request's headers: `Authorization: Bearer`, else Chevereto V4's `X-API-Key`.
 */
export function headerKey(c: Context): string | undefined {
  return bearerKey(c) ?? presentKey(c.req.header("x-api-key"));
}

/**
 * A key given in the body or query, or undefined when it is absent or empty: an empty `key`
 * (a form's blank field, `{"key":""}`) must not hide a real key of lower precedence.
 */
function presentKey(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * True for a request whose route streams its own body and authenticates from it (an
 * upload, in any of its body types): the middleware must not read the body first.
 */
function streamsOwnBody(c: Context): boolean {
  if (c.req.method !== "POST") return false;
  const kind = bodyKindOf(c.req.header("content-type") ?? "");
  // A multipart body on any path; a form or JSON only where the route streams it.
  return kind === "multipart" ||
    (kind !== undefined && STREAMED_BODY_PATHS.has(c.req.path));
}

/**
 * Authenticates every /api/1 request. Precedence: Authorization header, X-API-Key header,
 * then the body's `key` (JSON property or form field), then `?key=`. Upload bodies are
 * streamed by their route, which calls {@link authenticateDeferred} once it has seen the
 * body's fields.
 */
export function apiAuth(
  deps: AppDeps,
  /** Whether a path is one of the API's routes (see apiRoutes); all are, without it. */
  isRoute: (path: string) => boolean = () => true,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // The admin API answers 404 to anyone but an admin (routes/admin.ts finds out who
    // calls itself), and reports need no account. A path that is no route is 404 to
    // everyone, with or without a key: not 401, which would say it needs one.
    if (ownAuthPath(c.req.path) || !isRoute(c.req.path)) return await next();
    // tus's capability discovery (and CORS preflights) carry no key.
    if (c.req.method === "OPTIONS") return await next();
    let key = headerKey(c);
    const sessionToken = c.req.header(SESSION_TOKEN_HEADER);
    if (key === undefined && sessionToken !== undefined) {
      if (sessionToken === GUEST_TOKEN && deps.config.GUEST_UPLOADS === "on") {
        await admitGuest(c, deps);
      } else {
        await admitSession(c, deps, sessionToken);
      }
      return await next();
    }
    if (key === undefined) {
      if (streamsOwnBody(c)) return await next();
      const kind = bodyKindOf(c.req.header("content-type") ?? "");
      if (kind === "json") {
        // Parsed once: Hono caches the body, so the route's validator reads the same one.
        const body = await c.req.json().catch(() => undefined);
        if (body && typeof body === "object") key = presentKey(body.key);
      } else if (kind === "urlencoded") {
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
 * A test of whether a path is one of the app's documented routes (OpenAPI's `{param}`
 * segments match any one segment), built from the routes registered by the time it is
 * first asked.
 */
export function apiRoutes(
  routes: () => readonly { path: string }[],
): (path: string) => boolean {
  // One alternation, built once: a single test per request on the API's hot path.
  let pattern: RegExp | undefined;
  return (path) => {
    pattern ??= new RegExp(
      `^(?:${
        routes().map((r) =>
          r.path.split(/\{[^}]+\}/).map((s) =>
            s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          ).join("[^/]+")
        ).join("|")
      })/?$`,
    );
    return pattern.test(path);
  };
}

/** Paths under /api/1 whose routes authenticate (or not) by themselves. */
function ownAuthPath(path: string): boolean {
  return path === "/api/1/reports" || path === "/api/1/admin" ||
    path.startsWith("/api/1/admin/");
}

/**
 * Who calls, for routes that tell nobody why they refuse (the admin API answers 404 to
 * all but admins): the owner of a valid key (Authorization, X-API-Key or `?key=`), or the
 * signed-in user of a call from our own pages carrying the session's token; undefined for
 * anyone else. A wrong key counts against its address as everywhere (170 past the limit).
 */
export async function quietCaller(
  c: Context<AppEnv>,
  deps: AppDeps,
): Promise<string | undefined> {
  let key: string | undefined;
  try {
    key = headerKey(c) ?? presentKey(c.req.query("key"));
  } catch {
    return undefined; // a malformed Authorization header
  }
  if (key !== undefined) {
    try {
      return (await authOf(deps).ownerOf(key, addressOf(c, deps))).userId;
    } catch (e) {
      if (e instanceof ApiError && e.code !== 170 && e.code !== 250) {
        return undefined;
      }
      throw e;
    }
  }
  const token = c.req.header(SESSION_TOKEN_HEADER);
  if (token === undefined) return undefined;
  try {
    refuseForeign(c, deps, "Session calls");
  } catch {
    return undefined;
  }
  const user = await sessionUser(c, deps);
  return user && safeEqual(token, user.csrfToken) ? user.userId : undefined;
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
    headerKey(c) ?? presentKey(bodyKey) ?? presentKey(c.req.query("key")),
  );
}

/**
 * The site's own pages call the API with the session cookie and the session's CSRF token
 * in {@link SESSION_TOKEN_HEADER}; a browser marks every cross-site request
 * (`Sec-Fetch-Site`), and those are refused even with a right token. The call counts
 * against the same per-minute limit as a key, under the user's own counter.
 */
async function admitSession(
  c: Context<AppEnv>,
  deps: AppDeps,
  token: string,
): Promise<void> {
  refuseForeign(c, deps, "Session calls");
  const user = await sessionUser(c, deps);
  if (!user || !safeEqual(token, user.csrfToken)) {
    throw new ApiError(110, {
      message: "Invalid session: log in again",
    });
  }
  await admitted(c, deps, { sessionUserId: user.userId });
}

/**
 * 403 for a call a browser marks as made from another site's page. Browsers send
 * Sec-Fetch-Site only to secure origins (https, localhost); over plain http elsewhere the
 * Origin header is what tells a foreign page, so it is checked too.
 */
function refuseForeign(c: Context, deps: AppDeps, what: string): void {
  const site = c.req.header("sec-fetch-site");
  const origin = c.req.header("origin");
  const foreign = (site !== undefined && site !== "same-origin") ||
    (origin !== undefined && !ownOrigin(deps.config)(origin, c.req.url));
  if (foreign) {
    throw new ApiError(403, {
      message: `${what} are accepted from this site's own pages only`,
    });
  }
}

/** The {@link SESSION_TOKEN_HEADER} value of the home page's guest uploads. */
export const GUEST_TOKEN = "guest";

/** The cookie naming a browser's guest (services/accounts/guests.ts). */
export const GUEST_COOKIE = "guest";

/**
 * A guest's upload (GUEST_UPLOADS=on): uploads only, from our own pages, at most
 * GUEST_UPLOADS_PER_MINUTE per client address (all instances; 170 past it, before any
 * guest is made). The browser's guest is its cookie's, else a new one whose cookie is
 * set with the answer. The route applies the other GUEST_* limits.
 */
async function admitGuest(c: Context<AppEnv>, deps: AppDeps): Promise<void> {
  if (c.req.method !== "POST" || !STREAMED_BODY_PATHS.has(c.req.path)) {
    throw new ApiError(100, {
      message: "Guests may only upload: sign up for the rest of the API",
    });
  }
  refuseForeign(c, deps, "Guest uploads");
  await throttleOf(deps, "guest", deps.config.GUEST_UPLOADS_PER_MINUTE)
    .count(addressOf(c, deps));
  const { db } = deps.database;
  let token = getCookie(c, GUEST_COOKIE);
  let userId = await findGuest(db, token);
  if (!userId) ({ userId, token } = await createGuest(db, deps.clock));
  // Set at every upload: it lives as long as the newest upload may, which the claim at
  // sign-up needs.
  setCookie(c, GUEST_COOKIE, token!, {
    httpOnly: true,
    sameSite: "Lax",
    secure: deps.config.BASE_URL.startsWith("https:"),
    path: "/",
    maxAge: deps.config.GUEST_EXPIRATION,
  });
  c.set("userId", userId);
  c.set("apiKeyId", "");
  c.set("guest", true);
}

const authenticators = new WeakMap<AppDeps, Authenticator>();

/** The app's authenticator, made on first use (one per app, whichever route asks). */
export function authOf(deps: AppDeps): Authenticator {
  let auth = authenticators.get(deps);
  if (!auth) {
    auth = new Authenticator(deps.database.db, deps.clock, {
      keyFailuresPerMinute: deps.config.API_KEY_FAILURES_PER_MINUTE,
      callsPerMinute: deps.config.RATE_LIMIT_PER_MINUTE,
    });
    authenticators.set(deps, auth);
  }
  return auth;
}

/**
 * The app's counter `name` of events per client address (see Authenticator#throttle).
 */
export function throttleOf(
  deps: AppDeps,
  name: string,
  limit: number,
): AddressThrottle {
  return authOf(deps).throttle(name, limit);
}

/** The client's address as the throttles count it (TRUST_PROXY decides). */
function addressOf(c: Context, deps: AppDeps): string | undefined {
  return clientAddress(c, deps.config.TRUST_PROXY);
}

/** Admits a request's key: one call to the authenticator, its answer recorded. */
function admit(c: Context<AppEnv>, deps: AppDeps, key: string | undefined) {
  return admitted(c, deps, { key, address: addressOf(c, deps) });
}

/**
 * Asks the authenticator who calls and whether they may (once), and records the answer:
 * the caller in the context, its minute's count in the rate headers. Answers its account.
 */
async function admitted(
  c: Context<AppEnv>,
  deps: AppDeps,
  who: Credentials,
): Promise<string> {
  const caller: Caller = await authOf(deps).admit(who);
  c.set("userId", caller.userId);
  c.set("apiKeyId", caller.keyId);
  if (caller.rate) {
    c.header("X-RateLimit-Limit", String(caller.rate.limit));
    c.header("X-RateLimit-Remaining", String(caller.rate.remaining));
    c.header("X-RateLimit-Reset", String(caller.rate.resetSeconds));
  }
  return caller.userId;
}

/**
 * Who asks, on a route outside the API that shows an owner more than others (a private
 * image's files and pages): the signed-in user, else the owner of a valid key in the
 * headers, else nobody. A wrong key is nobody, and counts against the address as the
 * API counts it (170 past the limit), so files are no way round that limit.
 */
export async function requesterOf(
  c: Context,
  deps: AppDeps,
): Promise<string | undefined> {
  const user = await sessionUser(c, deps);
  if (user) return user.userId;
  let key: string | undefined;
  try {
    key = headerKey(c);
  } catch {
    return undefined; // a malformed Authorization header: nobody
  }
  if (key === undefined) return undefined;
  try {
    return (await authOf(deps).ownerOf(key, addressOf(c, deps))).userId;
  } catch (e) {
    if (e instanceof ApiError && (e.code === 110 || e.code === 120)) {
      return undefined;
    }
    throw e;
  }
}
