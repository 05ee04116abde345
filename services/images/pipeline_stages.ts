/**
 * The upload pipeline's stages, each a function of what it is given (ImagePipeline in
 * pipeline.ts runs them in order: admit → inspect → check + strip (+ re-encode) → persist):
 * the type from the bytes, the header's shape and pixel bound, the decode check, the
 * lossless metadata strip or the re-encode, and a BMP's pixels rewritten for libvips.
 */
import sharp from "./sharp_module.ts";
import { fileTypeFromBuffer, fileTypeFromFile } from "file-type";
import { ApiError, noSpace } from "../../schemas/errors.ts";
import {
  jpegKeepsAll,
  MalformedImage,
  type StripBuffers,
  stripGif,
  stripJpeg,
  stripPng,
  stripWebp,
  webpIsLossless,
} from "./formats/metadata_strip.ts";
import { isNoSpace } from "../runtime/file_io.ts";
import {
  BMP_HEAD_BYTES,
  type BmpInfo,
  BmpTimeout,
  bmpToTiff,
  MalformedBmp,
  parseBmp,
} from "./formats/bmp.ts";
import { rewriteTiff, tiffHasOtherTags } from "./formats/tiff_tags.ts";
import { withReader } from "./formats/positioned_read.ts";
import { rewriteAvif } from "./formats/avif_strip.ts";
import { inPlacePass, stripInPlace } from "./formats/strip_in_place.ts";
import { isLibvipsTimeout } from "./engine.ts";
import {
  isMemoryPath,
  readScratch,
  shrinkScratch,
  writeScratch,
} from "../runtime/scratch_files.ts";

type Sharp = ReturnType<typeof sharp>;
type Metadata = Awaited<ReturnType<Sharp["metadata"]>>;

/** A file on local disk waiting to become an image. */
export interface IncomingImage {
  path: string;
  filename: string;
  size: number;
  sha256: string;
  truncated?: boolean;
}

/** Accepted types, detected from the bytes: media type → stored extension. */
export const ACCEPTED: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/bmp": "bmp",
  "image/tiff": "tiff",
};

/**
 * The type the file's bytes announce. file-type is handed the whole file, not a head: it
 * reads a TIFF's first directory, where that says TIFF rather than a camera's raw format,
 * and libtiff writes the directory after the pixels, so a head of any fixed size refused
 * every TIFF larger than it (141). For a file on disk it reads only what it needs.
 */
export async function sniffType(source: Source) {
  return await (typeof source === "string"
    ? fileTypeFromFile(source)
    : fileTypeFromBuffer(source)).catch(() => undefined);
}

/**
 * Longest side the upload's check decodes to: small enough that a JPEG decodes at 1/8
 * scale, its pixels then thrown away.
 */
const CHECK_SIZE = 64;

/** What libvips decodes: the received file's bytes (small files) or its path. */
export type Source = Uint8Array | string;

/** What the pipeline reads of libvips' header (a BMP carries no metadata). */
export type Header = Pick<
  Metadata,
  "width" | "height" | "pages" | "orientation" | "exif" | "xmp" | "iptc"
>;

/** What the header says about an image (see ImagePipeline#inspect). */
export interface Shape {
  meta: Header;
  /** A BMP's headers: libvips has no BMP loader, so its pixels are rewritten first. */
  bmp?: BmpInfo;
  frames: number;
  animated: boolean;
  orientation: number;
  width: number;
  height: number;
}

/**
 * What a failed libvips decode or encode answers: its own ApiError as it is, 143 past the
 * deadline, 250 for a full disk, else 141 (the file could not be decoded), never a 500.
 */
export function decodeFailure(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (isLibvipsTimeout(e)) return tooSlow();
  if (isNoSpace(e)) return noSpace(e);
  return new ApiError(141, {
    message: "Unsupported image type: the image could not be decoded",
  });
}

/** 141 for a file whose structure is broken, saying where. */
export function damaged(why: string): ApiError {
  return new ApiError(141, {
    message: `Unsupported image type: the file is damaged (${why})`,
  });
}

/**
 * Whole seconds left before `deadline`, at least one, for libvips' timeout (it checks
 * between tiles and stops the pipeline); 143 when none are left.
 */
function secondsLeft(deadline: number): number {
  const left = deadline - Date.now();
  if (left <= 0) throw tooSlow();
  return Math.max(1, Math.ceil(left / 1000));
}

export function tooSlow(): ApiError {
  return new ApiError(143, {
    details: [{
      message: "decoding this image took longer than the limit",
    }],
  });
}

/** What the lossless stage answers when only a re-encode can take the metadata away. */
export const REENCODE = Symbol("re-encode");

/** What the lossless stage leaves of the original (see ImagePipeline#process). */
export type Original = string | typeof REENCODE | undefined;

/**
 * A TIFF's original without what goes beyond its pixels (see tiff_tags.ts): the file itself
 * when there is nothing else, `out` when a lossless copy without it was written there, or
 * REENCODE.
 */
