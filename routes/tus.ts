import { z } from "@hono/zod-openapi";
import { join } from "node:path";
import type { Context } from "hono";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import type { ImagePipeline } from "../services/images/pipeline.ts";
import type { ResumableUploads } from "../services/uploads/resumable.ts";
import { TUS_PATH } from "../services/uploads/tus_path.ts";
import { albumForImages } from "../services/albums/albums.ts";
import { ApiError, errorBody } from "../schemas/errors.ts";
import {
  errorResponses,
  header,
  keyedErrorResponses,
  okBody,
  RATE_LIMIT_HEADERS,
  REQUEST_ID_HEADER,
} from "../schemas/envelope.ts";
import { API_SECURITY } from "./upload_routes.ts";

/**
 * Resumable uploads (tus 1.0, issue #53) at /api/1/tus/: the tus server is made at the
 * first such request (its modules are not loaded at start), and keeps its parts in the
 * images' bucket with STORE=s3, else in DATA_DIR/tus. With neither (SCRATCH=memory and no
 * S3) the endpoint says so.
 */
export function registerTusRoutes(
  app: App,
  deps: AppDeps,
  pipeline: ImagePipeline,
) {
  let uploads: Promise<ResumableUploads> | undefined;
  const made = () =>
    uploads ??= Promise.all([
      import("../services/uploads/resumable.ts"),
      import("../services/uploads/tus_backends.ts"),
    ]).then(
      ([{ ResumableUploads }, { fileBackend, bucketBackend }]) =>
        new ResumableUploads({
          config: deps.config,
          backend: deps.config.STORE === "s3"
            ? bucketBackend(
              deps.store,
              deps.config.TUS_EXPIRE_HOURS * 3_600_000,
              (bytes) => pipeline.requestScratch(bytes),
            )
            : fileBackend(
              join(deps.config.DATA_DIR, "tus"),
              deps.config.TUS_EXPIRE_HOURS * 3_600_000,
            ),
          ingest: async (userId, file, opts) => {
            // The pipeline's scratch folder, made at an upload's first request.
            await pipeline.prepareScratch();
            return await pipeline.ingest(userId, file, opts);
          },
          fits: async (userId, bytes) =>
            await (await pipeline.quotas.hold(userId, bytes))?.release(),
          onError: (e) =>
            deps.log.error({
              msg: "a finished resumable upload failed",
              error: String(e),
            }),
          albumOf: async (userId, album) =>
            (await albumForImages(deps.database.db, userId, album)).id,
          answer: (body) =>
            JSON.stringify(
              body instanceof ApiError
                ? errorBody(body.code, body.details, body.message)
                : okBody(body),
            ),
        }),
    );
  const handle = async (c: Context<AppEnv>) => {
    if (deps.config.SCRATCH === "memory" && deps.config.STORE !== "s3") {
      throw new ApiError(404, {
        message:
          "Resumable uploads need a disk (DATA_DIR) or STORE=s3 here; use POST /api/1/upload",
      });
    }
    const tus = await made();
    if (c.req.method === "OPTIONS") {
      return await tus.server.handleWeb(c.req.raw);
    }
    return await tus.handle(c.req.raw, c.get("userId"));
  };
  for (const path of [TUS_PATH, `${TUS_PATH}/`, `${TUS_PATH}/:id`]) {
    // HEAD: Hono dispatches it to the GET handler (and drops the body); tus is given the
    // request as it came (its method HEAD). A GET itself tus answers 405.
    app.on(["OPTIONS", "POST", "GET", "PATCH", "DELETE"], path, handle);
  }
  // Unfinished uploads' parts go TUS_EXPIRE_HOURS after their last write.
  const sweep = async () => uploads ? await (await uploads).cleanUp() : 0;
  sweeps.set(app, sweep);
  const sweeper = setInterval(() => sweep().catch(() => {}), 10 * 60_000);
  Deno.unrefTimer(sweeper);
  documentTus(app);
}

const sweeps = new WeakMap<App, () => Promise<number>>();

/**
 * Removes the parts of the app's resumable uploads unwritten for TUS_EXPIRE_HOURS now
 * (the app does so every 10 minutes); how many went.
 */
export async function sweepResumable(app: App): Promise<number> {
  return await (sweeps.get(app)?.() ?? Promise.resolve(0));
}

