import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";

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
