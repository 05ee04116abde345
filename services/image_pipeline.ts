import sharp from "sharp";
type Sharp = ReturnType<typeof sharp>;
type Metadata = Awaited<ReturnType<Sharp["metadata"]>>;
import { fileTypeFromBuffer } from "file-type";
import { join } from "node:path";
import type { AppDeps } from "./deps.ts";
import { ApiError } from "../schemas/errors.ts";
import { randomToken } from "./crypto.ts";
import {
  blobKeys,
  deleteImage,
  type ImageRecord,
  MIME_BY_EXT,
  toImageRecord,
} from "./images.ts";
import { StripBuffers, stripJpeg, stripPng } from "./metadata_strip.ts";
import { readFull } from "./file_io.ts";
import { claimScratchDir, processTag } from "./scratch_dir.ts";

/** Accepted types, detected from the bytes: media type → stored extension. */
const ACCEPTED: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/bmp": "bmp",
  "image/tiff": "tiff",
};

/** The type the file's first bytes announce (file-type needs at most 4100 of them). */
async function sniffType(path: string) {
  const f = await Deno.open(path, { read: true });
  try {
    const head = new Uint8Array(4100);
    const n = await readFull(f, head);
    return await fileTypeFromBuffer(head.subarray(0, n)).catch(() => undefined);
  } finally {
    f.close();
  }
}

/** Longest side of the thumbnail and of the medium variant. */
export const THUMB_SIZE = 320;
export const MEDIUM_SIZE = 1024;

/** A file on local disk waiting to become an image. */
export interface IncomingImage {
  path: string;
  filename: string;
  size: number;
  sha256: string;
  truncated?: boolean;
}

/** Variant format per original: keep the format where it can be written, else PNG/WebP. */
function variantExt(ext: string): string {
  return ({
    jpg: "jpg",
    png: "png",
    webp: "webp",
    gif: "gif",
    avif: "webp",
  } as Record<
    string,
    string
  >)[ext] ?? "png";
}

function encode(img: Sharp, ext: string): Sharp {
  switch (ext) {
    case "jpg":
      // libjpeg-turbo, not mozjpeg: mozjpeg's smaller files cost 4-6x the encode time,
      // which the upload benchmark measured as the largest part of a request.
      return img.jpeg({ quality: 85 });
    case "webp":
      return img.webp({ quality: 85 });
    case "gif":
      return img.gif();
    default:
      return img.png({ compressionLevel: 8 });
  }
}

/**
 * Turns a received file into a stored image: detects the type from the bytes, refuses
 * oversize dimensions before decoding, decodes for real while making the variants, strips
 * personal metadata, writes the bytes to the store and only then commits the row, so an
 * acknowledged image is complete and a failed one leaves nothing visible.
 */
export class ImagePipeline {
  readonly tmpDir: string;
  readonly #stripBuffers = new StripBuffers();
  constructor(
    private readonly deps: Pick<
      AppDeps,
      "config" | "database" | "store" | "clock"
    >,
  ) {
    // A folder per process: instances sharing DATA_DIR never clean each other's uploads.
    this.tmpDir = join(deps.config.DATA_DIR, "tmp", processTag());
    // libvips' operation cache only helps repeated identical work; it holds decoded
    // images in memory, which is the opposite of what an upload server wants.
    sharp.cache(false);
  }

  /** Creates the temp dir and removes what dead processes (a crash) left beside it. */
  async init(): Promise<this> {
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
    return { ...toImageRecord(config, row), duplicate: true };
  }

