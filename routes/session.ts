import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import type { AppDeps } from "./deps.ts";
import { getSession, type SessionUser } from "../services/accounts/accounts.ts";
import { ApiError } from "../schemas/errors.ts";
import { safeEqual } from "../services/accounts/crypto.ts";

/** Name of the session cookie (HttpOnly, SameSite=Lax, path /). */
export const SESSION_COOKIE = "sid";

/**
 * Header by which the site's own pages call /api/1 with the session instead of a key: it
 * carries the session's CSRF token, which only our pages can read (they render it), so a
 * request another site makes the browser send (which carries the cookie) cannot carry it.
 */
export const SESSION_TOKEN_HEADER = "X-CSRF-Token";

/** The signed-in user of a request, or null. */
export function sessionUser(
  c: Context,
  deps: AppDeps,
): Promise<SessionUser | null> {
  return getSession(
    deps.database.db,
    getCookie(c, SESSION_COOKIE),
    deps.clock,
  );
}

/**
 * The log-in page for a form posted without a session: it says so, and `next` is the
 * page the form was on (a path of this site), where the log-in goes back to.
 */
export function signedOutLogin(referer: string | undefined): string {
  const q = new URLSearchParams({ signed_out: "1" });
  const next = referer ? localPath(referer) : undefined;
  if (next) q.set("next", next);
  return `/login?${q}`;
}

/**
 * A path of this site to go on to (`/images?page=2`) from an address or a path, or
 * undefined: never another host's ("//evil.example", a full address elsewhere is cut to
 * its path, which is ours), never the log-in or sign-up page itself.
 */
export function localPath(s: string): string | undefined {
  let u: URL;
  try {
    u = new URL(s, "http://x");
  } catch {
    return undefined;
  }
  const path = `${u.pathname}${u.search}`;
  if (!path.startsWith("/") || path.startsWith("//")) return undefined;
  if (/^\/(login|signup|logout)\b/.test(path)) return undefined;
  return path;
}

/** A posted session form: its fields (first value of each) and every value of a name. */
export interface SessionForm {
  user: SessionUser;
  form: Record<string, string>;
  all(name: string): string[];
}

/**
 * The signed-in user's posted form, its `_csrf` field checked against the session's own
 * token (beyond the Origin check every form route has); without a session (signed out
 * in another tab, or the session ended), a redirect to the log-in page that says the
 * change was not saved and comes back to the form's page afterwards.
 */
export async function requireSessionForm(
  c: Context,
  deps: AppDeps,
): Promise<SessionForm | Response> {
  const user = await sessionUser(c, deps);
  if (!user) return c.redirect(signedOutLogin(c.req.header("referer")), 303);
  const body = await c.req.parseBody({ all: true });
  const values = (name: string) =>
    [body[name] ?? []].flat().filter((v): v is string => typeof v === "string");
  const form = Object.fromEntries(
    Object.keys(body).map((k) => [k, values(k)[0]]).filter(([, v]) =>
      v !== undefined
    ),
  ) as Record<string, string>;
  if (!form._csrf || !safeEqual(form._csrf, user.csrfToken)) {
    throw new ApiError(403, {
      message: "Invalid form token; reload the page",
    });
  }
  return { user, form, all: values };
}