/** The tus endpoints in openapi.yaml: protocol headers, answers and errors. */
function documentTus(app: App) {
  const reg = app.openAPIRegistry;
  const tusHeaders = {
    ...REQUEST_ID_HEADER,
    "Tus-Resumable": header("1.0.0"),
  };
  // Every method but OPTIONS is admitted by its key, which counts it.
  const keyedHeaders = { ...tusHeaders, ...RATE_LIMIT_HEADERS };
  const idParams = z.object({
    id: z.string().openapi({
      param: { name: "id", in: "path" },
      description:
        "The upload's id: the last segment of the Location its creation gave",
    }),
  });
  const protocolHeader = (
    name: string,
    description: string,
    required = false,
  ) => ({
    name,
    in: "header" as const,
    required,
    schema: { type: "string" as const },
    description,
  });
  const tusResumable = protocolHeader("Tus-Resumable", "1.0.0", true);
  reg.registerPath({
    method: "options",
    path: TUS_PATH,
    operationId: "tusOptions",
    tags: ["Resumable uploads"],
    summary: "What the tus server offers",
    description:
      "No key needed. 404 where they have nowhere to be kept: resumable uploads keep " +
      "their parts in the images' bucket with STORE=s3, else in DATA_DIR/tus.",
    security: [],
    responses: {
      204: {
        description: "The protocol's version, extensions and largest upload",
        headers: {
          ...tusHeaders,
          "Tus-Version": header("1.0.0"),
          "Tus-Extension": header(
            "creation,creation-with-upload,creation-defer-length,termination,expiration",
          ),
          "Tus-Max-Size": header(
            "TUS_MAX_FILE_BYTES; with memory scratch (Deno Deploy) MEMORY_REQUEST_MB when smaller",
            "integer",
          ),
        },
      },
      // Where no disk may be written (SCRATCH=memory) there are no resumable uploads.
      ...errorResponses(404),
    },
  });
  reg.registerPath({
    method: "post",
    path: TUS_PATH,
    operationId: "tusCreate",
    tags: ["Resumable uploads"],
    summary:
      "Start a resumable upload (tus creation, with or without a first chunk)",
    description:
      "tus 1.0 creation: `Upload-Length` (at most TUS_MAX_FILE_BYTES, or with memory " +
      "scratch MEMORY_REQUEST_MB when smaller: OPTIONS' Tus-Max-Size) and " +
      "`Upload-Metadata` (base64 values: `filename` or `title` names the image, " +
      "`album` an album of yours, `expiration` seconds, `privacy` public, unlisted, " +
      "private or password with `password`, the image stored so from its first moment; " +
      "a bad value is 160 here, before any byte). The answer's `Location` is " +
      "the upload's URL as a path (resolved against this endpoint), to PATCH chunks to and HEAD for the offset after a cut. Per " +
      "account at most TUS_UPLOADS_AT_ONCE unfinished uploads (170) holding at most " +
      "TUS_PENDING_MB (130); a file that would not fit the account's quota now is " +
      "180 before it is sent. With a first chunk (creation-with-upload) that finishes " +
      "the file, the answer is the image record, as for the last PATCH. Clients: " +
      "tus-js-client, @uppy/tus.",
    security: API_SECURITY,
    request: {
      headers: z.object({}).openapi({}),
    },
    parameters: [
      tusResumable,
      protocolHeader("Upload-Length", "The file's size in bytes", true),
      protocolHeader(
        "Upload-Metadata",
        "Comma-separated `key base64value` pairs: filename, title, album, expiration",
      ),
    ],
    responses: {
      201: {
        description: "Created: its URL in Location",
        headers: {
          ...keyedHeaders,
          "Location": header("The upload's URL, as a path"),
          "Upload-Offset": header("Bytes received so far", "integer"),
          "Upload-Expires": header(
            "When its parts go unless written to (TUS_EXPIRE_HOURS)",
          ),
        },
      },
      ...keyedErrorResponses(130, 160, 162, 180, 404, 415),
    },
  } as never);
  for (const method of ["head", "patch", "delete"] as const) {
    reg.registerPath({
      method,
      path: `${TUS_PATH}/{id}`,
      operationId: {
        head: "tusOffset",
        patch: "tusAppend",
        delete: "tusTerminate",
      }[method],
      tags: ["Resumable uploads"],
      summary: {
        head: "How much of an upload arrived (resume from Upload-Offset)",
        patch: "Append a chunk at Upload-Offset; the last one stores the image",
        delete: "End an upload and remove its parts (tus termination)",
      }[method],
      description: method === "patch"
        ? "Body: `application/offset+octet-stream`, the bytes from `Upload-Offset`. " +
          "While the file is unfinished: 204 with the new offset. The chunk that " +
          "finishes it runs the upload pipeline: 200 with the image record (its " +
          "title from the `filename` metadata; in GET /api/1/images like any upload), " +
          "or the usual error (130, 141, 142, 143, 180) with the parts removed. " +
          "Someone else's upload is 404."
        : "Only the account that created the upload; 404 to others, as for none.",
      security: API_SECURITY,
      request: { params: idParams },
      parameters: [
        tusResumable,
        ...(method === "patch"
          ? [protocolHeader("Upload-Offset", "Where this chunk starts", true)]
          : []),
      ],
      responses: {
        ...(method === "head"
          ? {
            200: {
              description: "Its offset and length",
              headers: {
                ...keyedHeaders,
                "Upload-Offset": header("Bytes received", "integer"),
                "Upload-Length": header("The file's size", "integer"),
                "Cache-Control": header("no-store"),
              },
            },
          }
          : method === "patch"
          ? {
            200: {
              description: "The last chunk: the stored image's record",
              headers: keyedHeaders,
              content: {
                "application/json": {
                  schema: z.object({
                    status: z.literal(200),
                    success: z.literal(true),
                    data: z.object({}).passthrough(),
                  }),
                },
              },
            },
            204: {
              description: "Appended: the new offset",
              headers: {
                ...keyedHeaders,
                "Upload-Offset": header("Bytes received", "integer"),
              },
            },
          }
          : {
            204: {
              description: "Ended; its parts removed",
              headers: keyedHeaders,
            },
          }),
        ...keyedErrorResponses(
          160,
          162,
          404,
          ...(method === "patch"
            ? [130, 141, 142, 143, 161, 180, 415] as const
            : []),
        ),
      },
    } as never);
  }
}
