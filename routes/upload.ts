import { createRoute, z } from "@hono/zod-openapi";
import { join } from "node:path";
import type { Context } from "hono";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AUTH_ERRORS,
  envelopeOf,
  errorResponses,
  okBody,
  okResponse,
  RATE_LIMIT_HEADERS,
  REQUEST_ID_HEADER,
} from "../schemas/envelope.ts";
import {
  BATCH_EXAMPLE,
  DeletedSchema,
  EXPIRATION_MAX,
  EXPIRATION_MIN,
  IMAGE_RECORD_EXAMPLE,
  ImageIdParamSchema,
  ImageRecordSchema,
  MultiUploadSchema,
} from "../schemas/image.ts";
import { ApiError, type ErrorCode, noSpace } from "../schemas/errors.ts";
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
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { authenticateDeferred, headerKey, isMultipart } from "./api_auth.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageRecord,
  toImageRecord,
} from "../services/images/records.ts";
import { removeScratch } from "../services/runtime/scratch_files.ts";
import type { RequestScratch } from "../services/images/pipeline.ts";
import { CHEVERETO_FIELDS } from "../schemas/chevereto.ts";
import { cheveretoFields, cheveretoShaped } from "./chevereto_answer.ts";
import { HoldBudget, holdLimits } from "../services/bodies/key_hold.ts";
import { clientAddress } from "./client_address.ts";

/**
 * Security requirement of every /api/1 route, as declared: the bearer key alone, so a
 * generated client sends the key once. X-API-Key, ?key= and the site's session are still
 * accepted (see the bearer scheme's description in docs.ts).
 */
export const API_SECURITY: Record<string, string[]>[] = [{ bearer: [] }];

/**
 * Routes whose body may carry the key (`key` field or property): OpenAPI has no security
 * scheme for a body, so the empty requirement says a request may come without a header or
 * query key; the body's `key` property documents the fourth place.
 */
export const API_SECURITY_OR_BODY_KEY: Record<string, string[]>[] = [
  ...API_SECURITY,
  {},
];

/** Codes an upload (POST or GET) can answer with: files, images and URL imports. */
const UPLOAD_ERRORS: ErrorCode[] = [
  ...AUTH_ERRORS,
  130,
  131,
  140,
  141,
  142,
  143,
  150,
  160,
  200,
  210,
  221,
  231,
];

/** What an upload answers with (Chevereto's `format`). */
export const UPLOAD_FORMATS = ["json", "txt", "redirect"] as const;

/** Allowed range of `expiration`, seconds (one minute to 180 days, as ImgBB). */
export { EXPIRATION_MAX, EXPIRATION_MIN };

/** Query parameters of an upload (all optional; body fields take precedence). */
const UploadQuerySchema = z.object({
  source: z.union([z.string(), z.array(z.string())]).optional().openapi({
    param: { style: "form", explode: true },
    type: "array",
    items: { type: "string", format: "uri" },
    description:
      "Address of an image to import (Chevereto's `?source=`); repeat for several. The " +
      "server downloads it through the same network guard as screenshots: public " +
      "http(s) addresses only, at most 5 redirects, every hop re-checked. For example " +
      "`?source=https://example.com/cat.png`.",
  }),
  expiration: z.string().regex(/^[0-9]{1,9}$/).optional().openapi({
    type: "integer",
    minimum: EXPIRATION_MIN,
    maximum: EXPIRATION_MAX,
    description:
      "Seconds until the image is deleted, e.g. 86400 for a day (none: kept for good)",
  }),
  format: z.enum(UPLOAD_FORMATS).optional().openapi({
    description:
      "json (default): the envelope; txt: the direct URL as text/plain; redirect: 303 " +
      "to the viewer page",
  }),
  name: z.string().max(255).optional().openapi({
    description: "Title of the image (ImgBB); `title` is taken too",
  }),
  title: z.string().max(255).optional().openapi({
    description: "Title of the image (Chevereto)",
  }),
  album_id: z.string().max(64).optional().openapi({
    description:
      "One of your albums to put the images in (Chevereto's name; body fields win)",
  }),
});

