/**
 * BMP support. The libvips inside sharp has no BMP loader, so a BMP is rewritten, in one
 * sequential pass, as an uncompressed TIFF that libvips then decodes like any upload. The
 * pass reads through the strip code's reader (a reused 1 MiB window, or a small file's
 * bytes as they are) and writes through a 64 KiB window, whatever the image's size:
 * decoding a 100-megapixel BMP into memory, as BMP packages on npm do, would
 * take 400 MB of heap per upload. The TIFF is a temp file of width × height × 3 (or 4)
 * bytes beside the upload.
 *
 * Read: the Windows headers (CORE, INFO, V2–V5; OS/2 2.x as INFO), 1/4/8-bit palettes,
 * 16/24/32-bit pixels, BI_BITFIELDS and BI_ALPHABITFIELDS masks (alpha kept when a mask
 * names it, unless it is 0 in every pixel: then opaque, as browsers show it), RLE8 and
 * RLE4 (pixels the encoding skips are transparent, as browsers show them), and top-down
 * rows. Refused as malformed: embedded JPEG/PNG, CMYK and OS/2
 * Huffman/RLE24 compressions, and pixel data shorter than the header promises.
 */

import { readFull, writeAll } from "../../runtime/file_io.ts";
import { MalformedImage, SeqReader, StripBuffers } from "./metadata_strip.ts";
import { openScratch, type ScratchFile } from "../../runtime/scratch_files.ts";

/** The file is not a BMP this decoder can read: the upload is refused with 141. */
export class MalformedBmp extends MalformedImage {
  override name = "MalformedBmp";
}

/** The rewrite ran past the caller's deadline (the upload answers 143). */
export class BmpTimeout extends Error {
  override name = "BmpTimeout";
}

/** What a BMP's headers say, enough to rewrite its pixels. */
export interface BmpInfo {
  width: number;
  height: number;
  /** Rows stored top first (negative height in the header); usually bottom first. */
  topDown: boolean;
  bitCount: number;
  encoding: "rgb" | "rle8" | "rle4" | "bitfields";
  /** Where the pixel data starts in the file. */
  dataOffset: number;
  /** Palette colours, 3 bytes (R, G, B) each, for 1/4/8-bit images. */
  palette: Uint8Array;
  /** Channel masks (red, green, blue, alpha) for "bitfields". */
  masks: [number, number, number, number];
  /** Output channels: 4 when the image has alpha (an alpha mask, or RLE's skipped pixels). */
  channels: 3 | 4;
}

/** Bytes from the start of a file that hold every header and the largest palette. */
export const BMP_HEAD_BYTES = 14 + 124 + 16 + 256 * 4;

/** libvips' largest side (VIPS_MAX_COORD): a wider BMP could be rewritten but not read. */
const MAX_SIDE = 10_000_000;

/** Bytes per window: the unit of reading, writing and deadline checks. */
const WINDOW = 64 * 1024;

const BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;

/** INFO and its successors (V2, V3, OS/2 2.x, V4, V5): all begin with INFO's fields. */
const INFO_SIZES = [40, 52, 56, 64, 108, 124];

/**
 * Parses the headers from the file's first bytes (`BMP_HEAD_BYTES` or the whole file if
 * shorter) and its size; throws MalformedBmp for anything it cannot rewrite. Pure.
 */
