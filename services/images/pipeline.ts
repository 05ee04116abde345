/**
 * services/images/ — an image from its received bytes to its links: the pipeline
 * (this file: admit → inspect → check + strip + store in a work slot → row; each stage
 * in pipeline_stages.ts), records and
 * their queries (records.ts), the live-row and bytes caches that serve hot images
 * (image_cache.ts, blob_cache.ts), and the sweep of bytes without rows (orphans.ts).
 * Each format's lossless rewrite lives in formats/.
 */
import sharp from "./sharp_module.ts";
import { dirname, join } from "node:path";
import {
  ApiError,
  noSpace,
  OUTAGE_RETRY_AFTER_S,
} from "../../schemas/errors.ts";
import { isNoSpace } from "../runtime/file_io.ts";
import { randomToken } from "../accounts/crypto.ts";
import {
  blobKeys,
  deleteImage,
  editImage,
  type ImageEdit,
  type ImageRecord,
  MIME_BY_EXT,
  toImageRecord,
} from "./records.ts";
import {
  tighterAccess,
  type UploadAccess,
} from "../privacy/password_access.ts";
import { StripBuffers } from "./formats/metadata_strip.ts";
import {
  BMP_HEAD_BYTES,
  type BmpInfo,
  MalformedBmp,
  parseBmp,
} from "./formats/bmp.ts";
import { claimScratchDir, processTag } from "../runtime/scratch_dir.ts";
import { WorkSlots } from "../runtime/work_slots.ts";
import { ByteGate } from "../runtime/byte_gate.ts";
import { type QuotaHold, Quotas } from "../accounts/quotas.ts";
import { isBlockedContent } from "../db/errors.ts";
import { hasMedium, variantExt } from "./fixed_variants.ts";
import { engineThreads, imageEngine } from "./engine.ts";
import { ScratchBudget } from "./formats/scratch_budget.ts";
import { collectEvery } from "../runtime/collector.ts";
import {
  isMemoryPath,
  limitFolder,
  MEMORY_ROOT,
  readScratch,
  releaseFolder,
  removeScratch,
  reserveFolder,
  setMemoryBudget,
  statScratch,
} from "../runtime/scratch_files.ts";
import type { Config } from "../../schemas/config.ts";
import type { Database } from "../db/database.ts";
import type { BlobStore } from "../store/blob_store.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Metrics } from "../metrics/metrics.ts";
import {
  ACCEPTED,
  bmpAsTiff,
  check,
  damaged,
  type IncomingImage,
  input,
  inspect,
  REENCODE,
  reencode,
  type Shape,
  sniffType,
  type Source,
  strip,
  stripsInPlace,
  stripWithin,
} from "./pipeline_stages.ts";

export type { IncomingImage } from "./pipeline_stages.ts";

/** What the pipeline is given of the app's dependencies. */
export interface PipelineDeps {
  config: Config;
  database: Database;
  store: BlobStore;
  clock: Clock;
  metrics?: Metrics;
}

/**
 * Files up to this size are decoded from memory: libvips then finds the loader in the
 * bytes instead of opening the file once per candidate format (~30 opens an upload), ~0.45
 * ms of a 200 KB upload's 6 ms decode. The bytes are held while the upload waits for a
 * worker, so about (IMAGE_QUEUE + IMAGE_WORKERS) MB at most. Larger files stay on disk,
 * where libvips maps them rather than copying them into the heap (the upload memory
 * benchmark).
 */
const DECODE_FROM_MEMORY_MAX = 1024 * 1024;

