/**
 * services/screenshots/ — website screenshots: the request's service (this file:
 * options, pixel budget, cache, share or inline), the Screenshotter interface
 * (screenshotter.ts), the browser pool (chromium.ts) with its fair slots (fair_slots.ts),
 * several browser services (spread.ts), the browser itself (chromium_launch.ts, reap.ts,
 * install.ts), one capture's steps (capture_steps.ts, page_load.ts, page_cleanup.ts,
 * full_page.ts), ad, tracker and cookie-notice lists (block_lists.ts, filter_engine.ts)
 * and the shared results cache (shot_cache.ts).
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { z } from "@hono/zod-openapi";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import type {
  ScreenshotRequestSchema,
  ScreenshotResultSchema,
} from "../../schemas/screenshot.ts";
import type { ImagePipeline } from "../images/pipeline.ts";
import { type AllowRule, allowRulesOf } from "../../schemas/allow_list.ts";
import { checkTarget, parseTargetUrl } from "../net/target.ts";
import { presetById, PRESETS } from "../../schemas/presets.ts";
import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "./screenshotter.ts";
import type { Config } from "../../schemas/config.ts";
import type { Database } from "../db/database.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { requestHash, ShotCache } from "./shot_cache.ts";
import {
  mkdirScratch,
  removeScratch,
  writeScratch,
} from "../runtime/scratch_files.ts";

/** A validated screenshot request (schema defaults applied), without the key. */
export type ScreenshotRequest = Omit<
  z.output<typeof ScreenshotRequestSchema>,
  "key"
>;

/** What a screenshot request answers: the result, and the raw bytes for a binary answer. */
export interface ScreenshotAnswer {
  result: ScreenshotResult;
  bytes?: Uint8Array;
  contentType: string;
}

/** The JSON result of a screenshot (SPEC.md 2.4 plus `cached` and `metadata`). */
export type ScreenshotResult = z.output<typeof ScreenshotResultSchema>;

const MIME = {
  png: "image/png",
  jpeg: "image/jpeg",
  webp: "image/webp",
  pdf: "application/pdf",
} as const;

/** What the screenshot service is given of the app's dependencies. */
export interface ScreenshotServiceDeps {
  config: Config;
  database: Database;
  clock: Clock;
  log: Logger;
  screenshotter?: Screenshotter;
  metrics?: Metrics;
}

/**
 * Takes screenshots for the API: checks, reuses a cached result or captures, then stores
 * or inlines the image.
 */
export class ScreenshotService {
  readonly #rules: AllowRule[];
  readonly #cache: ShotCache;
  constructor(
    private readonly deps: ScreenshotServiceDeps,
    private readonly pipeline: ImagePipeline,
  ) {
    this.#rules = allowRulesOf(deps.config);
    this.#cache = new ShotCache(deps.database.db, deps.clock);
  }

  /**
   * One capture for `userId`. An aborted `signal` (a cancelled job) stops it in line or
   * in the browser, and before anything is stored; it rejects with the signal's reason.
   */
  async take(
    userId: string,
    req: ScreenshotRequest,
    signal?: AbortSignal,
  ): Promise<ScreenshotAnswer> {
    const target = parseTargetUrl(req.url);
    const opts = { ...this.#options(req, target), owner: userId, signal };
    const hash = req.cache > 0 ? requestHash({ ...req, url: target.href }) : "";
    if (hash) {
      const hit = await this.#cache.get<ScreenshotResult>(userId, hash);
      if (hit) {
        const display = hit.result.shared
          ? hit.result.url!
          : dataUri(req.format, hit.body!);
        return {
          result: { ...hit.result, display_url: display, cached: true },
          bytes: hit.body,
          contentType: MIME[req.format],
        };
      }
    }
    await checkTarget(target, this.#rules);
    const shooter = this.deps.screenshotter;
    if (!shooter) {
      throw new ApiError(240, {
        headers: { "Retry-After": "30" },
        details: [{ message: "no browser is available on this server" }],
      });
    }
    // The month's captures, counted before the browser is used (180 past the quota);
    // a capture that fails is given back.
    await this.pipeline.quotas.countScreenshot(userId);
    let shot;
    const began = performance.now();
    const took = () => (performance.now() - began) / 1000;
    try {
      shot = await shooter.capture(opts);
      signal?.throwIfAborted();
    } catch (e) {
      this.deps.metrics?.capture(
        signal?.aborted
          ? "cancelled"
          : e instanceof ApiError
          ? String(e.code)
          : "500",
        took(),
      );
      await this.pipeline.quotas.uncountScreenshot(userId);
      throw e;
    }
    this.deps.metrics?.capture("ok", took());
    const answer = req.share
      ? await this.#store(userId, req, target, shot)
      : this.#inline(req, shot);
    if (hash) {
      await this.#cache.put(userId, hash, req.cache, {
        result: { ...answer.result, display_url: undefined },
        imageId: answer.result.id,
        body: req.share ? undefined : shot.bytes,
      }).catch((e) =>
        // A result that cannot be remembered is still a result.
        this.deps.log.error({
          msg: "screenshot cache write failed",
          error: String(e),
        })
      );
    }
    return answer;
  }

