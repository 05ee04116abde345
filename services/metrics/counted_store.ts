import type {
  BlobBody,
  BlobStat,
  BlobStore,
  ByteRange,
} from "../store/blob_store.ts";
import type { Metrics } from "./metrics.ts";

/**
 * A store that counts its failed operations into the metrics (imagehost_store_errors_total)
 * and otherwise is the store it wraps: every call passes through unchanged.
 */
export class CountedStore implements BlobStore {
  constructor(readonly inner: BlobStore, private readonly metrics: Metrics) {}

  get kind(): string {
    return this.inner.kind;
  }

  #count<T>(op: string, p: Promise<T>): Promise<T> {
    return p.catch((e) => {
      this.metrics.storeError(op);
      throw e;
    });
  }

  put(
    key: string,
    body: ReadableStream<Uint8Array> | Uint8Array,
    meta: { contentType: string; size: number; durable?: boolean },
  ): Promise<void> {
    return this.#count("put", this.inner.put(key, body, meta));
  }

  putFile(
    key: string,
    path: string,
    meta: { contentType: string; durable?: boolean },
  ): Promise<void> {
    return this.#count("put", this.inner.putFile(key, path, meta));
  }

  get(key: string, range?: ByteRange): Promise<BlobBody | null> {
    return this.#count("get", this.inner.get(key, range));
  }

  stat(key: string): Promise<BlobStat | null> {
    return this.#count("stat", this.inner.stat(key));
  }

  delete(key: string): Promise<void> {
    return this.#count("delete", this.inner.delete(key));
  }

  ping(timeoutMs?: number): Promise<boolean> {
    return this.inner.ping(timeoutMs);
  }

  list(): AsyncIterable<{ key: string; modified: Date }> {
    return this.inner.list();
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}
