import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  acceptedBody,
  header,
  keyedErrorResponses,
  okResponse,
} from "../schemas/envelope.ts";
import {
  PresetSchema,
  ScreenshotFileRequestSchema,
  ScreenshotRequestSchema,
  ScreenshotResultSchema,
} from "../schemas/screenshot.ts";
import type { Context } from "hono";
import type {
  ScreenshotAnswer,
  ScreenshotService,
} from "../services/screenshots/screenshot_service.ts";
import { PRESETS } from "../schemas/presets.ts";
import { API_SECURITY, API_SECURITY_OR_BODY_KEY } from "./upload.ts";
import { acceptedJobResponse } from "./screenshot_jobs.ts";
import {
  jobRecords,
  type ScreenshotJobs,
} from "../services/screenshots/jobs.ts";
import { ApiError } from "../schemas/errors.ts";

const rawBody = { schema: z.string().openapi({ format: "binary" }) };

/** The capture's raw bytes as a 200 (POST /api/1/screenshot/file). */
function rawBodies<T extends { headers: object }>(r: T) {
  return {
    description:
      "The capture's bytes: PNG, JPEG, WebP or PDF, as `format` asked",
    headers: {
      ...r.headers,
      "Cache-Control": header("no-store"),
      "X-Screenshot-Width": header(
        "Binary answers: the image's width",
        "integer",
      ),
      "X-Screenshot-Height": header(
        "Binary answers: the image's height",
        "integer",
      ),
      "X-Screenshot-Url": header("Binary answers: the page's final URL"),
      "X-Screenshot-Status": header(
        "Binary answers: the HTTP status of the page's document",
      ),
      "X-Screenshot-Cached": header(
        "Binary answers: true when a cached result was reused",
      ),
    },
    content: {
      "image/png": rawBody,
      "image/jpeg": rawBody,
      "image/webp": rawBody,
      "application/pdf": rawBody,
    },
  };
}

/** Codes a capture may answer with besides AUTH_ERRORS. */
const CAPTURE_ERRORS = [
  143,
  160,
  200,
  210,
  220,
  222,
  230,
  240,
  413,
  415,
] as const;

/** POST /api/1/screenshot (SPEC.md 4.2). */
export const postScreenshotRoute = createRoute({
  method: "post",
  path: "/api/1/screenshot",
  operationId: "postScreenshot",
  tags: ["Screenshots"],
  summary: "Capture a web page",
  description:
    "Loads the page in a fresh, isolated browser context and captures it. Only public " +
    "addresses are reachable: every request the page makes is checked. With `share` " +
    "false the image comes back as a data URI and nothing is stored. For the bytes " +
    "themselves call `POST /api/1/screenshot/file`, whose answer is the file alone (a " +
    "generated client then types this operation's answer as JSON and that one's as a " +
    'Blob). Clients written before it may still send `response: "binary"` (or ' +
    "`Accept: image/*`) here with `share` false: they get the bytes as " +
    "`/api/1/screenshot/file` answers them.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: ScreenshotRequestSchema } },
    },
  },
  responses: {
    200: okResponse(
      "The screenshot, stored and shared, or inline as a data URI",
      ScreenshotResultSchema,
      {
        shared: true,
        id: "Qm9vZ2xlUw",
        url_viewer: "https://example.com/i/Qm9vZ2xlUw",
        url: "https://img.example.com/Qm9vZ2xlUw.png",
        display_url: "https://img.example.com/Qm9vZ2xlUw.png",
        width: 1920,
        height: 1080,
        format: "png",
        cached: false,
        metadata: {
          title: "Example Domain",
          url: "https://example.com/",
          status: 200,
          width: 1920,
          height: 1080,
          bytes: 118734,
        },
      },
      { rateLimited: true },
    ),
    202: acceptedJobResponse,
    ...keyedErrorResponses(...CAPTURE_ERRORS),
  },
});

