import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Database } from "../db/database.ts";
import { randomToken, sha256Hex } from "./crypto.ts";
import { ApiError } from "../../schemas/errors.ts";

/** Prefix of every API key, so leaked keys are recognisable by secret scanners. */
export const KEY_PREFIX = "ihk_";

/** A key as the account page lists it (never the secret). */
export interface ApiKeyInfo {
  id: string;
  label: string;
  last4: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const KEY_INFO_COLUMNS = [
  "id",
  "label",
  "last4",
  "created_at",
  "last_used_at",
  "revoked_at",
] as const;

/** Who a valid key belongs to. */
export interface KeyOwner {
  userId: string;
  keyId: string;
}

/**
 * Creates a key for a user and returns the secret, which exists only in this return value:
 * the database keeps its SHA-256 (the key has 256 bits of entropy, so a fast hash is safe).
 */
export async function createApiKey(
  db: Kysely<DB>,
  userId: string,
  label: string,
): Promise<{ key: string; info: ApiKeyInfo }> {
  const key = KEY_PREFIX + randomToken(32);
  const row = await db.insertInto("api_keys").values({
    id: randomToken(9),
    user_id: userId,
    label: label.trim().slice(0, 80) || "API key",
    key_hash: sha256Hex(key),
    last4: key.slice(-4),
    last_used_at: null,
    revoked_at: null,
  }).returning(KEY_INFO_COLUMNS).executeTakeFirstOrThrow();
  return { key, info: row };
}

/** A user's keys, newest first. */
export async function listApiKeys(
  db: Kysely<DB>,
  userId: string,
): Promise<ApiKeyInfo[]> {
  return await db.selectFrom("api_keys")
    .select(KEY_INFO_COLUMNS)
    .where("user_id", "=", userId)
    .orderBy("created_at", "desc")
    .execute();
}

/** Revokes one of the user's keys; false when it is not theirs or already revoked. */
export async function revokeApiKey(
  db: Kysely<DB>,
  userId: string,
  keyId: string,
  clock: Clock,
): Promise<boolean> {
  const r = await db.updateTable("api_keys").set({ revoked_at: clock.now() })
    .where("id", "=", keyId).where("user_id", "=", userId)
    .where("revoked_at", "is", null).executeTakeFirst();
  await announceAuthChange(db);
  return Number(r.numUpdatedRows) > 0;
}

/** NOTIFY channel telling every instance that keys or users changed (drop cached keys). */
export const AUTH_CHANGED_CHANNEL = "imagehost_auth_changed";

/** Tells every instance (this one included) to forget the keys it has vouched for. */
export async function announceAuthChange(db: Kysely<DB>): Promise<void> {
  await sql`select pg_notify(${AUTH_CHANGED_CHANNEL}, '')`.execute(db);
}

/**
 * Keys this instance has recently checked, by hash, so an API call need not look its key
 * up each time (the upload's hot path). An entry lives `ttlMs`; a revocation, a disabled or
 * deleted user, through any instance, clears the cache at once (AUTH_CHANGED_CHANNEL), and
 * while that channel is not heard nothing cached is trusted.
 */
export class KeyCache {
  #entries = new Map<
    string,
    { owner: KeyOwner; at: number; lastUsed: number }
  >();
  #hearing = false;
  constructor(
    private readonly clock: Clock,
    private readonly ttlMs = 10_000,
    private readonly max = 10_000,
  ) {}

  /** The cached entry for a hash, when fresh and trusted. */
  get(hash: string) {
    if (!this.#hearing) return undefined;
    const e = this.#entries.get(hash);
    if (!e || this.clock.now().getTime() - e.at > this.ttlMs) return undefined;
    return e;
  }

  /** Remembers a key's owner (and when it was last recorded as used). */
  set(hash: string, owner: KeyOwner, lastUsed: number): void {
    if (this.#entries.size >= this.max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(hash, {
      owner,
      at: this.clock.now().getTime(),
      lastUsed,
    });
  }

  /** Forgets every key. */
  clear(): void {
    this.#entries.clear();
  }

  /** Hears changes made through any instance; resolves once subscribed. */
  follow(database: Database): Promise<() => Promise<void>> {
    return database.listen(AUTH_CHANGED_CHANNEL, () => this.clear(), (up) => {
      this.clear();
      this.#hearing = up;
    });
  }
}

/**
 * Resolves a presented key to its owner: 100 when none was sent, 110 when unknown or
 * revoked, 120 when the owner is deleted or disabled. The hash is looked up by index and
 * then compared in constant time. `touch: false` checks without recording a use (the
 * account pages showing or packaging a key are not its use).
 */
export async function authenticateKey(
  db: Kysely<DB>,
  presented: string | undefined | null,
  clock: Clock,
  opts: { touch?: boolean; cache?: KeyCache } = {},
): Promise<KeyOwner> {
  if (!presented) throw new ApiError(100);
  if (presented.length > 200 || !presented.startsWith(KEY_PREFIX)) {
    throw new ApiError(110);
  }
  const hash = sha256Hex(presented);
  const hit = opts.cache?.get(hash);
  if (hit) {
    const now = clock.now().getTime();
    if (opts.touch !== false && now - hit.lastUsed > 60_000) {
      // Recording the use is bookkeeping, not a decision: it need not hold the call up.
      hit.lastUsed = now;
      db.updateTable("api_keys").set({ last_used_at: new Date(now) })
        .where("id", "=", hit.owner.keyId).execute().catch(() => {});
    }
    return hit.owner;
  }
  const row = await db.selectFrom("api_keys")
    .innerJoin("users", "users.id", "api_keys.user_id")
    .select([
      "api_keys.id as key_id",
      "api_keys.key_hash",
      "api_keys.revoked_at",
      "api_keys.last_used_at",
      "users.id as user_id",
      "users.deleted_at",
      "users.disabled_at",
    ])
    .where("api_keys.key_hash", "=", hash)
    .executeTakeFirst();
  // The lookup compared the hash already: a second compare in JavaScript would add nothing
  // (and the hash of a random key reveals nothing by its timing).
  if (!row || row.revoked_at) {
    throw new ApiError(110);
  }
  if (row.deleted_at || row.disabled_at) throw new ApiError(120);
  const now = clock.now();
  let lastUsed = row.last_used_at?.getTime() ?? 0;
  // One write a minute at most, so busy keys don't turn every request into an UPDATE.
  if (opts.touch !== false && now.getTime() - lastUsed > 60_000) {
    await db.updateTable("api_keys").set({ last_used_at: now })
      .where("id", "=", row.key_id).execute();
    lastUsed = now.getTime();
  }
  const owner = { userId: row.user_id, keyId: row.key_id };
  opts.cache?.set(hash, owner, lastUsed);
  return owner;
}
