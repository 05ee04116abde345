import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AUTH_ERRORS,
  errorResponses,
  header,
  okResponse,
} from "../schemas/envelope.ts";
import {
  PresetSchema,
  ScreenshotRequestSchema,
  ScreenshotResultSchema,
} from "../schemas/screenshot.ts";
import type { ScreenshotService } from "../services/screenshots/screenshot_service.ts";
import { PRESETS } from "../schemas/presets.ts";
import { API_SECURITY, API_SECURITY_OR_BODY_KEY } from "./upload.ts";

const rawBody = { schema: z.string().openapi({ format: "binary" }) };

/** A 200 that may also be the capture's raw bytes (`response` binary). */
function withRawBodies<T extends { content: object; headers: object }>(r: T) {
  return {
    ...r,
    headers: {
      ...r.headers,
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
      ...r.content,
      "image/png": rawBody,
      "image/jpeg": rawBody,
      "image/webp": rawBody,
      "application/pdf": rawBody,
    },
  };
}

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
    "false the image comes back as a data URI and nothing is stored.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: ScreenshotRequestSchema } },
    },
  },
  responses: {
    200: withRawBodies(okResponse(
      "The screenshot, stored and shared or inline; with `share` false and " +
        "`response` binary (or Accept: image/*, application/pdf) the raw bytes",
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
    )),
    ...errorResponses(
      ...AUTH_ERRORS,
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
    ),
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
    ...errorResponses(...AUTH_ERRORS),
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

/** Registers the screenshot API. */
export function registerScreenshotRoutes(
  app: App,
  _deps: AppDeps,
  service: ScreenshotService,
) {
  app.openapi(postScreenshotRoute, async (c) => {
    const { key: _key, ...req } = c.req.valid("json");
    const binary = !req.share &&
      (req.response === "binary" || wantsBytes(c.req.header("accept")));
    const answer = await service.take(c.get("userId"), req);
    if (binary && answer.bytes) {
      const m = answer.result.metadata;
      return c.body(answer.bytes as Uint8Array<ArrayBuffer>, 200, {
        "Content-Type": answer.contentType,
        "Cache-Control": "no-store",
        "X-Screenshot-Width": String(answer.result.width),
        "X-Screenshot-Height": String(answer.result.height),
        "X-Screenshot-Url": encodeURI(m.url),
        "X-Screenshot-Status": String(m.status ?? ""),
        "X-Screenshot-Cached": String(answer.result.cached),
      }) as never;
    }
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