/** POST /api/1/screenshot/file: a capture answered as its bytes, nothing stored. */
export const postScreenshotFileRoute = createRoute({
  method: "post",
  path: "/api/1/screenshot/file",
  operationId: "postScreenshotFile",
  tags: ["Screenshots"],
  summary: "Capture a web page, answered as the file",
  description:
    "The same capture as `POST /api/1/screenshot` with `share` false, answered as the " +
    "image's (or PDF's) bytes with its size and page in `X-Screenshot-*` headers. " +
    "Nothing is stored. Errors are the JSON envelope.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: ScreenshotFileRequestSchema } },
    },
  },
  responses: {
    200: rawBodies(
      okResponse("", ScreenshotResultSchema, {}, { rateLimited: true }),
    ),
    ...keyedErrorResponses(...CAPTURE_ERRORS),
  },
});

/** GET /api/1/screenshot/presets: the viewport presets. */
export const getPresetsRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/presets",
  operationId: "getPresets",
  tags: ["Screenshots"],
  summary: "List viewport presets",
  description:
    "The devices a screenshot can emulate (`preset` of a screenshot request): viewport, " +
    "pixel ratio, mobile and touch, user agent.",
  security: API_SECURITY,
  responses: {
    200: okResponse(
      "Every preset; `default` marks the one used when none is given",
      z.array(PresetSchema),
      PRESETS.slice(0, 2).map((p, i) => ({ ...p, default: i === 0 })),
      { rateLimited: true },
    ),
    ...keyedErrorResponses(),
  },
});

/**
 * True when the Accept header's first choice is an image or a PDF (the raw answer of a
 * share-false screenshot) rather than JSON.
 */
export function wantsBytes(accept: string | undefined): boolean {
  const first = accept?.split(",")[0]?.split(";")[0]?.trim().toLowerCase();
  return !!first && (first.startsWith("image/") || first === "application/pdf");
}

/** A capture's bytes with their size and page in headers; never cached. */
function fileAnswer(c: Context, answer: ScreenshotAnswer): Response {
  const m = answer.result.metadata;
  return c.body(answer.bytes as Uint8Array<ArrayBuffer>, 200, {
    "Content-Type": answer.contentType,
    "Cache-Control": "no-store",
    "X-Screenshot-Width": String(answer.result.width),
    "X-Screenshot-Height": String(answer.result.height),
    "X-Screenshot-Url": encodeURI(m.url),
    "X-Screenshot-Status": String(m.status ?? ""),
    "X-Screenshot-Cached": String(answer.result.cached),
  });
}

/** Registers the screenshot API. */
export function registerScreenshotRoutes(
  app: App,
  deps: AppDeps,
  service: ScreenshotService,
  jobs: ScreenshotJobs,
) {
  app.openapi(postScreenshotFileRoute, async (c) => {
    const { key: _key, ...req } = c.req.valid("json");
    return fileAnswer(c, await service.take(c.get("userId"), req)) as never;
  });
  app.openapi(postScreenshotRoute, async (c) => {
    const { key: _key, ...req } = c.req.valid("json");
    if (req.async || req.webhook_url) {
      // Without a browser nothing would ever run it: refused now, as a capture is.
      if (!deps.screenshotter) throw new ApiError(240);
      const row = await jobs.enqueue(c.get("userId"), req);
      const [job] = await jobRecords(deps.database.db, deps.config, [row]);
      return c.json(acceptedBody({ job }), 202) as never;
    }
    const binary = !req.share &&
      (req.response === "binary" || wantsBytes(c.req.header("accept")));
    const answer = await service.take(c.get("userId"), req);
    if (binary && answer.bytes) return fileAnswer(c, answer) as never;
    return c.json(
      { status: 200 as const, success: true as const, data: answer.result },
      200,
    );
  });
  app.openapi(getPresetsRoute, (c) =>
    c.json({
      status: 200 as const,
      success: true as const,
      data: PRESETS.map((p, i) => ({ ...p, default: i === 0 })),
    }, 200));
}
