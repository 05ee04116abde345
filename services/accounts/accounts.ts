/**
 * services/accounts/ — who may call: users and their passwords and sessions (this file),
 * API keys and their cache (api_keys.ts), password hashing and tokens (crypto.ts), the
 * per-key rate limit in leases from the database (rate_limit.ts) and the per-address
 * login and sign-up throttle (address_throttle.ts).
 */
import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import {
  hashPassword,
  randomToken,
  sha256Hex,
  verifyPassword,
} from "./crypto.ts";
import { ApiError } from "../../schemas/errors.ts";
import { announceAuthChange } from "./api_keys.ts";

/** A signed-in user as pages see it. */
export interface SessionUser {
  userId: string;
  email: string;
  csrfToken: string;
  /** `admin` or `user`: pages show admins the way to /admin. */
  role?: string;
}

/** Why sign-up or login was refused, shown on the form. */
export class AccountError extends Error {}

const SESSION_DAYS = 30;
const THROTTLE_WINDOW_MS = 15 * 60_000;
// Compared against when the e-mail is unknown, so both paths cost one scrypt.
const DUMMY_HASH =
  "scrypt$32768$8$1$FsL3pRoJtIlkca2mv0iVPQ$-14t0_kxd-Jub4ymjFNSvC0CsyBj7voognapqa5dLwk";

/**
 * Who a new account is: an `admin`, a `user`, or (`first-admin`, sign-up's) an admin when
 * the instance has no admin yet, else a user; `first-admin-only` (sign-up where only the
 * first account may sign up: SIGNUP=closed or invite, without an invitation) makes the
 * admin or no one (NotFirstAdmin). The first-admin rule is decided under a
 * transaction-wide advisory lock, so two sign-ups racing on an empty instance make one.
 */
export type NewRole = "admin" | "user" | "first-admin" | "first-admin-only";

/**
 * A `first-admin-only` sign-up found an admin already there (another sign-up made it
 * first): no account is made, and the sign-up is judged again as a late one.
 */
export class NotFirstAdmin extends Error {
  override name = "NotFirstAdmin";
}

/** The advisory lock under which a first-admin sign-up decides its role. */
const FIRST_ADMIN_LOCK = 4_700_047;

/**
 * The ids of the accounts that may still act (neither disabled nor deleted), as a
 * subquery: what an account's queued work is checked against after its key is gone.
 */
export function activeUserIds(db: Kysely<DB>) {
  return db.selectFrom("users").select("id").where("disabled_at", "is", null)
    .where("deleted_at", "is", null);
}

/** True when no account may yet call itself admin: the instance is new. */
export async function hasNoAdmin(db: Kysely<DB>): Promise<boolean> {
  const row = await db.selectFrom("users").select("id")
    .where("role", "=", "admin").where("deleted_at", "is", null)
    .limit(1).executeTakeFirst();
  return !row;
}

/** Creates an account; the password is stored only as a scrypt hash. */
export async function createUser(
  db: Kysely<DB>,
  email: string,
  password: string,
  role: NewRole = "user",
): Promise<{ id: string; email: string; role: "admin" | "user" }> {
  email = email.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) {
    throw new AccountError("Enter a valid e-mail address.");
  }
  if (password.length < 10 || password.length > 1024) {
    throw new AccountError("Use a password of at least 10 characters.");
  }
  const taken = await db.selectFrom("users").select("id")
    .where(sql`lower(email)`, "=", email.toLowerCase())
    .where("deleted_at", "is", null).executeTakeFirst();
  if (taken) {
    throw new AccountError("An account with this e-mail already exists.");
  }
  const id = randomToken(9);
  const password_hash = await hashPassword(password);
  return await db.transaction().execute(async (tx) => {
    let made: "admin" | "user" = role === "admin" ? "admin" : "user";
    if (role === "first-admin" || role === "first-admin-only") {
      await sql`select pg_advisory_xact_lock(${FIRST_ADMIN_LOCK})`.execute(tx);
      if (await hasNoAdmin(tx)) made = "admin";
      else if (role === "first-admin-only") throw new NotFirstAdmin();
    }
    await tx.insertInto("users").values({
      id,
      email,
      password_hash,
      disabled_at: null,
      deleted_at: null,
      role: made,
    }).execute();
    return { id, email, role: made };
  });
}

