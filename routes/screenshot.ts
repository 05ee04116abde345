import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "../services/deps.ts";
import {
  AUTH_ERRORS,
  errorResponses,
  okResponse,
} from "../schemas/envelope.ts";
import {
  PresetSchema,
  ScreenshotRequestSchema,
  ScreenshotResultSchema,
} from "../schemas/screenshot.ts";
import type { ScreenshotService } from "../services/screenshots/screenshot_service.ts";
import { PRESETS } from "../services/screenshots/presets.ts";
import { API_SECURITY, API_SECURITY_OR_BODY_KEY } from "./upload.ts";

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
    200: okResponse(
      "The screenshot, stored and shared or inline",
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
      },
      { rateLimited: true },
    ),
    ...errorResponses(
      ...AUTH_ERRORS,
      143,
      160,
      200,
      210,
      220,
      230,
      240,
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

/** Registers the screenshot API. */
export function registerScreenshotRoutes(
  app: App,
  _deps: AppDeps,
  service: ScreenshotService,
) {
  app.openapi(postScreenshotRoute, async (c) => {
    const { key: _key, ...req } = c.req.valid("json");
    const data = await service.take(c.get("userId"), req);
    return c.json({ status: 200 as const, success: true as const, data }, 200);
  });
  app.openapi(getPresetsRoute, (c) =>
    c.json({
      status: 200 as const,
      success: true as const,
      data: PRESETS.map((p, i) => ({ ...p, default: i === 0 })),
    }, 200));
}
