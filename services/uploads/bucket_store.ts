import type { Readable } from "node:stream";
import { DataStore, ERRORS, Upload } from "@tus/utils";
import type { BlobStore } from "../store/blob_store.ts";
import { streamInto, wholeBody } from "../runtime/file_io.ts";
import { TUS_ID_PREFIX } from "./tus_path.ts";
import { dropped } from "../runtime/collector.ts";
import { bigBuffer } from "../runtime/big_buffer.ts";

/** An upload's info as kept beside its parts: `<id>.info`. */
interface Info {
  id: string;
  size?: number;
  offset: number;
  metadata?: Record<string, string | null>;
  creation_date?: string;
  /**
   * The parts written so far, in order: each its object's key (`<id>-<writer>.p<n>`: each
   * PATCH writes under a tag of its own, so two writers never share a key), from offset
   * `at`, of `bytes`.
   */
  parts: { key: string; at: number; bytes: number }[];
}

/**
 * A tus DataStore over the service's own BlobStore (the S3 bucket with STORE=s3): each
 * PATCH is kept as parts of `partBytes` (`<id>.p<n>`; the last one of the file shorter),
 * the upload's info in `<id>.info`, so any instance takes the next chunk of an upload
 * another one began, and nothing is written to disk.
 *
 * A cut chunk keeps its whole parts and drops the rest: the instance whose connection was
 * cut writes nothing after it, so a resume that lands at once on another instance (a
 * balancer) never races it for the same part. (Keeping the short tail as well, the cut
 * instance's late write was seen to land after the other's HEAD had answered the offset
 * before it.) Each part is committed only while the info still says it starts where it
 * does. `@tus/s3-store` was the first choice; it calls S3's ListParts on every HEAD and
 * PATCH, which the S3 server the tests run (s3rver) refuses.
 */
export class BucketStore extends DataStore {
  constructor(
    private readonly store: BlobStore,
    private readonly expireMs: number,
    private readonly partBytes = 1024 * 1024,
  ) {
    super();
    this.extensions = [
      "creation",
      "creation-with-upload",
      "termination",
      "expiration",
    ];
  }

