import type { Clock } from "../runtime/clock.ts";

const MiB = 1024 * 1024;

/** The limits on bytes received before a body's key has been seen. */
export interface HoldLimits {
  /** One request (UNAUTH_HOLD_MB). */
  perRequest: number;
  /** All requests of one client address (UNAUTH_HOLD_ADDRESS_MB). */
  perAddress: number;
  /** All requests of this process (UNAUTH_HOLD_TOTAL_MB). */
  total: number;
  /** Bytes a second the client must keep up, on average, once the grace is over. */
  minRate: number;
  graceMs: number;
}

/**
 * The budget for bytes a text body (urlencoded or JSON) brings before its `key`: clients
 * written for Chevereto send `source=<base64>` first and `key=` last, so the image must be
 * received before anyone knows who sent it. What a body holds unadmitted counts against its
 * request's, its address's and the process's budgets; past any of them, or when the client
 * falls below `minRate` (silence included), admission runs at once with what it has: no
 * key, 401, and the rest is not read. Keyed requests (a header or ?key=) never hold.
 */
export class HoldBudget {
  #held = 0;
  readonly #byAddress = new Map<string, number>();

  constructor(
    private readonly limits: HoldLimits,
    private readonly clock: Pick<Clock, "now"> = { now: () => new Date() },
  ) {}

  /** Bytes held now by the whole process (tests). */
  get held(): number {
    return this.#held;
  }

  /**
   * A hold for one request from `address`; `stalled` runs when the client falls below the
   * rate while the body is still unadmitted (the reader then stops and admits).
   */
  open(address: string, stalled: () => void): KeyHold {
    return new KeyHold(this, address, stalled);
  }

  /**
   * @internal Takes `n` more bytes for `address`: true, or which budget is past (the
   * request's own, or one shared with other requests: the address's, the process's).
   */
  take(
    address: string,
    n: number,
    requestTotal: number,
  ): true | "request" | "address" | "process" {
    const l = this.limits;
    const mine = this.#byAddress.get(address) ?? 0;
    if (requestTotal > l.perRequest) return "request";
    if (mine + n > l.perAddress) return "address";
    if (this.#held + n > l.total) return "process";
    this.#byAddress.set(address, mine + n);
    this.#held += n;
    return true;
  }

  /** @internal Gives back `n` bytes of `address`. */
  give(address: string, n: number): void {
    const left = (this.#byAddress.get(address) ?? 0) - n;
    if (left > 0) this.#byAddress.set(address, left);
    else this.#byAddress.delete(address);
    this.#held -= n;
  }

  /** @internal */
  get rules(): HoldLimits {
    return this.limits;
  }

  /** @internal */
  now(): number {
    return this.clock.now().getTime();
  }
}

/** One request's hold: see {@link HoldBudget}. */
export class KeyHold {
  /**
   * Set when a budget shared with other requests was full (the address's or the
   * process's): the body could not wait for its key because others hold the room, which
   * is a busy server, not a missing key.
   */
  full?: "address" | "process";
  #taken = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  readonly #start: number;

  constructor(
    private readonly budget: HoldBudget,
    private readonly address: string,
    private readonly stalled: () => void,
  ) {
    this.#start = budget.now();
  }

  /**
   * True when the body may go on unadmitted with `bytes` received in all; false when a
   * budget or the rate says admission must run now.
   */
  mayWait(bytes: number): boolean {
    if (this.#done) return false;
    const more = bytes - this.#taken;
    if (more > 0) {
      const took = this.budget.take(this.address, more, bytes);
      if (took !== true) {
        if (took !== "request") this.full = took;
        return false;
      }
      this.#taken = bytes;
    }
    const { minRate, graceMs } = this.budget.rules;
    const due = this.#start + graceMs + bytes / minRate * 1000;
    const now = this.budget.now();
    if (now > due) return false;
    // The next bytes are late past `due`: then the reader is stopped, silence included.
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (!this.#done) this.stalled();
    }, due - now + 1);
    return true;
  }

  /** Ends the hold (admitted, refused or finished): its bytes leave the budgets. */
  release(): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.budget.give(this.address, this.#taken);
  }
}

/** The default limits (the config's, in bytes). */
export function holdLimits(config: {
  UNAUTH_HOLD_MB: number;
  UNAUTH_HOLD_ADDRESS_MB: number;
  UNAUTH_HOLD_TOTAL_MB: number;
}): HoldLimits {
  return {
    perRequest: config.UNAUTH_HOLD_MB * MiB,
    perAddress: config.UNAUTH_HOLD_ADDRESS_MB * MiB,
    total: config.UNAUTH_HOLD_TOTAL_MB * MiB,
    // A 512 kbit/s uplink; slower, and the key must come first (or in a header).
    minRate: 64 * 1024,
    graceMs: 2000,
  };
}
