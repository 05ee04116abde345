/**
 * services/store/ — where image bytes live: the BlobStore interface (this file), a
 * folder on disk with synced writes (fs_store.ts) or any S3-compatible bucket
 * (s3_store.ts).
 */
/** A byte range, both ends inclusive, as in HTTP Range. */
export interface ByteRange {
  start: number;
  end: number;
}

/** What a store knows of one object. */
export interface BlobStat {
  size: number;
}

/** One object read from a store, streamed. */
export interface BlobBody extends BlobStat {
  /** Small objects may come back whole; large ones always stream. */
  body: ReadableStream<Uint8Array> | Uint8Array;
}

/**
 * Where image bytes live. Implementations must make put atomic: an object is either absent
 * or complete, never partial, whatever happens mid-write.
 */
export interface BlobStore {
  readonly kind: string;
  /**
   * Stores bytes under `key`. `durable: false` (a variant that is made again when lost)
   * lets a store skip what only durability needs (a filesystem store's syncs).
   */
  put(
    key: string,
    body: ReadableStream<Uint8Array> | Uint8Array,
    meta: { contentType: string; size: number; durable?: boolean },
  ): Promise<void>;
  /**
   * Stores a local file the caller owns and hands over: on success it is gone from `path`
   * (a filesystem store renames it into place, so the bytes are never copied through
   * memory). On failure the file may or may not still be there; removing it stays safe.
   * `durable: false` as for put.
   */
  putFile(
    key: string,
    path: string,
    meta: { contentType: string; durable?: boolean },
  ): Promise<void>;
  /** The object (or the given range of it), or null when absent. */
  get(key: string, range?: ByteRange): Promise<BlobBody | null>;
  stat(key: string): Promise<BlobStat | null>;
  /** Removes the object; absent objects are not an error. */
  delete(key: string): Promise<void>;
  /** True when the store answers within timeoutMs (readiness). */
  ping(timeoutMs?: number): Promise<boolean>;
  /** Every object with its last modification (the orphan sweeper walks this). */
  list(): AsyncIterable<{ key: string; modified: Date }>;
  close?(): Promise<void>;
}

/**
 * Keys are `<id>.<ext>`, `<id>.<th|md>.<ext>` or a made variant's `<id>.v<w>x<h><fit>q<q>.<ext>`
 * (transforms.ts); nothing else may reach a store.
 */
export const KEY_PATTERN =
  /^[A-Za-z0-9_-]{6,64}(\.(th|md|v\d{1,5}x\d{1,5}[icn]q\d{1,3}))?\.[a-z0-9]{2,5}$/;

/** Throws on a key that could escape the store's namespace. */
export function assertKey(key: string): void {
  if (!KEY_PATTERN.test(key)) throw new Error(`invalid store key: ${key}`);
}
