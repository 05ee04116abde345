import sharp from "sharp";
import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { BlobStore } from "../store/blob_store.ts";
import type { WorkSlots } from "../runtime/work_slots.ts";
import { ApiError } from "../../schemas/errors.ts";
import { wholeBody } from "../runtime/file_io.ts";
import { isLibvipsTimeout } from "./engine.ts";
import { mayAnimate } from "../../sdk/src/embed_codes.ts";
import { MIME_BY_EXT } from "./records.ts";
import { DEFAULT_QUALITY, type Transform } from "./transforms.ts";

/** What the maker needs to know of the image a variant is made from. */
export interface VariantSource {
  id: string;
  /** The original's store key. */
  key: string;
  ext: string;
}

/**
 * Makes the variants transform URLs ask for, at first request: the original read from
 * the store, resized and encoded in one of its slots (half the image workers, apart from
 * the uploads' own, so a flood of transforms never takes a slot an upload waits for),
 * within IMAGE_TIMEOUT_MS (143 past it, 250 when every slot and the line are taken),
 * then stored beside the original, its row written last. Concurrent first requests for
 * one variant share one make: on one instance a shared promise, across instances a lease
 * in the variant's row.
 */
export class VariantMaker {
  readonly #inflight = new Map<string, Promise<Uint8Array>>();

  /**
   * `shared`: other instances may make variants too (a PostgreSQL several instances
   * share), so a make first takes its row as a lease. With the embedded database there is
   * one instance, whose shared promise is enough: no lease, no extra durable write.
   */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly store: BlobStore,
    private readonly slots: WorkSlots,
    private readonly timeoutMs: number,
    private readonly shared: boolean,
  ) {}

  /**
   * Makes and stores the variant under `key` unless a make of it is under way already;
   * resolves to its bytes (every waiter gets the same), so the first answer need not read
   * them back from the store.
   */
  make(
    source: VariantSource,
    t: Transform,
    key: string,
    ext: string,
  ): Promise<Uint8Array> {
    let running = this.#inflight.get(key);
    if (!running) {
      running = this.#make(source, t, key, ext).finally(() =>
        this.#inflight.delete(key)
      );
      this.#inflight.set(key, running);
    }
    return running;
  }

  async #make(source: VariantSource, t: Transform, key: string, ext: string) {
    // Across instances: the one that takes the row's lease makes it; the others wait for
    // its bytes (and make it themselves only if that lease runs out first).
    if (this.shared && !await this.#lease(key, source.id)) {
      const made = await this.#waitFor(key);
      if (made) return made;
      await this.#lease(key, source.id);
    }
    let bytes: Uint8Array;
    try {
      bytes = await this.slots.run(
        () => this.#encode(source, t, ext),
        this.timeoutMs,
      );
      await this.store.put(key, bytes, {
        contentType: MIME_BY_EXT[ext],
        size: bytes.length,
        durable: false,
      });
    } catch (e) {
      // A make that failed (busy slots, a deadline, an undecodable original, the store)
      // gives its lease back, so the next request tries at once instead of waiting it out.
      await this.db.deleteFrom("image_variants").where("key", "=", key)
        .where("state", "=", "making").execute().catch(() => {});
      throw e;
    }
    await this.db.insertInto("image_variants").values({
      key,
      image_id: source.id,
      bytes: bytes.length,
      state: "ready",
    }).onConflict((oc) =>
      oc.column("key").doUpdateSet({
        bytes: bytes.length,
        state: "ready",
        lease_until: null,
      })
    ).execute();
    return bytes;
  }

  /**
   * Takes the variant's row as a lease for one make (IMAGE_TIMEOUT_MS and a little): true
   * when this instance may make it (no row yet; a ready row, whose bytes the caller found
   * missing; or a lapsed lease), false while another make holds a live lease.
   */
  async #lease(key: string, imageId: string): Promise<boolean> {
    const until = sql<Date>`now() + ${`${
      this.timeoutMs + 2000
    } milliseconds`}::interval`;
    const taken = await this.db.insertInto("image_variants").values({
      key,
      image_id: imageId,
      state: "making",
      lease_until: until,
    }).onConflict((oc) =>
      oc.column("key").doUpdateSet({ state: "making", lease_until: until })
        .where((eb) =>
          eb.or([
            eb("image_variants.state", "=", "ready"),
            eb("image_variants.lease_until", "<", sql<Date>`now()`),
          ])
        )
    ).returning("key").executeTakeFirst();
    return taken !== undefined;
  }

  /** Waits for another instance's make of `key`: its bytes, or undefined at the deadline. */
  async #waitFor(key: string): Promise<Uint8Array | undefined> {
    const deadline = Date.now() + this.timeoutMs + 2000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const blob = await this.store.get(key);
      if (blob) return await wholeBody(blob.body, blob.size);
    }
    return undefined;
  }

  /** read → resize → encode, against the deadline. */
  async #encode(
    source: VariantSource,
    t: Transform,
    ext: string,
  ): Promise<Uint8Array> {
    const deadline = Date.now() + this.timeoutMs;
    const blob = await this.store.get(source.key);
    if (!blob) throw new ApiError(404);
    const input = await wholeBody(blob.body, blob.size);
    // Animation is kept where the output can hold it (WebP, GIF); other types get the
    // first frame.
    const animated = mayAnimate(ext);
    const quality = t.q ?? DEFAULT_QUALITY[ext];
    const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
    let img = sharp(input, { animated, limitInputPixels: false });
    if (t.w || t.h) {
      img = img.resize({
        width: t.w,
        height: t.h,
        fit: t.fit,
        // Never larger than the original: a width past it gives the original's size.
        withoutEnlargement: true,
        background: { r: 0, g: 0, b: 0, alpha: 0 },
      });
    }
    img = ext === "avif"
      ? img.avif({ quality })
      : ext === "webp"
      ? img.webp({ quality })
      : ext === "jpg"
      ? img.flatten({ background: "#ffffff" }).jpeg({ quality, mozjpeg: true })
      : ext === "gif"
      ? img.gif()
      : img.png({ compressionLevel: 9 });
    try {
      return new Uint8Array(await img.timeout({ seconds }).toBuffer());
    } catch (e) {
      if (isLibvipsTimeout(e)) {
        throw new ApiError(143, {
          details: [{
            message: "making this variant took longer than the limit",
          }],
        });
      }
      throw new ApiError(141, {
        message: "Unsupported image type: the image could not be transformed",
      });
    }
  }
}
