/**
 * Whether a TIFF carries anything beyond what it takes to show its pixels, and a lossless
 * copy without it. libvips reports no EXIF for a TIFF: a camera's Make and Model, the
 * Artist, the date and a GPS directory are TIFF tags of the image itself, so an upload's
 * original would be stored with them. A TIFF whose every tag is on the list below, and
 * whose pixels are not JPEG streams, is kept byte for byte; any other is rewritten with
 * only those tags (its bit depth and its pages with it), or re-encoded where it cannot be
 * (ImagePipeline).
 */

import { BufWriter, StripBuffers } from "./metadata_strip.ts";
import { copyRange, type Read } from "./positioned_read.ts";
import { openScratch } from "../../runtime/scratch_files.ts";

/** Tags that describe pixels (layout, colour, compression, resolution), nothing else. */
const PIXEL_TAGS = new Set([
  254, // NewSubfileType
  255, // SubfileType
  256, // ImageWidth
  257, // ImageLength
  258, // BitsPerSample
  259, // Compression
  262, // PhotometricInterpretation
  263, // Threshholding
  266, // FillOrder
  273, // StripOffsets
  274, // Orientation
  277, // SamplesPerPixel
  278, // RowsPerStrip
  279, // StripByteCounts
  280, // MinSampleValue
  281, // MaxSampleValue
  282, // XResolution
  283, // YResolution
  284, // PlanarConfiguration
  290, // GrayResponseUnit
  291, // GrayResponseCurve
  296, // ResolutionUnit
  297, // PageNumber
  301, // TransferFunction
  317, // Predictor
  318, // WhitePoint
  319, // PrimaryChromaticities
  320, // ColorMap
  321, // HalftoneHints
  322, // TileWidth
  323, // TileLength
  324, // TileOffsets
  325, // TileByteCounts
  332, // InkSet
  338, // ExtraSamples
  339, // SampleFormat
  340, // SMinSampleValue
  341, // SMaxSampleValue
  347, // JPEGTables
  512, // JPEGProc
  513, // JPEGInterchangeFormat
  514, // JPEGInterchangeFormatLength
  529, // YCbCrCoefficients
  530, // YCbCrSubSampling
  531, // YCbCrPositioning
  532, // ReferenceBlackWhite
  34675, // ICC profile: colour, needed to show the pixels right
]);

/** Directories followed at most: a loop of `next` offsets must end. */
const MAX_DIRECTORIES = 4096;

/**
 * Walks a classic TIFF's chain of directories, handing `visit` each one's entries (a view
 * of its bytes: count × 12 bytes of entries, then the next directory's offset) until it
 * answers false. True when every directory was visited; false when `visit` stopped the
 * walk or the chain cannot be walked (not a TIFF, BigTIFF, a loop, a directory outside
 * the file).
 */
async function walkDirectories(
  read: Read,
  visit: (
    entries: DataView,
    count: number,
    little: boolean,
  ) => boolean | Promise<boolean>,
): Promise<boolean> {
  const head = await read(0, 8);
  if (head.length < 8) return false;
  const little = head[0] === 0x49 && head[1] === 0x49;
  if (!little && !(head[0] === 0x4d && head[1] === 0x4d)) return false;
  const hv = new DataView(head.buffer, head.byteOffset, 8);
  if (hv.getUint16(2, little) !== 42) return false; // BigTIFF (43) or not a TIFF
  const seen = new Set<number>();
  for (let at = hv.getUint32(4, little); at !== 0;) {
    if (seen.has(at) || seen.size >= MAX_DIRECTORIES) return false;
    seen.add(at);
    const countBytes = await read(at, 2);
    if (countBytes.length < 2) return false;
    const count = new DataView(countBytes.buffer, countBytes.byteOffset, 2)
      .getUint16(0, little);
    const dir = await read(at + 2, count * 12 + 4);
    if (dir.length < count * 12 + 4) return false;
    const v = new DataView(dir.buffer, dir.byteOffset, dir.byteLength);
    if (!(await visit(v, count, little))) return false;
    at = v.getUint32(count * 12, little);
  }
  return true;
}