/**
 * The upload's body fields besides the images, as each body type documents them. In a
 * form every value is text, so the form bodies say so, with an empty example: Swagger
 * UI's "Try it out" fills each field from its example, and would otherwise send
 * `key=string`, `title=string` and the minimum `expiration` (60 s), deleting the image a
 * minute later.
 */
function bodyFields(form: boolean) {
  const text = (description: string, maxLength?: number) => ({
    type: "string" as const,
    ...(maxLength ? { maxLength } : {}),
    description,
    ...(form ? { example: "" } : {}),
  });
  return {
    key: text(
      "API key, when none is sent in a header or the query. It may come anywhere in the " +
        "body: what precedes it (files too) is held within UNAUTH_HOLD_MB while the " +
        "client keeps sending at least 64 KB/s after a 2 s grace; past that it is " +
        "answered at once. Without a valid one the rest of the body is not read (100/110).",
    ),
    rest: {
      expiration: form
        ? {
          type: "string" as const,
          pattern: "^([0-9]{1,9})?$",
          description:
            `Seconds until the image is deleted (${EXPIRATION_MIN}–${EXPIRATION_MAX}), ` +
            "e.g. 86400 for a day; empty or absent: kept for good",
          example: "",
        }
        : {
          type: "integer" as const,
          minimum: EXPIRATION_MIN,
          maximum: EXPIRATION_MAX,
          description:
            "Seconds until the image is deleted, e.g. 86400 for a day; absent: kept " +
            "for good (digits in a string are taken too)",
        },
      format: {
        type: "string" as const,
        enum: [...UPLOAD_FORMATS],
        description: "json (default), txt or redirect",
      },
      name: text("Title of the image (ImgBB)", 255),
      title: text(
        "Title of the image (Chevereto); `name` wins when both are sent",
        255,
      ),
      album_id: text(
        "One of your albums to put the images in (Chevereto's name; `album` is taken " +
          "too); someone else's or none is 160",
        64,
      ),
    },
  };
}
const FORM_FIELDS = bodyFields(true);
const JSON_FIELDS = bodyFields(false);

