import { join } from "node:path";
import type { DataStore, Upload } from "@tus/utils";
import { FileStore } from "@tus/file-store";
import type { BlobStore } from "../store/blob_store.ts";
import {
  isMemoryPath,
  openScratch,
  removeScratch,
  writeScratch,
} from "../runtime/scratch_files.ts";
import { writeAll } from "../runtime/file_io.ts";
import { bigBuffer } from "../runtime/big_buffer.ts";
import { BucketStore } from "./bucket_store.ts";
import { TUS_ID_PREFIX } from "./tus_path.ts";

/**
 * Where resumable uploads keep their parts, and how a finished one reaches the pipeline:
 * on disk (`@tus/file-store`, DATA_DIR/tus) for the embedded profile, or in the images'
 * bucket (BucketStore) with STORE=s3, so no disk is written and any instance can take the
 * next chunk of an upload another one began.
 */
export interface TusBackend {
  readonly datastore: DataStore;
  /** The ids of every upload there is (for an account's bounds). */
  ids(): AsyncIterable<string>;
  /**
   * A finished upload as a scratch file the pipeline reads; `release` removes it and
   * every part of the upload.
   */
  finished(
    upload: Upload,
  ): Promise<{ path: string; release(): Promise<void> }>;
  /** Removes the uploads unwritten for TUS_EXPIRE_HOURS; how many went. */
  expire(): Promise<number>;
}

/** A new upload's id: `tus-` and 32 hex digits. */
export function newUploadId(): string {
  return TUS_ID_PREFIX + crypto.randomUUID().replaceAll("-", "");
}

/** Uploads on disk, in `directory`: `<id>` the bytes, `<id>.json` the info. */
export function fileBackend(directory: string, expireMs: number): TusBackend {
  const datastore = new FileStore({
    directory,
    expirationPeriodInMilliseconds: expireMs,
  });
  return {
    datastore,
    async *ids() {
      try {
        for await (const e of Deno.readDir(directory)) {
          if (e.name.endsWith(".json")) yield e.name.slice(0, -5);
        }
      } catch { /* no folder yet: no upload */ }
    },
    finished(upload) {
      const path = join(directory, upload.id);
      return Promise.resolve({
        path,
        async release() {
          // Stored: the file was moved into the store; refused: it goes. Its info too.
          await Deno.remove(path).catch(() => {});
          await Deno.remove(`${path}.json`).catch(() => {});
        },
      });
    },
    async expire() {
      return await datastore.deleteExpired();
    },
  };
}

/**
 * Uploads in the images' bucket (BucketStore). A finished one is read back, part by
 * part, into a scratch file of the request's kind (memory on Deno Deploy).
 */
export function bucketBackend(
  store: BlobStore,
  expireMs: number,
  scratch: (bytes: number) => Promise<{ dir: string; release(): void }>,
): TusBackend {
  const datastore = new BucketStore(store, expireMs);
  return {
    datastore,
    ids: () => datastore.ids(),
    async finished(upload) {
      const room = await scratch(upload.size ?? 0);
      const path = join(room.dir, upload.id);
      const release = async () => {
        await removeScratch(path).catch(() => {});
        room.release();
        await datastore.remove(upload.id).catch(() => {});
      };
      try {
        if (isMemoryPath(path)) {
          // Into one buffer of the file's size: the pipeline reads it whole, and a file
          // gathered in parts would be copied into one first (issue #49: every copy of
          // it is RSS the process keeps).
          const whole = bigBuffer(upload.size ?? 0);
          const got = await datastore.readInto(upload.id, whole);
          await writeScratch(path, whole.subarray(0, got));
          return { path, release };
        }
        const f = await openScratch(path, { write: true, createNew: true });
        try {
          for await (const part of datastore.parts(upload.id)) {
            await writeAll(f, part);
          }
        } finally {
          f.close();
        }
        return { path, release };
      } catch (e) {
        await release();
        throw e;
      }
    },
    async expire() {
      return await datastore.deleteExpired();
    },
  };
}
