import { z } from "@hono/zod-openapi";
import { PRESET_IDS } from "./presets.ts";

/** Output formats of a capture; pdf is a document (never stored on the image host). */
export const SCREENSHOT_FORMATS = ["png", "jpeg", "webp", "pdf"] as const;

/** What a capture waits for before it is taken (puppeteer's lifecycle events). */
export const WAIT_UNTIL = [
  "load",
  "domcontentloaded",
  "networkidle0",
  "networkidle2",
] as const;

/** Longest `delay`, ms; `timeout` is bounded by SCREENSHOT_TIMEOUT_MS in the service. */
export const MAX_DELAY_MS = 10_000;
/** Bytes of `css` and of `js`. */
export const MAX_INJECT_BYTES = 64 * 1024;
/** Longest cache lifetime, seconds. */
export const MAX_CACHE_S = 30 * 24 * 3600;

const selector = z.string().min(1).max(1000);
const headerName = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
/** Headers a caller may not set: the browser, the guard or cookies own them. */
const RESERVED_HEADERS =
  /^(host|cookie|content-length|connection|keep-alive|proxy-.*|transfer-encoding|upgrade|te|trailer|expect)$/i;

/** JSON body of POST /api/1/screenshot (SPEC.md 4.2, and ScreenshotOne's options). */
/** Every field of a screenshot request (the checks across fields are screenshotRules). */
const ScreenshotFields = z.object({
  key: z.string().optional().openapi({
    description:
      "API key, when none is sent in a header or the query (the security schemes)",
  }),
  url: z.string().min(1).max(4096).openapi({ example: "https://example.com" }),
  preset: z.enum(PRESET_IDS).optional().openapi({
    description:
      "A device of GET /api/1/screenshot/presets; desktop-1080p when neither `preset` " +
      "nor `viewport` is given",
    example: "desktop-1080p",
  }),
  viewport: z.object({
    width: z.number().int().min(100).max(3840),
    height: z.number().int().min(100).max(10_000),
    deviceScaleFactor: z.number().min(1).max(3).default(1),
    isMobile: z.boolean().default(false),
    hasTouch: z.boolean().default(false),
  }).strict().optional().openapi({
    description: "A viewport of your own instead of a `preset` (not both)",
    example: { width: 1366, height: 768, deviceScaleFactor: 2 },
  }),
  format: z.enum(SCREENSHOT_FORMATS).default("png").openapi({
    description:
      "png, jpeg, webp, or pdf (a document: only with `share` false, so it comes back " +
      "inline or as the raw body; `fullPage` false prints the first page only)",
  }),
  quality: z.number().int().min(1).max(100).optional().openapi({
    description: "jpeg and webp only: 1-100 (default 85)",
  }),
  pdfPaper: z.enum(["A4", "Letter"]).default("A4").openapi({
    description: "pdf only: the paper size",
  }),
  fullPage: z.boolean().default(false).openapi({
    description:
      "Capture the whole page, not just the viewport. Capped at 16384 CSS px tall and " +
      "16384 CSS px (and 16384 device px) wide, and at MAX_IMAGE_PIXELS device pixels " +
      "(the height is cut first); a larger page is captured from its top left corner.",
  }),
  selector: selector.optional().openapi({
    description:
      "Capture only the first element this CSS selector matches (222 when none does)",
    example: "main article",
  }),
  clip: z.object({
    x: z.number().min(0).max(16_384),
    y: z.number().min(0).max(100_000),
    width: z.number().min(1).max(16_384),
    height: z.number().min(1).max(16_384),
  }).strict().optional().openapi({
    description:
      "Capture this rectangle of the page, in CSS pixels from its top left corner",
    example: { x: 0, y: 0, width: 800, height: 600 },
  }),
  waitUntil: z.enum(WAIT_UNTIL).default("load").openapi({
    description:
      "When the page counts as loaded: `load` (default), `domcontentloaded`, or network " +
      "idle with no (`networkidle0`) or at most two (`networkidle2`) requests for 500 ms",
  }),
  waitForSelector: selector.optional().openapi({
    description:
      "Then wait until an element matching this selector exists (222 if it never does " +
      "within the timeout)",
  }),
  delay: z.number().int().min(0).max(MAX_DELAY_MS).default(0).openapi({
    description: `Then wait this many ms more (at most ${MAX_DELAY_MS})`,
  }),
  timeout: z.number().int().min(1000).max(600_000).optional().openapi({
    description:
      "The whole capture's deadline in ms, waiting for a browser included; at most " +
      "the server's SCREENSHOT_TIMEOUT_MS (160 above it), which is also the default",
  }),
  noAds: z.boolean().default(false).openapi({
    description:
      "Block and hide ads: AdGuard Base (EasyList + AdGuard English, shipped with " +
      "the service) through a filter engine decides every request and hides ad " +
      "containers; a blocked ad's empty wrapper collapses",
  }),
  blockTrackers: z.boolean().default(false).openapi({
    description:
      "Block requests to analytics and tracking hosts (noAds blocks ads and these)",
  }),
  noCookie: z.boolean().default(false).openapi({
    description:
      "Hide consent banners: known consent managers, AdGuard's Cookie Notices " +
      "list (shipped with the service), and fixed, sticky or dialog elements " +
      "about cookies that hold an accept or reject control",
  }),
  hideSelectors: z.array(selector).max(50).optional().openapi({
    description: "Elements to hide (visibility: hidden) before the capture",
    example: [".chat-widget", "#newsletter"],
  }),
  css: z.string().max(MAX_INJECT_BYTES).optional().openapi({
    description: "A style sheet added to the page before the capture",
  }),
  js: z.string().max(MAX_INJECT_BYTES).optional().openapi({
    description:
      "A script run in the page before the capture (it may return a promise; its " +
      "requests pass the same network guard); if it throws: 160",
  }),
  colorScheme: z.enum(["default", "light", "dark"]).default("default"),
  reducedMotion: z.boolean().default(false).openapi({
    description: "Emulate prefers-reduced-motion: reduce",
  }),
  zoom: z.number().min(0.5).max(2).default(1).openapi({
    description:
      "Browser zoom, 0.5 to 2 (0.5, 0.75, 1, 1.25, 1.5, 2 in SPEC.md)",
    example: 1,
  }),
  userAgent: z.string().min(1).max(512).refine(
    // deno-lint-ignore no-control-regex -- control characters are what it looks for
    (v) => !/[\x00-\x1f\x7f]/.test(v),
    { message: "no line breaks or other control characters" },
  ).optional().openapi({
    description:
      "User-Agent instead of the preset's (one line: no control characters)",
  }),
  headers: z.record(
    z.string().regex(headerName).refine((h) => !RESERVED_HEADERS.test(h), {
      message: "this header cannot be set",
    }),
    z.string().max(4096).refine((v) => !/[\r\n\0]/.test(v), {
      message: "no line breaks",
    }),
  ).refine((h) => Object.keys(h).length <= 20, {
    message: "at most 20 headers",
  }).optional().openapi({
    description:
      "Extra request headers, sent only to the page's own origin (never to third " +
      "parties); Host, Cookie, Proxy-* and hop-by-hop headers are refused",
    example: { "Accept-Language": "de-DE" },
  }),
  cookies: z.array(
    z.object({
      name: z.string().min(1).max(256).regex(/^[^\s;=,]+$/),
      value: z.string().max(4096).regex(/^[^;\r\n]*$/),
    }).strict(),
  ).max(50).optional().openapi({
    description: "Cookies set for the target URL's host only",
    example: [{ name: "consent", value: "yes" }],
  }),
  cache: z.number().int().min(0).max(MAX_CACHE_S).default(0).openapi({
    description:
      "Seconds a result may be reused: the same request (same options) by the same " +
      "user within this time answers the stored result, `cached: true`, without a " +
      "capture. 0: always capture.",
  }),
  response: z.enum(["json", "binary"]).default("json").openapi({
    description:
      "With `share` false: `binary` answers the raw image (or PDF) with its content " +
      "type instead of the JSON envelope (`Accept: image/*` or `application/pdf` does " +
      "the same); errors stay JSON",
  }),
  share: z.boolean().default(true).openapi({
    description: "false: return the image inline (or raw) and store nothing",
  }),
  webhook_url: z.string().url().max(2048).optional().openapi({
    description:
      "Where to POST the job when it ends (implies `async`): `{type, job}` signed with " +
      "your account's secret in X-Webhook-Signature (`t=<unix>,v1=<hex HMAC-SHA256 of " +
      '"<t>.<body>">`; the secret is on /account and at GET /api/1/account/webhook). ' +
      "A public address only, checked now and at each try; redirects are not " +
      "followed; not answered 2xx, it is tried again with backoff (WEBHOOK_RETRY_S), " +
      "6 tries in all, each listed in the job's `webhook.deliveries`.",
    example: "https://example.com/hooks/screenshots",
  }),
  async: z.boolean().default(false).openapi({
    description:
      "true: answer 202 at once with a job (`data.job`) and capture in the background; " +
      "follow it at `GET /api/1/screenshot/jobs/{id}`. The capture is stored as any " +
      "shared one (share must be true). A job survives its instance: a killed one's " +
      "jobs are run by another (or after restart).",
  }),
});