export function parseBmp(head: Uint8Array, fileSize: number): BmpInfo {
  const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const need = (n: number, what: string) => {
    if (head.length < n) throw new MalformedBmp(`truncated ${what}`);
  };
  need(18, "file header");
  if (head[0] !== 0x42 || head[1] !== 0x4d) throw new MalformedBmp("not a BMP");
  const dataOffset = v.getUint32(10, true);
  const dibSize = v.getUint32(14, true);
  let width: number, rawHeight: number, bitCount: number, compression: number;
  let paletteEntry = 4, colorsUsed = 0;
  if (dibSize === 12) {
    need(26, "core header");
    width = v.getUint16(18, true);
    rawHeight = v.getUint16(20, true);
    bitCount = v.getUint16(24, true);
    compression = BI_RGB;
    paletteEntry = 3;
  } else if (INFO_SIZES.includes(dibSize)) {
    need(14 + 40, "info header");
    width = v.getInt32(18, true);
    rawHeight = v.getInt32(22, true);
    bitCount = v.getUint16(28, true);
    compression = v.getUint32(30, true);
    colorsUsed = v.getUint32(46, true);
    // OS/2 2.x reuses 3 and 4 for Huffman 1D and RLE24, which nothing here decodes.
    if (dibSize === 64 && (compression === 3 || compression === 4)) {
      throw new MalformedBmp("OS/2 Huffman or RLE24 compression");
    }
  } else throw new MalformedBmp(`unknown header size ${dibSize}`);

  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height <= 0) throw new MalformedBmp("no pixels");
  if (width > MAX_SIDE || height > MAX_SIDE) {
    throw new MalformedBmp(`a side is over ${MAX_SIDE} pixels`);
  }

  let encoding: BmpInfo["encoding"];
  let masks: BmpInfo["masks"] = [0, 0, 0, 0];
  let afterHeader = 14 + dibSize;
  if (compression === BI_RGB) {
    if (![1, 4, 8, 16, 24, 32].includes(bitCount)) {
      throw new MalformedBmp(`${bitCount} bits per pixel`);
    }
    encoding = "rgb";
  } else if (compression === BI_RLE8 || compression === BI_RLE4) {
    if (bitCount !== (compression === BI_RLE8 ? 8 : 4)) {
      throw new MalformedBmp("RLE with a mismatched bit count");
    }
    // The format has no top-down RLE: rows and deltas only go up.
    if (topDown) throw new MalformedBmp("top-down RLE");
    encoding = compression === BI_RLE8 ? "rle8" : "rle4";
  } else if (
    compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS
  ) {
    if (bitCount !== 16 && bitCount !== 32) {
      throw new MalformedBmp(`bit fields on ${bitCount} bits per pixel`);
    }
    const withAlpha = compression === BI_ALPHABITFIELDS || dibSize >= 56;
    // An INFO header keeps its masks after itself; V2 and later inside.
    const at = 14 + 40;
    const count = withAlpha ? 4 : 3;
    if (dibSize === 40) afterHeader += count * 4;
    need(at + count * 4, "bit masks");
    masks = [
      v.getUint32(at, true),
      v.getUint32(at + 4, true),
      v.getUint32(at + 8, true),
      withAlpha ? v.getUint32(at + 12, true) : 0,
    ];
    encoding = "bitfields";
  } else throw new MalformedBmp(`compression ${compression}`);

  let palette = new Uint8Array(0);
  if (bitCount <= 8) {
    const max = 1 << bitCount;
    const n = colorsUsed > 0 && colorsUsed < max ? colorsUsed : max;
    // A palette may be cut short by the pixel data; missing colours decode as black.
    const end = Math.min(
      head.length,
      dataOffset,
      afterHeader + n * paletteEntry,
    );
    const got = Math.max(0, Math.floor((end - afterHeader) / paletteEntry));
    palette = new Uint8Array(max * 3);
    for (let i = 0; i < got; i++) {
      const p = afterHeader + i * paletteEntry;
      palette[i * 3] = head[p + 2];
      palette[i * 3 + 1] = head[p + 1];
      palette[i * 3 + 2] = head[p];
    }
  }

  if (dataOffset < afterHeader || dataOffset >= fileSize) {
    throw new MalformedBmp("pixel data outside the file");
  }
  if (encoding === "rgb" || encoding === "bitfields") {
    const need = rowBytesOf(width, bitCount) * height;
    if (fileSize - dataOffset < need) {
      throw new MalformedBmp(
        `pixel data is ${fileSize - dataOffset} of ${need} bytes`,
      );
    }
  }
  const channels = encoding === "rle8" || encoding === "rle4" || masks[3] !== 0
    ? 4
    : 3;
  return {
    width,
    height,
    topDown,
    bitCount,
    encoding,
    dataOffset,
    palette,
    masks,
    channels,
  };
}

