import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { z } from "@hono/zod-openapi";
import { ApiError } from "../../schemas/errors.ts";
import type { ScreenshotRequestSchema } from "../../schemas/screenshot.ts";
import type { AppDeps } from "../deps.ts";
import type { ImagePipeline } from "../image_pipeline.ts";
import {
  type AllowRule,
  isAllowedTarget,
  parseAllowList,
  resolveHost,
} from "./address_guard.ts";
import { presetById } from "./presets.ts";
import type { CaptureOptions } from "./screenshotter.ts";

/** A validated screenshot request (schema defaults applied), without the key. */
export type ScreenshotRequest = Omit<
  z.output<typeof ScreenshotRequestSchema>,
  "key"
>;

/** Only absolute http(s) URLs with a host; anything else is code 200. */
export function parseTargetUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ApiError(200, {
      details: [{ path: "url", message: "not an absolute URL" }],
    });
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ApiError(200, {
      details: [{
        path: "url",
        message: `scheme ${u.protocol} is not allowed; use http or https`,
      }],
    });
  }
  if (!u.hostname) {
    throw new ApiError(200, {
      details: [{ path: "url", message: "URL has no host" }],
    });
  }
  return u;
}

/** Refuses (210) a host that resolves to any address the guard would not connect to. */
export async function checkTarget(u: URL, rules: AllowRule[]): Promise<void> {
  let addrs: string[];
  try {
    addrs = await resolveHost(u.hostname);
  } catch {
    throw new ApiError(220, {
      details: [{ path: "url", message: `cannot resolve ${u.hostname}` }],
    });
  }
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  const bad = addrs.find((a) => !isAllowedTarget(a, port, rules));
  if (bad || addrs.length === 0) {
    throw new ApiError(210, {
      details: [{
        path: "url",
        message: "the host resolves to a non-public address",
      }],
    });
  }
}

/** Takes screenshots for the API: checks, captures, then stores or inlines the image. */
export class ScreenshotService {
  readonly #rules: AllowRule[];
  constructor(
    private readonly deps: AppDeps,
    private readonly pipeline: ImagePipeline,
  ) {
    this.#rules = parseAllowList(deps.config.SCREENSHOT_ALLOW_PRIVATE);
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
