import { sql } from "kysely";
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { BlobStore } from "../store/blob_store.ts";

/** Removes an image's variants: bytes first, then their rows (the sweep retries bytes). */
export async function deleteVariants(
  db: Kysely<DB>,
  store: BlobStore,
  imageId: string,
): Promise<void> {
  const rows = await db.selectFrom("image_variants").select("key")
    .where("image_id", "=", imageId).execute();
  await Promise.all(rows.map((r) => store.delete(r.key)));
  if (rows.length) {
    await db.deleteFrom("image_variants").where("image_id", "=", imageId)
      .execute();
  }
}

/**
 * Keeps the variants within `budgetBytes`: past it, the oldest made are removed (bytes,
 * then rows) until they fit. They are made again when next asked for. Returns the keys
 * removed.
 */
export async function trimVariants(
  db: Kysely<DB>,
  store: BlobStore,
  budgetBytes: number,
): Promise<string[]> {
  const total = Number(
    (await db.selectFrom("image_variants")
      .select(sql<string>`coalesce(sum(bytes), 0)`.as("n"))
      .executeTakeFirstOrThrow()).n,
  );
  let over = total - budgetBytes;
  const removed: string[] = [];
  while (over > 0) {
    const oldest = await db.selectFrom("image_variants").select([
      "key",
      "bytes",
    ])
      .orderBy("created_at").orderBy("key").limit(200).execute();
    if (!oldest.length) break;
    const batch: string[] = [];
    for (const r of oldest) {
      if (over <= 0) break;
      batch.push(r.key);
      over -= Number(r.bytes);
    }
    await Promise.all(batch.map((k) => store.delete(k)));
    await db.deleteFrom("image_variants").where("key", "in", batch).execute();
    removed.push(...batch);
  }
  return removed;
}