/**
 * With memory scratch, a full collection per this many MB of dropped buffers: one takes
 * ~6–30 ms of the event loop (a 55 MB heap), a 5 MB upload drops ~15 MB. Not more: the
 * WebAssembly engine copies each input it reads into its own heap (twice for an upload:
 * the header's read and the check), frees the copies only once the input is collected,
 * and never gives its heap back, so what stays uncollected between images becomes its
 * size for good. Ten 5 MB JPEGs in a row grew RSS by 82 MB uncollected, by 17 MB with a
 * collection after each; at 32 MB the sandbox bench's refused 40 MB requests peaked at
 * 406–407 MB, at 16 MB at 364–382, its eight 5 MB uploads taking 1.2 s instead of 1.0–1.1.
 */
const COLLECT_EVERY_MB = 16;

/** A body declared no larger than this is received into memory (see requestScratch). */
export const SMALL_BODY_BYTES = 1024 * 1024;

/** One request's scratch: the folder its received files go in, each file's limit. */
export interface RequestScratch {
  /** Where the body's files go. */
  dir: string;
  /** Where URL imports go (on disk unless the process has none). */
  importDir: string;
  maxFileBytes: number;
  /** What its files may hold together, where less than the files' own limits allow. */
  requestBytes?: number;
  /** Ends the folder's own budget (after the request's files are gone). */
  release(): void;
}

/**
 * Turns a received file into a stored image: detects the type from the bytes, refuses
 * oversize dimensions before decoding, decodes for real (every frame, shrunk), strips
 * personal metadata, writes the bytes to the store and only then commits the row, so an
 * acknowledged image is complete and a failed one leaves nothing visible.
 */
