import { AsyncLocalStorage } from "node:async_hooks";
import type { Config } from "../../schemas/config.ts";

/**
 * Where the links the service hands out point (issue #52). With BASE_URL set they are
 * BASE_URL's (and IMAGE_HOST_URL's); with it unset (a laptop, a LAN box) they follow the
 * origin each request was addressed to, so the site opened as `http://photos.lan:8080`
 * links there and not to `localhost`, where that visitor's browser finds nothing.
 *
 * The origin is a fact of the request, needed wherever a record is built (uploads,
 * lists, albums, tus's finish hook, screenshots): an async-local value set once by the
 * app's first middleware, instead of a parameter threaded through every service. It holds
 * a string, never the request.
 */
const requestOrigin = new AsyncLocalStorage<() => string>();

/**
 * Runs `fn` with `origin` as the origin that unset link bases follow. Given as a function,
 * it is worked out once, by the first link made: most requests (a file, a 304) make none,
 * and pay nothing for it.
 */
export function withRequestOrigin<T>(
  origin: string | (() => string),
  fn: () => T,
): T {
  if (typeof origin === "string") return requestOrigin.run(() => origin, fn);
  let known: string | undefined;
  return requestOrigin.run(() => known ??= origin(), fn);
}

/**
 * The current request's origin kept for work done after the request's handler returned
 * (a streamed answer's body is pulled by the server, outside the request's context):
 * the returned function runs `fn` with the origin this call saw.
 */
export function keepRequestOrigin(): <T>(fn: () => T) => T {
  const origin = requestOrigin.getStore();
  return (fn) => origin === undefined ? fn() : requestOrigin.run(origin, fn);
}

/** The three link bases of a record: the site, image links, the service's image links. */
export interface LinkBases {
  /** Pages, viewer and album links, delete links, invites: BASE_URL. */
  base: string;
  /** Public originals: IMAGE_HOST_URL (or S3_PUBLIC_URL). */
  imageHost: string;
  /** Variants, transform URLs, restricted files: SERVICE_IMAGE_URL. */
  service: string;
}

type LinkConfig = Pick<
  Config,
  | "BASE_URL"
  | "IMAGE_HOST_URL"
  | "SERVICE_IMAGE_URL"
  | "BASE_URL_SET"
  | "IMAGE_HOST_URL_SET"
>;

/**
 * The link bases for the current request: configured ones as they are, unset ones (whose
 * values are BASE_URL's default) replaced by the request's origin. Outside a request
 * (a sweep, a start-up line) the configured defaults.
 */
export function linkBases(config: LinkConfig): LinkBases {
  const origin = config.BASE_URL_SET ? undefined : requestOrigin.getStore()?.();
  if (!origin) {
    return {
      base: config.BASE_URL,
      imageHost: config.IMAGE_HOST_URL,
      service: config.SERVICE_IMAGE_URL,
    };
  }
  const follows = (url: string) => url === config.BASE_URL ? origin : url;
  return {
    base: origin,
    imageHost: config.IMAGE_HOST_URL_SET
      ? config.IMAGE_HOST_URL
      : follows(config.IMAGE_HOST_URL),
    service: config.IMAGE_HOST_URL_SET
      ? config.SERVICE_IMAGE_URL
      : follows(config.SERVICE_IMAGE_URL),
  };
}

/**
 * The origin a request was addressed to: its URL's (the Host header behind no proxy), or
 * with TRUST_PROXY the first X-Forwarded-Proto and X-Forwarded-Host a proxy set. Anything
 * that does not make a plain http(s) origin falls back to the URL's.
 */
export function originOfRequest(
  url: string,
  headers: Headers,
  trustProxy: boolean,
): string {
  const own = new URL(url).origin;
  if (!trustProxy) return own;
  const host = headers.get("x-forwarded-host")?.split(",")[0].trim();
  const proto = headers.get("x-forwarded-proto")?.split(",")[0].trim()
    .toLowerCase();
  if (!host && !proto) return own;
  const scheme = proto === "https" || proto === "http"
    ? proto
    : new URL(url).protocol.slice(0, -1);
  try {
    const u = new URL(`${scheme}://${host || new URL(url).host}`);
    // A host with a path, user or query smuggled in is not an origin.
    if (u.pathname !== "/" || u.username || u.search || u.hash) return own;
    return u.origin;
  } catch {
    return own;
  }
}
