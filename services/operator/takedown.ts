import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";
import {
  announceImageChange,
  type ImageRow,
  removeImageBytes,
} from "../images/records.ts";
import { ApiError } from "../../schemas/errors.ts";
import { type Actor, recordAudit } from "./audit.ts";
import { setDisabled } from "./users.ts";

/** What a takedown did: the image, its blocked hash, and the reports it closed. */
export interface Takedown {
  image_id: string;
  sha256: string;
  owner_id: string;
  reports_closed: number;
  /** False when the image was taken down before (nothing more was done). */
  changed: boolean;
}

/**
 * Takes an image down (issue #47): its row is kept, marked deleted and taken down, so
 * every URL form answers 451 (records.ts findLiveImage); its SHA-256 is blocked, so the
 * same bytes are refused to anyone (182, by the images table's trigger); its open
 * reports are closed; the audit log records it; all of that in one transaction. Then
 * every instance drops its cached row and bytes, and the original, its fixed variants
 * and every made variant leave the store. A byte removal that fails is left to the
 * orphan sweep (no live row claims those keys), as with any deletion.
 */
export async function takeDown(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  actor: Actor,
  imageId: string,
  reason: string,
): Promise<Takedown> {
  const now = clock.now();
  const done = await db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom("images").selectAll()
      .where("id", "=", imageId).forUpdate().executeTakeFirst();
    if (!row) throw new ApiError(404);
    if (row.taken_down_at) return { row, closed: 0, changed: false };
    if (row.deleted_at) throw new ApiError(404);
    await tx.updateTable("images")
      .set({ deleted_at: now, taken_down_at: now })
      .where("id", "=", imageId).execute();
    await tx.insertInto("blocked_hashes")
      .values({ sha256: row.sha256, image_id: imageId, reason })
      .onConflict((oc) => oc.column("sha256").doNothing()).execute();
    const closed = await tx.updateTable("reports")
      .set({ state: "taken_down", resolved_at: now, resolved_by: actor.id })
      .where("image_id", "=", imageId).where("state", "=", "open")
      .executeTakeFirst();
    await recordAudit(tx, clock, actor, "image.takedown", imageId, {
      owner: row.user_id,
      sha256: row.sha256,
      ...(reason ? { reason } : {}),
    });
    return { row, closed: Number(closed.numUpdatedRows), changed: true };
  });
  if (done.changed) await dropEverywhere(db, store, done.row);
  return {
    image_id: imageId,
    sha256: done.row.sha256,
    owner_id: done.row.user_id,
    reports_closed: done.closed,
    changed: done.changed,
  };
}

/** Every instance forgets the image, then its bytes leave the store. */
async function dropEverywhere(db: Kysely<DB>, store: BlobStore, row: ImageRow) {
  await announceImageChange(db, row.id);
  await removeImageBytes(db, store, row);
}

/**
 * Bans an account: disables it (sessions end, keys refused) and takes down every live
 * image of it, each as {@link takeDown} does. Returns how many images went.
 */
export async function banUser(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  actor: Actor,
  userId: string,
  reason: string,
): Promise<{ user_id: string; images_taken_down: number }> {
  await setDisabled(db, clock, actor, userId, true, "user.ban");
  let count = 0;
  for (;;) {
    const rows = await db.selectFrom("images").select("id")
      .where("user_id", "=", userId).where("deleted_at", "is", null)
      .limit(200).execute();
    if (!rows.length) break;
    for (const r of rows) {
      try {
        const t = await takeDown(db, store, clock, actor, r.id, reason);
        if (t.changed) count++;
      } catch (e) {
        // Deleted by its owner meanwhile: nothing left to take down.
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    }
  }
  return { user_id: userId, images_taken_down: count };
}
