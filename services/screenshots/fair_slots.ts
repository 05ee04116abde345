import { ApiError } from "../../schemas/errors.ts";

/**
 * Capture slots shared fairly among accounts. At most `concurrency` captures run at once,
 * and at most `perOwner` of them for one owner (an account), so one account flooding
 * heavy captures always leaves a slot to the others. Waiters stand in one line per owner,
 * served in turns (round-robin over the owners waiting), not first come first served:
 * before, one account's queue of slow captures held everyone else's for their whole time.
 * A waiter leaves at its deadline with 240 (busy); past `queueMax` waiters, 240 at once.
 */
export class FairSlots {
  #active = 0;
  #activeBy = new Map<string, number>();
  #lines = new Map<string, (() => void)[]>();
  /** Owners with waiters, the next to serve first. */
  #ring: string[] = [];
  #waiting = 0;

  constructor(
    private readonly concurrency: number,
    private readonly perOwner: number,
    private readonly queueMax: number,
  ) {}

  /** Captures holding or waiting for a slot. */
  get load(): number {
    return this.#active + this.#waiting;
  }

  /** Captures waiting for a slot. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Slots `owner` holds now. */
  heldBy(owner: string): number {
    return this.#activeBy.get(owner) ?? 0;
  }

  /**
   * Takes a slot for `owner`, waiting in its line at most until `deadline` (then 240).
   * `room` more waiters are allowed beyond queueMax (slots about to free themselves).
   * An aborted `signal` leaves the line at once, rejecting with its reason.
   */
  async acquire(
    owner: string,
    deadline: number,
    room = 0,
    signal?: AbortSignal,
  ): Promise<void> {
    signal?.throwIfAborted();
    if (!this.#lines.has(owner) && this.#mayTake(owner)) {
      this.#take(owner);
      return;
    }
    if (this.#waiting >= this.queueMax + room) throw busy();
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        resolve();
      };
      const leave = (why: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        this.#leave(owner, wake);
        reject(why);
      };
      const abort = () => leave(signal!.reason);
      // The wait counts against the capture's time: past its deadline it leaves the line.
      const timer = setTimeout(
        () => leave(busy()),
        Math.max(0, deadline - Date.now()),
      );
      signal?.addEventListener("abort", abort, { once: true });
      const line = this.#lines.get(owner);
      if (line) line.push(wake);
      else {
        this.#lines.set(owner, [wake]);
        this.#ring.push(owner);
      }
      this.#waiting++;
    });
  }

  /**
   * Gives back `owner`'s slot and hands free slots to the next owners in turn; the owner
   * that just finished goes to the back of the ring, so the others are served first.
   */
  release(owner: string): void {
    this.#active--;
    const held = this.heldBy(owner) - 1;
    if (held > 0) this.#activeBy.set(owner, held);
    else this.#activeBy.delete(owner);
    const i = this.#ring.indexOf(owner);
    if (i >= 0) this.#ring.push(...this.#ring.splice(i, 1));
    this.#dispatch();
  }

  /** Lets every waiter go at once (the pool is closing; each then finds it closed). */
  wakeAll(): void {
    for (const [owner, line] of this.#lines) {
      for (const wake of line) {
        this.#take(owner);
        wake();
      }
    }
    this.#lines.clear();
    this.#ring = [];
    this.#waiting = 0;
  }

  #mayTake(owner: string): boolean {
    return this.#active < this.concurrency &&
      this.heldBy(owner) < this.perOwner;
  }

  #take(owner: string) {
    this.#active++;
    this.#activeBy.set(owner, this.heldBy(owner) + 1);
  }

  /** Serves the waiting owners in turn while slots are free and they are under their cap. */
  #dispatch() {
    while (this.#active < this.concurrency) {
      const i = this.#ring.findIndex((o) => this.heldBy(o) < this.perOwner);
      if (i < 0) return;
      const owner = this.#ring[i];
      const line = this.#lines.get(owner)!;
      const wake = line.shift()!;
      this.#waiting--;
      // Served: to the back of the ring, if it still has waiters.
      this.#ring.splice(i, 1);
      if (line.length) this.#ring.push(owner);
      else this.#lines.delete(owner);
      this.#take(owner);
      wake();
    }
  }

  #leave(owner: string, wake: () => void) {
    const line = this.#lines.get(owner);
    const i = line?.indexOf(wake) ?? -1;
    if (!line || i < 0) return;
    line.splice(i, 1);
    this.#waiting--;
    if (!line.length) {
      this.#lines.delete(owner);
      this.#ring = this.#ring.filter((o) => o !== owner);
    }
  }
}

/** 240 for a capture that found no slot in time. */
function busy(): ApiError {
  return new ApiError(240, {
    headers: { "Retry-After": "5" },
    details: [{ message: "all browsers are busy; try again shortly" }],
  });
}
