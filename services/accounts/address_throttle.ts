import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";
import { expandV6 } from "../net/address_guard.ts";

const WINDOW_MS = 60_000;

/** The start of the one-minute window `now` (ms) falls in. */
function windowOf(now: number): number {
  return Math.floor(now / WINDOW_MS) * WINDOW_MS;
}

/**
 * The unit a client address is counted in: an IPv4 address, or the /64 an IPv6 address is
 * in (one subscriber gets a whole /64, so counting single IPv6 addresses limits nothing).
 * IPv4-mapped IPv6 counts as its IPv4. Unknown (no peer address) is one bucket.
 */
export function addressBucket(addr: string | undefined): string {
  if (!addr) return "unknown";
  if (!addr.includes(":")) return addr;
  const g = expandV6(addr);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  }
  return g.slice(0, 4).map((x) => x.toString(16)).join(":") + "::/64";
}

/**
 * Counts events per client address (login and sign-up attempts, failed API keys) in a
 * one-minute window kept in the database, so all instances share one count. Past the
 * limit: 170 with Retry-After. An address found over its limit is also remembered in
 * memory until its window ends, so its next requests are refused without any database
 * work: a flood costs a map lookup per request.
 */
export class AddressThrottle {
  #blocked = new Map<string, number>();
  /** This instance's own count per address in the current window (see admit). */
  #local = new Map<string, { window: number; n: number }>();

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    /** Names the counter (the rate_limits key is `name:bucket`). */
    readonly name: string,
    /** Events per address per minute; 0 turns the throttle off. */
    readonly limit: number,
  ) {}

  /** Throws 170 when this instance already knows the address is over its limit. */
  check(addr: string | undefined): void {
    if (this.limit <= 0) return;
    const bucket = addressBucket(addr);
    const until = this.#blocked.get(bucket);
    if (until === undefined) return;
    const now = this.clock.now().getTime();
    if (until <= now) {
      this.#blocked.delete(bucket);
      return;
    }
    throw this.#refusal(until - now);
  }

  /** Counts one event for the address; throws 170 once it is over the limit. */
  async count(addr: string | undefined): Promise<void> {
    if (this.limit <= 0) return;
    this.check(addr);
    const bucket = addressBucket(addr);
    const now = this.clock.now().getTime();
    const windowStart = windowOf(now);
    const row = await this.db.insertInto("rate_limits")
      .values({
        key_id: `${this.name}:${bucket}`,
        window_start: new Date(windowStart),
        count: 1,
      })
      .onConflict((oc) =>
        oc.columns(["key_id", "window_start"]).doUpdateSet({
          count: sql`rate_limits.count + 1`,
        })
      )
      .returning("count")
      .executeTakeFirstOrThrow();
    if (row.count > this.limit) {
      const until = windowStart + WINDOW_MS;
      // Bounded: a spray of addresses cannot grow the map past what expires each minute.
      if (this.#blocked.size > 100_000) this.#blocked.clear();
      this.#blocked.set(bucket, until);
      throw this.#refusal(until - now);
    }
  }

  /**
   * Counts one event for the address on this instance, at once and before the work it
   * stands for: 170 past the limit within this instance's own count, or once the shared
   * count (see {@link count}) has said so. For work whose durable count the caller does
   * not wait for (a variant's make): without it, 40 makes sent at once all passed the
   * check before any count landed (issue #51). Across instances the shared count, which
   * lands within milliseconds, bounds the rest.
   */
  admit(addr: string | undefined): void {
    if (this.limit <= 0) return;
    this.check(addr);
    const bucket = addressBucket(addr);
    const now = this.clock.now().getTime();
    const windowStart = windowOf(now);
    const seen = this.#local.get(bucket);
    const n = seen && seen.window === windowStart ? seen.n + 1 : 1;
    if (this.#local.size > 100_000) this.#local.clear();
    this.#local.set(bucket, { window: windowStart, n });
    if (n > this.limit) {
      this.#blocked.set(bucket, windowStart + WINDOW_MS);
      throw this.#refusal(windowStart + WINDOW_MS - now);
    }
  }

  #refusal(ms: number): ApiError {
    return new ApiError(170, {
      headers: { "Retry-After": String(Math.max(1, Math.ceil(ms / 1000))) },
      details: [{
        message: `at most ${this.limit} per minute from one address`,
      }],
    });
  }
}
