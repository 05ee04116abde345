/**
 * Bytes of hot, small images kept in memory, bounded by total size, least recently used
 * out first. Serving a cached image costs no file open, stat or read (each an async op on
 * Deno's blocking thread pool; the serve benchmark measured ~1.5x more full-body requests/s
 * from memory) and, with the S3 store, no round trip.
 *
 * Stored bytes never change under a key, so an entry is never stale; it only becomes
 * unwanted when its image is deleted. The image host serves an entry only after the
 * {@link ImageRowCache} vouched for a live row, and that cache calls {@link forget} when it
 * learns of a deletion, so cached bytes outlive their image no longer than its row does.
 */
export class BlobCache {
  #entries = new Map<string, Uint8Array>();
  /** Keys per image id: the original and its variants go together. */
  #byId = new Map<string, Set<string>>();
  #bytes = 0;
  /** Largest single object kept: a few big originals must not flush every thumbnail. */
  readonly maxEntryBytes: number;

  constructor(readonly maxBytes: number) {
    this.maxEntryBytes = Math.min(1024 * 1024, Math.floor(maxBytes / 16));
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Number of objects held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The cached bytes of a key, marked as most recently used; undefined on a miss. */
  get(key: string): Uint8Array | undefined {
    const hit = this.#entries.get(key);
    if (hit) {
      // Map keeps insertion order: re-inserting moves the key to the young end.
      this.#entries.delete(key);
      this.#entries.set(key, hit);
    }
    return hit;
  }

  /** Whether an object of this size would be kept. */
  accepts(size: number): boolean {
    return size > 0 && size <= this.maxEntryBytes;
  }

  /** Keeps the bytes of a key (when small enough), evicting the least recently used. */
  set(key: string, bytes: Uint8Array): void {
    if (!this.accepts(bytes.length)) return;
    this.#remove(key);
    while (this.#bytes + bytes.length > this.maxBytes) {
      this.#remove(this.#entries.keys().next().value!);
    }
    this.#entries.set(key, bytes);
    this.#bytes += bytes.length;
    const id = idOf(key);
    let keys = this.#byId.get(id);
    if (!keys) this.#byId.set(id, keys = new Set());
    keys.add(key);
  }

  /** Drops every object of an image id (its original and variants). */
  forget(id: string): void {
    for (const key of this.#byId.get(id) ?? []) this.#remove(key);
  }

  #remove(key: string) {
    const bytes = this.#entries.get(key);
    if (!bytes) return;
    this.#entries.delete(key);
    this.#bytes -= bytes.length;
    const id = idOf(key);
    const keys = this.#byId.get(id)!;
    keys.delete(key);
    if (keys.size === 0) this.#byId.delete(id);
  }
}

/** Store keys are `<id>.<ext>` or `<id>.<variant>.<ext>` (blob_store.ts KEY_PATTERN). */
function idOf(key: string): string {
  return key.slice(0, key.indexOf("."));
}
