import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "../app.ts";
import type { AppDeps } from "../services/deps.ts";
import {
  AUTH_ERRORS,
  envelopeOf,
  errorResponses,
} from "../schemas/envelope.ts";
import {
  DeletedSchema,
  ImageIdParamSchema,
  ImageRecordSchema,
  MultiUploadSchema,
} from "../schemas/image.ts";
import { ApiError, type ErrorCode } from "../schemas/errors.ts";
import { receiveMultipart } from "../services/multipart.ts";
import {
  type BodyOptions,
  receiveJson,
  receiveUrlencoded,
} from "../services/form_bodies.ts";
import type { ImagePipeline } from "../services/image_pipeline.ts";
import type { ImageRowCache } from "../services/image_cache.ts";
import { authenticateDeferred, headerKey, isMultipart } from "./api_auth.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageRecord,
  toImageRecord,
} from "../services/images.ts";

/** Security requirement of every /api/1 route: Bearer header, X-API-Key header or ?key=. */
export const API_SECURITY: Record<string, string[]>[] = [
  { bearer: [] },
  { apiKeyHeader: [] },
  { queryKey: [] },
];

/** What an upload answers with (Chevereto's `format`). */
export const UPLOAD_FORMATS = ["json", "txt", "redirect"] as const;

/** Allowed range of `expiration`, seconds (one minute to 180 days, as ImgBB). */
export const EXPIRATION_MIN = 60;
export const EXPIRATION_MAX = 15_552_000;

