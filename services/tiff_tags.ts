/**
 * Whether a TIFF carries anything beyond what it takes to show its pixels. libvips reports
 * no EXIF for a TIFF: a camera's Make and Model, the Artist, the date and a GPS directory
 * are TIFF tags of the image itself, so an upload's original would be stored with them. A
 * TIFF whose every tag is on the list below is kept byte for byte (its bit depth and its
 * pages with it); any other is re-encoded without them (ImagePipeline).
 */

import { readFull } from "./file_io.ts";

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
 * True when any directory of the TIFF has a tag off the pixel list, or when the file
 * cannot be walked (BigTIFF, offsets outside the file): then the caller re-encodes, which
 * is always safe. `read(offset, n)` returns up to n bytes of the file from `offset`.
 */
export async function tiffHasOtherTags(
  read: (offset: number, n: number) => Promise<Uint8Array>,
): Promise<boolean> {
  const head = await read(0, 8);
  if (head.length < 8) return true;
  const little = head[0] === 0x49 && head[1] === 0x49;
  if (!little && !(head[0] === 0x4d && head[1] === 0x4d)) return true;
  const hv = new DataView(head.buffer, head.byteOffset, 8);
  if (hv.getUint16(2, little) !== 42) return true; // BigTIFF (43) or not a TIFF
  let at = hv.getUint32(4, little);
  const seen = new Set<number>();
  while (at !== 0) {
    if (seen.has(at) || seen.size >= MAX_DIRECTORIES) return true;
    seen.add(at);
    const countBytes = await read(at, 2);
    if (countBytes.length < 2) return true;
    const count = new DataView(countBytes.buffer, countBytes.byteOffset, 2)
      .getUint16(0, little);
    const dir = await read(at + 2, count * 12 + 4);
    if (dir.length < count * 12 + 4) return true;
    const v = new DataView(dir.buffer, dir.byteOffset, dir.byteLength);
    for (let i = 0; i < count; i++) {
      if (!PIXEL_TAGS.has(v.getUint16(i * 12, little))) return true;
    }
    at = v.getUint32(count * 12, little);
  }
  return false;
}

/** `read` for tiffHasOtherTags over bytes in memory. */
export function readBytes(bytes: Uint8Array) {
  return (offset: number, n: number) =>
    Promise.resolve(bytes.subarray(offset, offset + n));
}

/** `read` for tiffHasOtherTags over an open file (positioned reads). */
export function readFile(f: Deno.FsFile) {
  return async (offset: number, n: number) => {
    await f.seek(offset, Deno.SeekMode.Start);
    const buf = new Uint8Array(n);
    return buf.subarray(0, await readFull(f, buf));
  };
}
