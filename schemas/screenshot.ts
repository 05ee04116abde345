import { z } from "@hono/zod-openapi";
import { PRESET_IDS } from "../services/screenshots/presets.ts";

/** JSON body of POST /api/1/screenshot (SPEC.md 4.2). */
export const ScreenshotRequestSchema = z.object({
  key: z.string().optional().openapi({
    description: "API key, if not sent in a header",
  }),
  url: z.string().min(1).max(4096).openapi({ example: "https://example.com" }),
  preset: z.enum(PRESET_IDS).default("desktop-1080p").openapi({
    example: "desktop-1080p",
  }),
  format: z.enum(["png", "jpeg"]).default("png"),
  fullPage: z.boolean().default(false).openapi({
    description:
      "Capture the whole page, not just the viewport. Capped at 16384 CSS px tall and " +
      "16384 CSS px (and 16384 device px) wide, and at MAX_IMAGE_PIXELS device pixels " +
      "(the height is cut first); a larger page is captured from its top left corner.",
  }),
  noAds: z.boolean().default(false),
  noCookie: z.boolean().default(false),
  colorScheme: z.enum(["default", "light", "dark"]).default("default"),
  zoom: z.number().min(0.5).max(2).default(1).openapi({
    description:
      "Browser zoom, 0.5 to 2 (0.5, 0.75, 1, 1.25, 1.5, 2 in SPEC.md)",
    example: 1,
  }),
  share: z.boolean().default(true).openapi({
    description: "false: return a data URI and store nothing",
  }),
}).strict().openapi("ScreenshotRequest");

/** SPEC.md 2.4 screenshot result. */
export const ScreenshotResultSchema = z.object({
  shared: z.boolean(),
  id: z.string().optional(),
  url_viewer: z.string().url().optional(),
  url: z.string().url().optional(),
  display_url: z.string().openapi({
    description: "Image URL when shared, else data:image/<format>;base64,…",
    example: "https://img.example.com/Qm9vZ2xl.png",
  }),
  width: z.number().int().openapi({ example: 1920 }),
  height: z.number().int().openapi({ example: 1080 }),
  format: z.enum(["png", "jpeg"]),
}).openapi("ScreenshotResult");

/** One preset of GET /api/1/screenshot/presets. */
export const PresetSchema = z.object({
  id: z.string().openapi({ example: "iphone-14-pro" }),
  label: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  deviceScaleFactor: z.number(),
  isMobile: z.boolean(),
  hasTouch: z.boolean(),
  userAgent: z.string().optional(),
  default: z.boolean(),
}).openapi("Preset");
