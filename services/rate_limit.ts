import { type Kysely, sql } from "kysely";
import type { DB } from "./db/schema.ts";
import type { Clock } from "./deps.ts";
import { ApiError } from "../schemas/errors.ts";

/** What the caller may still do in the current window. */
export interface RateState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/**
 * Counts one API call for a key in a fixed one-minute window kept in the database, so every
 * instance sharing it enforces one limit. Over the limit: 170 with Retry-After.
 */
export async function admitCall(
  db: Kysely<DB>,
  keyId: string,
  limit: number,
  clock: Clock,
): Promise<RateState> {
  const now = clock.now().getTime();
  const windowStart = new Date(Math.floor(now / 60_000) * 60_000);
  const resetSeconds = Math.max(
    1,
    Math.ceil((windowStart.getTime() + 60_000 - now) / 1000),
  );
  const row = await db.insertInto("rate_limits")
    .values({ key_id: keyId, window_start: windowStart, count: 1 })
    .onConflict((oc) =>
      oc.columns(["key_id", "window_start"]).doUpdateSet({
        count: sql`rate_limits.count + 1`,
      })
    )
    .returning("count")
    .executeTakeFirstOrThrow();
  const remaining = Math.max(0, limit - row.count);
  if (row.count > limit) {
    throw new ApiError(170, {
      headers: {
        "Retry-After": String(resetSeconds),
        "X-RateLimit-Limit": String(limit),
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": String(resetSeconds),
      },
      details: [{ message: `at most ${limit} API calls per minute per key` }],
    });
  }
  return { limit, remaining, resetSeconds };
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
