/**
 * Who is calling and whether they may: the one service every API caller passes through
 * once. The HTTP side (routes/api_auth.ts) only reads the credentials out of the request
 * (which key by precedence, or which signed-in user, and the client address) and hands
 * them here; this answers the caller, or the refusal, with everything it took on the way:
 * the wrong-key throttle of the address, the key's lookup (through the cache of checked
 * keys), and the caller's per-minute count.
 */
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Database } from "../db/database.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";
import { authenticateKey, KeyCache } from "./api_keys.ts";
import { AddressThrottle } from "./address_throttle.ts";
import { RateLeases, type RateState } from "./rate_limit.ts";

/** The limits the authenticator applies (from the config). */
export interface AuthLimits {
  /** Wrong keys per client address and minute before 170 (API_KEY_FAILURES_PER_MINUTE). */
  keyFailuresPerMinute: number;
  /** Calls per caller and minute (RATE_LIMIT_PER_MINUTE); 0 for no limit. */
  callsPerMinute: number;
}

/** What a caller presents: an API key (absent when none was sent), or a session's user. */
export type Credentials =
  | { key: string | undefined; address: string | undefined }
  | { sessionUserId: string };

/** An admitted caller: its account, its key ("" for a session) and its minute's count. */
export interface Caller {
  userId: string;
  keyId: string;
  /** The caller's per-minute count after this call; absent when there is no limit. */
  rate?: RateState;
}

/**
 * One app's authenticator (routes/api_auth.ts keeps one per AppDeps). Holds the cache of
 * checked keys, the per-address throttles (wrong keys, and whatever else routes count per
 * address) and the leases of the per-minute counts.
 */
export class Authenticator {
  /** The checked keys; `follow` keeps it in step with every instance's changes. */
  readonly keys: KeyCache;
  readonly #throttles = new Map<string, AddressThrottle>();
  readonly #leases?: RateLeases;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly limits: AuthLimits,
  ) {
    this.keys = new KeyCache(clock);
    if (limits.callsPerMinute > 0) {
      this.#leases = new RateLeases(db, clock, limits.callsPerMinute);
    }
  }

  /**
   * Hears key changes from every instance; until it resolves the cache trusts nothing and
   * every call looks its key up.
   */
  follow(database: Database): Promise<unknown> {
    return this.keys.follow(database);
  }

  /**
   * The app's counter `name` of events per client address, made on first use: one per
   * app, whichever routes count it (reports are counted by the API and the site's form).
   */
  throttle(name: string, limit: number): AddressThrottle {
    let t = this.#throttles.get(name);
    if (!t) {
      t = new AddressThrottle(this.db, this.clock, name, limit);
      this.#throttles.set(name, t);
    }
    return t;
  }

  /**
   * Who calls and whether they may, in one call: for a key, 170 to an address past its
   * wrong-key limit before any lookup, 100 without a key, 110/120 for a wrong one (counted
   * against the address); then, for a key or a session, 170 past the caller's per-minute
   * limit. Answers the admitted caller with its count.
   */
  async admit(who: Credentials): Promise<Caller> {
    const owner = "sessionUserId" in who
      ? { userId: who.sessionUserId, keyId: "" }
      : await this.ownerOf(who.key, who.address);
    const counter = owner.keyId || `session:${owner.userId}`;
    const rate = await this.#leases?.admit(counter);
    return { ...owner, rate };
  }

  /**
   * The owner of a key without counting a call (pages that show an owner more than
   * others, the admin API): 100/110/120/170 as {@link admit} answers them, the wrong key
   * counted against the address.
   */
  async ownerOf(
    key: string | undefined,
    address: string | undefined,
  ): Promise<{ userId: string; keyId: string }> {
    const failures = this.throttle(
      "badkey",
      this.limits.keyFailuresPerMinute,
    );
    if (key !== undefined) failures.check(address);
    try {
      const owner = await authenticateKey(this.db, key, this.clock, {
        cache: this.keys,
      });
      return { userId: owner.userId, keyId: owner.keyId };
    } catch (e) {
      if (e instanceof ApiError && (e.code === 110 || e.code === 120)) {
        await failures.count(address);
      }
      throw e;
    }
  }
}
