import { ByteGate } from "./byte_gate.ts";

/**
 * A bounded number of jobs at once (image decodes: each takes all of libvips' threads and
 * up to hundreds of MB), with a bounded line of waiters. A job that finds the line full, or
 * waits longer than its bound, is refused at once with 250 / HTTP 503 and Retry-After, so a
 * flood of costly uploads queues neither memory nor minutes. A ByteGate in which every job
 * weighs one, its waiters let in at once.
 */
export class WorkSlots {
  readonly #gate: ByteGate;

  /**
   * `slots` jobs run at once; at most `queue` more wait for one. `what` names the work in
   * the refusal's detail (its `path`).
   */
  constructor(
    readonly slots: number,
    readonly queue: number,
    readonly what = "images",
  ) {
    this.#gate = new ByteGate(slots, queue, what, {
      refusal: `every worker for ${what} is busy; try again shortly`,
      nextTurn: false,
    });
  }

  /** Jobs running now. */
  get running(): number {
    return this.#gate.held;
  }

  /** Jobs waiting for a slot now. */
  get waiting(): number {
    return this.#gate.waiting;
  }

  /** Runs `job` in a slot, waiting at most `waitMs` for one. */
  async run<T>(job: () => Promise<T>, waitMs: number): Promise<T> {
    const leave = await this.#gate.enter(1, waitMs);
    try {
      return await job();
    } finally {
      leave();
    }
  }
}
