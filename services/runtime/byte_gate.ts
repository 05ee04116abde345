import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../schemas/errors.ts";

/**
 * Admission by weight: at most `capacity` (bytes, or slots: WorkSlots counts each job as
 * one) of work in at once, the rest waiting their turn in arrival order. Where request
 * bodies live in memory (Deno Deploy), what an upload costs the process is several times
 * its body (the body, its stripped copy, the store's request, the engine's copies), and
 * glibc keeps the high-water mark as RSS long after: eight 5 MB uploads received at once
 * grew the heap by ~230 MB and it stayed there, where three at a time stayed ~60 MB over
 * idle (issue #49). So the body is not read until its bytes are admitted. A waiter past
 * the line's length, or past its wait, is refused with 250 / HTTP 503 and Retry-After,
 * never left hanging.
 */
export class ByteGate {
  #held = 0;
  readonly #line: { bytes: number; wake: () => void }[] = [];

  /**
   * `capacity` bytes at once; at most `queue` waiters. `what` names the work in the
   * refusal's detail (its `path`), `refusal` says why (its message). A waiter let in
   * starts at the next turn of the event loop unless `nextTurn` is false (see enter).
   */
  constructor(
    readonly capacity: number,
    readonly queue: number,
    readonly what = "memory",
    private readonly opts: { refusal?: string; nextTurn?: boolean } = {},
  ) {}

  /** Bytes admitted now. */
  get held(): number {
    return this.#held;
  }

  /** Waiters now. */
  get waiting(): number {
    return this.#line.length;
  }

  /**
   * Admits `bytes` (at most the capacity: a larger piece of work runs alone), waiting at
   * most `waitMs` behind earlier arrivals; resolves to the release, which is idempotent.
   */
  async enter(bytes: number, waitMs: number): Promise<() => void> {
    const n = Math.max(0, Math.min(bytes, this.capacity));
    if (this.#line.length === 0 && this.#held + n <= this.capacity) {
      this.#held += n;
    } else {
      if (this.#line.length >= this.queue) throw this.#busy();
      await new Promise<void>((resolve, reject) => {
        const entry = {
          bytes: n,
          wake: () => {
            clearTimeout(timer);
            // At the next turn of the event loop, not now: the collection that the
            // buffers just dropped asked for (collector.ts) runs first, so this body is
            // not read on top of the last one's garbage (four refused 40 MB bodies in a
            // row peaked ~15 MB lower).
            if (this.opts.nextTurn === false) resolve();
            else setTimeout(resolve, 0);
          },
        };
        const timer = setTimeout(() => {
          const at = this.#line.indexOf(entry);
          if (at < 0) return; // admitted meanwhile
          this.#line.splice(at, 1);
          // The head leaving may let the next ones in.
          this.#admit();
          reject(this.#busy());
        }, waitMs);
        this.#line.push(entry);
      });
    }
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.#held -= n;
      this.#admit();
    };
  }

  /** Lets in waiters from the head of the line while they fit. */
  #admit() {
    while (this.#line.length) {
      const head = this.#line[0];
      if (this.#held + head.bytes > this.capacity) return;
      this.#line.shift();
      this.#held += head.bytes;
      head.wake();
    }
  }

  #busy(): ApiError {
    return new ApiError(250, {
      headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
      details: [{
        path: this.what,
        message: this.opts.refusal ??
          "other uploads are being received into this instance's memory; try again shortly",
      }],
    });
  }
}
