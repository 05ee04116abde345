import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { randomToken, sha256Hex } from "./crypto.ts";
import { announceImageChange } from "../images/records.ts";

/**
 * Guests (issue #37, GUEST_UPLOADS=on): a browser without an account uploads as a guest,
 * a users row without e-mail or password that only the browser's `guest` cookie names
 * (its hash is kept, as with session ids). It cannot log in: its password hash is not a
 * hash. Signing up or logging in in the same browser moves its images to the account.
 */

/** The shape of a guest cookie's token (anything else is no guest). */
const TOKEN_RE = /^[A-Za-z0-9_-]{32}$/;

/** The guest a cookie's token names, if it is one still there. */
export async function findGuest(
  db: Kysely<DB>,
  token: string | undefined,
): Promise<string | undefined> {
  if (!token || !TOKEN_RE.test(token)) return undefined;
  const row = await db.selectFrom("users").select("id")
    .where("guest_token_hash", "=", sha256Hex(token))
    .where("deleted_at", "is", null).executeTakeFirst();
  return row?.id;
}

/** Makes a new guest; returns its id and the token its browser's cookie keeps. */
export async function createGuest(
  db: Kysely<DB>,
  clock: Clock,
): Promise<{ userId: string; token: string }> {
  const token = randomToken(24);
  const id = randomToken(9);
  await db.insertInto("users").values({
    id,
    // Unique and never deliverable (.invalid is reserved); nobody logs in with it.
    email: `guest-${id}@guest.invalid`,
    // Not an scrypt hash: no password verifies against it.
    password_hash: "!guest",
    disabled_at: null,
    deleted_at: null,
    guest_token_hash: sha256Hex(token),
    // The service's clock, which the sweep of retired guests reads.
    created_at: clock.now(),
  }).execute();
  return { userId: id, token };
}

/**
 * Moves the guest's live images to `userId` and deletes the guest, in one transaction.
 * An image whose bytes the user already has stays the guest's, and the guest with it
 * (one user keeps one copy of the same bytes). What the guest's life alone bounded
 * (an expiry of `guestLifeS`, GUEST_EXPIRATION: it asked for longer, or never) is kept
 * for good, as the guest notice promises sign-up does; an expiry the guest chose shorter
 * stays. Returns how many moved.
 */
export async function claimGuestImages(
  db: Kysely<DB>,
  token: string | undefined,
  userId: string,
  clock: Clock,
  guestLifeS: number,
): Promise<number> {
  const guestId = await findGuest(db, token);
  if (!guestId || guestId === userId) return 0;
  const moved = await db.transaction().execute(async (tx) => {
    const rows = await tx.updateTable("images").set({ user_id: userId })
      .where("user_id", "=", guestId).where("deleted_at", "is", null)
      .where(({ not, exists, selectFrom }) =>
        not(exists(
          selectFrom("images as mine").select(sql`1`.as("one"))
            .where("mine.user_id", "=", userId)
            .where("mine.deleted_at", "is", null)
            .whereRef("mine.sha256", "=", "images.sha256"),
        ))
      ).returning(["id", "created_at", "expires_at"]).execute();
    // A minute of slack: the cap was taken from the upload's own clock reading.
    const capped = rows.filter((r) =>
      r.expires_at !== null &&
      new Date(r.expires_at).getTime() - new Date(r.created_at).getTime() >=
        (guestLifeS - 60) * 1000
    ).map((r) => r.id);
    if (capped.length) {
      await tx.updateTable("images").set({ expires_at: null })
        .where("id", "in", capped).execute();
    }
    const left = await tx.selectFrom("images").select("id")
      .where("user_id", "=", guestId).where("deleted_at", "is", null)
      .executeTakeFirst();
    if (!left) {
      // Its deleted images' rows keep pointing at it: marked, not removed.
      await tx.updateTable("users").set({
        deleted_at: clock.now(),
        guest_token_hash: null,
      }).where("id", "=", guestId).execute();
    }
    return rows;
  });
  // Every instance re-reads the rows: who owns an image decides who sees a private one.
  await Promise.all(moved.map((r) => announceImageChange(db, r.id)));
  return moved.length;
}

/**
 * Retires the guests with nothing left to claim: no live image, and made longer than
 * `maxAgeS` ago (GUEST_EXPIRATION: every image of theirs has expired by then, or they
 * never uploaded one that was stored). Marked, not removed: their deleted images' rows
 * still name them. Returns how many.
 */
export async function sweepGuests(
  db: Kysely<DB>,
  clock: Clock,
  maxAgeS: number,
): Promise<number> {
  const now = clock.now();
  const retired = await db.updateTable("users")
    .set({ deleted_at: now, guest_token_hash: null })
    .where("guest_token_hash", "is not", null)
    .where("deleted_at", "is", null)
    .where("created_at", "<", new Date(now.getTime() - maxAgeS * 1000))
    .where(({ not, exists, selectFrom }) =>
      not(exists(
        selectFrom("images").select(sql`1`.as("one"))
          .whereRef("images.user_id", "=", "users.id")
          .where("images.deleted_at", "is", null)
          .where((eb) =>
            eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)])
          ),
      ))
    ).returning("id").execute();
  return retired.length;
}