export class ImagePipeline {
  readonly tmpDir: string;
  readonly #stripBuffers = new StripBuffers();
  readonly #slots: WorkSlots;
  /** With memory scratch, the request bodies received and worked on at once, by bytes. */
  readonly #admission: ByteGate;
  /** The scratch disk the BMP rewrites of this process may hold (see #reserveBmpScratch). */
  readonly #bmpScratch: ScratchBudget;
  /** Scratch files live in memory (SCRATCH=memory), so libvips reads and writes bytes. */
  readonly #memory: boolean;
  /** The process's temp folder exists (made at the first upload, once). */
  #tmpMade = false;
  /** Storage, image-count and capture quotas, checked before anything is stored. */
  readonly quotas: Quotas;
  constructor(
    private readonly deps: PipelineDeps,
  ) {
    // A folder per process: instances sharing DATA_DIR never clean each other's uploads.
    // Or none on disk at all where DATA_DIR may not be written (SCRATCH=memory).
    this.#memory = deps.config.SCRATCH === "memory";
    this.tmpDir = this.#memory
      ? join(MEMORY_ROOT, "tmp", processTag())
      : join(deps.config.DATA_DIR, "tmp", processTag());
    // Memory scratch takes from this budget; on disk, small bodies do (requestScratch).
    setMemoryBudget(deps.config.MEMORY_BODY_MB);
    // Where every body lives in memory, its dropped copies are collected soon, not when
    // V8 gets to them (collector.ts).
    if (this.#memory) collectEvery(COLLECT_EVERY_MB);
    // libvips' operation cache only helps repeated identical work; it holds decoded
    // images in memory, which is the opposite of what an upload server wants.
    sharp.cache(false);
    // Process-wide: IMAGE_WORKERS images at once, each with this many libvips threads
    // (one in the WebAssembly engine).
    sharp.concurrency(engineThreads(imageEngine(), deps.config.IMAGE_THREADS));
    this.#slots = new WorkSlots(
      deps.config.IMAGE_WORKERS,
      deps.config.IMAGE_QUEUE,
    );
    this.#admission = new ByteGate(
      deps.config.MEMORY_INFLIGHT_MB * 1024 * 1024,
      deps.config.IMAGE_QUEUE,
    );
    this.quotas = new Quotas(deps.database.db, deps.clock, deps.config);
    this.#bmpScratch = new ScratchBudget(
      deps.config.BMP_SCRATCH_MB,
      deps.config.BMP_SCRATCH_TOTAL_MB,
    );
  }

  /**
   * Where one request's received files go, where its URL imports go, and each file's
   * limit. In memory (SCRATCH=memory): a folder of its own holding at most
   * MEMORY_REQUEST_MB (130 past it), which is then each file's limit too if smaller. On
   * disk: the process's temp folder and MAX_FILE_BYTES; except that a body declared no
   * larger than SMALL_BODY_BYTES is received into memory when the process's memory
   * budget (MEMORY_BODY_MB) has room for twice it, reserved up front (the file and its
   * stripped copy), so such an upload never waits for a temp file's create, write, read
   * back and removal (~1 ms of a 200 KB upload's main thread). Its URL imports, of any
   * size, still go to disk.
   */
  async requestScratch(declaredBytes?: number): Promise<RequestScratch> {
    const { config } = this.deps;
    const limits = this.bodyLimits();
    if (!this.#memory) {
      await this.prepareScratch();
      const disk = {
        dir: this.tmpDir,
        importDir: this.tmpDir,
        ...limits,
        release: () => {},
      };
      if (!declaredBytes || declaredBytes > SMALL_BODY_BYTES) return disk;
      const dir = join(MEMORY_ROOT, "small", processTag(), crypto.randomUUID());
      if (!reserveFolder(dir, 2 * declaredBytes + 64 * 1024, declaredBytes)) {
        return disk;
      }
      return { ...disk, dir, release: () => releaseFolder(dir) };
    }
    const dir = join(this.tmpDir, `req-${crypto.randomUUID()}`);
    const budget = limits.requestBytes!;
    // The body is not read before its bytes are admitted (byte_gate.ts). One of unknown
    // length (chunked: browsers always say it) counts as a small one, so it never holds
    // the gate alone; MEMORY_REQUEST_MB and MEMORY_BODY_MB still bound what it may hold.
    const leave = await this.#admission.enter(
      declaredBytes ?? SMALL_BODY_BYTES,
      config.IMAGE_TIMEOUT_MS,
    );
    // Its first file made one part of the body's declared length: a one-image body is
    // then never gathered from parts into one buffer before libvips reads it.
    limitFolder(dir, budget, declaredBytes);
    return {
      dir,
      importDir: dir,
      ...limits,
      release: () => {
        releaseFolder(dir);
        leave();
      },
    };
  }

  /**
   * What one request's files may be, known before any is received: each file's limit
   * (MAX_FILE_BYTES) and, with memory scratch, what they may hold together
   * (MEMORY_REQUEST_MB, then each file's limit too if smaller). The upload route refuses a
   * body whose declared length is past what these allow before it waits for admission.
   */
  bodyLimits(): { maxFileBytes: number; requestBytes?: number } {
    const { config } = this.deps;
    if (!this.#memory) return { maxFileBytes: config.MAX_FILE_BYTES };
    const budget = config.MEMORY_REQUEST_MB * 1024 * 1024;
    return {
      maxFileBytes: Math.min(config.MAX_FILE_BYTES, budget),
      requestBytes: budget,
    };
  }

  /**
   * Makes this process's scratch folder on disk, once (at the first upload). Alone, for
   * work whose files are already received (a finished resumable upload): no body is
   * admitted.
   */
  async prepareScratch(): Promise<void> {
    if (this.#memory || this.#tmpMade) return;
    await Deno.mkdir(this.tmpDir, { recursive: true });
    this.#tmpMade = true;
  }

  /** Creates the temp dir and removes what dead processes (a crash) left beside it. */
  async init(): Promise<this> {
    if (this.#memory) return this;
    await claimScratchDir(join(this.deps.config.DATA_DIR, "tmp"));
    return this;
  }

  /**
   * The user's live image with these bytes, as a record marked duplicate. An expired one the
   * sweeper has not reached yet is deleted here, so the new upload can take its place.
   */
  async #duplicateOf(userId: string, sha256: string) {
    const { config, database, store, clock } = this.deps;
    const row = await database.db.selectFrom("images").selectAll()
      .where("user_id", "=", userId).where("sha256", "=", sha256)
      .where("deleted_at", "is", null).executeTakeFirst();
    if (!row) return undefined;
    if (row.expires_at && new Date(row.expires_at) <= clock.now()) {
      await deleteImage(database.db, store, row, clock);
      return undefined;
    }
    // A record whose bytes are gone (an insert that committed after its upload was
    // refused and its files removed) is not an answer: it is removed, and these bytes
    // take its place. One stat, on the rare path of a duplicate.
    if (!(await store.stat(blobKeys(row).original))) {
      await deleteImage(database.db, store, row, clock);
      return undefined;
    }
    return { ...toImageRecord(config, row), duplicate: true };
  }

  /**
   * The same bytes sent again: the latest upload decides how long the image lives (its
   * `expiration` from now, or for good without one), as it would for a new image, and
   * the album it names, if any (left out of the album it was sent to, a duplicate was
   * missing from it), and its privacy where that hides the image more (tighterAccess).
   * The record's `expiration` stays "seconds after `time`", so it reports the new end.
   */
  async #renew(
    rec: ImageRecord & { duplicate?: boolean },
    opts: { expiration?: number; albumId?: string; access?: UploadAccess },
  ): Promise<ImageRecord & { duplicate?: boolean }> {
    const { config, database, clock } = this.deps;
    const now = clock.now().getTime();
    const edit: ImageEdit = { ...tighterAccess(rec.privacy, opts.access) };
    if (opts.albumId) edit.album_id = opts.albumId;
    if (opts.expiration || rec.expiration) {
      edit.expires_at = opts.expiration
        ? new Date(now + opts.expiration * 1000)
        : null;
    }
    if (Object.keys(edit).length === 0) return rec;
    const row = await editImage(database.db, rec.id, edit);
    return { ...toImageRecord(config, row), duplicate: true };
  }

  /**
   * Validates, strips, resizes and stores one received file for a user; throws ApiError
   * 130/141/142/143 for a bad file, 250 when every image worker is busy. Same bytes again
   * from the same user return the existing record marked duplicate. Stages: admit →
   * inspect → (in a worker slot, against a deadline) check + strip + store the original →
   * the row. The thumbnail and the medium are made at their first request.
   *
   * Duplicates are found by the row's insert (the live-row unique index on user and
   * hash), not by a lookup before the work: a new image, the usual case, saves a database
   * round trip on its critical path (~1 ms of a 200 KB upload's ~15), and a duplicate pays
   * a decode whose files are then dropped.
   */
  async ingest(
    userId: string,
    file: IncomingImage,
    opts: {
      expiration?: number;
      source?: string;
      albumId?: string;
      /** Who may see it (uploadAccess); public without. */
      access?: UploadAccess;
      /** The file's limit, when not MAX_FILE_BYTES (a resumable upload's). */
      maxBytes?: number;
    } = {},
  ): Promise<ImageRecord & { duplicate?: boolean }> {
    const { ext, source } = await this.#admit(
      file,
      opts.maxBytes ?? this.deps.config.MAX_FILE_BYTES,
    );
    const shape = await inspect(
      source,
      ext,
      file.size,
      this.deps.config.MAX_IMAGE_PIXELS,
    );

    const id = randomToken(9);
    const temps: string[] = [];
    const tmp = (name: string) => {
      const p = join(this.tmpDir, `${id}-${name}`);
      temps.push(p);
      return p;
    };
    // A small body received into memory (requestScratch) has its stripped copy beside
    // it, within the same reservation.
    const beside = (name: string) => {
      if (this.#memory || !isMemoryPath(file.path)) return tmp(name);
      const p = join(dirname(file.path), `${id}-${name}`);
      temps.push(p);
      return p;
    };
    // The original, once the store took it: on success it is gone from its temp path
    // (BlobStore's putFile contract), so removing it would only cost a failed unlink.
    const key = `${id}.${ext}`;
    let stored: { path: string; size: number } | undefined;
    const keep = async (path: string) => {
      const size = (await statScratch(path)).size;
      await this.deps.store.putFile(key, path, {
        contentType: MIME_BY_EXT[ext],
      });
      stored = { path, size };
    };
    const unkeep = async () => {
      await this.deps.store.delete(key).catch(() => {});
      stored = undefined;
    };
    const scratch = this.#reserveBmpScratch(shape.bmp);
    let hold: QuotaHold | null = null;
    try {
      // The account's quota, before anything is stored (180 when the file does not fit).
      hold = await this.quotas.hold(userId, file.size);
      await this.#checkStripKeep(file, source, ext, shape, {
        tmp,
        beside,
        keep,
        unkeep,
      });
      return await this.#persist(userId, file, ext, shape, stored!.size, id, {
        ...opts,
        drop: unkeep,
      });
    } catch (e) {
      // A full disk fails whichever write comes first: the strip, the store.
      throw !(e instanceof ApiError) && isNoSpace(e) ? noSpace(e) : e;
    } finally {
      await hold?.release();
      const handedOver = stored?.path;
      await Promise.all(
        temps.filter((p) => p !== handedOver).map((p) =>
          removeScratch(p).catch(() => {})
        ),
      );
      this.#bmpScratch.release(scratch);
    }
  }

  /**
   * Size and type, from the bytes: the stored extension and what libvips is to decode (a
   * small file's bytes, read once here, else its path), or 130/141.
   */
  async #admit(
    file: IncomingImage,
    maxBytes: number,
  ): Promise<{ ext: string; source: Source }> {
    if (file.truncated || file.size > maxBytes) {
      throw new ApiError(130);
    }
    if (file.size === 0) throw new ApiError(141, { message: "Empty file" });
    // A memory scratch file is handed over as its bytes (no copy): libvips cannot open it.
    const source =
      file.size <= DECODE_FROM_MEMORY_MAX || isMemoryPath(file.path)
        ? await readScratch(file.path)
        : file.path;
    const type = await sniffType(source);
    const ext = type && ACCEPTED[type.mime];
    if (!ext) throw new ApiError(141);
    return { ext, source };
  }

  /**
   * check → strip → store the original. The check (a decode) runs in a work slot; the
   * lossless strip and the store's sync are file I/O, so they run beside it outside the
   * slots, and a stripped copy is stored at once: a slot is never held waiting for a disk
   * (at 8 clients on 2 cores that wait had left the slots idle ~10 ms an upload). If the
   * check refuses the file, what was stored is deleted before the answer (bytes without
   * a row are the orphan sweep's case, should a crash come in between). A re-encode,
   * when one is needed, comes after the check, in a slot, within the same deadline.
   */
  async #checkStripKeep(
    file: IncomingImage,
    source: Source,
    ext: string,
    shape: Shape,
    stages: {
      /** A temp path of this upload's. */
      tmp: (name: string) => string;
      /** A temp path beside the received file (for the stripped copy). */
      beside: (name: string) => string;
      /** Stores the original from this temp file (durably, before the row). */
      keep: (path: string) => Promise<void>;
      /** Removes the original stored by `keep`. */
      unkeep: () => Promise<void>;
    },
  ): Promise<void> {
    const { tmp, beside, keep, unkeep } = stages;
    const timeout = this.deps.config.IMAGE_TIMEOUT_MS;
    let deadline = Infinity;
    // A large file held in memory is stripped within its own bytes (stripWithin: a copy
    // would double it at the upload's peak), before the check reads them: the check
    // decodes what is stored, and the store's write still runs beside the decode.
    const within = stripsInPlace(file, source, ext, shape.orientation)
      ? stripWithin(
        file,
        source,
        ext,
        shape.orientation,
        beside,
        this.#stripBuffers,
      )
      : undefined;
    const stripped = within?.then((w) => w.kept) ??
      strip(file, source, ext, shape.orientation, beside, this.#stripBuffers);
    // The received file itself, kept as it came, waits for the check where libvips may
    // still open it by its path; rewritten within its bytes, it is read by them.
    const stored = stripped.then(async (kept) => {
      if (typeof kept !== "string" || (kept === file.path && !within)) {
        return kept;
      }
      await keep(kept);
      return STORED;
    });
    const checkOf = (decodable: Source) =>
      this.#slots.run(() => {
        deadline = Date.now() + timeout;
        return check(
          decodable,
          shape,
          tmp,
          deadline,
          this.deps.config.MAX_IMAGE_PIXELS,
          this.#stripBuffers,
        );
      }, timeout);
    // A strip that failed moved nothing: the check then decodes the bytes as they came.
    const checked = within
      ? within.then((w) => w.decode, () => source).then(checkOf)
      : checkOf(source);
    // Both settle before anything is judged, so no write is still running when the temp
    // files are removed; a decode failure (141) outranks whatever the strip ran into.
    const [decoded, original] = await Promise.allSettled([checked, stored]);
    if (decoded.status === "rejected") {
      if (original.status === "fulfilled" && original.value === STORED) {
        await unkeep();
      }
      throw decoded.reason;
    }
    if (original.status === "rejected") throw original.reason;
    const kept = original.value;
    if (kept === STORED) return;
    const { meta } = shape;
    if (
      kept === REENCODE ||
      (kept === undefined && (meta.exif || meta.xmp || meta.iptc))
    ) {
      await keep(
        await this.#slots.run(
          () => reencode(source, ext, shape, tmp("orig"), deadline),
          timeout,
        ),
      );
    } else await keep(typeof kept === "string" ? kept : file.path);
  }

  /**
   * What libvips can decode of a stored original, for a variant made from it later: its
   * bytes, or for a BMP (libvips has no BMP loader) its pixels rewritten as a TIFF in this
   * process's scratch, within the BMP scratch budget. `release` removes what was made.
   */
  async decodable(
    bytes: Uint8Array,
    ext: string,
    deadline: number,
  ): Promise<Decodable> {
    if (ext !== "bmp") return { input: bytes, release: async () => {} };
    let info: BmpInfo;
    try {
      info = parseBmp(bytes.subarray(0, BMP_HEAD_BYTES), bytes.length);
    } catch (e) {
      if (e instanceof MalformedBmp) throw damaged(e.message);
      throw e;
    }
    const reserved = this.#reserveBmpScratch(info);
    const out = join(this.tmpDir, `${crypto.randomUUID()}-px.tif`);
    const release = async () => {
      await removeScratch(out).catch(() => {});
      this.#bmpScratch.release(reserved);
    };
    try {
      if (!this.#memory) await Deno.mkdir(this.tmpDir, { recursive: true });
      await bmpAsTiff(bytes, info, out, deadline, this.#stripBuffers);
      return { input: await input(out), release };
    } catch (e) {
      await release();
      throw e;
    }
  }

  /**
   * Reserves the scratch disk a BMP's rewrite takes (its pixels uncompressed: width ×
   * height × 3 or 4 bytes) before any work, or refuses it (see ScratchBudget). A 0.8 MB
   * RLE bomb of 10000² took 382 MB and 16.7 s, and fifteen in a request over 120 s.
   * Returns the bytes reserved (0 for any other format), for the caller to give back.
   */
  #reserveBmpScratch(info: BmpInfo | undefined): number {
    if (!info) return 0;
    return this.#bmpScratch.reserve(info.width * info.height * info.channels);
  }

  /** Writes the files to the store, then commits the row: acknowledged means complete. */
  async #persist(
    userId: string,
    file: IncomingImage,
    ext: string,
    shape: Shape,
    size: number,
    id: string,
    opts: {
      expiration?: number;
      source?: string;
      /** The caller's album to put the image in (checked by the caller). */
      albumId?: string;
      access?: UploadAccess;
      /** Removes the stored original (a duplicate, or a failure before the row). */
      drop: () => Promise<void>;
    },
  ): Promise<ImageRecord & { duplicate?: boolean }> {
    const { config, database, clock } = this.deps;
    const vext = variantExt(ext);
    const row = {
      id,
      user_id: userId,
      // A file's name or `?name=` may hold U+0000, which PostgreSQL's text cannot: it
      // was a 500. Dropped; nothing left is "image", as for no name.
      title: file.filename.replaceAll("\0", "") || "image",
      ext,
      mime: MIME_BY_EXT[ext],
      size,
      width: shape.width,
      height: shape.height,
      sha256: file.sha256,
      // Both made at their first request; the record names them from the start.
      thumb_ext: vext,
      medium_ext: hasMedium(shape.width, shape.height) ? vext : null,
      source: opts.source ?? "upload",
      delete_token: randomToken(24),
      created_at: clock.now(),
      expires_at: opts.expiration
        ? new Date(clock.now().getTime() + opts.expiration * 1000)
        : null,
      deleted_at: null,
      album_id: opts.albumId ?? null,
      description: "",
      // Inserted as asked, never public first and edited after (uploadAccess).
      privacy: opts.access?.privacy ?? "public",
      password_hash: opts.access?.password_hash ?? null,
      taken_down_at: null,
    };
    const dropFiles = opts.drop;
    /** While the row's insert is out: a failure then may hide a commit still to come. */
    let inserting = false;
    try {
      // The same bytes of the same user, live: that image is the answer. An expired one
      // the sweeper has not reached is deleted by the lookup, and the insert tried again.
      for (let tries = 0;; tries++) {
        inserting = true;
        const inserted = await database.db.insertInto("images").values(row)
          .onConflict((oc) =>
            oc.columns(["user_id", "sha256"]).where("deleted_at", "is", null)
              .doNothing()
          )
          .returning("id").executeTakeFirst();
        inserting = false;
        if (inserted) break;
        const dup = await this.#duplicateOf(userId, file.sha256);
        if (dup) {
          await dropFiles();
          return await this.#renew(dup, opts);
        }
        if (tries > 1) {
          // Three conflicts and no live row each time: uploads of these bytes racing
          // with their deletion. Not the file's fault, and worth retrying (the files go
          // below).
          throw new ApiError(250, {
            headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
            details: [{
              message: "an upload of the same image is in progress; try again",
            }],
          });
        }
      }
    } catch (e) {
      // The database stalled or went away with the insert sent: the row may still be
      // committed when it answers again (a frozen server runs what waits in its socket),
      // and a record without its bytes would be 404 for good, with every retry of the
      // same bytes answered as a duplicate of it. So the files stay: a row that appears
      // later has them, and the orphan sweep removes them after ORPHAN_GRACE_S when no
      // row ever claims them. Any other failure leaves nothing behind, as before.
      if (!(inserting && isDatabaseOutage(e))) await dropFiles();
      // The images table's trigger refuses bytes an admin took down (migration 012).
      if (isBlockedContent(e)) throw new ApiError(182);
      throw e;
    }
    this.deps.metrics?.stored(row.source, size);
    return toImageRecord(config, row);
  }
}

/** The original is in the store (see ImagePipeline#process). */
const STORED = Symbol("stored");

/** A stored original made decodable (see ImagePipeline#decodable). */
export interface Decodable {
  input: Uint8Array | string;
  release(): Promise<void>;
}

/** The 250 answer a database outage was turned into (see db/postgres.ts). */
function isDatabaseOutage(e: unknown): boolean {
  return e instanceof ApiError && e.code === 250 &&
    (e.details ?? []).some((d) => d.path === "database");
}
