import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";
import { randomToken } from "./crypto.ts";

/** The instance's quota defaults (schemas/config.ts); 0 means none. */
export interface QuotaDefaults {
  USER_STORAGE_MB: number;
  USER_IMAGES_MAX: number;
  SCREENSHOTS_PER_MONTH: number;
}

/** One account's limits, after its overrides: 0 means none. */
export interface Limits {
  storageBytes: number;
  images: number;
  screenshotsPerMonth: number;
}

/** What one account uses now. */
export interface Usage {
  bytes: number;
  images: number;
  screenshotsThisMonth: number;
}

const MB = 1024 * 1024;

/** How long an upload's hold counts when its process never releases it (a crash). */
const HOLD_SECONDS = 15 * 60;

/** The month captures are counted in: `YYYY-MM`, UTC. */
export function monthOf(d: Date): string {
  return d.toISOString().slice(0, 7);
}

/** An account's limits from its overrides (null: the default) and the defaults. */
export function limitsFrom(
  defaults: QuotaDefaults,
  row: {
    quota_storage_mb: number | null;
    quota_images: number | null;
    quota_screenshots: number | null;
  },
): Limits {
  return {
    storageBytes: (row.quota_storage_mb ?? defaults.USER_STORAGE_MB) * MB,
    images: row.quota_images ?? defaults.USER_IMAGES_MAX,
    screenshotsPerMonth: row.quota_screenshots ??
      defaults.SCREENSHOTS_PER_MONTH,
  };
}

/** An account's limits as the database has them now (its overrides, else the defaults). */
export async function limitsOf(
  db: Kysely<DB>,
  defaults: QuotaDefaults,
  userId: string,
): Promise<Limits> {
  const row = await db.selectFrom("users")
    .select(["quota_storage_mb", "quota_images", "quota_screenshots"])
    .where("id", "=", userId).executeTakeFirst();
  return limitsFrom(
    defaults,
    row ?? {
      quota_storage_mb: null,
      quota_images: null,
      quota_screenshots: null,
    },
  );
}

/** What an account stores (live originals) and has captured this month. */
export async function usageOf(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
): Promise<Usage> {
  const [stored, shots] = await Promise.all([
    db.selectFrom("images")
      .select((eb) => [
        eb.fn.countAll<string>().as("n"),
        sql<string>`coalesce(sum(size), 0)`.as("bytes"),
      ])
      .where("user_id", "=", userId).where("deleted_at", "is", null)
      .executeTakeFirstOrThrow(),
    db.selectFrom("screenshot_usage").select("count")
      .where("user_id", "=", userId).where("month", "=", monthOf(clock.now()))
      .executeTakeFirst(),
  ]);
  return {
    bytes: Number(stored.bytes),
    images: Number(stored.n),
    screenshotsThisMonth: shots?.count ?? 0,
  };
}

/** A reservation of bytes and one image against a quota, released once the row is in. */
export interface QuotaHold {
  release(): Promise<void>;
}

/**
 * Quotas on stored bytes, image count and monthly captures (issue #47). Every check is
 * made before anything is stored and counted atomically in the database: an upload takes
 * a hold under its account's row lock (live images plus the holds of uploads in flight,
 * against the limit), so any number of concurrent uploads on any number of instances
 * pass the limit by at most one request's bytes (the stored original is the received
 * file or smaller). Accounts with no limit pay one cached look-up, no statement.
 */
