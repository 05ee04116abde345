import type { Context } from "hono";
import type { App } from "./env.ts";
import type { Clock } from "../services/runtime/clock.ts";
import type { AppDeps } from "./deps.ts";
import { type ImageRow, MIME_BY_EXT } from "../services/images/records.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { ApiError } from "../schemas/errors.ts";
import type { ByteRange } from "../services/store/blob_store.ts";
import { wholeBody } from "../services/runtime/file_io.ts";
import { logRequest, requestIdOf } from "./request_id.ts";
import { addressOf, clientAddress } from "./client_address.ts";
import { requesterOf } from "./api_auth.ts";
import { AddressThrottle } from "../services/accounts/address_throttle.ts";
import type { Made, VariantMaker } from "../services/images/variant_maker.ts";
import {
  isRestricted,
  type PasswordAccess,
} from "../services/privacy/password_access.ts";
import {
  admitTransform,
  hasTransformQuery,
  negotiate,
  parseTransform,
  signatureParam,
  signingKey,
  variantKey,
} from "../services/images/transforms.ts";

const FILE_RE = /^([A-Za-z0-9_-]{6,64})(?:\.(th|md))?\.([a-z0-9]{2,5})$/;

/**
 * Fixed variants (`.th`, `.md`) this instance has seen stored. Unlike an original, one may
 * not be stored yet (both are made at their first request) or may have been lost (they
 * are stored without a sync), so with IMAGE_SERVE=proxy, where nginx sends
 * whatever the app vouches for, the app vouches for one only once it has seen it. A name
 * stays true once seen: a fixed variant goes only with its image, whose row then goes
 * from the cache first. Bounded: past `max` it starts over.
 */
export class StoredFixed {
  #keys = new Set<string>();
  constructor(private readonly max = 100_000) {}
  has(key: string): boolean {
    return this.#keys.has(key);
  }
  add(key: string): void {
    if (this.#keys.size >= this.max) this.#keys.clear();
    this.#keys.add(key);
  }
}

/** Parses a single `bytes=a-b` range; null when absent or not a single range. */
export function parseRange(
  header: string | undefined,
  size: number,
): ByteRange | null | "invalid" {
  if (!header) return null;
  const m = header.match(/^bytes=(\d*)-(\d*)$/);
  if (!m || (m[1] === "" && m[2] === "")) {
    return header.includes(",") ? null : "invalid";
  }
  let start: number, end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "invalid";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start > end || start >= size) return "invalid";
  return { start, end };
}

/** Internal location of deploy/nginx-images.conf that maps onto DATA_DIR/images/. */
export const PROXY_PREFIX = "/_image_files/";

/** Where the proxy finds a stored key: the fs store's layout (two-character folders). */
export function proxyPath(key: string): string {
  return `${PROXY_PREFIX}${key.slice(0, 2)}/${key}`;
}

/**
 * Cache-Control of a file: immutable for good, or until the image expires (the only case
 * that reads the clock).
 */
function cacheControlOf(row: ImageRow, clock: Clock): string {
  // Its owner's alone, or for a signed URL's short life: no cache may keep it.
  if (isRestricted(row.privacy)) return "private, no-store";
  if (!row.expires_at) return IMMUTABLE;
  const left = (new Date(row.expires_at).getTime() - clock.now().getTime()) /
    1000;
  return `public, max-age=${Math.max(0, Math.floor(left))}`;
}

/**
 * The headers of an answer without a body, the same from the fast and the full path. A
 * 304 only refreshes the cached copy (RFC 9110 15.4.5): ETag and Cache-Control are what it
 * needs, the rest came with the 200. The proxy's 200 adds the type and where nginx finds
 * the file; its internal location adds the rest (deploy/nginx-images.conf).
 */
function bodilessHeaders(
  name: FileName,
  row: ImageRow,
  clock: Clock,
  redirect: boolean,
): Record<string, string> {
  const headers: Record<string, string> = {
    "etag": name.etag,
    "cache-control": cacheControlOf(row, clock),
  };
  if (redirect) {
    headers["content-type"] = MIME_BY_EXT[name.ext];
    headers["x-accel-redirect"] = name.proxyPath;
  }
  return headers;
}

