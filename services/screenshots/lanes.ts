import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "./screenshotter.ts";

/**
 * Two browsers, one for heavy captures and one for the rest (issue #50's fairness). In
 * one Chromium, a flood of large full-page PNGs slowed another account's light captures
 * 9–17× at p95 although each had its own slot: the pages share the browser process, its
 * GPU/compositor process and its IPC, and a 40 MP raster and encode holds them for
 * seconds. The same heavy work in a second Chromium left the light captures' p95 near
 * where it was alone. So heavy captures (a full page, a PDF, or more device pixels than
 * `heavyPixels`) go to their own browser; everything else never waits behind them.
 */

/** Whether a capture belongs in the heavy lane. */
export function isHeavy(opts: CaptureOptions, heavyPixels: number): boolean {
  if (opts.fullPage || opts.format === "pdf") return true;
  const v = opts.viewport;
  const area = opts.clip
    ? opts.clip.width * opts.clip.height
    : v.width * v.height;
  return area * v.deviceScaleFactor ** 2 > heavyPixels;
}

/** Anything that is started before its first capture (a browser pool). */
interface Startable extends Screenshotter {
  start?(): Promise<void>;
}

/** A light and a heavy screenshotter behind one. */
export class LaneScreenshotter implements Screenshotter {
  constructor(
    private readonly light: Startable,
    private readonly heavy: Startable,
    private readonly heavyPixels: number,
  ) {}

  capture(opts: CaptureOptions): Promise<CaptureResult> {
    return (isHeavy(opts, this.heavyPixels) ? this.heavy : this.light)
      .capture(opts);
  }

  queued(): number {
    return (this.light.queued?.() ?? 0) + (this.heavy.queued?.() ?? 0);
  }

  /** Ready when both lanes are: a capture of either kind can be taken. */
  async ready(timeoutMs: number): Promise<boolean> {
    const [a, b] = await Promise.all([
      this.light.ready(timeoutMs).catch(() => false),
      this.heavy.ready(timeoutMs).catch(() => false),
    ]);
    return a && b;
  }

  /** Starts both browsers (a failed one is logged by its pool and tried later). */
  async start(): Promise<void> {
    await Promise.all([
      this.light.start?.().catch(() => {}),
      this.heavy.start?.().catch(() => {}),
    ]);
  }

  async close(): Promise<void> {
    await Promise.all([this.light.close(), this.heavy.close()]);
  }
}
