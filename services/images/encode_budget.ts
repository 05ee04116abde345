import { ApiError } from "../../schemas/errors.ts";
import type { ImageEngine } from "./engine.ts";

/**
 * Encoders libvips cannot stop. libvips ends a pipeline at its timeout only while it makes
 * pixels; AVIF (libheif/aom), mozjpeg's optimised scans and GIF's quantiser then take the
 * whole image in one call that nothing interrupts, so `timeout()` answers after the encode,
 * however long (issue #51: a 1600×1200 noise AVIF at effort 4 ran 18.8 s past a 2 s
 * timeout; a 12 MP mozjpeg 12.6 s). PNG and WebP stop at the timeout and need no plan.
 *
 * So an encode is never started unless its worst case fits: the effort is the highest one
 * (up to what was asked) whose cost on noise, the worst input, fits half the time left;
 * when even the cheapest does not fit, the variant is refused at once (143) instead of
 * running past its deadline.
 */
export type PlannedFormat = "avif" | "jpg" | "gif";

/** One encoder setting whose cost is measured (bench/encoder_cost_bench.ts). */
export interface EncoderSetting {
  format: PlannedFormat;
  /** AVIF: libheif effort 0–9. GIF: libimagequant effort 1–10. JPEG: 0 libjpeg-turbo, 1 mozjpeg. */
  effort: number;
  quality: number;
}

/** The settings the bench measures: every effort the plan may choose, at three qualities. */
export const ENCODER_SETTINGS: EncoderSetting[] = [
  ...[0, 1, 2, 3, 4].flatMap((effort) =>
    [50, 80, 100].map((quality) => ({
      format: "avif" as const,
      effort,
      quality,
    }))
  ),
  ...[0, 1].flatMap((effort) =>
    [80, 100].map((quality) => ({ format: "jpg" as const, effort, quality }))
  ),
  ...[1, 4, 7].map((effort) => ({
    format: "gif" as const,
    effort,
    quality: 100,
  })),
];

/**
 * Milliseconds per megapixel of noise, the slowest quality of each effort, the slower of two runs of
 * `deno task bench:encoders` on the 2-core box (2026-11-27; docs/benchmarks.md). Costs
 * grow steeply with effort: AVIF effort 4 is 12× effort 2 on noise (0.65 s/MP on a photo).
 */
export const ENCODE_COST_MS_PER_MP: Record<
  ImageEngine,
  Record<PlannedFormat, Record<number, number>>
> = {
  native: {
    avif: { 0: 581, 1: 846, 2: 1114, 3: 2232, 4: 12795 },
    jpg: { 0: 29, 1: 1180 },
    gif: { 1: 405, 4: 831, 7: 5592 },
  },
  wasm: {
    avif: { 0: 580, 1: 1875, 2: 2747, 3: 5876, 4: 39927 },
    jpg: { 0: 69, 1: 1350 },
    gif: { 1: 441, 4: 935, 7: 5763 },
  },
};

/** Share of the time left that an encode may plan to use; the rest is the margin. */
export const ENCODE_BUDGET_SHARE = 0.5;

/**
 * The worst-case cost of an effort: measured, or for an effort above the highest measured
 * (IMAGE_AVIF_EFFORT=6) that one's cost tripled per step, as AVIF's last steps grew.
 */
function costOf(
  engine: ImageEngine,
  format: PlannedFormat,
  effort: number,
): number {
  const table = ENCODE_COST_MS_PER_MP[engine][format];
  if (table[effort] !== undefined) return table[effort];
  const top = Math.max(...Object.keys(table).map(Number));
  return table[top] * 3 ** Math.max(0, effort - top);
}

/**
 * The effort to encode `pixels` (every frame's) in `format` with, within `budgetMs`: the
 * highest measured effort at most `ceiling` whose worst case fits, else undefined.
 */
export function plannedEffort(
  engine: ImageEngine,
  format: PlannedFormat,
  pixels: number,
  budgetMs: number,
  ceiling: number,
): number | undefined {
  const table = ENCODE_COST_MS_PER_MP[engine][format];
  const efforts = [
    ...new Set([ceiling, ...Object.keys(table).map(Number)]),
  ].filter((e) => e <= ceiling).sort((a, b) => b - a);
  const mp = pixels / 1e6;
  return efforts.find((e) => costOf(engine, format, e) * mp <= budgetMs);
}

/**
 * {@link plannedEffort} within the share of the time left, or the 143 that says which
 * size fits: the encode is refused before it starts rather than run past the deadline.
 */
export function effortWithin(
  engine: ImageEngine,
  format: PlannedFormat,
  pixels: number,
  msLeft: number,
  ceiling: number,
): number {
  const budget = msLeft * ENCODE_BUDGET_SHARE;
  const effort = plannedEffort(engine, format, pixels, budget, ceiling);
  if (effort !== undefined) return effort;
  const cheapest = Math.min(
    ...Object.keys(ENCODE_COST_MS_PER_MP[engine][format]).map(Number),
  );
  const fits = Math.floor(budget / costOf(engine, format, cheapest) * 1e6);
  throw new ApiError(143, {
    details: [{
      path: "w",
      message:
        `a ${format.toUpperCase()} of ${pixels} pixels cannot be encoded within IMAGE_TIMEOUT_MS; ask for at most about ${fits} pixels (a smaller w or h), or another format`,
    }],
  });
}

/**
 * The memory an AVIF encode takes in the WebAssembly engine, MB = base + per megapixel of
 * output: its heap grew by 37, 54, 87 and 135 MB for 640, 1024, 1536 and 2048 px from a
 * 2906×2179 photo at effort 1 (2026-11-27, issue #49), and never gives it back.
 */
export const WASM_AVIF_MB = { base: 26, perMp: 34.5 };

/**
 * The most output pixels one AVIF encode may have within `encodeMb` (IMAGE_ENCODE_MB):
 * by the wasm engine's cost; unset, 64 MB in wasm and no bound natively.
 */
export function avifMaxPixels(
  engine: ImageEngine,
  encodeMb: number | undefined,
): number {
  const mb = encodeMb ?? (engine === "wasm" ? 64 : undefined);
  if (mb === undefined) return Infinity;
  return Math.max(
    0,
    Math.floor((mb - WASM_AVIF_MB.base) / WASM_AVIF_MB.perMp * 1e6),
  );
}

/** 143 for an AVIF over {@link avifMaxPixels}, naming the size that fits. */
export function avifTooLarge(pixels: number, max: number): ApiError {
  return new ApiError(143, {
    details: [{
      path: "w",
      message:
        `an AVIF of ${pixels} pixels would take more memory than IMAGE_ENCODE_MB allows here; ask for at most ${max} pixels (a smaller w or h), or format=webp or format=auto`,
    }],
  });
}

/** Output pixels at most, for a box within the original (boxWithin) of w×h. */
export function boxPixels(
  box: { w?: number; h?: number },
  width: number,
  height: number,
): number {
  const w = box.w ?? (box.h ? Math.ceil(box.h * width / height) : width);
  const h = box.h ?? (box.w ? Math.ceil(box.w * height / width) : height);
  return w * h;
}