/**
 * The image fast path, ahead of the router and every middleware: a GET or HEAD of an image
 * file whose row the cache vouches for without the database is answered here with what the
 * answer needs and what every answer carries (X-Request-Id; the access log line;
 * Connection: close while draining). A revalidation (a matching If-None-Match) gets its
 * 304; with IMAGE_SERVE=proxy any other request gets the proxy's 200 (headers and
 * X-Accel-Redirect, nginx sends the file), since that answer costs no more than a 304.
 * Anything else (a cold or stale row; when the app sends the bytes itself, a request
 * without a matching tag) returns undefined and takes the full path, which answers the same.
 */
export function imageFastPath(
  deps: AppDeps,
  rows: ImageRowCache,
  fixed: StoredFixed,
): (req: Request, info?: unknown) => Response | undefined {
  const names = new FileNames();
  const proxied = deps.config.IMAGE_SERVE === "proxy";
  return (req, info) => {
    const method = req.method;
    if (method !== "GET" && method !== "HEAD") return undefined;
    const inm = req.headers.get("if-none-match");
    if (!inm && !proxied) return undefined;
    const url = req.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    if (start < 0) return undefined;
    const q = url.indexOf("?", start);
    // A transform URL names another file (a variant): the full path answers it.
    if (q >= 0 && hasTransformQuery(url.slice(q))) return undefined;
    const path = q < 0 ? url.slice(start + 1) : url.slice(start + 1, q);
    const name = names.of(path);
    if (!name) return undefined;
    const row = rows.peek(name.id);
    if (!row) return undefined;
    if (!name.isIn(row)) return undefined;
    // A private or password image is answered only after the full path knows who asks
    // (or checks the signed URL): not even a 304 confirms it to anyone else.
    if (isRestricted(row.privacy)) return undefined;
    const etag = name.etag;
    const fresh = inm !== null && (inm === etag || etagMatches(inm, etag));
    if (!fresh && !proxied) return undefined;
    // A fixed variant not seen stored yet: the full path looks, and makes it if need be.
    if (!fresh && name.field !== "ext" && !fixed.has(name.key)) {
      return undefined;
    }
    const begun = deps.config.LOG_REQUESTS ? performance.now() : 0;
    const id = requestIdOf(req.headers.get("x-request-id"));
    const headers = bodilessHeaders(name, row, deps.clock, !fresh);
    headers["x-request-id"] = id;
    if (deps.lifecycle?.draining) headers["connection"] = "close";
    const status = fresh ? 304 : 200;
    if (deps.config.LOG_REQUESTS) {
      logRequest(deps.log, {
        method,
        path: `/${path}`,
        status,
        started: begun,
        ip: addressOf(req, info, deps.config.TRUST_PROXY),
        requestId: id,
      });
    }
    return new Response(null, { status, headers });
  };
}

const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * A requested file name of the image host (a FILE_RE match): its image id, which of the
 * image's files it names (the row field holding that file's extension), its store key and
 * ETag. The name is the stored key exactly when that field of the row holds the name's
 * extension, so a check compares one field and builds nothing; the fast path keeps these.
 */
class FileName {
  readonly id: string;
  readonly key: string;
  readonly etag: string;
  readonly ext: string;
  readonly field: "ext" | "thumb_ext" | "medium_ext";
  constructor(m: RegExpMatchArray) {
    this.key = m[0];
    this.id = m[1];
    this.ext = m[3];
    this.etag = `"${m[0]}"`;
    this.field = m[2] === "th"
      ? "thumb_ext"
      : m[2] === "md"
      ? "medium_ext"
      : "ext";
  }
  #proxyPath?: string;
  /** Where the proxy finds this file (IMAGE_SERVE=proxy); built on first use. */
  get proxyPath(): string {
    return this.#proxyPath ??= proxyPath(this.key);
  }
  /** Whether `row` (this id's) has this file. */
  isIn(row: ImageRow): boolean {
    return row[this.field] === this.ext;
  }
}