/**
 * Checks e-mail and password. Each attempt first takes a numbered slot for its e-mail in a
 * 15-minute window, in one atomic upsert; attempts past LOGIN_MAX_FAILURES get 170 with
 * Retry-After without a password being checked, so concurrent guesses on any number of
 * instances check at most that many passwords. A successful login frees the slots.
 */
export async function verifyLogin(
  db: Kysely<DB>,
  email: string,
  password: string,
  clock: Clock,
  maxFailures: number,
  /** The password check (tests count how often it runs). */
  checkPassword: typeof verifyPassword = verifyPassword,
): Promise<{ id: string; email: string }> {
  email = email.trim().toLowerCase();
  const now = clock.now();
  const since = new Date(now.getTime() - THROTTLE_WINDOW_MS);
  const stale = sql<boolean>`login_attempts.window_start <= ${since}`;
  const slot = await db.insertInto("login_attempts")
    .values({ email, window_start: now, attempts: 1 })
    .onConflict((oc) =>
      oc.column("email").doUpdateSet({
        attempts:
          sql`case when ${stale} then 1 else login_attempts.attempts + 1 end`,
        window_start: sql`case when ${stale} then ${now}::timestamptz
          else login_attempts.window_start end`,
      })
    )
    .returning(["attempts", "window_start"])
    .executeTakeFirstOrThrow();
  if (slot.attempts > maxFailures) {
    const retry = Math.max(
      1,
      Math.ceil(
        (new Date(slot.window_start).getTime() + THROTTLE_WINDOW_MS -
          now.getTime()) / 1000,
      ),
    );
    throw new ApiError(170, { headers: { "Retry-After": String(retry) } });
  }
  const user = await db.selectFrom("users")
    .select(["id", "email", "password_hash", "disabled_at"])
    .where(sql`lower(email)`, "=", email).where("deleted_at", "is", null)
    .executeTakeFirst();
  const ok = await checkPassword(password, user?.password_hash ?? DUMMY_HASH);
  if (!user || !ok || user.disabled_at) {
    throw new AccountError("Wrong e-mail or password.");
  }
  await db.deleteFrom("login_attempts").where("email", "=", email).execute();
  return { id: user.id, email: user.email };
}

/** Starts a session; returns the cookie value (stored only hashed). */
export async function createSession(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
): Promise<string> {
  const sid = randomToken(32);
  await db.insertInto("sessions").values({
    id_hash: sha256Hex(sid),
    user_id: userId,
    csrf_token: randomToken(24),
    expires_at: new Date(clock.now().getTime() + SESSION_DAYS * 86_400_000),
  }).execute();
  return sid;
}

/** The live session's user, or null (expired, unknown, user deleted or disabled). */
export async function getSession(
  db: Kysely<DB>,
  sid: string | undefined,
  clock: Clock,
): Promise<SessionUser | null> {
  if (!sid || sid.length > 100) return null;
  const row = await db.selectFrom("sessions")
    .innerJoin("users", "users.id", "sessions.user_id")
    .select(["users.id", "users.email", "users.role", "sessions.csrf_token"])
    .where("sessions.id_hash", "=", sha256Hex(sid))
    .where("sessions.expires_at", ">", clock.now())
    .where("users.deleted_at", "is", null)
    .where("users.disabled_at", "is", null)
    .executeTakeFirst();
  return row
    ? {
      userId: row.id,
      email: row.email,
      csrfToken: row.csrf_token,
      role: row.role,
    }
    : null;
}

/** Ends a session. */
export async function deleteSession(
  db: Kysely<DB>,
  sid: string,
): Promise<void> {
  await db.deleteFrom("sessions").where("id_hash", "=", sha256Hex(sid))
    .execute();
}

/** Soft-deletes a user: their keys then answer 120, their sessions end. */
export async function deleteUser(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
): Promise<void> {
  await db.updateTable("users").set({ deleted_at: clock.now() })
    .where("id", "=", userId).execute();
  await db.deleteFrom("sessions").where("user_id", "=", userId).execute();
  await announceAuthChange(db);
}

/** Disables a user without deleting (keys answer 120). */
export async function disableUser(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
): Promise<void> {
  await db.updateTable("users").set({ disabled_at: clock.now() })
    .where("id", "=", userId).execute();
  await announceAuthChange(db);
}