type ScreenshotFieldValues = z.output<typeof ScreenshotFields>;

/** The checks across a request's fields. */
function screenshotRules(
  r: ScreenshotFieldValues,
  ctx: z.core.$RefinementCtx<ScreenshotFieldValues>,
) {
  const bad = (path: string, message: string) =>
    ctx.addIssue({ code: "custom", path: [path], message });
  if (r.preset && r.viewport) {
    bad("viewport", "give preset or viewport, not both");
  }
  if (r.selector && r.clip) bad("clip", "give selector or clip, not both");
  if (r.quality !== undefined && r.format !== "jpeg" && r.format !== "webp") {
    bad("quality", "only jpeg and webp have a quality");
  }
  if (r.format === "pdf" && r.share) {
    bad("share", "a pdf is not an image: send share false");
  }
  if (r.format === "pdf" && (r.selector || r.clip)) {
    bad("format", "a pdf prints the page: no selector or clip");
  }
  if (r.response === "binary" && r.share) {
    bad("response", "binary answers are for share false");
  }
  if (r.async && !r.share) {
    bad("async", "an asynchronous capture is stored: share must be true");
  }
  if (r.webhook_url && !r.share) {
    bad(
      "webhook_url",
      "a capture with a webhook is stored: share must be true",
    );
  }
}