/** A stored row's length: pixels rounded up to whole 32-bit words. */
function rowBytesOf(width: number, bitCount: number): number {
  return Math.floor((width * bitCount + 31) / 32) * 4;
}

/**
 * Rewrites the BMP at `source` (its bytes, or a path) as an uncompressed RGB(A) TIFF at
 * `out`, checking `deadline` (epoch ms) once per window.
 */
export async function bmpToTiff(
  source: Uint8Array | string,
  info: BmpInfo,
  out: string,
  deadline = Infinity,
  buffers: StripBuffers = new StripBuffers(),
): Promise<void> {
  const file = typeof source === "string"
    ? await openScratch(source, { read: true })
    : undefined;
  const window = file && buffers.take();
  try {
    const src = file && window
      ? new SeqReader(file, (await file.stat()).size, window)
      : SeqReader.ofBytes(source as Uint8Array);
    await src.take(info.dataOffset);
    // Read too: an alpha left 0 everywhere is set to 255 in place at the end.
    const f = await openScratch(out, {
      read: true,
      write: true,
      createNew: true,
    });
    try {
      const rows = new TiffRows(f, info, deadline);
      await rows.start();
      if (info.encoding === "rle8" || info.encoding === "rle4") {
        await decodeRle(src, info, rows);
      } else await decodePlain(src, info, rows);
      await rows.finish();
    } finally {
      f.close();
    }
  } finally {
    file?.close();
    if (window) buffers.give(window);
  }
}

/** The next n bytes, consumed; MalformedBmp if the data ends first. */
async function next(src: SeqReader, n: number): Promise<Uint8Array> {
  const got = await src.peek(n);
  if (got.length < n) throw new MalformedBmp("pixel data ends early");
  await src.take(n);
  return got;
}

/**
 * The TIFF being written. Pixels arrive in the BMP's order (a row left to right, rows
 * usually bottom first); they are gathered in a window of whole rows (or part of one wide
 * row) that becomes one TIFF strip, and strips are appended as they fill. A bottom-up BMP
 * appends its strips bottom first: the strip offsets in the TIFF's directory put them back
 * in order, so nothing is ever rewritten in place.
 */
class TiffRows {
  readonly #w: number;
  readonly #h: number;
  readonly #ch: number;
  readonly #rowBytes: number;
  /** Rows per strip: as many as fit in a window, at least one. */
  readonly #k: number;
  readonly #buf: Uint8Array;
  /** Bytes of the current wide row waiting in the window (one-row strips only). */
  #pending = 0;
  /**
   * Whether the alpha a mask names is still 0 in every pixel so far. Windows leaves it 0 in
   * 32-bit bit-field BMPs it means to be opaque, and browsers then show them opaque.
   */
  #alphaAllZero: boolean;
  /** The row being filled, counted in the BMP's order, and the next pixel in it. */
  row = 0;
  x = 0;

  constructor(
    private readonly f: ScratchFile,
    private readonly info: BmpInfo,
    private readonly deadline: number,
  ) {
    this.#w = info.width;
    this.#h = info.height;
    this.#ch = info.channels;
    this.#rowBytes = this.#w * this.#ch;
    this.#k = Math.max(1, Math.floor(WINDOW / this.#rowBytes));
    this.#buf = new Uint8Array(this.#k > 1 ? this.#k * this.#rowBytes : WINDOW);
    this.#alphaAllZero = info.encoding === "bitfields" && info.masks[3] !== 0;
    if (this.#dataBytes() + 4096 > 0xffff_ffff) {
      throw new MalformedBmp("too large for one TIFF");
    }
  }