  /** The capture's options: the preset or the caller's viewport, bounds the schema cannot know. */
  #options(req: ScreenshotRequest, target: URL): CaptureOptions {
    const cap = this.deps.config.SCREENSHOT_TIMEOUT_MS;
    if (req.timeout !== undefined && req.timeout > cap) {
      throw invalidField(
        "timeout",
        `at most ${cap} ms on this server (SCREENSHOT_TIMEOUT_MS)`,
      );
    }
    const preset = presetById(req.preset ?? PRESETS[0].id);
    const viewport = req.viewport ?? preset;
    checkPixelBudget(
      viewport,
      req.clip,
      this.deps.config.SCREENSHOT_MAX_PIXELS,
    );
    return {
      url: target.href,
      viewport,
      userAgent: req.userAgent ?? (req.viewport ? undefined : preset.userAgent),
      format: req.format,
      quality: req.quality,
      pdfPaper: req.pdfPaper,
      fullPage: req.fullPage,
      selector: req.selector,
      clip: req.clip,
      waitUntil: req.waitUntil,
      waitForSelector: req.waitForSelector,
      delay: req.delay,
      timeoutMs: req.timeout,
      noAds: req.noAds,
      blockTrackers: req.blockTrackers,
      noCookie: req.noCookie,
      hideSelectors: req.hideSelectors,
      css: req.css,
      js: req.js,
      colorScheme: req.colorScheme,
      reducedMotion: req.reducedMotion,
      zoom: req.zoom,
      headers: req.headers,
      cookies: req.cookies,
    };
  }

  #inline(req: ScreenshotRequest, shot: CaptureResult): ScreenshotAnswer {
    return {
      result: {
        shared: false,
        display_url: dataUri(req.format, shot.bytes),
        ...summary(req, shot),
      },
      bytes: shot.bytes,
      contentType: MIME[req.format],
    };
  }

  async #store(
    userId: string,
    req: ScreenshotRequest,
    target: URL,
    shot: CaptureResult,
  ): Promise<ScreenshotAnswer> {
    await mkdirScratch(this.pipeline.tmpDir);
    const path = join(this.pipeline.tmpDir, `shot-${crypto.randomUUID()}`);
    await writeScratch(path, shot.bytes);
    try {
      const ext = req.format === "jpeg" ? "jpg" : req.format;
      const rec = await this.pipeline.ingest(userId, {
        path,
        filename: `${target.hostname}.${ext}`,
        size: shot.bytes.length,
        sha256: createHash("sha256").update(shot.bytes).digest("hex"),
      }, { source: "screenshot" });
      return {
        result: {
          shared: true,
          id: rec.id,
          url_viewer: rec.url_viewer,
          url: rec.url,
          display_url: rec.url,
          ...summary(req, shot),
        },
        contentType: MIME[req.format],
      };
    } finally {
      await removeScratch(path).catch(() => {});
    }
  }
}

/** The parts of a result every answer has. */
function summary(req: ScreenshotRequest, shot: CaptureResult) {
  return {
    width: shot.width,
    height: shot.height,
    format: req.format,
    cached: false,
    metadata: {
      title: shot.title,
      url: shot.url,
      status: shot.status,
      width: shot.width,
      height: shot.height,
      bytes: shot.bytes.length,
    },
  };
}

/** An inline result: the capture's bytes as a data URI of their type. */
function dataUri(format: keyof typeof MIME, bytes: Uint8Array): string {
  return `data:${MIME[format]};base64,${
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(
      "base64",
    )
  }`;
}

/**
 * 160 before anything is launched for a capture over SCREENSHOT_MAX_PIXELS device pixels
 * (width × height × pixel ratio², of the viewport and of a clip): one 3840×10000 capture at
 * ratio 3 (346 M) timed out and held its slot for the whole timeout. A full page is cut to
 * the same budget as it is measured (ChromiumOptions.maxPixels).
 */
export function checkPixelBudget(
  viewport: { width: number; height: number; deviceScaleFactor?: number },
  clip: { width: number; height: number } | undefined,
  budget: number,
): void {
  const dpr = viewport.deviceScaleFactor ?? 1;
  const over = (w: number, h: number) => w * h * dpr * dpr > budget;
  const path = over(viewport.width, viewport.height)
    ? "viewport"
    : clip && over(clip.width, clip.height)
    ? "clip"
    : undefined;
  if (!path) return;
  throw new ApiError(160, {
    details: [{
      path,
      message:
        `over ${budget} device pixels (width × height × deviceScaleFactor²; ` +
        `SCREENSHOT_MAX_PIXELS)`,
    }],
  });
}
