import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { findLiveImage } from "../images/records.ts";

/** Largest inline (share false) result kept; bigger ones are captured every time. */
export const MAX_CACHED_BODY = 8 * 1024 * 1024;

/**
 * The identity of a screenshot request for `cache`: every option that changes the result,
 * keys sorted, so two requests asking for the same capture hash alike. `cache` itself,
 * `response` (how the answer is sent) and `key` do not count.
 */
export function requestHash(req: Record<string, unknown>): string {
  const { cache: _c, response: _r, key: _k, ...rest } = req;
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.keys(v).sort().map((k) => [
          k,
          canonical((v as Record<string, unknown>)[k]),
        ]),
      );
    }
    return v;
  };
  return createHash("sha256").update(JSON.stringify(canonical(rest))).digest(
    "hex",
  );
}

/** A stored result: its JSON, and the inline bytes when it was not shared. */
export interface CachedShot<T> {
  result: T;
  body?: Uint8Array;
}

/**
 * Screenshot results by user and request (the `screenshot_cache` table): reused while
 * fresh, and for a shared result only while its image is still live (deleted or expired
 * images are captured again).
 */
export class ShotCache {
  constructor(private readonly db: Kysely<DB>, private readonly clock: Clock) {}

  async get<T>(userId: string, hash: string): Promise<CachedShot<T> | null> {
    const row = await this.db.selectFrom("screenshot_cache").selectAll()
      .where("user_id", "=", userId).where("request_hash", "=", hash)
      .where("expires_at", ">", this.clock.now()).executeTakeFirst();
    if (!row) return null;
    if (
      row.image_id &&
      !await findLiveImage(this.db, row.image_id, this.clock, { quiet: true })
    ) {
      return null;
    }
    return {
      result: JSON.parse(row.result) as T,
      ...(row.body ? { body: new Uint8Array(row.body) } : {}),
    };
  }

  async put(
    userId: string,
    hash: string,
    ttlSeconds: number,
    entry: { result: unknown; imageId?: string; body?: Uint8Array },
  ): Promise<void> {
    if (entry.body && entry.body.length > MAX_CACHED_BODY) return;
    const values = {
      result: JSON.stringify(entry.result),
      image_id: entry.imageId ?? null,
      body: entry.body ?? null,
      expires_at: new Date(this.clock.now().getTime() + ttlSeconds * 1000),
    };
    await this.db.insertInto("screenshot_cache")
      .values({ user_id: userId, request_hash: hash, ...values })
      .onConflict((oc) =>
        oc.columns(["user_id", "request_hash"]).doUpdateSet(values)
      )
      .execute();
  }
}

/** Drops expired cache rows (their bytes with them). */
export async function sweepShotCache(
  db: Kysely<DB>,
  clock: Clock,
): Promise<void> {
  await db.deleteFrom("screenshot_cache").where("expires_at", "<=", clock.now())
    .execute();
}