function tiffWithPixelTagsOnly(
  source: Source,
  path: string,
  out: string,
  buffers: StripBuffers,
): Promise<string | typeof REENCODE> {
  return withReader(source, async (read, size) => {
    if (!(await tiffHasOtherTags(read))) return path;
    return await rewriteTiff(read, await size(), out, buffers) ? out : REENCODE;
  });
}

/**
 * The header alone (no pixel decoded): dimensions, frames and orientation. Refuses 142
 * when all frames together are over MAX_IMAGE_PIXELS: a small GIF of many full-canvas
 * frames decodes to billions of pixels, and one frame's size alone does not show it.
 */
export async function inspect(
  source: Source,
  ext: string,
  size: number,
  max: number,
): Promise<Shape> {
  let meta: Header;
  let bmp: BmpInfo | undefined;
  try {
    if (ext === "bmp") {
      const head = await withReader(
        source,
        (read) => read(0, BMP_HEAD_BYTES),
      );
      bmp = parseBmp(head, size);
      // What the rest of the pipeline reads of a header; a BMP carries no metadata.
      meta = { width: bmp.width, height: bmp.height };
    } else meta = await sharp(source, { limitInputPixels: false }).metadata();
  } catch (e) {
    if (e instanceof MalformedBmp) throw damaged(e.message);
    throw new ApiError(141);
  }
  if (!meta.width || !meta.height) throw new ApiError(141);
  const frames = meta.pages ?? 1;
  const pixels = meta.width * meta.height * frames;
  if (pixels > max) {
    const what = `${meta.width}×${meta.height}` +
      (frames > 1 ? ` × ${frames} frames` : "");
    throw new ApiError(142, {
      details: [{ message: `${what} is over ${max} pixels` }],
    });
  }
  const orientation = meta.orientation ?? 1;
  const rotated = orientation >= 5;
  return {
    meta,
    bmp,
    frames,
    animated: ext === "gif" || ext === "webp" ? frames > 1 : false,
    orientation,
    width: rotated ? meta.height : meta.width,
    height: rotated ? meta.width : meta.height,
  };
}

/**
 * The check that the file is a sound image (141 if not), before `deadline` (143 past
 * it): every frame decoded for real, into a few pixels that are thrown away. Shrunk on
 * load where the codec can (a JPEG's DCT scaling decodes 1/8 of the pixels: ~3.3 ms
 * against ~5.7 for the 320 px thumbnail of a 200 KB photo), yet every byte of the
 * compressed data is read, so a cut or corrupt stream still fails. No variant is made
 * here: the thumbnail and the medium are made at their first request
 * (fixed_variants.ts, variant_maker.ts). A BMP's pixels are rewritten first.
 */
export async function check(
  source: Source,
  shape: Shape,
  tmp: (name: string) => string,
  deadline: number,
  maxPixels: number,
  buffers: StripBuffers,
): Promise<void> {
  const decodable = shape.bmp
    ? await input(
      await bmpAsTiff(source, shape.bmp, tmp("px.tif"), deadline, buffers),
    )
    : source;
  try {
    await sharp(decodable, {
      animated: shape.animated,
      limitInputPixels: maxPixels *
        Math.max(1, shape.frames),
      failOn: "error",
    }).timeout({ seconds: secondsLeft(deadline) })
      .resize(CHECK_SIZE, CHECK_SIZE, { fit: "inside" })
      .raw().toBuffer();
  } catch (e) {
    throw decodeFailure(e);
  }
}

/**
 * The original without its metadata, by file I/O alone where the format allows: JPEG,
 * PNG, GIF and WebP lose it losslessly; a TIFF's tags are its metadata, so one with tags
 * beyond its pixels' is copied without them, keeping its depth and pages; an AVIF's
 * metadata items leave its boxes, its AV1 data copied as it was (avif_strip.ts). A WebP
 * turned by its EXIF is re-encoded upright instead (losslessly when it was lossless):
 * browsers do not all honour a WebP's orientation, so it cannot be kept as the one tag
 * left. Answers the stripped file's path; REENCODE when only a re-encode can take its
 * metadata away; undefined without a lossless path (re-encoded if libvips saw metadata).
 */