/**
 * File names seen by the fast path, so a revalidation does no regex or key building. Only
 * names of the image-host pattern are kept, at most `max` (then it starts over): cheap to
 * rebuild, and a flood of made-up names costs nothing but a parse each.
 */
class FileNames {
  #names = new Map<string, FileName>();
  constructor(private readonly max = 30_000) {}
  of(path: string): FileName | undefined {
    let name = this.#names.get(path);
    if (name) return name;
    const m = path.match(FILE_RE);
    if (!m) return undefined;
    if (this.#names.size >= this.max) this.#names.clear();
    name = new FileName(m);
    this.#names.set(path, name);
    return name;
  }
}

function etagMatches(ifNoneMatch: string | undefined, etag: string) {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.trim() === "*" ||
    ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

/**
 * The image host: GET/HEAD `/<id>.<ext>` and variants `/<id>.th.<ext>`, `/<id>.md.<ext>`.
 * Bytes under a key never change, so the key is the ETag and caching is immutable (until
 * expiry for images that expire). The CSP and nosniff make sure a served file can never run
 * as a page.
 */
export function registerHostRoutes(
  app: App,
  deps: AppDeps,
  rows: ImageRowCache,
  maker: VariantMaker,
  fixed: StoredFixed,
  access: PasswordAccess,
) {
  const proxied = deps.config.IMAGE_SERVE === "proxy";
  /**
   * Whether this request may have a restricted image's files: a password image's signed
   * URL (`access`, made by its unlocked page), or its owner (session or header key).
   */
  const mayAccess = async (c: Context, row: ImageRow): Promise<boolean> => {
    if (row.privacy === "password") {
      const token = c.req.query("access");
      if (await access.valid("file", row.id, row.password_hash, token)) {
        return true;
      }
    }
    return await requesterOf(c, deps) === row.user_id;
  };
  const serve = async (c: Context) => {
    const file = c.req.param("file") ?? "";
    const m = file.match(FILE_RE);
    if (!m) throw new ApiError(404);
    const name = new FileName(m);
    const { key, etag, ext } = name;
    const row = await rows.get(name.id);
    if (!row || !name.isIn(row)) throw new ApiError(404);
    // Someone else asking for a private image, or for a password image without a
    // valid signed URL, learns nothing: the same 404 as for none.
    if (isRestricted(row.privacy) && !await mayAccess(c, row)) {
      throw new ApiError(404);
    }
    // Only a URL with a transform parameter pays for parsing its query.
    const url = c.req.url;
    const qi = url.indexOf("?");
    if (qi >= 0 && hasTransformQuery(url.slice(qi))) {
      return await serveVariant(c, row, `/${file}`, new URL(url).searchParams);
    }

    if (etagMatches(c.req.header("if-none-match"), etag)) {
      // Checked before anything else is built: revalidations are the hottest request an
      // image host gets.
      return c.body(null, 304, bodilessHeaders(name, row, deps.clock, false));
    }
    if (name.field !== "ext") return await serveFixed(c, name, row);
    if (proxied) {
      // The proxy sends the bytes (sendfile, ranges, HEAD) from the same file the fs
      // store wrote; everything that decides whether they may be sent was decided here.
      return c.body(null, 200, bodilessHeaders(name, row, deps.clock, true));
    }
    return await sendStored(c, key, ext, etag, cacheControlOf(row, deps.clock));
  };

  /**
   * Sends a stored file's bytes: HEAD, one range (206/416) or the whole, from the
   * memory cache when it holds them, else from the store (404 when it has none).
   */
  const sendStored = async (
    c: Context,
    key: string,
    ext: string,
    etag: string,
    cacheControl: string,
    extra: Record<string, string> = {},
  ): Promise<Response> => {
    const headers: Record<string, string> = {
      "ETag": etag,
      "Cache-Control": cacheControl,
      "Content-Type": MIME_BY_EXT[ext],
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy":
        "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
      "Accept-Ranges": "bytes",
      "Access-Control-Allow-Origin": "*",
      "Cross-Origin-Resource-Policy": "cross-origin",
      ...extra,
    };
    const bodies = rows.bodies;
    const cached = bodies?.get(key);
    const rangeHeader = c.req.header("range");
    if (c.req.method === "HEAD" || rangeHeader) {
      const size = cached?.length ?? (await deps.store.stat(key))?.size;
      // Nothing stored is ever empty (an empty upload is 141): an empty file is a variant
      // a crash cut short before its bytes reached the disk, so it counts as not stored.
      if (!size) throw new ApiError(404);
      const range = parseRange(rangeHeader, size);
      if (range === "invalid") {
        return c.body(null, 416, {
          ...headers,
          "Content-Range": `bytes */${size}`,
        });
      }
      if (c.req.method === "HEAD") {
        return c.body(null, 200, {
          ...headers,
          "Content-Length": String(size),
        });
      }
      if (range) {
        const part = cached
          ? cached.subarray(range.start, range.end + 1)
          : (await deps.store.get(key, range))?.body;
        if (!part) throw new ApiError(404);
        return c.body(part as ReadableStream | Uint8Array<ArrayBuffer>, 206, {
          ...headers,
          "Content-Range": `bytes ${range.start}-${range.end}/${size}`,
          "Content-Length": String(range.end - range.start + 1),
        });
      }
    }
    // The common case: from memory, else one open, one stat, one read.
    let body: ReadableStream<Uint8Array> | Uint8Array | undefined = cached;
    let size = cached?.length ?? 0;
    if (!body) {
      const blob = await deps.store.get(key);
      if (!blob?.size) throw new ApiError(404);
      body = blob.body;
      size = body instanceof Uint8Array ? body.length : blob.size;
      if (bodies?.accepts(size)) {
        body = await wholeBody(body, size);
        bodies.set(key, body);
      }
    }
    return c.body(body as ReadableStream | Uint8Array<ArrayBuffer>, 200, {
      ...headers,
      "Content-Length": String(size),
    });
  };

  /** A stored file's answer, or undefined when it is not stored (or was cut short). */
  const sendIfStored = (...args: Parameters<typeof sendStored>) =>
    sendStored(...args).catch((e: unknown) => {
      if (e instanceof ApiError && e.code === 404) return undefined;
      throw e;
    });

  /**
   * Waits until a just-made variant can be sent: answered from memory when the cache
   * takes its bytes (no read back, and no wait for its file and row); otherwise, and
   * always when nginx sends it, once its file is stored.
   */
  const sendable = async (made: Made, key: string) => {
    const cached = rows.bodies?.accepts(made.bytes.length) ?? false;
    if (cached) rows.bodies!.set(key, made.bytes);
    if (proxied || !cached) {
      await made.stored.catch((e) => {
        throw e instanceof ApiError ? e : new ApiError(250, {
          headers: { "Retry-After": "5" },
          details: [{ message: "the variant could not be stored; try again" }],
        });
      });
    }
  };

  /**
   * A fixed variant (`.th`, `.md`): sent when stored, else made now from the original
   * (at its first request, or again when a crash lost it) and sent. Made in the
   * variants' slots, once for concurrent requests; not counted against the address,
   * since an image has only these two.
   */
  const serveFixed = async (c: Context, name: FileName, row: ImageRow) => {
    const cacheControl = cacheControlOf(row, deps.clock);
    if (proxied) {
      if (fixed.has(name.key) || (await deps.store.stat(name.key))?.size) {
        fixed.add(name.key);
        return c.body(null, 200, bodilessHeaders(name, row, deps.clock, true));
      }
    } else {
      const sent = await sendIfStored(
        c,
        name.key,
        name.ext,
        name.etag,
        cacheControl,
      );
      if (sent) return sent;
    }
    const made = await maker.make(
      {
        id: row.id,
        key: `${row.id}.${row.ext}`,
        ext: row.ext,
        width: row.width,
        height: row.height,
      },
      name.field === "thumb_ext" ? "th" : "md",
      name.key,
      name.ext,
    );
    await sendable(made, name.key);
    if (proxied) {
      fixed.add(name.key);
      return c.body(null, 200, bodilessHeaders(name, row, deps.clock, true));
    }
    return await sendStored(c, name.key, name.ext, name.etag, cacheControl);
  };

  const makes = new AddressThrottle(
    deps.database.db,
    deps.clock,
    "variants",
    deps.config.IMAGE_MAKES_PER_MINUTE,
  );
  const rules = {
    widths: deps.config.IMAGE_WIDTHS,
    qualities: deps.config.IMAGE_QUALITIES,
  };
  let signing: Promise<CryptoKey> | undefined;
  const signingKeyOf = () =>
    deps.config.IMAGE_SIGNING_KEY
      ? signing ??= signingKey(deps.config.IMAGE_SIGNING_KEY)
      : Promise.resolve(undefined);

  /**
   * A transform URL: parse → admit (the lists, or a signature) → negotiate the type →
   * 304 if the client holds this variant → make it if it is not stored yet → send it as
   * a stored file (HEAD, ranges, the memory cache), `Vary: Accept` when Accept chose.
   */
  const serveVariant = async (
    c: Context,
    row: ImageRow,
    path: string,
    query: URLSearchParams,
  ) => {
    const original = `${row.id}.${row.ext}`;
    // A signature covers the exact path asked for: one made for the original's URL does
    // not open its thumbnail's or medium's (`/<id>.th.<ext>?…`).
    const parsed = parseTransform(path, query, rules);
    await admitTransform(
      parsed,
      signatureParam(query),
      await signingKeyOf(),
      rules,
    );
    const { ext, varies } = negotiate(
      parsed.transform,
      row.ext,
      c.req.header("accept"),
      maker.avifFits(parsed.transform, row.width, row.height),
    );
    const key = variantKey(row.id, parsed.transform, ext);
    const etag = `"${key}"`;
    const cacheControl = cacheControlOf(row, deps.clock);
    const extra: Record<string, string> = varies ? { "Vary": "Accept" } : {};
    if (etagMatches(c.req.header("if-none-match"), etag)) {
      return c.body(null, 304, {
        "etag": etag,
        "cache-control": cacheControl,
        ...extra,
      });
    }
    const proxyAnswer = () =>
      c.body(null, 200, {
        "etag": etag,
        "cache-control": cacheControl,
        "content-type": MIME_BY_EXT[ext],
        "x-accel-redirect": proxyPath(key),
        ...extra,
      });
    const sendFile = () => sendStored(c, key, ext, etag, cacheControl, extra);
    // Stored already: sent as any file. Its own read tells whether it is there, so a warm
    // variant costs no stat first; nginx sends what the app vouches for, so a proxied one
    // is looked up.
    if (proxied) {
      if ((await deps.store.stat(key))?.size) {
        deps.metrics?.variant("hit");
        return proxyAnswer();
      }
    } else {
      const sent = await sendIfStored(c, key, ext, etag, cacheControl, extra);
      if (sent) {
        deps.metrics?.variant("hit");
        return sent;
      }
    }
    // Not stored: made now (at first request, or again when its bytes were lost). Only a
    // make counts against the address: stored variants cost a file read. It is counted
    // on this instance before any work (170 past the limit, however many come at once);
    // the durable count all instances share is a database write, which cost a first
    // request ~4 ms on the embedded database even beside the encode, so it is not
    // waited for: what it says bounds the next makes on every instance.
    const address = clientAddress(c, deps.config.TRUST_PROXY);
    makes.admit(address);
    makes.count(address).catch(() => {});
    await sendable(
      await maker.make(
        {
          id: row.id,
          key: original,
          ext: row.ext,
          width: row.width,
          height: row.height,
        },
        parsed.transform,
        key,
        ext,
      ),
      key,
    );
    deps.metrics?.variant("made");
    return proxied ? proxyAnswer() : await sendFile();
  };
  app.on(
    ["GET", "HEAD"],
    "/:file{[A-Za-z0-9_-]{6,64}(?:\\.(?:th|md))?\\.[a-z0-9]{2,5}}",
    serve,
  );
}
