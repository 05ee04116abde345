import type { Config } from "../../schemas/config.ts";
import { isRestricted } from "../../services/privacy/password_access.ts";
import { linkBases } from "../../services/runtime/link_base.ts";

/**
 * The site's own links, as its pages show them (issue #52): relative, so a page works at
 * whatever address it was opened (a LAN name, 127.0.0.1, a second host name) and not only
 * at BASE_URL, where that browser may have no session, and whose private files it would
 * then be refused. What is shared (embed codes, "Copy link", og: tags) stays absolute.
 */

/** `url` as a path when it starts with one of `bases`, else as it is. */
export function sitePath(url: string, bases: readonly string[]): string {
  for (const base of bases) {
    if (url.startsWith(`${base}/`)) return url.slice(base.length);
  }
  return url;
}

/** The bases of links that this service answers at any address it is reached by. */
function ownBases(config: Config, restricted: boolean): string[] {
  const { base, service } = linkBases(config);
  // A private or password file is answered to its owner's session (or its page's
  // signature) by the service itself, never by a CDN or bucket: fetched from the page's
  // own origin, the session cookie goes with it. A public one keeps IMAGE_HOST_URL.
  return restricted ? [base, service] : [base];
}

/** The parts of an image record whose links a page shows. */
interface ShownImage {
  privacy: string;
  url_viewer: string;
  url: string;
  display_url: string;
  transform_url: string;
  image: { url: string };
  thumb: { url: string };
  medium: { url: string };
}

/** An image record with the links a page shows made relative where they are the site's. */
export function shownOnSite<R extends ShownImage>(config: Config, rec: R): R {
  const bases = ownBases(config, isRestricted(rec.privacy));
  const rel = (u: string) => sitePath(u, bases);
  return {
    ...rec,
    url_viewer: rel(rec.url_viewer),
    url: rel(rec.url),
    display_url: rel(rec.display_url),
    transform_url: rel(rec.transform_url),
    image: { ...rec.image, url: rel(rec.image.url) },
    thumb: { ...rec.thumb, url: rel(rec.thumb.url) },
    medium: { ...rec.medium, url: rel(rec.medium.url) },
  };
}

/**
 * An album record's page link and cover as its owner's pages show them. The cover may be
 * a private image even in a public album: from the service, at the page's own address.
 */
export function albumOnSite<
  R extends { url_viewer: string; cover_url: string | null },
>(config: Config, rec: R): R {
  const bases = ownBases(config, true);
  return {
    ...rec,
    url_viewer: sitePath(rec.url_viewer, bases),
    cover_url: rec.cover_url && sitePath(rec.cover_url, bases),
  };
}
