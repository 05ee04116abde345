import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import { hashPassword, sha256Hex, verifyPassword } from "./crypto.ts";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import { announceAuthChange } from "./api_keys.ts";
import { deleteUser } from "./accounts.ts";
import { deleteImage } from "../images/records.ts";
import type { BlobStore } from "../store/blob_store.ts";
import type { Clock } from "../runtime/clock.ts";

/**
 * What an account does to itself (issue #52): change its password (the current one asked
 * again; every other session ends), change its e-mail (its password asked again), and
 * sign out everywhere else. Each refusal is a 160 naming its field, which a site form
 * shows beside that field.
 */

/** The account's password checked, or 160 on `field`; a deleted account is 404. */
async function checkPassword(
  db: Kysely<DB>,
  userId: string,
  password: string,
  field: string,
): Promise<void> {
  const row = await db.selectFrom("users").select("password_hash")
    .where("id", "=", userId).where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) throw new ApiError(404);
  if (!password || !await verifyPassword(password, row.password_hash)) {
    throw invalidField(field, "that is not your current password");
  }
}

/**
 * Sets a new password after checking the current one, and ends every session but
 * `keepSid` (the browser that changed it stays signed in). How many sessions ended.
 */
export async function changePassword(
  db: Kysely<DB>,
  userId: string,
  current: string,
  next: string,
  keepSid: string | undefined,
): Promise<number> {
  await checkPassword(db, userId, current, "current_password");
  if (next.length < 10 || next.length > 1024) {
    throw invalidField("new_password", "at least 10 characters");
  }
  await db.updateTable("users").set({ password_hash: await hashPassword(next) })
    .where("id", "=", userId).execute();
  return await endOtherSessions(db, userId, keepSid);
}

/** Changes the account's e-mail after checking its password; 160 when it is taken. */
export async function changeEmail(
  db: Kysely<DB>,
  userId: string,
  password: string,
  email: string,
): Promise<void> {
  await checkPassword(db, userId, password, "password");
  email = email.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) {
    throw invalidField("email", "enter a valid e-mail address");
  }
  const taken = await db.selectFrom("users").select("id")
    .where(sql`lower(email)`, "=", email.toLowerCase())
    .where("deleted_at", "is", null).where("id", "!=", userId)
    .executeTakeFirst();
  if (taken) throw invalidField("email", "another account has this e-mail");
  await db.updateTable("users").set({ email }).where("id", "=", userId)
    .execute();
}

/** Ends every session of the account but `keepSid`; how many ended. */
export async function endOtherSessions(
  db: Kysely<DB>,
  userId: string,
  keepSid: string | undefined,
): Promise<number> {
  let q = db.deleteFrom("sessions").where("user_id", "=", userId);
  if (keepSid) q = q.where("id_hash", "!=", sha256Hex(keepSid));
  const ended = await q.executeTakeFirst();
  // Other instances' caches of who is signed in forget at once.
  await announceAuthChange(db);
  return Number(ended.numDeletedRows);
}

/**
 * Deletes the account and everything it holds (the site's "Delete my account", DELETE
 * /api/1/account): it is marked deleted first (its keys stop working and its sessions end at
 * once, so nothing new arrives), then each image goes as the image API deletes one (its
 * original, fixed variants and made variants leave the store), then its albums and keys.
 * The only admin cannot (the instance would have none). How many images went.
 */
export async function deleteAccount(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  userId: string,
): Promise<number> {
  const me = await db.selectFrom("users").select("role")
    .where("id", "=", userId).where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!me) throw new ApiError(404);
  if (me.role === "admin") {
    const admins = await db.selectFrom("users").select("id")
      .where("role", "=", "admin").where("deleted_at", "is", null)
      .where("disabled_at", "is", null).limit(2).execute();
    if (admins.length < 2) {
      throw invalidField(
        "account",
        "the only admin cannot delete their account: make another account admin first",
      );
    }
  }
  await deleteUser(db, userId, clock);
  // Expired as of now, in one statement: should the store fail part-way (answered 503),
  // the expiry sweep of every instance removes the rest's bytes, as for any image past
  // its time, though the account is gone and cannot ask again.
  const rows = await db.updateTable("images").set({ expires_at: clock.now() })
    .where("user_id", "=", userId).where("deleted_at", "is", null)
    .returningAll().execute();
  for (const row of rows) await deleteImage(db, store, row, clock);
  // Their rows stay (deleted), in no album, as an album's deletion leaves them.
  await db.updateTable("images").set({ album_id: null })
    .where("user_id", "=", userId).execute();
  await db.deleteFrom("albums").where("user_id", "=", userId).execute();
  await db.updateTable("api_keys").set({ revoked_at: clock.now() })
    .where("user_id", "=", userId).where("revoked_at", "is", null).execute();
  await announceAuthChange(db);
  return rows.length;
}

/** The password asked again before an account is deleted from the site. */
export async function confirmPassword(
  db: Kysely<DB>,
  userId: string,
  password: string,
): Promise<void> {
  await checkPassword(db, userId, password, "password");
}