  override async create(upload: Upload): Promise<Upload> {
    upload.creation_date ??= new Date().toISOString();
    await this.#putInfo({
      id: upload.id,
      size: upload.size,
      offset: 0,
      metadata: upload.metadata,
      creation_date: upload.creation_date,
      parts: [],
    });
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    const info = await this.#info(id);
    if (!info) throw ERRORS.FILE_NOT_FOUND;
    return new Upload({
      id,
      size: info.size,
      offset: info.offset,
      metadata: info.metadata,
      creation_date: info.creation_date,
    });
  }

  override async write(
    stream: Readable,
    id: string,
    offset: number,
  ): Promise<number> {
    if (!await this.#info(id)) throw ERRORS.FILE_NOT_FOUND;
    const writer = crypto.randomUUID().slice(0, 8);
    let n = 0;
    // One buffer for every part of this write, reused once its put has ended (the store
    // has sent or copied it by then): a new one per part was garbage the process kept as
    // RSS until a collection came (issue #49).
    let part: Uint8Array | undefined;
    let held = 0;
    let at = offset;
    const flush = async () => {
      if (held === 0 || !part) return;
      const bytes = part.subarray(0, held);
      held = 0;
      const key = `${id}-${writer}.p${n++}`;
      await this.store.put(key, bytes, {
        contentType: "application/octet-stream",
        size: bytes.length,
        durable: false,
      });
      // Committed only while the info still ends where this part starts: another
      // writer that moved on (a resume elsewhere) wins, and this part goes.
      const info = await this.#info(id);
      if (!info || info.offset !== at) {
        await this.store.delete(key).catch(() => {});
        throw info ? ERRORS.FILE_WRITE_ERROR : ERRORS.FILE_NOT_FOUND;
      }
      // The store's copies of the part (its request's body) are garbage now.
      dropped(bytes.length);
      info.parts.push({ key, at, bytes: bytes.length });
      at += bytes.length;
      info.offset = at;
      await this.#putInfo(info);
    };
    for await (const chunk of stream) {
      let c = chunk as Uint8Array;
      while (c.length) {
        const take = Math.min(c.length, this.partBytes - held);
        part ??= bigBuffer(this.partBytes);
        part.set(c.subarray(0, take), held);
        held += take;
        c = c.subarray(take);
        if (held === this.partBytes) await flush();
      }
    }
    // The stream ended whole (a cut one threw above, its tail dropped): the rest is the
    // file's last part, or a client's own chunk boundary.
    await flush();
    return at;
  }

  override async remove(id: string): Promise<void> {
    const info = await this.#info(id);
    if (!info) throw ERRORS.FILE_NOT_FOUND;
    for (const p of info.parts) await this.store.delete(p.key).catch(() => {});
    await this.store.delete(`${id}.info`);
  }

  override getExpiration(): number {
    return this.expireMs;
  }

  override async deleteExpired(): Promise<number> {
    const cutoff = Date.now() - this.expireMs;
    const infos = new Map<string, number>();
    const parts: { key: string; id: string; modified: number }[] = [];
    for await (const o of this.store.list()) {
      if (!o.key.startsWith(TUS_ID_PREFIX)) continue;
      if (o.key.endsWith(".info")) {
        infos.set(o.key.slice(0, -5), o.modified.getTime());
      } else {
        parts.push({
          key: o.key,
          id: o.key.slice(0, o.key.lastIndexOf("-")),
          modified: o.modified.getTime(),
        });
      }
    }
    const old = [...infos].filter(([, t]) => t < cutoff).map(([id]) => id);
    for (const id of old) await this.remove(id).catch(() => {});
    // Parts no info names any more (a writer that lost to another) go at the same age.
    for (const p of parts) {
      if (!infos.has(p.id) && p.modified < cutoff) {
        await this.store.delete(p.key).catch(() => {});
      }
    }
    return old.length;
  }

  /** Every upload's id. */
  async *ids(): AsyncIterable<string> {
    for await (const o of this.store.list()) {
      if (o.key.startsWith(TUS_ID_PREFIX) && o.key.endsWith(".info")) {
        yield o.key.slice(0, -5);
      }
    }
  }

  /** A finished upload's parts, in order, each as its bytes. */
  async *parts(id: string): AsyncIterable<Uint8Array> {
    for await (const blob of this.#partBlobs(id)) {
      yield await wholeBody(blob.body, blob.size);
    }
  }

  /**
   * A finished upload's bytes read straight into `into` (no buffer per part); how many
   * came. Throws when they would not fit or a part is gone.
   */
  async readInto(id: string, into: Uint8Array): Promise<number> {
    let at = 0;
    for await (const blob of this.#partBlobs(id)) {
      if (at + blob.size > into.length) {
        if (!(blob.body instanceof Uint8Array)) await blob.body.cancel();
        throw new Error(`the parts of ${id} are longer than its size`);
      }
      if (blob.body instanceof Uint8Array) into.set(blob.body, at);
      else await streamInto(blob.body, into.subarray(at, at + blob.size));
      // The response's chunks, copied into `into`, are garbage now.
      dropped(blob.size);
      at += blob.size;
    }
    return at;
  }

  /** A finished upload's parts, in order, as the store gives them; a part gone throws. */
  async *#partBlobs(id: string) {
    const info = await this.#info(id);
    if (!info) throw ERRORS.FILE_NOT_FOUND;
    for (const p of info.parts) {
      const blob = await this.store.get(p.key);
      if (!blob) throw new Error(`part ${p.key} of ${id} is gone`);
      yield blob;
    }
  }

  /**
   * The upload's info, or undefined when there is none. An info read while another
   * instance rewrites it may come back torn where the S3 server is not atomic (s3rver
   * writes in place; S3 itself is atomic): such a read is tried again, up to 5 times.
   */
  async #info(id: string): Promise<Info | undefined> {
    for (let tries = 1;; tries++) {
      const blob = await this.store.get(`${id}.info`);
      if (!blob) return undefined;
      const text = new TextDecoder().decode(
        await wholeBody(blob.body, blob.size),
      );
      try {
        return JSON.parse(text);
      } catch (e) {
        if (tries >= 5) throw e;
        await new Promise((r) => setTimeout(r, 20 * tries));
      }
    }
  }

  async #putInfo(info: Info): Promise<void> {
    const bytes = new TextEncoder().encode(JSON.stringify(info));
    await this.store.put(`${info.id}.info`, bytes, {
      contentType: "application/json",
      size: bytes.length,
      durable: true,
    });
  }
}
