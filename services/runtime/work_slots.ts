import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../schemas/errors.ts";

/**
 * A bounded number of jobs at once (image decodes: each takes all of libvips' threads and
 * up to hundreds of MB), with a bounded line of waiters. A job that finds the line full, or
 * waits longer than its bound, is refused at once with 250 / HTTP 503 and Retry-After, so a
 * flood of costly uploads queues neither memory nor minutes.
 */
export class WorkSlots {
  #busy = 0;
  #waiting: (() => void)[] = [];

  /**
   * `slots` jobs run at once; at most `queue` more wait for one. `what` names the work in
   * the refusal's detail (its `path`).
   */
  constructor(
    readonly slots: number,
    readonly queue: number,
    readonly what = "images",
  ) {}

  /** Jobs running now. */
  get running(): number {
    return this.#busy;
  }

  /** Jobs waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `job` in a slot, waiting at most `waitMs` for one. */
  async run<T>(job: () => Promise<T>, waitMs: number): Promise<T> {
    await this.#acquire(waitMs);
    try {
      return await job();
    } finally {
      this.#release();
    }
  }

  #acquire(waitMs: number): Promise<void> {
    if (this.#busy < this.slots) {
      this.#busy++;
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.queue) {
      return Promise.reject(busy(this.what));
    }
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        this.#busy++;
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiting = this.#waiting.filter((w) => w !== wake);
        reject(busy(this.what));
      }, waitMs);
      this.#waiting.push(wake);
    });
  }

  #release() {
    this.#busy--;
    this.#waiting.shift()?.();
  }
}

function busy(what: string): ApiError {
  return new ApiError(250, {
    headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
    details: [{
      path: what,
      message: `every worker for ${what} is busy; try again shortly`,
    }],
  });
}
