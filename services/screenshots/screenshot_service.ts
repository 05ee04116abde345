import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { z } from "@hono/zod-openapi";
import { ApiError } from "../../schemas/errors.ts";
import type { ScreenshotRequestSchema } from "../../schemas/screenshot.ts";
import type { AppDeps } from "../deps.ts";
import type { ImagePipeline } from "../image_pipeline.ts";
import { type AllowRule, allowRulesOf } from "../../schemas/allow_list.ts";
import { checkTarget, parseTargetUrl } from "../net/target.ts";
import { presetById } from "./presets.ts";
import type { CaptureOptions } from "./screenshotter.ts";

/** A validated screenshot request (schema defaults applied), without the key. */
export type ScreenshotRequest = Omit<
  z.output<typeof ScreenshotRequestSchema>,
  "key"
>;

/** Takes screenshots for the API: checks, captures, then stores or inlines the image. */
export class ScreenshotService {
  readonly #rules: AllowRule[];
  constructor(
    private readonly deps: AppDeps,
    private readonly pipeline: ImagePipeline,
  ) {
    this.#rules = allowRulesOf(deps.config);
  }

  async take(userId: string, req: ScreenshotRequest) {
    const target = parseTargetUrl(req.url);
    await checkTarget(target, this.#rules);
    const shooter = this.deps.screenshotter;
    if (!shooter) {
      throw new ApiError(240, {
        headers: { "Retry-After": "30" },
        details: [{ message: "no browser is available on this server" }],
      });
    }
    const p = presetById(req.preset);
    const opts: CaptureOptions = {
      url: target.href,
      viewport: p,
      userAgent: p.userAgent,
      format: req.format,
      fullPage: req.fullPage,
      noAds: req.noAds,
      noCookie: req.noCookie,
      colorScheme: req.colorScheme,
      zoom: req.zoom,
    };
    const shot = await shooter.capture(opts);
    const base = { width: shot.width, height: shot.height, format: req.format };
    if (!req.share) {
      return {
        shared: false,
        display_url: `data:image/${req.format};base64,${
          encodeBase64(shot.bytes)
        }`,
        ...base,
      };
    }
    await Deno.mkdir(this.pipeline.tmpDir, { recursive: true });
    const path = join(this.pipeline.tmpDir, `shot-${crypto.randomUUID()}`);
    await Deno.writeFile(path, shot.bytes);
    try {
      const rec = await this.pipeline.ingest(userId, {
        path,
        filename: `${target.hostname}.${req.format === "jpeg" ? "jpg" : "png"}`,
        size: shot.bytes.length,
        sha256: createHash("sha256").update(shot.bytes).digest("hex"),
      }, { source: "screenshot" });
      return {
        shared: true,
        id: rec.id,
        url_viewer: rec.url_viewer,
        url: rec.url,
        display_url: rec.url,
        ...base,
      };
    } finally {
      await Deno.remove(path).catch(() => {});
    }
  }
}

function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(
    "base64",
  );
}