/** POST /api/1/upload (SPEC.md 4.1). */
export const postUploadRoute = createRoute({
  method: "post",
  path: "/api/1/upload",
  operationId: "postUpload",
  tags: ["Images"],
  summary: "Upload one or more images",
  description:
    "Multipart form with one or more files in `images` (also `images[]`, `image`, `source`). " +
    "One file returns the image record; several return `{images, count, errors?}`: files " +
    "that fail are listed in `errors` while the others are stored. Types are detected from " +
    "the bytes: JPEG, PNG, GIF, WebP, AVIF, BMP, TIFF. Uploading bytes you already uploaded " +
    "returns the existing record with `duplicate: true`. `format` (query or field) picks " +
    "the answer as Chevereto does: `json` (default), `txt` (the direct URL as text/plain, " +
    "one line per stored image) or `redirect` (303 to the first image's viewer page); " +
    "errors are always the JSON envelope. `name` (ImgBB) or `title` (Chevereto) sets the " +
    "title instead of the file name.",
  security: API_SECURITY,
  request: {
    query: z.object({
      key: z.string().optional(),
      expiration: z.string().optional().openapi({ example: "3600" }),
      format: z.enum(UPLOAD_FORMATS).optional().openapi({
        description: "json (default), txt or redirect",
      }),
    }),
    body: {
      required: true,
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            required: ["images"],
            properties: {
              key: {
                type: "string",
                description:
                  "API key (if not in a header). Put it before the files: the key is " +
                  "checked when the first file begins (or after 64 KB), and without a " +
                  "valid one the rest of the body is not read (100/110).",
              },
              images: {
                type: "array",
                items: { type: "string", format: "binary" },
                description: "Image files",
              },
              expiration: {
                type: "integer",
                minimum: EXPIRATION_MIN,
                maximum: EXPIRATION_MAX,
                description: "Seconds until the image is deleted",
              },
              format: {
                type: "string",
                enum: [...UPLOAD_FORMATS],
                description: "json (default), txt or redirect",
              },
              name: {
                type: "string",
                maxLength: 255,
                description: "Title of the image (ImgBB); `title` is taken too",
              },
            },
          },
        },
        "application/x-www-form-urlencoded": {
          schema: {
            type: "object",
            properties: {
              key: { type: "string", description: "API key, before the image" },
              image: {
                type: "string",
                description:
                  "The image as base64 or a data: URI (also `images`, `source`; repeat " +
                  "for several); decoded as it arrives",
              },
              expiration: { type: "string" },
              format: { type: "string", enum: [...UPLOAD_FORMATS] },
              name: { type: "string", maxLength: 255 },
            },
          },
        },
        "application/json": {
          schema: {
            type: "object",
            properties: {
              key: { type: "string" },
              image: {
                oneOf: [{ type: "string" }, {
                  type: "array",
                  items: { type: "string" },
                }],
                description: "base64 or data: URI, or a list of them",
              },
              expiration: { type: ["string", "integer"] },
              format: { type: "string", enum: [...UPLOAD_FORMATS] },
              name: { type: "string", maxLength: 255 },
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description: "Stored: an image record for one file, a list for several",
      content: {
        "application/json": {
          schema: envelopeOf(z.union([ImageRecordSchema, MultiUploadSchema])),
        },
        "text/plain": {
          schema: z.string().openapi({
            description:
              "format=txt: the direct URL of each stored image, one a line",
          }),
        },
      },
    },
    303: {
      description: "format=redirect: to the first stored image's viewer page",
    },
    ...errorResponses(
      ...AUTH_ERRORS,
      130,
      131,
      140,
      141,
      142,
      143,
      150,
      160,
      413,
    ),
  },
});

/** GET /api/1/images/{id}: the record of one of the caller's images. */
export const getImageRoute = createRoute({
  method: "get",
  path: "/api/1/images/{id}",
  operationId: "getImage",
  tags: ["Images"],
  summary: "Get one of your images",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: {
      description: "The image record",
      content: {
        "application/json": { schema: envelopeOf(ImageRecordSchema) },
      },
    },
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
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: {
      description: "Deleted",
      content: { "application/json": { schema: envelopeOf(DeletedSchema) } },
    },
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

const ok = <T>(data: T) => ({
  status: 200 as const,
  success: true as const,
  data,
});

/** Registers the upload route and the image record API. */
export function registerUploadRoutes(
  app: App,
  deps: AppDeps,
  pipeline: ImagePipeline,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;

  app.openapi(postUploadRoute, async (c) => {
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
      throw new ApiError(140, {
        details: [{
          message:
            "Send the images as multipart/form-data files, or base64 in a form or JSON " +
            "body, in the field `images` (or `image`, `source`)",
        }],
      });
    }
    // Authentication before the body costs anything: a header key is checked before a byte
    // is read, a body key as soon as the first file part begins (it must come first).
    if (headerKey(c) !== undefined) {
      await authenticateDeferred(c, deps, undefined);
    }
    await Deno.mkdir(pipeline.tmpDir, { recursive: true });
    const form = await receive(
      c.req.raw.body,
      {
        tmpDir: pipeline.tmpDir,
        maxFileBytes: deps.config.MAX_FILE_BYTES,
        maxFiles: deps.config.MAX_FILES,
        admit: (fields) => authenticateDeferred(c, deps, fields.key),
      },
    );
    try {
      const userId = await authenticateDeferred(c, deps, form.fields.key);
      if (form.files.length === 0) throw new ApiError(140);
      const expiration = parseExpiration(
        form.fields.expiration ?? c.req.query("expiration"),
      );
      const format = parseFormat(form.fields.format ?? c.req.query("format"));
      const title = (form.fields.name || form.fields.title)?.slice(0, 255);
      const images: ImageRecord[] = [];
      const errors: {
        index: number;
        filename: string;
        code: number;
        message: string;
      }[] = [];
      const errorsThrown: ApiError[] = [];
      let lastError: ApiError | undefined;
      for (const file of form.files) {
        try {
          images.push(
            await pipeline.ingest(
              userId,
              title ? { ...file, filename: title } : file,
              { expiration },
            ),
          );
        } catch (e) {
          let err: ApiError;
          if (e instanceof ApiError) err = e;
          else {
            deps.log.error({
              msg: "upload failed",
              request_id: c.get("requestId"),
              error: e instanceof Error ? e.stack ?? e.message : String(e),
            });
            err = new ApiError(500);
          }
          lastError = err;
          errorsThrown.push(err);
          errors.push({
            index: file.index,
            filename: file.filename,
            code: err.code,
            message: err.message,
          });
        } finally {
          await Deno.remove(file.path).catch(() => {});
        }
      }
      if (form.files.length === 1 && lastError) throw lastError;
      if (format === "txt" && images.length) {
        return c.text(images.map((i) => i.url).join("\n") + "\n", 200);
      }
      if (format === "redirect" && images.length) {
        return c.redirect(images[0].url_viewer, 303);
      }
      if (form.files.length === 1) return c.json(ok(images[0]), 200);
      if (images.length === 0) {
        // An outage is not the files' fault: answer it as such, so clients retry.
        const outage = errorsThrown.find((e) => e.code === 250);
        if (outage) throw outage;
        throw new ApiError(150, {
          details: errors.map((e) => ({ ...e, code: e.code as ErrorCode })),
        });
      }
      return c.json(
        ok({
          images,
          count: images.length,
          ...(errors.length ? { errors } : {}),
        }),
        200,
      );
    } finally {
      await form.cleanup();
    }
  });

  /** The caller's live image; anyone else's is reported as absent, not forbidden. */
  const ownImage = async (id: string, userId: string) => {
    const row = await findLiveImage(db, id, deps.clock);
    if (!row || row.user_id !== userId) throw new ApiError(404);
    return row;
  };

  app.openapi(getImageRoute, async (c) => {
    const row = await ownImage(c.req.valid("param").id, c.get("userId"));
    return c.json(ok(toImageRecord(deps.config, row)), 200);
  });

  app.openapi(deleteImageRoute, async (c) => {
    const row = await ownImage(c.req.valid("param").id, c.get("userId"));
    await deleteImage(db, deps.store, row, deps.clock);
    rowCache.invalidate(row.id);
    return c.json(ok({ id: row.id, deleted: true as const }), 200);
  });
}