/** POST /api/1/upload (SPEC.md 4.1). */
export const postUploadRoute = createRoute({
  method: "post",
  path: "/api/1/upload",
  operationId: "postUpload",
  tags: ["Images"],
  summary: "Upload one or more images",
  description:
    "Images in `images` (also `images[]`, `image`, `source`), each a file part, a base64 " +
    "string or data: URI, or an http(s) URL the server downloads; bodies may be " +
    "multipart/form-data, application/x-www-form-urlencoded or application/json, and " +
    "`?source=<url>` works with or without a body (and by GET). Here the multipart body " +
    "is documented, which carries all three (a file part, or a text part with base64 or " +
    "a URL); the urlencoded and JSON bodies are documented under `POST /1/upload`, the " +
    "same operation at ImgBB's path, which answers every body too. One body type per " +
    "operation is what client generators can use: given several, hey-api sends JSON " +
    "only and orval JSON-encodes every body. URL imports go through " +
    "the same network guard as screenshots (public addresses only, every redirect and " +
    "resolved address re-checked, at most 5 redirects, MAX_FILE_BYTES; the URLs of one " +
    "request are fetched URL_IMPORTS_AT_ONCE at a time within one URL_IMPORT_TIMEOUT_MS): " +
    "210 not allowed, 221 could not fetch, 231 timed out. " +
    "One image returns the image record; several return `{images, count, errors?}`: files " +
    "that fail are listed in `errors` while the others are stored. Types are detected from " +
    "the bytes: JPEG, PNG, GIF, WebP, AVIF, BMP, TIFF. Uploading bytes you already uploaded " +
    "returns the existing record with `duplicate: true`. `format` (query or field) picks " +
    "the answer as Chevereto does: `json` (default), `txt` (the direct URL as text/plain, " +
    "one line per stored image) or `redirect` (303 to the first image's viewer page); " +
    "errors are always the JSON envelope. `name` (ImgBB) or `title` (Chevereto) sets the " +
    "title instead of the file name." +
    " The same operation answers at `/1/upload`, ImgBB's own path, so ImgBB clients " +
    "need only the host changed. A Chevereto-shaped request (an X-API-Key header, a " +
    "`source` field, or `format=json`) that stores one image also gets Chevereto V1.1's " +
    "`status_code`, `status_txt` and `image` (`image.url`, `image.display_url`, …) beside " +
    "the envelope; `success` stays the envelope's boolean.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    query: UploadQuerySchema,
    body: {
      required: false,
      description:
        "The images and fields; may be left out when `?source=` names the images",
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            properties: {
              key: FORM_FIELDS.key,
              // Files in `images` and text in `source`, each with one type, so that
              // Swagger UI offers a file picker and generated clients type a File or a
              // string without a cast. Either field takes either kind.
              images: {
                type: "array",
                items: { type: "string", format: "binary" },
                description:
                  "Image files (also `images[]`, `image`, `source`); a text value is " +
                  "read as base64 (streamed, any size) or an http(s) URL to import",
              },
              source: {
                type: "array",
                items: { type: "string" },
                // No "string" placeholder in Swagger UI's Try it out: nothing to import.
                example: [],
                description:
                  "Images as text (Chevereto's field; also `images`, `image`): base64, " +
                  "a data: URI or an http(s) URL the server downloads, one a part",
              },
              ...FORM_FIELDS.rest,
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description:
        "Stored: one image sent, its record (`kind` image); several, a batch (`kind` " +
        "batch: the records stored and the files refused)",
      headers: { ...REQUEST_ID_HEADER, ...RATE_LIMIT_HEADERS },
      content: {
        "application/json": {
          schema: envelopeOf(
            z.discriminatedUnion("kind", [
              ImageRecordSchema,
              MultiUploadSchema,
            ]),
          ).extend(CHEVERETO_FIELDS),
          examples: {
            one: {
              summary: "One image",
              value: { status: 200, success: true, data: IMAGE_RECORD_EXAMPLE },
            },
            batch: {
              summary: "Several images, one refused",
              value: { status: 200, success: true, data: BATCH_EXAMPLE },
            },
          },
        },
        "text/plain": {
          schema: z.string().openapi({
            description:
              "format=txt: the direct URL of each stored image, one a line",
            example: "https://img.example.com/aB3xK9pQ2m.jpg\n",
          }),
        },
      },
    },
    303: {
      description: "format=redirect: to the first stored image's viewer page",
      headers: {
        ...REQUEST_ID_HEADER,
        Location: {
          description: "The viewer page (url_viewer)",
          schema: { type: "string" },
        },
      },
    },
    ...errorResponses(...UPLOAD_ERRORS, 413),
  },
});

/** GET /api/1/upload?source=<url>: Chevereto's URL import by GET. */
export const getUploadRoute = createRoute({
  method: "get",
  path: "/api/1/upload",
  operationId: "getUpload",
  tags: ["Images"],
  summary: "Import images from URLs (GET)",
  description:
    "Chevereto's GET form of the upload: `?source=<url>` (repeatable) is downloaded " +
    "through the network guard and stored as if uploaded. Answers like POST.",
  security: API_SECURITY,
  request: {
    query: UploadQuerySchema.extend({
      source: UploadQuerySchema.shape.source.unwrap(),
    }),
  },
  responses: {
    200: postUploadRoute.responses[200],
    303: postUploadRoute.responses[303],
    ...errorResponses(...UPLOAD_ERRORS),
  },
});

/**
 * POST /1/upload, documented only: ImgBB's path for the same upload (app.ts maps it to
 * /api/1/upload), where the urlencoded and JSON bodies are written down, so that each
 * documented operation has one body a client generator can use (see postUploadRoute).
 */
