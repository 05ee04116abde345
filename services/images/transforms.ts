import { invalidField } from "../../schemas/errors.ts";
import { hmac16, hmacKey } from "../accounts/crypto.ts";
// Which types may hold an animation: the one rule the pages' <picture> and embeds use too
// (a pure leaf module the server shares with the SDK).
import { mayAnimate } from "../../sdk/src/embed_codes.ts";

/**
 * Transform URLs: `?w=&h=&fit=&format=&q=` on an image's URL asks for a size and format of
 * it, made at first request and kept (variant_maker.ts). What may be asked for unsigned is
 * a short list (IMAGE_WIDTHS for w and h, IMAGE_QUALITIES for q), so no one can make
 * unbounded variants; any other value needs `s`, an HMAC of the path and parameters made
 * with the deploy's IMAGE_SIGNING_KEY (imgproxy's model). Everything here is pure.
 */

/** How the image fits the box w × h (sharp's names; `inside` never crops). */
export const FITS = ["inside", "cover", "contain"] as const;
/** Output formats; `auto` picks from the request's Accept. */
export const FORMATS = ["auto", "avif", "webp", "jpeg", "png"] as const;

/** A query (from its `?`) with a transform parameter in it; others are left alone. */
const TRANSFORM_QUERY = /[?&](?:w|h|fit|format|q|s)=/;

/** True when a URL's query (`?…`) asks for a transform (cache busters do not). */
export function hasTransformQuery(search: string): boolean {
  return TRANSFORM_QUERY.test(search);
}

/** A parsed transform request. */
export interface Transform {
  w?: number;
  h?: number;
  fit: typeof FITS[number];
  /** Absent: the original's type (at the new size). */
  format?: typeof FORMATS[number];
  q?: number;
}

/** What unsigned URLs may ask for. */
export interface TransformRules {
  widths: readonly number[];
  qualities: readonly number[];
}

/** One value of a parameter (160 when repeated). */
function single(query: URLSearchParams, name: string): string | undefined {
  const all = query.getAll(name);
  if (all.length > 1) throw invalidField(name, "given more than once");
  return all[0];
}

