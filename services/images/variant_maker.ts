import sharp from "./sharp_module.ts";
import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { BlobStore } from "../store/blob_store.ts";
import type { WorkSlots } from "../runtime/work_slots.ts";
import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../schemas/errors.ts";
import { wholeBody } from "../runtime/file_io.ts";
import { type ImageEngine, isLibvipsTimeout } from "./engine.ts";
import {
  avifTooLarge,
  boxPixels,
  effortWithin,
  type PlannedFormat,
} from "./encode_budget.ts";
import { mayAnimate } from "../../sdk/src/embed_codes.ts";
import { MIME_BY_EXT } from "./records.ts";
import { boxWithin, DEFAULT_QUALITY, type Transform } from "./transforms.ts";
import { encodeFixed, type FixedKind, fixedSize } from "./fixed_variants.ts";

/**
 * What a variant is: a transform URL's, or one of the fixed variants (`th`, `md`) the
 * record names, made here at first request (the medium) or again when lost.
 */
export type Recipe = Transform | FixedKind;

/**
 * What libvips can decode of an original's bytes (ImagePipeline#decodable: a BMP's pixels
 * rewritten, anything else as it is), and how to drop it after.
 */
export type DecodableOf = (
  bytes: Uint8Array,
  ext: string,
  deadline: number,
) => Promise<{ input: Uint8Array | string; release(): Promise<void> }>;

/** Bytes libvips reads as they are. */
const asIs: DecodableOf = (bytes) =>
  Promise.resolve({ input: bytes, release: () => Promise.resolve() });

/** What the maker needs to know of the image a variant is made from. */
export interface VariantSource {
  id: string;
  /** The original's store key. */
  key: string;
  ext: string;
  /** The original's size upright (a transform's box never exceeds it). */
  width?: number;
  height?: number;
}

/** A made variant: its bytes at once, and when it is stored (file, then row). */
export interface Made {
  bytes: Uint8Array;
  /**
   * Resolves once the variant's file and row are written; rejects when they could not be
   * (the next request then makes it again). Whoever needs the file on disk (nginx)
   * waits for it; an answer from the bytes need not.
   */
  stored: Promise<void>;
}

/**
 * Makes variants at first request (transform URLs', and the fixed medium and thumbnail
 * when not stored): the original read from
 * the store, resized and encoded in one of its slots (half the image workers, apart from
 * the uploads' own, so a flood of transforms never takes a slot an upload waits for),
 * within IMAGE_TIMEOUT_MS (143 past it, 250 when every slot and the line are taken),
 * answered, then stored beside the original, its row written last. Concurrent first
 * requests for one variant share one make: on one instance a shared promise, across
 * instances a lease in the variant's row.
 */
