import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";

/** What the caller may still do in the current window. */
export interface RateState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** The one-minute window a time falls in: its start and the seconds left in it. */
function windowOf(clock: Clock) {
  const now = clock.now().getTime();
  const start = Math.floor(now / 60_000) * 60_000;
  return {
    start,
    resetSeconds: Math.max(1, Math.ceil((start + 60_000 - now) / 1000)),
  };
}

/** The 170 answer of a caller over its limit. */
function overLimit(limit: number, resetSeconds: number): ApiError {
  return new ApiError(170, {
    headers: {
      "Retry-After": String(resetSeconds),
      "X-RateLimit-Limit": String(limit),
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": String(resetSeconds),
    },
    details: [{ message: `at most ${limit} API calls per minute per key` }],
  });
}

/** Adds `n` to a key's counter of the window; the counter after it. */
async function reserve(
  db: Kysely<DB>,
  keyId: string,
  windowStart: number,
  n: number,
): Promise<number> {
  const row = await db.insertInto("rate_limits")
    .values({ key_id: keyId, window_start: new Date(windowStart), count: n })
    .onConflict((oc) =>
      oc.columns(["key_id", "window_start"]).doUpdateSet({
        count: sql`rate_limits.count + ${n}`,
      })
    )
    .returning("count")
    .executeTakeFirstOrThrow();
  return row.count;
}

/**
 * Calls one database write reserves for a key at a time: a second's worth at the limit
 * (600/min: 10), at most 16, and 1 (every call counted in the database) for limits under
 * 120/min.
 */
export function leaseSize(limit: number): number {
  return Math.max(1, Math.min(16, Math.floor(limit / 60)));
}

/**
 * The per-minute limit with the database written once per lease rather than per call:
 * an instance reserves `leaseSize(limit)` calls of a key's window in one write and spends
 * them locally. The database's counter still bounds every instance together (a lease is
 * never granted past the limit), so the limit is never exceeded; a key used through several
 * instances may be refused up to `lease - 1` calls early per instance, as their unspent
 * reservations count. `X-RateLimit-Remaining` is the database's view plus what this
 * instance holds. With a lease of 1 every call is one write and the count is exact.
 */
export class RateLeases {
  #leases = new Map<
    string,
    { window: number; left: number; counted: number }
  >();
  #pending = new Map<string, Promise<void>>();
  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly limit: number,
  ) {}

  /**
   * Admits one call of `key` or throws 170. Calls of a key that arrive while its lease is
   * being reserved wait for that one write instead of each reserving a lease of their own.
   */
  async admit(key: string): Promise<RateState> {
    const limit = this.limit;
    for (;;) {
      const { start, resetSeconds } = windowOf(this.clock);
      const lease = this.#leases.get(key);
      if (lease && lease.window === start && lease.left > 0) {
        lease.left--;
        return {
          limit,
          remaining: Math.max(0, limit - lease.counted) + lease.left,
          resetSeconds,
        };
      }
      const pending = this.#pending.get(key);
      if (pending) {
        // Over the limit it rejects: then this call asks the database itself.
        await pending.catch(() => {});
        continue;
      }
      const reserving = this.#reserve(key, start, resetSeconds);
      this.#pending.set(key, reserving);
      try {
        await reserving;
      } finally {
        this.#pending.delete(key);
      }
    }
  }

  /** One write: a lease of the window for `key`, or 170 when the limit is spent. */
  async #reserve(key: string, start: number, resetSeconds: number) {
    const n = leaseSize(this.limit);
    const counted = await reserve(this.db, key, start, n);
    const before = counted - n;
    if (before >= this.limit) throw overLimit(this.limit, resetSeconds);
    if (this.#leases.size >= 10_000) this.#prune(start);
    this.#leases.set(key, {
      window: start,
      left: Math.min(n, this.limit - before),
      counted,
    });
  }

  /** Drops leases of past windows (and, past the bound, everything). */
  #prune(current: number) {
    for (const [k, l] of this.#leases) {
      if (l.window !== current) this.#leases.delete(k);
    }
    if (this.#leases.size >= 10_000) this.#leases.clear();
  }
}

/** Drops counters (API calls, login attempts) of windows that ended over an hour ago. */
export async function sweepRateLimits(
  db: Kysely<DB>,
  clock: Clock,
): Promise<void> {
  const hourAgo = new Date(clock.now().getTime() - 3_600_000);
  await db.deleteFrom("rate_limits").where("window_start", "<", hourAgo)
    .execute();
  await db.deleteFrom("login_attempts").where("window_start", "<", hourAgo)
    .execute();
}
