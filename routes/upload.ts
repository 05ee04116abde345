import { join } from "node:path";
import type { Context } from "hono";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { okBody } from "../schemas/envelope.ts";
import { EXPIRATION_MAX, EXPIRATION_MIN } from "../schemas/image.ts";
import {
  ApiError,
  type ErrorCode,
  invalidField,
  noSpace,
} from "../schemas/errors.ts";
import { isNoSpace } from "../services/runtime/file_io.ts";
import { receiveMultipart } from "../services/bodies/multipart.ts";
import type {
  BodyOptions,
  ReceivedFile,
  ReceivedForm,
} from "../services/bodies/received.ts";
import { allowRulesOf } from "../schemas/allow_list.ts";
import { type ImportLimits, importUrl } from "../services/net/url_import.ts";
import { WorkSlots } from "../services/runtime/work_slots.ts";
import {
  receiveJson,
  receiveUrlencoded,
} from "../services/bodies/form_bodies.ts";
import type { ImagePipeline } from "../services/images/pipeline.ts";
import { albumForImages } from "../services/albums/albums.ts";
import { uploadAccess } from "../services/privacy/password_access.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { authenticateDeferred, headerKey } from "./api_auth.ts";
import { bodyCap, bodyKindOf } from "../services/bodies/budgets.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageRecord,
  toImageRecord,
} from "../services/images/records.ts";
import { removeScratch } from "../services/runtime/scratch_files.ts";
import type { RequestScratch } from "../services/images/pipeline.ts";
import { cheveretoFields, cheveretoShaped } from "./chevereto_answer.ts";
import { HoldBudget, holdLimits } from "../services/bodies/key_hold.ts";
import { clientAddress } from "./client_address.ts";

import {
  deleteImageRoute,
  getImageRoute,
  getUploadRoute,
  postUploadEncodedRoute,
  postUploadRoute,
  UPLOAD_FORMATS,
} from "./upload_routes.ts";

export {
  API_SECURITY,
  API_SECURITY_OR_BODY_KEY,
  UPLOAD_FORMATS,
} from "./upload_routes.ts";

function parseExpiration(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  // Plain decimal digits only: Number() would also take "0x100", "1e3" and " 60 ".
  const n = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < EXPIRATION_MIN || n > EXPIRATION_MAX) {
    throw invalidField(
      "expiration",
      `must be an integer from ${EXPIRATION_MIN} to ${EXPIRATION_MAX} seconds`,
    );
  }
  return n;
}

function parseFormat(raw: string | undefined): typeof UPLOAD_FORMATS[number] {
  if (raw === undefined || raw === "") return "json";
  const f = UPLOAD_FORMATS.find((x) => x === raw);
  if (!f) {
    throw invalidField("format", "must be json, txt or redirect");
  }
  return f;
}

/** One failed file of a multi-file upload (its URL, for an import, as the file name). */
type UploadFailure = {
  index: number;
  filename: string;
  code: number;
  message: string;
};

