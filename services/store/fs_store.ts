import { join } from "node:path";
import {
  assertKey,
  type BlobBody,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  KEY_PATTERN,
} from "./blob_store.ts";
import { readFull, syncFile, writeAll } from "../runtime/file_io.ts";
import { claimScratchDir, processTag } from "../runtime/scratch_dir.ts";
import {
  isMemoryPath,
  readScratch,
  removeScratch,
} from "../runtime/scratch_files.ts";

/** rename(2) across filesystems fails with EXDEV. */
function isCrossDevice(e: unknown): boolean {
  return e instanceof Error && /EXDEV|cross-device/i.test(e.message);
}

/**
 * Filesystem store: objects under `<dir>/<first two chars>/<key>`, written to a temporary
 * file, synced, then renamed into place so readers never see a partial object.
 */
export class FsStore implements BlobStore {
  readonly kind = "fs";
  readonly #tmp: string;
  constructor(private readonly dir: string) {
    // A folder per process: instances sharing the directory never clean each other's.
    this.#tmp = join(dir, ".tmp", processTag());
  }

  /** Creates the folders and removes temp files dead processes (a crash) left behind. */
  async init(): Promise<this> {
    await claimScratchDir(join(this.dir, ".tmp"));
    return this;
  }

  #path(key: string): string {
    assertKey(key);
    return join(this.dir, key.slice(0, 2), key);
  }

  async put(
    key: string,
    body: ReadableStream<Uint8Array> | Uint8Array,
    meta?: { durable?: boolean },
  ): Promise<void> {
    // A made variant (durable: false) is made again if lost: no syncs for it.
    const durable = meta?.durable !== false;
    const final = this.#path(key);
    const tmp = join(this.#tmp, `${crypto.randomUUID()}-${key}`);
    try {
      const f = await Deno.open(tmp, { write: true, createNew: true });
      try {
        if (body instanceof Uint8Array) await writeAll(f, body);
        else for await (const chunk of body) await writeAll(f, chunk);
        if (durable) await f.syncData();
      } finally {
        f.close();
      }
      await this.#publish(key, tmp, final, durable);
    } catch (e) {
      await Deno.remove(tmp).catch(() => {});
      throw e;
    }
  }

  /** Syncs the file and renames it into place; a file on another filesystem is copied. */
  async putFile(
    key: string,
    path: string,
    meta?: { contentType: string; durable?: boolean },
  ): Promise<void> {
    const durable = meta?.durable !== false;
    if (isMemoryPath(path)) {
      // Scratch held in memory (SCRATCH=memory): written out like any other bytes.
      await this.put(key, await readScratch(path), { durable });
      await removeScratch(path).catch(() => {});
      return;
    }
    const final = this.#path(key);
    if (durable) await syncFile(path);
    try {
      await this.#publish(key, path, final, durable);
    } catch (e) {
      if (!isCrossDevice(e)) throw e;
      const tmp = join(this.#tmp, `${crypto.randomUUID()}-${key}`);
      try {
        await Deno.copyFile(path, tmp);
        if (durable) await syncFile(tmp);
        await this.#publish(key, tmp, final, durable);
      } catch (e) {
        await Deno.remove(tmp).catch(() => {});
        throw e;
      }
      await Deno.remove(path).catch(() => {});
    }
  }

  /** Renames a synced file into place and syncs the directory, so the name survives a crash. */
  async #publish(key: string, from: string, final: string, durable = true) {
    const parent = join(this.dir, key.slice(0, 2));
    // Each folder is made once per process, not at every put (a mkdir was ~0.25 ms of an
    // upload's main thread); one removed since is made again.
    if (!this.#folders.has(parent)) {
      await Deno.mkdir(parent, { recursive: true });
      this.#folders.add(parent);
    }
    try {
      await Deno.rename(from, final);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      await Deno.mkdir(parent, { recursive: true });
      await Deno.rename(from, final);
    }
    if (durable) await syncFile(parent);
  }

  /** The two-character folders this process has made (at most 64² of them). */
  readonly #folders = new Set<string>();

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const s = await Deno.stat(this.#path(key));
      return { size: s.size };
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  async get(key: string, range?: ByteRange): Promise<BlobBody | null> {
    let f: Deno.FsFile;
    try {
      f = await Deno.open(this.#path(key), { read: true });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
    const { size } = await f.stat();
    if (!range && size <= 1024 * 1024) {
      // One read beats a stream's per-chunk overhead for the typical image.
      try {
        const buf = new Uint8Array(size);
        return { size, body: buf.subarray(0, await readFull(f, buf)) };
      } finally {
        f.close();
      }
    }
    if (!range) return { size, body: f.readable };
    await f.seek(range.start, Deno.SeekMode.Start);
    let left = range.end - range.start + 1;
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        const buf = new Uint8Array(Math.min(left, 64 * 1024));
        const n = await f.read(buf);
        if (n === null || n === 0) {
          f.close();
          ctl.close();
          return;
        }
        left -= n;
        ctl.enqueue(buf.subarray(0, n));
        if (left <= 0) {
          f.close();
          ctl.close();
        }
      },
      cancel() {
        f.close();
      },
    }, { highWaterMark: 0 });
    return { size, body };
  }

  async ping(): Promise<boolean> {
    try {
      return (await Deno.stat(this.dir)).isDirectory;
    } catch {
      return false;
    }
  }

  async *list(): AsyncIterable<{ key: string; modified: Date }> {
    for await (const shard of Deno.readDir(this.dir)) {
      if (!shard.isDirectory || shard.name.startsWith(".")) continue;
      for await (const e of Deno.readDir(join(this.dir, shard.name))) {
        if (!e.isFile || !KEY_PATTERN.test(e.name)) continue;
        const s = await Deno.stat(join(this.dir, shard.name, e.name)).catch(
          () => undefined,
        );
        if (s?.mtime) yield { key: e.name, modified: s.mtime };
      }
    }
  }

  async delete(key: string): Promise<void> {
    await Deno.remove(this.#path(key)).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}