export async function strip(
  file: IncomingImage,
  source: Source,
  ext: string,
  orientation: number,
  tmp: (name: string) => string,
  buffers: StripBuffers,
): Promise<Original> {
  const lossless = ext === "jpg" || ext === "png" || ext === "gif" ||
    ext === "tiff" || ext === "avif" || (ext === "webp" && orientation <= 1);
  if (!lossless) return undefined;
  const out = tmp("orig");
  try {
    if (ext === "avif") {
      const done = await withReader(
        source,
        async (read, size) =>
          await rewriteAvif(read, await size(), out, buffers),
      );
      // An image sequence is left as it was: a re-encode would flatten it.
      return done === "rewritten"
        ? out
        : done === "refused"
        ? REENCODE
        : undefined;
    } else if (ext === "tiff") {
      return await tiffWithPixelTagsOnly(
        source,
        file.path,
        out,
        buffers,
      );
    } else if (ext === "jpg") {
      // Nothing to take out: the received file is kept as it is, not copied.
      if (source instanceof Uint8Array && jpegKeepsAll(source, orientation)) {
        return file.path;
      }
      await stripJpeg(file.path, out, orientation, buffers);
    } else if (ext === "png") {
      await stripPng(file.path, out, buffers);
    } else if (ext === "gif") {
      await stripGif(file.path, out, buffers);
    } else await stripWebp(file.path, out, buffers);
  } catch (e) {
    if (!(e instanceof MalformedImage)) throw e;
    throw damaged(e.message);
  }
  return out;
}

/**
 * Received files held in memory from this size on are stripped within their own bytes
 * (stripWithin). Smaller ones keep the copy made beside the check, whose decode then
 * need not wait for the strip: a copy of under 1 MB is no weight at the process's peak.
 */
export const STRIP_IN_PLACE_MIN = 1024 * 1024;

/**
 * Whether the upload's strip rewrites the received bytes themselves (stripWithin): a
 * large file held in memory (Deno Deploy) of a format whose strip only drops and
 * rewrites segments. The check decodes those bytes, so it waits for the strip instead of
 * running beside it.
 */
export function stripsInPlace(
  file: IncomingImage,
  source: Source,
  ext: string,
  orientation: number,
): boolean {
  return source instanceof Uint8Array && isMemoryPath(file.path) &&
    source.length >= STRIP_IN_PLACE_MIN &&
    inPlacePass(ext, orientation) !== undefined;
}

/**
 * `strip` for stripsInPlace's files: the received file itself, rewritten and shortened
 * (issue #49: a 20 MB upload's copy was 20 MB more at the sandbox's peak), or, where the
 * rewrite does not fit within its bytes (an orientation to write back before anything
 * was dropped), a copy as `strip` makes, the bytes untouched. `decode`: what the check
 * is to decode, the stripped bytes (what is stored) or the source as it came.
 */
export async function stripWithin(
  file: IncomingImage,
  source: Source,
  ext: string,
  orientation: number,
  tmp: (name: string) => string,
  buffers: StripBuffers,
): Promise<{ kept: Original; decode: Source }> {
  if (source instanceof Uint8Array) {
    const length = await stripInPlace(source, ext, orientation).catch((e) => {
      throw e instanceof MalformedImage ? damaged(e.message) : e;
    });
    if (length !== null) {
      shrinkScratch(file.path, length);
      return { kept: file.path, decode: source.subarray(0, length) };
    }
  }
  const kept = await strip(file, source, ext, orientation, tmp, buffers);
  return { kept, decode: source };
}

/**
 * The original re-encoded at high quality where no lossless path could take its
 * metadata away, orientation baked into the pixels since the tag goes with the rest.
 * After the check, not beside it: two full decodes of a large image at once would
 * double the memory an upload can take.
 */
export async function reencode(
  source: Source,
  ext: string,
  shape: Shape,
  out: string,
  deadline: number,
): Promise<string> {
  const img = sharp(source, {
    animated: shape.animated,
    limitInputPixels: false,
  }).rotate().timeout({ seconds: secondsLeft(deadline) });
  try {
    await save(
      ext === "webp"
        ? img.webp(
          await withReader(source, webpIsLossless)
            ? { lossless: true }
            : { quality: 95 },
        )
        : ext === "avif"
        ? img.avif({ quality: 80 })
        : ext === "tiff"
        ? img.tiff({ compression: "lzw" })
        : ext === "gif"
        ? img.gif()
        : img.png(),
      out,
    );
  } catch (e) {
    // A whole-file decode can fail where the check's first page did not: a TIFF
    // whose directory chain loops back (libvips: "IFD looping") is a broken file.
    throw decodeFailure(e);
  }
  return out;
}

/** What libvips is to read for a scratch file: its path, or its bytes when in memory. */
export async function input(path: string): Promise<string | Uint8Array> {
  return isMemoryPath(path) ? await readScratch(path) : path;
}

/** libvips' output into a scratch file: written by libvips, or its bytes into memory. */
export async function save(img: Sharp, path: string): Promise<void> {
  if (!isMemoryPath(path)) await img.toFile(path);
  else await writeScratch(path, await img.toBuffer());
}

/** A BMP's pixels as a TIFF libvips can read (bounded memory; see bmp.ts), or 141/143. */
export async function bmpAsTiff(
  source: Source,
  info: BmpInfo,
  out: string,
  deadline: number,
  buffers: StripBuffers,
): Promise<string> {
  try {
    await bmpToTiff(source, info, out, deadline, buffers);
  } catch (e) {
    if (e instanceof MalformedImage) throw damaged(e.message);
    if (e instanceof BmpTimeout) throw tooSlow();
    throw e;
  }
  return out;
}