export class Quotas {
  #limits = new Map<string, { limits: Limits; at: number }>();
  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly defaults: QuotaDefaults,
    /** How long an account's limits are trusted from memory (an admin's change). */
    private readonly ttlMs = 5_000,
  ) {}

  /** The account's limits, from memory when looked up within the last ttlMs. */
  async limits(userId: string): Promise<Limits> {
    const now = this.clock.now().getTime();
    const hit = this.#limits.get(userId);
    if (hit && now - hit.at < this.ttlMs) return hit.limits;
    const limits = await limitsOf(this.db, this.defaults, userId);
    if (this.#limits.size > 10_000) this.#limits.clear();
    this.#limits.set(userId, { limits, at: now });
    return limits;
  }

  /** Forgets an account's cached limits (this instance changed them). */
  forget(userId: string): void {
    this.#limits.delete(userId);
  }

  /**
   * Holds `bytes` and one image of the account's quota for an upload, or throws 180 when
   * they do not fit. Null when the account has no storage or image limit.
   */
  async hold(userId: string, bytes: number): Promise<QuotaHold | null> {
    const limits = await this.limits(userId);
    if (!limits.storageBytes && !limits.images) return null;
    const id = randomToken(12);
    const now = this.clock.now();
    await this.db.transaction().execute(async (tx) => {
      // The account's row lock orders every hold of this account, on every instance.
      await tx.selectFrom("users").select("id").where("id", "=", userId)
        .forUpdate().execute();
      const [stored, held] = await Promise.all([
        tx.selectFrom("images")
          .select((eb) => [
            eb.fn.countAll<string>().as("n"),
            sql<string>`coalesce(sum(size), 0)`.as("bytes"),
          ])
          .where("user_id", "=", userId).where("deleted_at", "is", null)
          .executeTakeFirstOrThrow(),
        tx.selectFrom("quota_holds")
          .select((eb) => [
            eb.fn.countAll<string>().as("n"),
            sql<string>`coalesce(sum(bytes), 0)`.as("bytes"),
          ])
          .where("user_id", "=", userId).where("expires_at", ">", now)
          .executeTakeFirstOrThrow(),
      ]);
      const usedBytes = Number(stored.bytes) + Number(held.bytes);
      const usedImages = Number(stored.n) + Number(held.n);
      if (limits.storageBytes && usedBytes + bytes > limits.storageBytes) {
        throw quotaError(
          "storage",
          `${fmtMb(usedBytes)} of ${fmtMb(limits.storageBytes)} used; ` +
            `this file needs ${fmtMb(bytes)}`,
        );
      }
      if (limits.images && usedImages + 1 > limits.images) {
        throw quotaError(
          "images",
          `${usedImages} of ${limits.images} images stored`,
        );
      }
      await tx.insertInto("quota_holds").values({
        id,
        user_id: userId,
        bytes,
        expires_at: new Date(now.getTime() + HOLD_SECONDS * 1000),
      }).execute();
    });
    return {
      release: async () => {
        await this.db.deleteFrom("quota_holds").where("id", "=", id).execute()
          .catch(() => {}); // it lapses by itself
      },
    };
  }

  /**
   * Counts one capture against the account's monthly limit, or throws 180 when the month
   * is used up. One atomic statement: concurrent captures never pass the limit.
   */
  async countScreenshot(userId: string): Promise<void> {
    const { screenshotsPerMonth: limit } = await this.limits(userId);
    const month = monthOf(this.clock.now());
    const counted = await this.db.insertInto("screenshot_usage")
      .values({ user_id: userId, month, count: 1 })
      .onConflict((oc) =>
        oc.columns(["user_id", "month"]).doUpdateSet({
          count: sql`screenshot_usage.count + 1`,
        }).where(
          sql<boolean>`${limit} = 0 or screenshot_usage.count < ${limit}`,
        )
      )
      .returning("count").executeTakeFirst();
    if (!counted || (limit && counted.count > limit)) {
      throw quotaError(
        "screenshots",
        `${limit} captures a month; the count starts again on the 1st (UTC)`,
      );
    }
  }

  /** Gives back a capture counted by {@link countScreenshot} that did not happen. */
  async uncountScreenshot(userId: string): Promise<void> {
    await this.db.updateTable("screenshot_usage")
      .set({ count: sql`greatest(count - 1, 0)` })
      .where("user_id", "=", userId).where(
        "month",
        "=",
        monthOf(this.clock.now()),
      )
      .execute().catch(() => {}); // a capture too many is the safe side
  }
}

function fmtMb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MB`;
}

/** 180 naming which quota and how far it is used. */
function quotaError(path: string, message: string): ApiError {
  return new ApiError(180, { details: [{ path, message }] });
}

/**
 * An account's usage beside its limits, as /account and GET /api/1/account show them:
 * both read now (not the upload path's cached limits), so a page shows what holds.
 */
export async function standingOf(
  db: Kysely<DB>,
  defaults: QuotaDefaults,
  clock: Clock,
  userId: string,
): Promise<{ usage: Usage; limits: Limits }> {
  const [usage, limits] = await Promise.all([
    usageOf(db, userId, clock),
    limitsOf(db, defaults, userId),
  ]);
  return { usage, limits };
}