/**
 * True when any directory of the TIFF has a tag off the pixel list or JPEG-compressed
 * pixels, or when the file cannot be walked (BigTIFF, offsets outside the file): then the
 * caller rewrites or re-encodes, which is always safe. JPEG pixels count because their
 * streams (in the strips, JPEGTables or an old-style JPEG's own stream) are JPEG files
 * that may carry APP segments, EXIF with GPS among them, which no tag shows.
 */
export async function tiffHasOtherTags(read: Read): Promise<boolean> {
  return !(await walkDirectories(read, (v, count, little) => {
    for (let i = 0; i < count; i++) {
      const tag = v.getUint16(i * 12, little);
      if (!PIXEL_TAGS.has(tag) || tag === 513) return false;
      if (tag === 259 && JPEG_COMPRESSION.has(inlineNumber(v, i, little))) {
        return false;
      }
    }
    return true;
  }));
}

/** Compression values whose pixels are JPEG streams: old-style (6) and new-style (7). */
const JPEG_COMPRESSION = new Set([6, 7]);

/** The first value of entry i when it is a SHORT or LONG held in the entry, else -1. */
function inlineNumber(v: DataView, i: number, little: boolean): number {
  const type = v.getUint16(i * 12 + 2, little);
  if (type === 3) return v.getUint16(i * 12 + 8, little);
  if (type === 4) return v.getUint32(i * 12 + 8, little);
  return -1;
}

/** Bytes of one value of each TIFF field type (1–13); 0: a type this file cannot copy. */
const TYPE_SIZE = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4];
/** Where a directory's pixels are, and how long each piece is: strips, or tiles. */
const PIECES = [[273, 279], [324, 325]] as const;

interface Field {
  tag: number;
  type: number;
  count: number;
  /** The value's bytes, in the file's byte order. */
  value: Uint8Array;
}

/**
 * Writes to `out` (a new file) a TIFF with the same pages, pixels and pixel tags and nothing
 * else: each directory keeps only tags on the pixel list, and only the bytes those tags
 * point at (strips or tiles, colour maps, profiles) are copied, so nothing the file held
 * between them comes along either. Returns false, writing nothing, for what it does not
 * copy: BigTIFF, JPEG-compressed pixels (their streams may hold EXIF of their own), a
 * directory without pixels, or offsets outside the file; the caller re-encodes then.
 * `size` is the file's, `read(offset, n)` as for tiffHasOtherTags.
 */
export async function rewriteTiff(
  read: Read,
  size: number,
  out: string,
  buffers: StripBuffers = new StripBuffers(),
): Promise<boolean> {
  const pages = await pixelDirectories(read, size);
  if (!pages) return false;
  const f = await openScratch(out, { write: true, createNew: true });
  const buf = buffers.take();
  try {
    const w = new BufWriter(f, buf);
    const { little } = pages;
    await w.write(
      new Uint8Array(little ? [0x49, 0x49, 42, 0] : [0x4d, 0x4d, 0, 42]),
    );
    let link = w.pos; // where the offset of the next directory goes
    await w.write(new Uint8Array(4));
    for (const page of pages.directories) {
      const [offTag, lenTag] = PIECES.find(([o]) => page.has(o))!;
      // Checked by pixelDirectories: both are SHORT or LONG lists of one length.
      const offsets = numbers(page.get(offTag)!, little)!;
      const lengths = numbers(page.get(lenTag)!, little)!;
      const moved: number[] = [];
      for (let i = 0; i < offsets.length; i++) {
        moved.push(w.pos);
        await copyRange(read, offsets[i], offsets[i] + lengths[i], w.write);
      }
      page.set(offTag, longs(offTag, moved, little));
      const fields = [...page.values()].sort((a, b) => a.tag - b.tag);
      const placed = new Map<Field, number>();
      for (const field of fields) {
        if (field.value.length <= 4) continue;
        if (w.pos & 1) await w.write(new Uint8Array(1)); // values start on a word
        placed.set(field, w.pos);
        await w.write(field.value);
      }
      if (w.pos & 1) await w.write(new Uint8Array(1));
      await w.patch(link, u32(w.pos, little));
      const dir = new Uint8Array(2 + fields.length * 12 + 4);
      const v = new DataView(dir.buffer);
      v.setUint16(0, fields.length, little);
      fields.forEach((field, i) => {
        v.setUint16(2 + i * 12, field.tag, little);
        v.setUint16(4 + i * 12, field.type, little);
        v.setUint32(6 + i * 12, field.count, little);
        const at = placed.get(field);
        if (at === undefined) dir.set(field.value, 10 + i * 12);
        else v.setUint32(10 + i * 12, at, little);
      });
      link = w.pos + dir.length - 4;
      await w.write(dir);
    }
    await w.flush();
  } finally {
    f.close();
    buffers.give(buf);
  }
  return true;
}

