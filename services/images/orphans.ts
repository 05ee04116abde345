import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { blobKeys, deleteImage } from "./records.ts";
import { TUS_ID_PREFIX } from "../uploads/tus_path.ts";

/**
 * Removes store objects that no live image row claims and that are older than `graceS`:
 * what a crash between writing the bytes and committing the row leaves behind, and bytes
 * whose deletion failed after their row was marked. The grace period keeps uploads still in
 * flight (bytes first, row last) out of reach. Safe to run on every instance at once.
 * Returns the keys it removed.
 */
export async function sweepOrphans(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  graceS: number,
): Promise<string[]> {
  const cutoff = clock.now().getTime() - graceS * 1000;
  const removed: string[] = [];
  let batch: string[] = [];
  const flush = async () => {
    if (!batch.length) return;
    const ids = [...new Set(batch.map(idOf))];
    const live = new Set(
      (await db.selectFrom("images").select("id").where("id", "in", ids)
        .where("deleted_at", "is", null).execute()).map((r) => r.id),
    );
    for (const key of batch) {
      if (live.has(idOf(key))) continue;
      await store.delete(key);
      removed.push(key);
    }
    batch = [];
  };
  for await (const o of store.list()) {
    if (o.modified.getTime() > cutoff) continue;
    // A resumable upload's parts in the bucket: theirs to expire (TUS_EXPIRE_HOURS).
    if (o.key.startsWith(TUS_ID_PREFIX)) continue;
    batch.push(o.key);
    if (batch.length >= 500) await flush();
  }
  await flush();
  return removed;
}

/** The image id a store key belongs to (`<id>.<ext>`, `<id>.th.<ext>`, ...). */
function idOf(key: string): string {
  return key.slice(0, key.indexOf("."));
}

/**
 * The other half of the orphan sweep: live rows whose original is missing from the store
 * (a row whose insert committed after its upload was refused and its files removed; the
 * write side keeps files while an insert's outcome is unknown, so this is the second line).
 * Each is marked deleted, so it answers 404 everywhere at once (caches are told), and its
 * remaining bytes removed. Only rows created in the last `windowS` seconds, but not the
 * last `graceS` (uploads in flight), are looked at: one stat each, so the cost follows the
 * upload rate, not the library. Returns the ids removed.
 */
export async function sweepMissing(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  opts: { windowS: number; graceS: number },
): Promise<string[]> {
  const now = clock.now().getTime();
  const removed: string[] = [];
  let after = "";
  for (;;) {
    const rows = await db.selectFrom("images").selectAll()
      .where("deleted_at", "is", null)
      .where("created_at", ">=", new Date(now - opts.windowS * 1000))
      .where("created_at", "<=", new Date(now - opts.graceS * 1000))
      .where("id", ">", after).orderBy("id").limit(200).execute();
    if (!rows.length) return removed;
    for (const row of rows) {
      if (await store.stat(blobKeys(row).original)) continue;
      await deleteImage(db, store, row, clock);
      removed.push(row.id);
    }
    after = rows.at(-1)!.id;
  }
}