export class VariantMaker {
  readonly #inflight = new Map<string, Promise<Made>>();

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
    private readonly decodable: DecodableOf = asIs,
    /** Hears a variant that was made but could not be stored. */
    private readonly onStoreFailure: (key: string, e: unknown) => void =
      () => {},
    /**
     * The engine (whose measured costs bound the encodes that cannot be stopped,
     * encode_budget.ts) and the encoders' efforts (engine.ts avifEffort, webpEffort).
     */
    private readonly effort: {
      engine: ImageEngine;
      avif: number;
      webp: number;
      /** The most pixels one AVIF may have (IMAGE_ENCODE_MB; encode_budget.ts). */
      avifMaxPixels?: number;
    } = { engine: "native", avif: 4, webp: 4 },
  ) {}

  /**
   * Whether an AVIF of `box` from a `width`×`height` original is within the memory one
   * encode may take (IMAGE_ENCODE_MB): format=auto answers WebP where it is not.
   */
  avifFits(
    box: { w?: number; h?: number },
    width: number,
    height: number,
  ): boolean {
    return boxPixels(box, width, height) <=
      (this.effort.avifMaxPixels ?? Infinity);
  }

  /** Resolves once every variant made so far is stored (or failed to be): shutdown. */
  async settled(): Promise<void> {
    await Promise.allSettled(
      [...this.#inflight.values()].map((m) => m.then((made) => made.stored)),
    );
  }

  /**
   * Makes and stores the variant under `key` unless a make of it is under way already;
   * resolves to its bytes as soon as they are encoded (every waiter gets the same, until
   * it is stored), so the first answer waits neither for the store nor for the row: ~2
   * ms of a 33 ms first request.
   */
  make(
    source: VariantSource,
    recipe: Recipe,
    key: string,
    ext: string,
  ): Promise<Made> {
    let running = this.#inflight.get(key);
    if (!running) {
      const made = this.#make(source, recipe, key, ext);
      running = made;
      this.#inflight.set(key, made);
      made.then((m) => m.stored).catch(() => {}).finally(() => {
        if (this.#inflight.get(key) === made) this.#inflight.delete(key);
      });
    }
    return running;
  }

  async #make(
    source: VariantSource,
    recipe: Recipe,
    key: string,
    ext: string,
  ): Promise<Made> {
    // Across instances: the one that takes the row's lease makes it; the others wait for
    // its bytes, and make it themselves only if that make ends without them (its lease
    // given back, or lapsed because its instance died).
    if (this.shared && !await this.#lease(key, source.id)) {
      const made = await this.#waitFor(key);
      if (made) return { bytes: made, stored: Promise.resolve() };
      if (!await this.#lease(key, source.id)) throw variantBusy();
    }
    // A live make keeps its lease however long it waits for a slot and encodes, so no
    // other instance makes the same variant meanwhile (issue #51: 4 of 4 slow AVIFs made
    // twice when the lease lapsed mid-encode).
    const renewal = this.shared ? this.#renew(key) : undefined;
    let bytes: Uint8Array;
    try {
      bytes = await this.slots.run(
        () => this.#encode(source, recipe, ext),
        this.timeoutMs,
      );
    } catch (e) {
      clearInterval(renewal);
      await this.#giveBack(key);
      throw e;
    }
    const stored = this.#keep(source, recipe, key, ext, bytes)
      .finally(() => clearInterval(renewal));
    stored.catch((e) => this.onStoreFailure(key, e));
    return { bytes, stored };
  }

  /** The lease's length: one make's deadline and a little. */
  get #leaseMs(): number {
    return this.timeoutMs + 2000;
  }

  /** Extends the lease of a make in progress every third of its length, until cleared. */
  #renew(key: string): ReturnType<typeof setInterval> {
    return setInterval(() => {
      this.db.updateTable("image_variants")
        .set({
          lease_until: sql<
            Date
          >`now() + ${`${this.#leaseMs} milliseconds`}::interval`,
        })
        .where("key", "=", key).where("state", "=", "making")
        .execute().catch(() => {});
    }, Math.max(100, Math.floor(this.#leaseMs / 3)));
  }

  /**
   * A make that failed (busy slots, a deadline, an undecodable original, the store) gives
   * its lease back, so the next request tries at once instead of waiting it out.
   */
  async #giveBack(key: string) {
    await this.db.deleteFrom("image_variants").where("key", "=", key)
      .where("state", "=", "making").execute().catch(() => {});
  }

  /** Stores a made variant beside the original, then writes its row. */
  async #keep(
    source: VariantSource,
    recipe: Recipe,
    key: string,
    ext: string,
    bytes: Uint8Array,
  ): Promise<void> {
    try {
      await this.store.put(key, bytes, {
        contentType: MIME_BY_EXT[ext],
        size: bytes.length,
        durable: false,
      });
    } catch (e) {
      await this.#giveBack(key);
      throw e;
    }
    if (typeof recipe === "string") {
      // A fixed variant is one of the image's own files (deleted with it by name, never
      // trimmed): its row served only as the lease, and goes.
      if (this.shared) {
        await this.db.deleteFrom("image_variants").where("key", "=", key)
          .execute();
      }
      await this.#unlessDeleted(source.id, key);
      return;
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
    await this.#unlessDeleted(source.id, key);
  }

  /**
   * A deletion wins over a make in flight (issue #51: a variant made while its image was
   * deleted stayed, with a `ready` row). The deletion marks the image, then removes the
   * files and rows it finds; the make writes its file and row, then reads the mark. One
   * of the two sees the other, so whichever comes last removes the variant.
   */
  async #unlessDeleted(imageId: string, key: string): Promise<void> {
    const live = await this.db.selectFrom("images").select("id")
      .where("id", "=", imageId).where("deleted_at", "is", null)
      .executeTakeFirst();
    if (live) return;
    await this.store.delete(key);
    await this.db.deleteFrom("image_variants").where("key", "=", key).execute();
  }

  /**
   * Takes the variant's row as a lease for one make (IMAGE_TIMEOUT_MS and a little): true
   * when this instance may make it (no row yet; a ready row, whose bytes the caller found
   * missing; or a lapsed lease), false while another make holds a live lease.
   */
  async #lease(key: string, imageId: string): Promise<boolean> {
    const until = sql<
      Date
    >`now() + ${`${this.#leaseMs} milliseconds`}::interval`;
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

  /**
   * Waits for another instance's make of `key`: its bytes; or undefined once that make
   * has ended without them (its row gone or no longer `making`, or its lease lapsed) or
   * after the longest a make may take (a slot's wait and an encode, each within
   * IMAGE_TIMEOUT_MS).
   */
  async #waitFor(key: string): Promise<Uint8Array | undefined> {
    const deadline = Date.now() + this.timeoutMs * 2 + 2000;
    for (let round = 0; Date.now() < deadline; round++) {
      await new Promise((r) => setTimeout(r, 50));
      const blob = await this.store.get(key);
      if (blob) return await wholeBody(blob.body, blob.size);
      if (round % 10 === 9 && !await this.#leased(key)) {
        // Its bytes may have landed just before the row said so.
        const late = await this.store.get(key);
        return late ? await wholeBody(late.body, late.size) : undefined;
      }
    }
    return undefined;
  }

  /** Whether another make holds `key`'s lease now. */
  async #leased(key: string): Promise<boolean> {
    const row = await this.db.selectFrom("image_variants")
      .select(
        sql<boolean>`state = 'making' and lease_until >= now()`.as("live"),
      )
      .where("key", "=", key).executeTakeFirst();
    return row?.live === true;
  }

  /** read → orient → resize → encode, against the deadline. */
  async #encode(
    source: VariantSource,
    recipe: Recipe,
    ext: string,
  ): Promise<Uint8Array> {
    const deadline = Date.now() + this.timeoutMs;
    const blob = await this.store.get(source.key);
    if (!blob) throw new ApiError(404);
    const bytes = await wholeBody(blob.body, blob.size);
    let release = () => Promise.resolve();
    try {
      const decodable = await this.decodable(bytes, source.ext, deadline);
      release = decodable.release;
      const input = decodable.input;
      // Animation is kept where the output can hold it (WebP, GIF); other types get the
      // first frame.
      const animated = mayAnimate(ext);
      const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
      // Upright first: a stored JPEG keeps its orientation tag (the strip writes it
      // back), which a resized copy without that tag would otherwise lose.
      let img = sharp(input, { animated, limitInputPixels: false }).rotate();
      const box = typeof recipe === "string"
        ? undefined
        : { ...recipe, ...boxWithin(recipe, source.width, source.height) };
      const effort = await this.#plan(
        img,
        source,
        box ?? recipe,
        ext,
        deadline,
      );
      if (typeof recipe === "string") {
        const size = fixedSize(recipe);
        img = encodeFixed(
          img.resize(size, size, { fit: "inside", withoutEnlargement: true }),
          ext,
          effort,
        );
      } else {
        img = this.#transformed(img, box!, ext, effort);
      }
      return new Uint8Array(await img.timeout({ seconds }).toBuffer());
    } catch (e) {
      // The BMP rewrite's own answers (141 damaged, 143, 250 for its scratch) as they are.
      if (e instanceof ApiError) throw e;
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
    } finally {
      await release();
    }
  }

  /**
   * The effort of an encode libvips cannot stop (AVIF, a transform's mozjpeg, GIF) that
   * fits the time left, or 143 before it starts (encode_budget.ts); undefined for the
   * encoders that stop at the timeout.
   */
  async #plan(
    img: ReturnType<typeof sharp>,
    source: VariantSource,
    recipe: Recipe,
    ext: string,
    deadline: number,
  ): Promise<number | undefined> {
    const fixed = typeof recipe === "string";
    const format: PlannedFormat | undefined = ext === "avif" && !fixed
      ? "avif"
      : ext === "jpg" && !fixed
      ? "jpg"
      : ext === "gif"
      ? "gif"
      : undefined;
    if (!format) return undefined;
    const ceiling = format === "avif"
      ? this.effort.avif
      : format === "jpg"
      ? 1
      : 7;
    let { width, height } = source;
    let pages = 1;
    if (!width || !height || format === "gif") {
      const meta = await img.metadata();
      width ??= meta.autoOrient?.width ?? meta.width ?? 1;
      height ??= meta.autoOrient?.height ?? meta.pageHeight ?? meta.height ?? 1;
      pages = format === "gif" ? meta.pages ?? 1 : 1;
    }
    const pixels = fixed
      ? fixedPixels(fixedSize(recipe), width, height)
      : boxPixels(recipe, width, height);
    const max = this.effort.avifMaxPixels ?? Infinity;
    if (format === "avif" && pixels > max) throw avifTooLarge(pixels, max);
    return effortWithin(
      this.effort.engine,
      format,
      pixels * pages,
      deadline - Date.now(),
      ceiling,
    );
  }

  /** A transform URL's size and encoding, at the planned effort where there is one. */
  #transformed(
    img: ReturnType<typeof sharp>,
    t: Transform,
    ext: string,
    effort: number | undefined,
  ) {
    const quality = t.q ?? DEFAULT_QUALITY[ext];
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
    return ext === "avif"
      ? img.avif({ quality, effort: effort ?? this.effort.avif })
      : ext === "webp"
      ? img.webp({ quality, effort: this.effort.webp })
      : ext === "jpg"
      ? img.flatten({ background: "#ffffff" }).jpeg({
        quality,
        mozjpeg: (effort ?? 1) > 0,
      })
      : ext === "gif"
      ? img.gif({ effort })
      : img.png({ compressionLevel: 9 });
  }
}

/** Pixels of a fixed variant (longest side `size`, never enlarged) of a w×h original. */
function fixedPixels(size: number, width: number, height: number): number {
  const scale = Math.min(1, size / Math.max(width, height));
  return Math.ceil(width * scale) * Math.ceil(height * scale);
}

/** Another instance's make of this variant outlasted the wait: busy, try again. */
function variantBusy(): ApiError {
  return new ApiError(250, {
    headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
    details: [{
      path: "variants",
      message:
        "another instance is still making this variant; try again shortly",
    }],
  });
}