export const postUploadEncodedRoute = createRoute({
  method: "post",
  path: "/1/upload",
  operationId: "postUploadEncoded",
  tags: ["Images"],
  summary: "Upload images as base64 or URLs in a urlencoded or JSON body",
  description:
    "The same operation as `POST /api/1/upload`, at ImgBB's own path (ImgBB's and " +
    "Chevereto's clients send these bodies: `key=…&image=<base64>` or " +
    '`{"key": "…", "image": "<base64 or URL>"}`); it answers a multipart body too. ' +
    "Answers, errors, `format` and the Chevereto fields are those of `POST /api/1/upload`.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    query: UploadQuerySchema,
    body: {
      required: false,
      description:
        "The images and fields; may be left out when `?source=` names the images",
      content: {
        "application/x-www-form-urlencoded": {
          schema: {
            type: "object",
            properties: {
              key: FORM_FIELDS.key,
              image: {
                type: "string",
                description:
                  "The image as base64, a data: URI or an http(s) URL (also `images`, " +
                  "`source`; repeat for several); base64 is decoded as it arrives",
              },
              ...FORM_FIELDS.rest,
            },
          },
          example: { image: "https://example.com/cat.png" },
        },
        "application/json": {
          schema: {
            type: "object",
            properties: {
              key: JSON_FIELDS.key,
              image: {
                oneOf: [{ type: "string" }, {
                  type: "array",
                  items: { type: "string" },
                }],
                description:
                  "base64, a data: URI or an http(s) URL, or a list of them (also " +
                  "`images`, `source`)",
              },
              ...JSON_FIELDS.rest,
            },
          },
          example: { image: "https://example.com/cat.png" },
        },
      },
    },
  },
  responses: postUploadRoute.responses,
});

/** GET /api/1/images/{id}: the record of one of the caller's images. */
export const getImageRoute = createRoute({
  method: "get",
  path: "/api/1/images/{id}",
  operationId: "getImage",
  tags: ["Images"],
  summary: "Get one of your images",
  description:
    "The record of an image uploaded with any of your keys, as the upload returned it " +
    "(without `duplicate`). Someone else's image, a deleted or an expired one is 404.",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: okResponse(
      "The image record",
      ImageRecordSchema,
      IMAGE_RECORD_EXAMPLE,
      {
        rateLimited: true,
      },
    ),
    ...errorResponses(...AUTH_ERRORS, 160, 404),
  },
});

/** DELETE /api/1/images/{id}: delete one of the caller's images. */
export const deleteImageRoute = createRoute({
  method: "delete",
  path: "/api/1/images/{id}",
  operationId: "deleteImage",
  tags: ["Images"],
  summary: "Delete one of your images",
  description:
    "Deletes the image and its variants at once: its files answer 404 from this moment " +
    "on, on every instance. The same as opening its `delete_url`.",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: okResponse("Deleted", DeletedSchema, {
      id: "aB3xK9pQ2m",
      deleted: true,
    }, { rateLimited: true }),
    ...errorResponses(...AUTH_ERRORS, 160, 404),
  },
});

function parseExpiration(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  // Plain decimal digits only: Number() would also take "0x100", "1e3" and " 60 ".
  const n = /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < EXPIRATION_MIN || n > EXPIRATION_MAX) {
    throw new ApiError(160, {
      details: [{
        path: "expiration",
        message:
          `must be an integer from ${EXPIRATION_MIN} to ${EXPIRATION_MAX} seconds`,
      }],
    });
  }
  return n;
}

function parseFormat(raw: string | undefined): typeof UPLOAD_FORMATS[number] {
  if (raw === undefined || raw === "") return "json";
  const f = UPLOAD_FORMATS.find((x) => x === raw);
  if (!f) {
    throw new ApiError(160, {
      details: [{ path: "format", message: "must be json, txt or redirect" }],
    });
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
    const receive = isMultipart(c)
      ? (body: ReadableStream<Uint8Array>, o: BodyOptions) =>
        receiveMultipart(body, type, o)
      : /^application\/x-www-form-urlencoded/i.test(type)
      ? receiveUrlencoded
      : /^application\/json/i.test(type)
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
      maxFileBytes: fileLimit(c, scratch),
      maxFiles: deps.config.MAX_FILES,
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
  const fileLimit = (c: Context<AppEnv>, scratch: RequestScratch) =>
    c.get("guest")
      ? Math.min(scratch.maxFileBytes, deps.config.GUEST_MAX_FILE_BYTES)
      : scratch.maxFileBytes;

  const handleUpload = async (c: Context<AppEnv>) => {
    const scratch = await pipeline.requestScratch(
      Number(c.req.header("content-length")) || undefined,
    );
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
      const images: ImageRecord[] = [];
      const errors: UploadFailure[] = [];
      const errorsThrown: ApiError[] = [];
      const fetched = materializeAll(files, scratch, fileLimit(c, scratch));
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
              { expiration, albumId },
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