  #dataBytes() {
    return this.#h * this.#rowBytes;
  }

  /** Output row (top first) of the row being filled. */
  #outRow() {
    return this.info.topDown ? this.row : this.#h - 1 - this.row;
  }

  /** The TIFF header: byte order, magic, and where the directory will be. */
  async start() {
    const head = new Uint8Array(8);
    const v = new DataView(head.buffer);
    head.set([0x49, 0x49, 42, 0]);
    v.setUint32(4, this.#ifdOffset(), true);
    await writeAll(this.f, head);
  }

  #ifdOffset() {
    const end = 8 + this.#dataBytes();
    return end + (end & 1); // a directory starts on a word boundary
  }

  /**
   * Room for up to `n` pixels at the current position: the window and the byte offset to
   * write at, and how many pixels fit there (0 once the row is full). Call `advance`.
   */
  async span(
    n: number,
  ): Promise<{ buf: Uint8Array; at: number; count: number }> {
    const left = Math.min(n, this.#w - this.x);
    if (this.#k > 1) {
      const inStrip = this.#outRow() % this.#k;
      return {
        buf: this.#buf,
        at: inStrip * this.#rowBytes + this.x * this.#ch,
        count: left,
      };
    }
    if (WINDOW - this.#pending < this.#ch) await this.#flushPending();
    return {
      buf: this.#buf,
      at: this.#pending,
      count: Math.min(left, Math.floor((WINDOW - this.#pending) / this.#ch)),
    };
  }

  advance(count: number) {
    this.x += count;
    if (this.#k === 1) this.#pending += count * this.#ch;
  }

  /** Transparent (or black) pixels: what RLE skips and what pads a row it ends early. */
  async skip(n: number) {
    n = Math.min(n, this.#w - this.x);
    while (n > 0) {
      const { buf, at, count } = await this.span(n);
      buf.fill(0, at, at + count * this.#ch);
      this.advance(count);
      n -= count;
    }
  }

  /** Ends the current row (padding it) and moves to the next; past the last, a no-op. */
  async endRow() {
    if (this.row >= this.#h) return;
    await this.skip(this.#w - this.x);
    if (this.#k === 1) await this.#flushPending();
    else {
      const o = this.#outRow();
      const stripStart = o - (o % this.#k);
      const stripEnd = Math.min(this.#h, stripStart + this.#k);
      const last = this.info.topDown ? o === stripEnd - 1 : o === stripStart;
      if (last) {
        await this.#writePixels(
          this.#buf.subarray(0, (stripEnd - stripStart) * this.#rowBytes),
        );
      }
    }
    this.row++;
    this.x = 0;
  }

  /**
   * Rows the BMP did not reach (RLE ended early) are transparent; an alpha that stayed 0
   * everywhere is made opaque; then the directory.
   */
  async finish() {
    while (this.row < this.#h) await this.endRow();
    if (this.#alphaAllZero) await this.#opaque();
    const pad = (8 + this.#dataBytes()) & 1;
    await this.#write(new Uint8Array(pad));
    await this.#write(this.#directory());
  }

  async #flushPending() {
    await this.#writePixels(this.#buf.subarray(0, this.#pending));
    this.#pending = 0;
  }

  /** Pixel bytes (whole pixels, RGBA when there is alpha), watching for non-zero alpha. */
  async #writePixels(bytes: Uint8Array) {
    if (this.#alphaAllZero) {
      for (let i = 3; i < bytes.length; i += 4) {
        if (bytes[i] !== 0) {
          this.#alphaAllZero = false;
          break;
        }
      }
    }
    await this.#write(bytes);
  }

  /** Sets every pixel's alpha to 255, a window at a time, in the pixels already written. */
  async #opaque() {
    const step = this.#buf.length - (this.#buf.length % 4);
    for (let at = 0; at < this.#dataBytes(); at += step) {
      const piece = this.#buf.subarray(
        0,
        Math.min(step, this.#dataBytes() - at),
      );
      await this.f.seek(8 + at, Deno.SeekMode.Start);
      await readFull(this.f, piece);
      for (let i = 3; i < piece.length; i += 4) piece[i] = 255;
      await this.f.seek(8 + at, Deno.SeekMode.Start);
      await this.#write(piece);
    }
    await this.f.seek(0, Deno.SeekMode.End);
  }

  async #write(bytes: Uint8Array) {
    if (Date.now() > this.deadline) throw new BmpTimeout("deadline passed");
    await writeAll(this.f, bytes);
  }

  /** The image file directory, placed after the pixels, and its arrays. */
  #directory(): Uint8Array {
    const w = this.#w, h = this.#h, k = this.#k, ch = this.#ch;
    const strips = Math.ceil(h / k);
    const rowsIn = (s: number) => Math.min(h, (s + 1) * k) - s * k;
    // Strips were appended in the BMP's row order: bottom strip first unless top-down.
    const offsetOf = (s: number) =>
      8 + this.#rowBytes *
        (this.info.topDown ? s * k : h - Math.min(h, (s + 1) * k));
    const entries: [tag: number, type: number, values: number[]][] = [
      [256, 4, [w]],
      [257, 4, [h]],
      [258, 3, Array(ch).fill(8)],
      [259, 3, [1]], // no compression
      [262, 3, [2]], // RGB
      [273, 4, Array.from({ length: strips }, (_, s) => offsetOf(s))],
      [277, 3, [ch]],
      [278, 4, [k]],
      [
        279,
        4,
        Array.from({ length: strips }, (_, s) => rowsIn(s) * this.#rowBytes),
      ],
      [284, 3, [1]], // chunky
    ];
    if (ch === 4) entries.push([338, 3, [2]]); // unassociated alpha
    const start = this.#ifdOffset();
    const dirBytes = 2 + entries.length * 12 + 4;
    const extra = entries.reduce(
      (sum, [, type, vals]) => {
        const size = vals.length * (type === 3 ? 2 : 4);
        return sum + (size > 4 ? size : 0);
      },
      0,
    );
    const out = new Uint8Array(dirBytes + extra);
    const v = new DataView(out.buffer);
    v.setUint16(0, entries.length, true);
    let next = dirBytes; // where the next array that does not fit an entry goes
    entries.forEach(([tag, type, vals], i) => {
      const e = 2 + i * 12;
      v.setUint16(e, tag, true);
      v.setUint16(e + 2, type, true);
      v.setUint32(e + 4, vals.length, true);
      const size = type === 3 ? 2 : 4;
      let at = e + 8;
      if (vals.length * size > 4) {
        v.setUint32(e + 8, start + next, true);
        at = next;
        next += vals.length * size;
      }
      vals.forEach((val, j) => {
        if (size === 2) v.setUint16(at + j * 2, val, true);
        else v.setUint32(at + j * 4, val, true);
      });
    });
    return out;
  }
}

/** Uncompressed rows: palette indices, 16/24/32-bit pixels, or bit fields. */
async function decodePlain(src: SeqReader, info: BmpInfo, rows: TiffRows) {
  const { width, height, bitCount } = info;
  const convert = converter(info);
  // Pixels per read: a window's worth, in whole bytes for the packed depths.
  const perChunk = Math.floor((WINDOW * 8) / bitCount / 8) * 8;
  const rowBytes = rowBytesOf(width, bitCount);
  const used = Math.ceil((width * bitCount) / 8);
  for (let r = 0; r < height; r++) {
    for (let x0 = 0; x0 < width; x0 += perChunk) {
      const n = Math.min(perChunk, width - x0);
      const data = await next(src, Math.ceil((n * bitCount) / 8));
      for (let i = 0; i < n;) {
        const { buf, at, count } = await rows.span(n - i);
        convert(data, i, count, buf, at);
        rows.advance(count);
        i += count;
      }
    }
    if (rowBytes > used) await next(src, rowBytes - used);
    await rows.endRow();
  }
}

/** Writes `count` pixels, from pixel `first` of `data`, as RGB(A) into `out` at `at`. */
type Convert = (
  data: Uint8Array,
  first: number,
  count: number,
  out: Uint8Array,
  at: number,
) => void;

function converter(info: BmpInfo): Convert {
  const { bitCount, palette } = info;
  if (bitCount <= 8) {
    const perByte = 8 / bitCount, mask = (1 << bitCount) - 1;
    return (data, first, count, out, at) => {
      for (let i = first; i < first + count; i++, at += 3) {
        const byte = data[Math.floor(i / perByte)];
        const shift = 8 - bitCount * (1 + (i % perByte));
        const p = ((byte >> shift) & mask) * 3;
        out[at] = palette[p];
        out[at + 1] = palette[p + 1];
        out[at + 2] = palette[p + 2];
      }
    };
  }
  if (bitCount === 24 || (bitCount === 32 && info.encoding === "rgb")) {
    const step = bitCount / 8;
    return (data, first, count, out, at) => {
      for (let p = first * step, end = p + count * step; p < end; p += step) {
        out[at++] = data[p + 2];
        out[at++] = data[p + 1];
        out[at++] = data[p];
      }
    };
  }
  // 16-bit without masks is 5-5-5; everything else reads its masks.
  const masks = info.encoding === "bitfields"
    ? info.masks
    : [0x7c00, 0x03e0, 0x001f, 0];
  const fields = masks.slice(0, info.channels).map(field);
  const step = bitCount / 8;
  return (data, first, count, out, at) => {
    for (let p = first * step, end = p + count * step; p < end; p += step) {
      const px = step === 2
        ? data[p] | (data[p + 1] << 8)
        : (data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) |
          (data[p + 3] << 24)) >>> 0;
      for (const f of fields) out[at++] = f(px);
    }
  };
}

/** A mask's value scaled to 0–255 (0 for an empty mask). */
function field(mask: number): (px: number) => number {
  if (mask === 0) return () => 0;
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  const max = mask >>> shift;
  if (max === 255) return (px) => ((px & mask) >>> shift) & 255;
  return (px) => Math.round((((px & mask) >>> shift) * 255) / max);
}

/**
 * RLE8/RLE4: runs of one index (two alternating, in RLE4), literal runs, end of row,
 * end of image and position jumps. Pixels past the row are dropped, as browsers do.
 */
async function decodeRle(src: SeqReader, info: BmpInfo, rows: TiffRows) {
  const { palette, height } = info;
  const four = info.encoding === "rle4";
  const put = async (indexAt: (i: number) => number, n: number) => {
    for (let i = 0; i < n;) {
      const { buf, at, count } = await rows.span(n - i);
      if (count === 0) return; // past the row's end
      for (let j = 0, o = at; j < count; j++, o += 4) {
        const p = indexAt(i + j) * 3;
        buf[o] = palette[p];
        buf[o + 1] = palette[p + 1];
        buf[o + 2] = palette[p + 2];
        buf[o + 3] = 255;
      }
      rows.advance(count);
      i += count;
    }
  };
  while (rows.row < height) {
    const op = await src.peek(2);
    if (op.length < 2) break; // no end marker: the rest stays transparent
    const [n, b] = op;
    await src.take(2);
    if (n > 0) {
      await put(four ? (i) => (i & 1 ? b & 15 : b >> 4) : () => b, n);
    } else if (b === 0) {
      await rows.endRow();
    } else if (b === 1) {
      break;
    } else if (b === 2) {
      const [dx, dy] = await next(src, 2);
      const x = rows.x + dx;
      for (let i = 0; i < dy; i++) await rows.endRow();
      await rows.skip(x - rows.x);
    } else {
      const bytes = four ? Math.ceil(b / 2) : b;
      const data = (await next(src, bytes + (bytes & 1))).slice(0, bytes);
      await put(
        four
          ? (i) => (i & 1 ? data[i >> 1] & 15 : data[i >> 1] >> 4)
          : (i) => data[i],
        b,
      );
    }
  }
}
