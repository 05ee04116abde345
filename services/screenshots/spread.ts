import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "./screenshotter.ts";
import { type ChromiumScreenshotter, NoBrowser } from "./chromium.ts";

/**
 * Captures spread over several browser services (BROWSER_WS_ENDPOINT lists them), one
 * pool each. A capture goes to the usable pool with the fewest captures; a pool whose
 * browser cannot be had (it died, or is backing off after failed connects) answers
 * NoBrowser before anything of the capture ran, so the capture is given to the next
 * pool instead of failing. A dead service is thus skipped as soon as one connect to it
 * fails (connects are refused at once, or time out within 10 s) and tried again when its
 * backoff (at most 10 s) is over. Captures already running on a service that dies get
 * that pool's answer (240 or 220), as with one browser.
 */
export class SpreadScreenshotter implements Screenshotter {
  #next = 0;
  constructor(private readonly pools: ChromiumScreenshotter[]) {
    if (!pools.length) throw new Error("no browser pool to spread over");
  }

  /** The pools in the order to try them: usable first, least loaded first, in turns. */
  #order(): ChromiumScreenshotter[] {
    // Turns break ties, so two idle services share the work.
    const start = this.#next++ % this.pools.length;
    const turn = [...this.pools.slice(start), ...this.pools.slice(0, start)];
    return turn.map((p, i) => ({ p, i })).sort((a, b) =>
      Number(b.p.usable) - Number(a.p.usable) || a.p.load - b.p.load ||
      a.i - b.i
    ).map(({ p }) => p);
  }

  async capture(opts: CaptureOptions): Promise<CaptureResult> {
    let last: unknown;
    for (const pool of this.#order()) {
      try {
        return await pool.capture(opts);
      } catch (e) {
        if (!(e instanceof NoBrowser)) throw e;
        last = e;
      }
    }
    throw last;
  }

  /** Ready when any of the services is. */
  queued(): number {
    return this.pools.reduce((n, p) => n + (p.queued?.() ?? 0), 0);
  }

  async ready(timeoutMs: number): Promise<boolean> {
    const answers = await Promise.all(
      this.pools.map((p) => p.ready(timeoutMs).catch(() => false)),
    );
    return answers.some(Boolean);
  }

  /** Starts each pool's browser (a failed one is logged by its pool and tried later). */
  async start(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.start().catch(() => {})));
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.close()));
  }
}