/** Registers the upload route and the image record API. */
export function registerUploadRoutes(
  app: App,
  deps: AppDeps,
  pipeline: ImagePipeline,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;

  /** Bytes bodies bring before their key, for the whole process (key_hold.ts). */
  const holds = new HoldBudget(holdLimits(deps.config), deps.clock);
  deps.metrics?.bind({ heldBytes: () => holds.held });

  /** One import's limits; its time is what is left of the request's `deadline`. */
  const importLimits = (
    field: string,
    deadline: number,
    maxBytes: number,
  ): ImportLimits => ({
    rules: allowRulesOf(deps.config),
    maxBytes,
    timeoutMs: Math.max(1, deadline - Date.now()),
    field,
  });

  /** Reads the body (if any) into temp files and fields; `sources` come from `?source=`. */
  const receiveBody = async (
    c: Context<AppEnv>,
    sources: string[],
    scratch: RequestScratch,
  ): Promise<ReceivedForm> => {
    const type = c.req.header("content-type") ?? "";
    const kind = bodyKindOf(type);
    const receive = kind === "multipart"
      ? (body: ReadableStream<Uint8Array>, o: BodyOptions) =>
        receiveMultipart(body, type, o)
      : kind === "urlencoded"
      ? receiveUrlencoded
      : kind === "json"
      ? receiveJson
      : undefined;
    if (!receive || !c.req.raw.body) {
      if (sources.length === 0) {
        throw new ApiError(140, {
          details: [{
            message:
              "Send the images as multipart/form-data files, or base64 or URLs in a form " +
              "or JSON body, in the field `images` (or `image`, `source`), or a URL in " +
              "?source=",
          }],
        });
      }
      await c.req.raw.body?.cancel().catch(() => {});
      await authenticateDeferred(c, deps, undefined);
      return { files: [], fields: {}, cleanup: () => Promise.resolve() };
    }
    // Authentication before the body costs anything: a header key is checked before a byte
    // is read, a body key as soon as it comes.
    if (headerKey(c) !== undefined) {
      await authenticateDeferred(c, deps, undefined);
    }
    // Without a key in a header or the query, a body of any type may hold its bytes until
    // its `key` comes (Chevereto's clients send it last), within the hold's budgets.
    const keyless = headerKey(c) === undefined && !c.req.query("key");
    const address = clientAddress(c, deps.config.TRUST_PROXY) ?? "unknown";
    return await receive(c.req.raw.body, {
      tmpDir: scratch.dir,
      maxFileBytes: fileLimit(c, scratch.maxFileBytes),
      maxFiles: deps.config.MAX_FILES,
      requestBytes: scratch.requestBytes,
      maxFields: deps.config.BODY_MAX_FIELDS,
      maxToken: deps.config.BODY_MAX_TOKEN,
      admit: (fields) => authenticateDeferred(c, deps, fields.key),
      hold: keyless ? (stalled) => holds.open(address, stalled) : undefined,
    });
  };

  /** `?source=` URLs as files still to fetch, after the body's own (131 past MAX_FILES). */
  const querySources = (
    sources: string[],
    form: ReceivedForm,
    scratch: RequestScratch,
  ) => {
    if (form.files.length + sources.length > deps.config.MAX_FILES) {
      throw new ApiError(131, {
        details: [{
          message: `At most ${deps.config.MAX_FILES} files per request`,
        }],
      });
    }
    return sources.map((url, i): ReceivedFile => ({
      index: form.files.length + i,
      field: "source",
      filename: "image",
      path: join(scratch.importDir, `url-${crypto.randomUUID()}`),
      size: 0,
      sha256: "",
      truncated: false,
      url,
    }));
  };

  /**
   * Every URL import of a request fetched through the network guard into its file's temp
   * path, URL_IMPORTS_AT_ONCE at a time and all within one URL_IMPORT_TIMEOUT_MS from the
   * first (231 for those it leaves unfinished): one after another, 15 slow addresses took
   * 90 s, and up to 15 × the timeout. Files without a URL are passed through. Each answer
   * is a promise, so the pipeline takes the files in order as they arrive.
   */
  const materializeAll = (
    files: ReceivedFile[],
    scratch: RequestScratch,
    maxFileBytes: number,
  ) => {
    const timeout = deps.config.URL_IMPORT_TIMEOUT_MS;
    const deadline = Date.now() + timeout;
    // Every import may wait its turn (the line holds them all); one that starts with no
    // time left is over its deadline at once (231).
    const slots = new WorkSlots(deps.config.URL_IMPORTS_AT_ONCE, files.length);
    return files.map((file) =>
      file.url === undefined ? Promise.resolve(file) : slots.run(async () => {
        // A body's address was given a path beside the body's files; its image, of any
        // size, goes where imports go (on disk when the body is held in memory).
        const path = file.path.startsWith(scratch.importDir)
          ? file.path
          : join(scratch.importDir, `url-${crypto.randomUUID()}`);
        try {
          const got = await importUrl(
            file.url!,
            path,
            importLimits(file.field, deadline, maxFileBytes),
          );
          return { ...file, ...got, path };
        } catch (e) {
          // A failed import's file is ours to remove (the caller only knows the body's).
          if (path !== file.path) await removeScratch(path).catch(() => {});
          throw e;
        }
      }, timeout * 2)
    );
  };

  /** The largest file this request may store: a guest's is GUEST_MAX_FILE_BYTES. */
  const fileLimit = (c: Context<AppEnv>, maxFileBytes: number) =>
    c.get("guest")
      ? Math.min(maxFileBytes, deps.config.GUEST_MAX_FILE_BYTES)
      : maxFileBytes;

  /**
   * 413 for a body whose declared length is past the most its images could come to
   * (bodyCap), before it is admitted or read: a 60 MB body in the sandbox (memory
   * scratch, then 32 MB of images a request) was read up to 32 MB first, and on disk one
   * declaring a gigabyte was read up to the 15 files' 644 MB.
   */
  const refuseOversize = async (c: Context<AppEnv>, declared?: number) => {
    const kind = bodyKindOf(c.req.header("content-type") ?? "");
    if (!declared || !kind) return;
    const limits = pipeline.bodyLimits();
    const cap = bodyCap(kind, {
      maxFiles: deps.config.MAX_FILES,
      maxFileBytes: fileLimit(c, limits.maxFileBytes),
      requestBytes: limits.requestBytes,
    });
    if (declared <= cap) return;
    await c.req.raw.body?.cancel().catch(() => {});
    throw new ApiError(413, {
      details: [{
        message:
          `a body of ${declared} bytes is longer than this request's images ` +
          `could come to (at most ${cap} bytes)`,
      }],
    });
  };

  const handleUpload = async (c: Context<AppEnv>) => {
    const declared = Number(c.req.header("content-length")) || undefined;
    await refuseOversize(c, declared);
    const scratch = await pipeline.requestScratch(declared);
    try {
      return await uploadWith(c, scratch);
    } finally {
      scratch.release();
    }
  };

  /** The upload itself, its scratch files in `scratch`. */
  const uploadWith = async (c: Context<AppEnv>, scratch: RequestScratch) => {
    const sources = (c.req.queries("source") ?? []).filter(Boolean);
    const form = await receiveBody(c, sources, scratch);
    const files = [...form.files];
    try {
      files.push(...querySources(sources, form, scratch));
      const userId = await authenticateDeferred(c, deps, form.fields.key);
      if (files.length === 0) throw new ApiError(140);
      const asked = parseExpiration(
        form.fields.expiration ?? c.req.query("expiration"),
      );
      // A guest's upload always expires: at most GUEST_EXPIRATION from now.
      const guestLife = deps.config.GUEST_EXPIRATION;
      const expiration = c.get("guest")
        ? Math.min(asked ?? guestLife, guestLife)
        : asked;
      const formatGiven = form.fields.format ?? c.req.query("format");
      const format = parseFormat(formatGiven);
      const title = (form.fields.name || form.fields.title ||
        c.req.query("name") || c.req.query("title"))?.slice(0, 255);
      // Chevereto's `album_id` (also `album` in a JSON body, or either in the query).
      const album = form.fields.album_id || form.fields.album ||
        c.req.query("album_id") || c.req.query("album");
      const albumId = album
        ? (await albumForImages(db, userId, album)).id
        : undefined;
      // Who may see the images, from their first moment; the password only in the body
      // (a query string ends up in logs).
      const access = await uploadAccess(
        form.fields.privacy || c.req.query("privacy"),
        form.fields.password,
      );
      const images: ImageRecord[] = [];
      const errors: UploadFailure[] = [];
      const errorsThrown: ApiError[] = [];
      const fetched = materializeAll(
        files,
        scratch,
        fileLimit(c, scratch.maxFileBytes),
      );
      // Each import's failure is read in its turn below, never left unhandled.
      for (const f of fetched) f.catch(() => {});
      for (const [i, received] of files.entries()) {
        let imported: string | undefined;
        try {
          const file = await fetched[i];
          if (file.path !== received.path) imported = file.path;
          images.push(
            await pipeline.ingest(
              userId,
              title ? { ...file, filename: title } : file,
              { expiration, albumId, access },
            ),
          );
        } catch (e) {
          const err = asApiError(e, c);
          errorsThrown.push(err);
          errors.push({
            index: received.index,
            filename: received.url ?? received.filename,
            code: err.code,
            message: err.message,
          });
        } finally {
          await removeScratch(received.path).catch(() => {});
          if (imported) await removeScratch(imported).catch(() => {});
        }
      }
      if (files.length === 1 && errorsThrown.length) throw errorsThrown[0];
      if (format === "txt" && images.length) {
        return c.text(images.map((i) => i.url).join("\n") + "\n", 200);
      }
      if (format === "redirect" && images.length) {
        return c.redirect(images[0].url_viewer, 303);
      }
      if (files.length === 1) {
        // Chevereto's clients read `image.url` and `status_code`: theirs beside ours.
        const chevereto = cheveretoShaped(c, files, formatGiven)
          ? cheveretoFields(images[0])
          : {};
        return c.json({ ...okBody(images[0]), ...chevereto }, 200);
      }
      if (images.length === 0) {
        // An outage is not the files' fault: answer it as such, so clients retry.
        const outage = errorsThrown.find((e) => e.code === 250);
        if (outage) throw outage;
        throw new ApiError(150, {
          details: errors.map((e) => ({ ...e, code: e.code as ErrorCode })),
        });
      }
      return c.json(
        okBody({
          kind: "batch" as const,
          images,
          count: images.length,
          ...(errors.length ? { errors } : {}),
        }),
        200,
      );
    } finally {
      await form.cleanup();
    }
  };

  /**
   * An unexpected failure of one file is logged and reported as 500 for that file; a full
   * disk is logged too, and answered 250 like an outage (see noSpace).
   */
  const asApiError = (e: unknown, c: Context<AppEnv>): ApiError => {
    const full = isNoSpace(e); // also the pipeline's 250 made of it (its cause)
    if (e instanceof ApiError && !full) return e;
    deps.log.error({
      msg: full ? "upload failed: no disk space left" : "upload failed",
      request_id: c.get("requestId"),
      error: e instanceof Error ? e.stack ?? e.message : String(e),
    });
    return e instanceof ApiError ? e : full ? noSpace(e) : new ApiError(500);
  };

  app.openapi(postUploadRoute, (c) => handleUpload(c));
  // Documented only: /1/upload reaches postUploadRoute's handler through app.ts's getPath.
  app.openAPIRegistry.registerPath(postUploadEncodedRoute);
  app.openapi(getUploadRoute, (c) => handleUpload(c));

  /** The caller's live image; anyone else's is reported as absent, not forbidden. */
  const ownImage = async (id: string, userId: string) => {
    const row = await findLiveImage(db, id, deps.clock);
    if (!row || row.user_id !== userId) throw new ApiError(404);
    return row;
  };

  app.openapi(getImageRoute, async (c) => {
    const row = await ownImage(c.req.valid("param").id, c.get("userId"));
    return c.json(okBody(toImageRecord(deps.config, row)), 200);
  });

  app.openapi(deleteImageRoute, async (c) => {
    const row = await ownImage(c.req.valid("param").id, c.get("userId"));
    await deleteImage(db, deps.store, row, deps.clock);
    rowCache.invalidate(row.id);
    return c.json(okBody({ id: row.id, deleted: true as const }), 200);
  });
}