function integer(
  query: URLSearchParams,
  name: string,
  max: number,
): number | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  if (!/^[1-9][0-9]{0,5}$/.test(raw) || Number(raw) > max) {
    throw invalidField(name, `must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

/**
 * Parses a transform's parameters (160 for a malformed one) and says whether it stays
 * within the unsigned lists. `canonical` is what a signature covers.
 */
export function parseTransform(
  path: string,
  query: URLSearchParams,
  rules: TransformRules,
): { transform: Transform; listed: boolean; canonical: string } {
  const w = integer(query, "w", 16_384);
  const h = integer(query, "h", 16_384);
  const q = integer(query, "q", 100);
  const fit = single(query, "fit") ?? "inside";
  if (!(FITS as readonly string[]).includes(fit)) {
    throw invalidField("fit", `must be one of ${FITS.join(", ")}`);
  }
  const format = single(query, "format");
  if (
    format !== undefined && !(FORMATS as readonly string[]).includes(format)
  ) {
    throw invalidField("format", `must be one of ${FORMATS.join(", ")}`);
  }
  const transform: Transform = {
    ...(w ? { w } : {}),
    ...(h ? { h } : {}),
    fit: fit as Transform["fit"],
    ...(format ? { format: format as Transform["format"] } : {}),
    ...(q ? { q } : {}),
  };
  const listed = (w === undefined || rules.widths.includes(w)) &&
    (h === undefined || rules.widths.includes(h)) &&
    (q === undefined || rules.qualities.includes(q));
  return { transform, listed, canonical: canonicalOf(path, transform) };
}

/** The path and the parameters in a fixed order: what a signature covers. */
export function canonicalOf(path: string, t: Transform): string {
  const parts: string[] = [];
  if (t.fit !== "inside") parts.push(`fit=${t.fit}`);
  if (t.format) parts.push(`format=${t.format}`);
  if (t.h) parts.push(`h=${t.h}`);
  if (t.q) parts.push(`q=${t.q}`);
  if (t.w) parts.push(`w=${t.w}`);
  return `${path}?${parts.join("&")}`;
}

/** The HMAC key of IMAGE_SIGNING_KEY. */
export function signingKey(secret: string): Promise<CryptoKey> {
  return hmacKey(secret);
}

/** `s` for a canonical transform: the first 16 bytes of its HMAC-SHA256, base64url. */
export function signatureOf(
  key: CryptoKey,
  canonical: string,
): Promise<string> {
  return hmac16(key, canonical);
}

/**
 * A transform URL's query for `path` (`/<id>.<ext>`), signed when a key is given: what
 * `deno task sign-url` prints, and what a site builds its links with.
 */
export async function transformQuery(
  path: string,
  t: Transform,
  key?: CryptoKey,
): Promise<string> {
  const canonical = canonicalOf(path, t);
  const query = canonical.slice(canonical.indexOf("?") + 1);
  if (!key) return query;
  const s = await signatureOf(key, canonical);
  return query ? `${query}&s=${s}` : `s=${s}`;
}

/**
 * A transform's box scaled down, both sides alike, until it fits in the original
 * (`width` × `height`, upright): nothing is ever made larger than the original, for any
 * `fit`. libvips' withoutEnlargement alone kept `contain`'s padded box: 2048 × 2048 of a
 * 1600 × 1200 original came out 2048 × 2048 (issue #51). Without the original's size,
 * the box as asked.
 */
export function boxWithin(
  t: Pick<Transform, "w" | "h">,
  width?: number,
  height?: number,
): Pick<Transform, "w" | "h"> {
  if (!width || !height || (!t.w && !t.h)) return { w: t.w, h: t.h };
  const scale = Math.min(
    1,
    t.w ? width / t.w : 1,
    t.h ? height / t.h : 1,
  );
  const fit = (n: number | undefined) =>
    n === undefined ? undefined : Math.max(1, Math.round(n * scale));
  return { w: fit(t.w), h: fit(t.h) };
}

/** A transform URL's signature (`s`): at most one, else 160. */
export function signatureParam(query: URLSearchParams): string | undefined {
  return single(query, "s");
}

/** Compares two strings in time that does not depend on where they differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Decides whether a parsed transform may be made: within the lists, or carrying a valid
 * signature. 160 otherwise, saying which.
 */
export async function admitTransform(
  parsed: { listed: boolean; canonical: string },
  s: string | undefined,
  key: CryptoKey | undefined,
  rules: TransformRules,
): Promise<void> {
  if (s !== undefined) {
    if (key && sameText(s, await signatureOf(key, parsed.canonical))) return;
    throw invalidField(
      "s",
      "signature does not match this image and these parameters",
    );
  }
  if (parsed.listed) return;
  throw invalidField(
    "w",
    `w and h must be one of ${rules.widths.join(", ")} and q one of ${
      rules.qualities.join(", ")
    } (other values need a signed URL)`,
  );
}

/** File extension of an output type (the store's and the answer's). */
const EXT_OF = { avif: "avif", webp: "webp", jpeg: "jpg", png: "png" } as const;

/** Source types a browser may lack (or that may carry alpha): their plain fallback. */
function fallbackExt(sourceExt: string): string {
  if (sourceExt === "jpg" || sourceExt === "tiff" || sourceExt === "bmp") {
    return "jpg";
  }
  if (sourceExt === "gif") return "gif";
  return "png";
}

/**
 * The output type of a transform, and whether it depended on Accept (then the answer
 * says `Vary: Accept`). `auto`: AVIF (when its encode fits IMAGE_ENCODE_MB), then WebP, then
 * the original's own type (or JPEG/PNG
 * where browsers lack it); an image that may be animated is never AVIF (sharp writes
 * no animated AVIF), so it stays animated as WebP or in its own type. Absent: the
 * original's type, when browsers take it.
 */
export function negotiate(
  t: Transform,
  sourceExt: string,
  accept: string | undefined,
  /** An AVIF of this size is within IMAGE_ENCODE_MB; else `auto` goes on to WebP. */
  avifFits = true,
): { ext: string; varies: boolean } {
  if (t.format && t.format !== "auto") {
    return { ext: EXT_OF[t.format], varies: false };
  }
  if (!t.format) {
    const own = ["jpg", "png", "gif", "webp", "avif"].includes(sourceExt)
      ? sourceExt
      : fallbackExt(sourceExt);
    return { ext: own, varies: false };
  }
  const a = accept ?? "";
  if (avifFits && !mayAnimate(sourceExt) && acceptsType(a, "image/avif")) {
    return { ext: "avif", varies: true };
  }
  if (acceptsType(a, "image/webp")) return { ext: "webp", varies: true };
  return { ext: fallbackExt(sourceExt), varies: true };
}

/**
 * Whether an Accept header names `type` with a weight above zero: `image/avif;q=0` says
 * the client refuses AVIF (issue #49), which a substring test took for a yes.
 */
export function acceptsType(accept: string, type: string): boolean {
  for (const part of accept.toLowerCase().split(",")) {
    const [media, ...params] = part.split(";").map((p) => p.trim());
    if (media !== type) continue;
    const q = params.find((p) => /^q\s*=/.test(p));
    return q === undefined || Number(q.slice(q.indexOf("=") + 1)) > 0;
  }
  return false;
}

/** Default quality per output type, when `q` is not given. */
export const DEFAULT_QUALITY: Record<string, number> = {
  avif: 50,
  webp: 75,
  jpg: 80,
  png: 100,
  gif: 100,
};

/**
 * The store key of a variant: the image id first (deletions and the orphan sweep find it
 * by that), then every parameter that shapes its bytes, then its type.
 */
export function variantKey(id: string, t: Transform, ext: string): string {
  const q = t.q ?? DEFAULT_QUALITY[ext];
  return `${id}.v${t.w ?? 0}x${t.h ?? 0}${t.fit[0]}q${q}.${ext}`;
}