/**
 * The file's directories, each as its pixel tags with their values read, or undefined
 * when rewriteTiff should leave the file to a re-encode (see there). Bytes to copy, pixels
 * and values together, may come to at most twice the file: pieces that several tags or
 * directories share are copied once each, and a file that points at the same bytes over
 * and over must not make an output many times its size.
 */
async function pixelDirectories(
  read: Read,
  size: number,
): Promise<{ little: boolean; directories: Map<number, Field>[] } | undefined> {
  let budget = 2 * size, order = true;
  const directories: Map<number, Field>[] = [];
  const walked = await walkDirectories(read, async (v, count, little) => {
    order = little;
    const page = new Map<number, Field>();
    for (let i = 0; i < count; i++) {
      const tag = v.getUint16(i * 12, little);
      if (!PIXEL_TAGS.has(tag)) continue;
      const type = v.getUint16(i * 12 + 2, little);
      const n = v.getUint32(i * 12 + 4, little);
      const bytes = n * (TYPE_SIZE[type] ?? 0);
      if (!bytes || page.has(tag)) return false;
      let value;
      if (bytes <= 4) {
        value = new Uint8Array(v.buffer, v.byteOffset + i * 12 + 8, bytes)
          .slice();
      } else {
        const from = v.getUint32(i * 12 + 8, little);
        if (from + bytes > size || (budget -= bytes) < 0) return false;
        value = await read(from, bytes);
        if (value.length < bytes) return false;
      }
      page.set(tag, { tag, type, count: n, value });
    }
    // Old-style and new-style JPEG: the streams in the strips are JPEG files of their own.
    const compression = page.has(259)
      ? numbers(page.get(259)!, little)?.[0]
      : 1;
    if (JPEG_COMPRESSION.has(compression ?? -1)) return false;
    if (page.has(513) || page.has(514)) return false;
    const pieces = PIECES.find(([o, l]) => page.has(o) && page.has(l));
    if (!pieces) return false;
    const offsets = numbers(page.get(pieces[0])!, little);
    const lengths = numbers(page.get(pieces[1])!, little);
    if (!offsets || !lengths || offsets.length !== lengths.length) return false;
    for (let i = 0; i < offsets.length; i++) {
      if (offsets[i] + lengths[i] > size || (budget -= lengths[i]) < 0) {
        return false;
      }
    }
    // The other pair, if any, would point into bytes no longer there.
    for (const [o, l] of PIECES) {
      if (o !== pieces[0]) page.delete(o), page.delete(l);
    }
    directories.push(page);
    return true;
  });
  return walked && directories.length
    ? { little: order, directories }
    : undefined;
}

/** A SHORT or LONG field's values (undefined for another type). */
function numbers(field: Field, little: boolean): number[] | undefined {
  const v = new DataView(
    field.value.buffer,
    field.value.byteOffset,
    field.value.byteLength,
  );
  const out: number[] = [];
  if (field.type === 3) {
    for (let i = 0; i < field.count; i++) out.push(v.getUint16(i * 2, little));
  } else if (field.type === 4 || field.type === 13) {
    for (let i = 0; i < field.count; i++) out.push(v.getUint32(i * 4, little));
  } else return undefined;
  return out;
}

/** A LONG field holding `values`. */
function longs(tag: number, values: number[], little: boolean): Field {
  const value = new Uint8Array(values.length * 4);
  const v = new DataView(value.buffer);
  values.forEach((n, i) => v.setUint32(i * 4, n, little));
  return { tag, type: 4, count: values.length, value };
}

function u32(n: number, little: boolean): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, little);
  return b;
}