  /**
   * Validates, strips, resizes and stores one received file for a user; throws ApiError
   * 130/141/142 for a bad file. Same bytes again from the same user return the existing
   * record marked `duplicate`.
   */
  async ingest(
    userId: string,
    file: IncomingImage,
    opts: { expiration?: number; source?: string } = {},
  ): Promise<ImageRecord & { duplicate?: boolean }> {
    const { config, database, store, clock } = this.deps;
    const db = database.db;
    if (file.truncated || file.size > config.MAX_FILE_BYTES) {
      throw new ApiError(130);
    }
    if (file.size === 0) throw new ApiError(141, { message: "Empty file" });

    const type = await sniffType(file.path);
    const ext = type && ACCEPTED[type.mime];
    if (!ext) throw new ApiError(141);

    const existing = await this.#duplicateOf(userId, file.sha256);
    if (existing) return existing;

    let meta: Metadata;
    try {
      meta = await sharp(file.path, { limitInputPixels: false }).metadata();
    } catch {
      throw new ApiError(141);
    }
    if (!meta.width || !meta.height) throw new ApiError(141);
    const frames = meta.pages ?? 1;
    if (meta.width * meta.height > config.MAX_IMAGE_PIXELS) {
      throw new ApiError(142, {
        details: [{
          message:
            `${meta.width}×${meta.height} is over ${config.MAX_IMAGE_PIXELS} pixels`,
        }],
      });
    }
    const animated = ext === "gif" || ext === "webp" ? frames > 1 : false;
    const orientation = meta.orientation ?? 1;
    const rotated = orientation >= 5;
    const width = rotated ? meta.height : meta.width;
    const height = rotated ? meta.width : meta.height;

    const id = randomToken(9);
    const temps: string[] = [];
    const tmp = (name: string) => {
      const p = join(this.tmpDir, `${id}-${name}`);
      temps.push(p);
      return p;
    };
    try {
      const vext = variantExt(ext);
      const input = () =>
        sharp(file.path, {
          animated,
          limitInputPixels: config.MAX_IMAGE_PIXELS * Math.max(1, frames),
          failOn: "error",
        }).rotate();
      // One full decode of the original (shrunk on load where the codec allows) proves it
      // is a sound image and makes the largest variant; a smaller one is made from that
      // variant's file, which costs a few milliseconds and, unlike handing raw pixels
      // through JavaScript, leaves no megabytes of buffers behind for the garbage collector.
      const thumbPath = tmp(`th.${vext}`);
      const fit = { fit: "inside", withoutEnlargement: true } as const;
      const mediumPath = Math.max(width, height) > MEDIUM_SIZE
        ? tmp(`md.${vext}`)
        : undefined;
      const variants = (async () => {
        try {
          if (mediumPath) {
            await encode(input().resize(MEDIUM_SIZE, MEDIUM_SIZE, fit), vext)
              .toFile(mediumPath);
            await encode(
              sharp(mediumPath, { animated }).resize(
                THUMB_SIZE,
                THUMB_SIZE,
                fit,
              ),
              vext,
            ).toFile(thumbPath);
          } else {
            await encode(input().resize(THUMB_SIZE, THUMB_SIZE, fit), vext)
              .toFile(thumbPath);
          }
        } catch {
          throw new ApiError(141, {
            message: "Unsupported image type: the image could not be decoded",
          });
        }
      })();
      // JPEG and PNG lose their metadata losslessly, by file I/O alone, so that runs while
      // libvips decodes (beside its threads: ~2.5 ms less per 200 KB upload at one client).
      const stripped = (async () => {
        if (ext !== "jpg" && ext !== "png") return undefined;
        const out = tmp("orig");
        if (ext === "jpg") {
          await stripJpeg(file.path, out, orientation, this.#stripBuffers);
        } else await stripPng(file.path, out, this.#stripBuffers);
        return out;
      })();
      // Both settle before anything is judged, so no write is still running when the temp
      // files are removed; a decode failure (141) outranks whatever the strip ran into.
      const [decoded, original] = await Promise.allSettled([
        variants,
        stripped,
      ]);
      if (decoded.status === "rejected") throw decoded.reason;
      if (original.status === "rejected") throw original.reason;
      let originalPath = original.value ?? file.path;
      if (!original.value && (meta.exif || meta.xmp || meta.iptc)) {
        // No lossless path for these containers: re-encode at high quality, orientation
        // baked into the pixels since the tag goes with the rest of the metadata. After
        // the variants, not beside them: two full decodes of a large image at once would
        // double the memory an upload can take.
        originalPath = tmp("orig");
        const img = sharp(file.path, { animated, limitInputPixels: false })
          .rotate();
        await (ext === "webp"
          ? img.webp({ quality: 95 })
          : ext === "avif"
          ? img.avif({ quality: 80 })
          : ext === "tiff"
          ? img.tiff({ compression: "lzw" })
          : ext === "gif"
          ? img.gif()
          : img.png()).toFile(originalPath);
      }
      const size = (await Deno.stat(originalPath)).size;

      const row = {
        id,
        user_id: userId,
        title: file.filename,
        ext,
        mime: MIME_BY_EXT[ext],
        size,
        width,
        height,
        sha256: file.sha256,
        thumb_ext: vext,
        medium_ext: mediumPath ? vext : null,
        source: opts.source ?? "upload",
        delete_token: randomToken(24),
        created_at: clock.now(),
        expires_at: opts.expiration
          ? new Date(clock.now().getTime() + opts.expiration * 1000)
          : null,
        deleted_at: null,
      };
      const keys = blobKeys(row);
      const puts: [string, string][] = [[keys.original, originalPath], [
        keys.thumb!,
        thumbPath,
      ]];
      if (mediumPath) puts.push([keys.medium!, mediumPath]);
      try {
        // Handed over as files: the filesystem store renames them into place instead of
        // copying their bytes through memory (the memory benchmark's largest allocator).
        const results = await Promise.allSettled(
          puts.map(([key, path]) =>
            store.putFile(key, path, {
              contentType: MIME_BY_EXT[key.split(".").pop()!],
            })
          ),
        );
        // Settled first, so the cleanup below never races a put still in flight.
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
        await db.insertInto("images").values(row).execute();
      } catch (e) {
        await Promise.allSettled(puts.map(([key]) => store.delete(key)));
        // A concurrent upload of the same bytes by the same user won the unique index.
        const dup = await this.#duplicateOf(userId, file.sha256);
        if (dup) return dup;
        throw e;
      }
      return toImageRecord(config, row);
    } finally {
      await Promise.all(temps.map((p) => Deno.remove(p).catch(() => {})));
    }
  }
}