/** POST /api/1/screenshot's body. */
export const ScreenshotRequestSchema = ScreenshotFields.strict().superRefine(
  screenshotRules,
).openapi("ScreenshotRequest", {
  // What "Try it out" starts from: a capture that works as it is (no `key: "string"`).
  example: { url: "https://example.com", preset: "desktop-1080p" },
});

/** What was captured: the page as the browser saw it. */
export const ScreenshotMetadataSchema = z.object({
  title: z.string().openapi({ example: "Example Domain" }),
  url: z.string().openapi({
    description: "The final URL, after redirects",
    example: "https://example.com/",
  }),
  status: z.number().int().nullable().openapi({
    description: "HTTP status of the final document (null: none was seen)",
    example: 200,
  }),
  width: z.number().int().openapi({ example: 1920 }),
  height: z.number().int().openapi({ example: 1080 }),
  bytes: z.number().int().openapi({ example: 118734 }),
}).openapi("ScreenshotMetadata");

/** SPEC.md 2.4 screenshot result. */
export const ScreenshotResultSchema = z.object({
  shared: z.boolean(),
  id: z.string().optional(),
  url_viewer: z.string().url().optional(),
  url: z.string().url().optional(),
  display_url: z.string().openapi({
    description:
      "Image URL when shared, else data:image/<format>;base64,… (data:application/pdf " +
      "for a pdf)",
    example: "https://img.example.com/Qm9vZ2xl.png",
  }),
  width: z.number().int().openapi({ example: 1920 }),
  height: z.number().int().openapi({ example: 1080 }),
  format: z.enum(SCREENSHOT_FORMATS),
  cached: z.boolean().openapi({
    description: "true when a stored result was reused (`cache`)",
  }),
  metadata: ScreenshotMetadataSchema,
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

/**
 * POST /api/1/screenshot/file's body: the same fields but `share` and `response`, which
 * that operation fixes (nothing stored, the bytes answered).
 */
export const ScreenshotFileRequestSchema = ScreenshotFields.omit({
  share: true,
  response: true,
  async: true,
  webhook_url: true,
}).strict().transform((r) => ({
  ...r,
  share: false as const,
  response: "binary" as const,
  async: false as const,
})).superRefine(screenshotRules).openapi("ScreenshotFileRequest", {
  example: { url: "https://example.com", format: "png" },
});
