import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import {
  findLiveImage,
  IMAGE_DELETED_CHANNEL,
  type ImageRow,
} from "./records.ts";
import type { Database } from "../db/database.ts";
import type { BlobCache } from "./blob_cache.ts";

/**
 * Short-lived cache of image rows for the image host's hot path, so serving a file (or a
 * 304) doesn't cost a database round trip each time. Expiry is still checked on every hit;
 * deletions through this instance invalidate at once, deletions through another instance
 * are seen within `ttlMs`. The in-memory bytes of an image ({@link BlobCache}) go whenever
 * its row goes, so they are never served past the row's own window.
 */
export class ImageRowCache {
  #rows = new Map<string, { row: ImageRow; at: number }>();
  /**
   * Whether deletion notices are being heard. Until they are (and whenever the link to the
   * database drops) no cached row is trusted: every request reads its row, so a deletion
   * made through another instance is never answered 200 or 304 here.
   */
  #hearing = false;
  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    /** Bytes of hot images, dropped with their rows. */
    readonly bodies?: BlobCache,
    private readonly ttlMs = 10_000,
    private readonly max = 10_000,
  ) {}

  /** The live row for an id, from the cache when fresh, else from the database. */
  async get(id: string): Promise<ImageRow | undefined> {
    const now = this.clock.now().getTime();
    let hit = this.#hearing ? this.#rows.get(id) : undefined;
    if (!hit || now - hit.at > this.ttlMs) {
      const row = await findLiveImage(this.db, id, this.clock);
      if (!row) {
        this.invalidate(id);
        return undefined;
      }
      if (this.#rows.size >= this.max) {
        // Drop the oldest insertion (Map keeps insertion order).
        this.#rows.delete(this.#rows.keys().next().value!);
      }
      hit = { row, at: now };
      this.#rows.set(id, hit);
    }
    const exp = hit.row.expires_at;
    if (exp && new Date(exp).getTime() <= now) return undefined;
    return hit.row;
  }

  /**
   * The live row for an id when the cache can vouch for it without the database (fresh,
   * deletion notices heard, not expired), else undefined: the hot path's synchronous look.
   */
  peek(id: string): ImageRow | undefined {
    if (!this.#hearing) return undefined;
    const hit = this.#rows.get(id);
    if (!hit) return undefined;
    const now = this.clock.now().getTime();
    if (now - hit.at > this.ttlMs) return undefined;
    const exp = hit.row.expires_at;
    if (exp && new Date(exp).getTime() <= now) return undefined;
    return hit.row;
  }

  /** Forgets an id (after a deletion). */
  invalidate(id: string): void {
    this.#rows.delete(id);
    this.bodies?.forget(id);
  }

  /** Forgets everything (deletion notices may have been missed). */
  clear(): void {
    for (const id of [...this.#rows.keys()]) this.invalidate(id);
  }

  /**
   * Hears deletions made through any instance on the same database (LISTEN/NOTIFY), so a
   * deleted image stops being served everywhere within the notice's latency, not the TTL.
   */
  follow(database: Database): Promise<() => Promise<void>> {
    return database.listen(
      IMAGE_DELETED_CHANNEL,
      (id) => this.invalidate(id),
      (up) => {
        this.clear();
        this.#hearing = up;
      },
    );
  }
}
