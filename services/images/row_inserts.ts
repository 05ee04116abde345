import type { Insertable, Kysely } from "kysely";
import type { DB } from "../db/schema.ts";

/** An image row as inserted. */
type ImageInsert = Insertable<DB["images"]>;

interface Waiter {
  row: ImageInsert;
  resolve(inserted: boolean): void;
  reject(e: unknown): void;
}

/** One statement for `rows`: the ids it inserted (a live duplicate's row is skipped). */
async function insertRows(
  db: Kysely<DB>,
  rows: ImageInsert[],
): Promise<Set<string>> {
  const inserted = await db.insertInto("images").values(rows)
    .onConflict((oc) =>
      oc.columns(["user_id", "sha256"]).where("deleted_at", "is", null)
        .doNothing()
    )
    .returning("id").execute();
  return new Set(inserted.map((r) => r.id));
}

/**
 * Image rows, inserted unless the same user has a live image of the same bytes. On the
 * embedded database (`batched`), rows that queue up while an insert runs go in together,
 * in one statement: PGlite runs one statement at a time on the main thread, and each
 * commit's WAL fsync blocks that thread (~1.1 ms an upload at 8 clients, the largest
 * single cost the profile showed), so a commit shared by several uploads is that much
 * less of every one. The first row of a quiet moment waits for nothing. Should a shared
 * statement fail, each of its rows is tried alone, so one row's fault (its user deleted
 * meanwhile) is no other upload's. On PostgreSQL each insert is its own statement: a
 * pool runs them side by side and the server groups their commits itself.
 */
export class ImageRowInserts {
  #waiting: Waiter[] = [];
  #busy = false;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly batched: boolean,
    private readonly maxBatch = 32,
  ) {}

  /** Inserts `row`: true when inserted, false when a live duplicate exists. */
  insert(row: ImageInsert): Promise<boolean> {
    if (!this.batched) {
      return insertRows(this.db, [row]).then((ids) => ids.has(row.id));
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ row, resolve, reject });
      if (!this.#busy) this.#drain();
    });
  }

  async #drain() {
    this.#busy = true;
    try {
      while (this.#waiting.length) {
        const batch = this.#waiting.splice(0, this.maxBatch);
        try {
          const ids = await insertRows(this.db, batch.map((w) => w.row));
          for (const w of batch) w.resolve(ids.has(w.row.id));
        } catch (e) {
          if (batch.length === 1) {
            batch[0].reject(e);
            continue;
          }
          for (const w of batch) {
            await insertRows(this.db, [w.row]).then(
              (ids) => w.resolve(ids.has(w.row.id)),
              w.reject,
            );
          }
        }
      }
    } finally {
      this.#busy = false;
    }
  }
}
