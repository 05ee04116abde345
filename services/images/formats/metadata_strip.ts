/**
 * services/images/formats/ — each accepted format's lossless rewrite, so an original is
 * stored without personal metadata and without a second lossy pass: JPEG, PNG, GIF and
 * WebP (this file), AVIF (avif_strip.ts), TIFF (tiff_tags.ts), BMP turned into a TIFF
 * libvips can read (bmp.ts), and the positioned reads they share (positioned_read.ts).
 *
 * Lossless removal of personal metadata (EXIF incl. GPS, XMP, IPTC, comments, text chunks)
 * from JPEG, PNG, GIF and WebP files by dropping segments, so pixels are never re-encoded.
 * Each makes one sequential pass through 1 MiB windows: memory stays bounded whatever the
 * file size, and a file costs a handful of reads and writes rather than several per segment.
 */

import { writeAll } from "../../runtime/file_io.ts";
import type { Read } from "./positioned_read.ts";
import { openScratch, type ScratchFile } from "../../runtime/scratch_files.ts";

/**
 * The file's structure is broken (a truncated chunk, no end marker, a bad marker): the
 * upload is refused with 141, unlike an I/O failure, which is ours.
 */
export class MalformedImage extends Error {
  override name = "MalformedImage";
}

const WINDOW = 1024 * 1024;

/**
 * Window buffers kept between passes, so stripping a file allocates nothing: a fresh pair
 * per file was 2 MB of garbage each, which the memory benchmark saw pile up until V8 ran a
 * full collection.
 */
export class StripBuffers {
  #free: Uint8Array[] = [];
  /** A window, reused when one is free. */
  take(): Uint8Array {
    return this.#free.pop() ?? new Uint8Array(WINDOW);
  }
  /** Returns a window for the next pass (a few are kept, the rest dropped). */
  give(b: Uint8Array) {
    if (this.#free.length < 4) this.#free.push(b);
  }
}

/** Sequential reader over a file through a reusable window, or over bytes in memory. */
export class SeqReader {
  #start = 0; // window's offset of the first unread byte
  #end = 0; // window's offset past the last loaded byte
  pos = 0; // file position of the first unread byte
  constructor(
    private readonly f: ScratchFile | undefined,
    readonly size: number,
    private readonly buf: Uint8Array,
  ) {}

  /** A reader whose window is `bytes` themselves: nothing to load, nothing copied. */
  static ofBytes(bytes: Uint8Array): SeqReader {
    const r = new SeqReader(undefined, bytes.length, bytes);
    r.#end = bytes.length;
    return r;
  }

  /** The next n (≤ WINDOW) bytes without consuming them; shorter at end of file. */
  async peek(n: number): Promise<Uint8Array> {
    // More than a file's window holds would read nothing forever: a caller's bug, not a
    // file's. Over bytes in memory the window is the whole file: past it is its end.
    if (n > this.buf.length && this.f) {
      throw new RangeError(`peek(${n}) past the window`);
    }
    if (this.#end - this.#start < n && this.f) {
      this.buf.copyWithin(0, this.#start, this.#end);
      this.#end -= this.#start;
      this.#start = 0;
      while (this.#end < n) {
        const r = await this.f.read(this.buf.subarray(this.#end));
        if (r === null) break;
        this.#end += r;
      }
    }
    return this.buf.subarray(
      this.#start,
      this.#start + Math.min(n, this.#end - this.#start),
    );
  }

  /** Consumes n bytes, handing each piece to `sink` (or dropping them). */
  async take(
    n: number,
    sink?: (b: Uint8Array) => Promise<void>,
  ): Promise<void> {
    while (n > 0) {
      const piece = await this.peek(Math.min(n, WINDOW));
      if (piece.length === 0) {
        throw new MalformedImage("unexpected end of file");
      }
      if (sink) await sink(piece);
      this.#start += piece.length;
      this.pos += piece.length;
      n -= piece.length;
    }
  }
}

/**
 * Where a strip pass writes: a file through a buffer (BufWriter), or a plan of the
 * original's own bytes for a rewrite in place (strip_in_place.ts).
 */
export interface StripWriter {
  /** Bytes written so far (the next write's offset). */
  readonly pos: number;
  /** Appends `b`; a pass hands over views of what it read, or bytes of its own. */
  write: (b: Uint8Array) => Promise<void>;
  /** Overwrites bytes already written at `offset`. */
  patch(offset: number, b: Uint8Array): Promise<void>;
}

/** A format's strip: one front-to-back pass from the reader to the writer. */
export type StripPass = (r: SeqReader, w: StripWriter) => Promise<void>;

/** Buffered writer: small pieces are gathered into 1 MiB writes. */
export class BufWriter implements StripWriter {
  #len = 0;
  #flushed = 0; // bytes already in the file
  constructor(
    private readonly f: ScratchFile,
    private readonly buf: Uint8Array,
  ) {}
  /** Bytes written so far (the next write's offset in the file). */
  get pos(): number {
    return this.#flushed + this.#len;
  }
  write = async (b: Uint8Array) => {
    if (this.#len + b.length > WINDOW) await this.flush();
    if (b.length >= WINDOW) return await this.#raw(b);
    this.buf.set(b, this.#len);
    this.#len += b.length;
  };
  /**
   * Overwrites bytes already written at `offset` (a size known only once what it counts
   * has been copied): in the buffer when they are still there, else in the file.
   */
  async patch(offset: number, b: Uint8Array) {
    if (offset >= this.#flushed) {
      this.buf.set(b, offset - this.#flushed);
      return;
    }
    await this.flush();
    await this.f.seek(offset, Deno.SeekMode.Start);
    await writeAll(this.f, b);
    await this.f.seek(0, Deno.SeekMode.End);
  }
  async flush() {
    await this.#raw(this.buf.subarray(0, this.#len));
    this.#len = 0;
  }
  async #raw(b: Uint8Array) {
    await writeAll(this.f, b);
    this.#flushed += b.length;
  }
}

/** Opens src for reading and dst (new) for writing, runs `body`, closes both. */
async function transform(
  src: string,
  dst: string,
  buffers: StripBuffers,
  body: StripPass,
) {
  const f = await openScratch(src, { read: true });
  const rbuf = buffers.take();
  const wbuf = buffers.take();
  try {
    // The copy is the original less its metadata (plus at most a new orientation
    // segment): one part of that size, never gathered from parts before it is stored.
    const out = await openScratch(
      dst,
      { write: true, createNew: true },
      (await f.stat()).size + 1024,
    );
    try {
      const w = new BufWriter(out, wbuf);
      await body(new SeqReader(f, (await f.stat()).size, rbuf), w);
      await w.flush();
    } finally {
      out.close();
    }
  } finally {
    f.close();
    buffers.give(rbuf);
    buffers.give(wbuf);
  }
}

/** A minimal EXIF APP1 segment holding only the orientation tag. */
export function orientationApp1(orientation: number): Uint8Array {
  return new Uint8Array([
    0xff,
    0xe1,
    0x00,
    0x22, // APP1, length 34
    0x45,
    0x78,
    0x69,
    0x66,
    0x00,
    0x00, // "Exif\0\0"
    0x4d,
    0x4d,
    0x00,
    0x2a,
    0x00,
    0x00,
    0x00,
    0x08, // big-endian TIFF, IFD0 at 8
    0x00,
    0x01, // one entry
    0x01,
    0x12,
    0x00,
    0x03,
    0x00,
    0x00,
    0x00,
    0x01, // Orientation, SHORT, count 1
    0x00,
    orientation & 0xff,
    0x00,
    0x00, // value
    0x00,
    0x00,
    0x00,
    0x00, // no next IFD
  ]);
}

// Kept APP segments: APP0 (JFIF), APP2 (ICC profile), APP14 (Adobe colour transform).
const KEEP_APP = new Set([0xe0, 0xe2, 0xee]);

/** A segment the strip leaves out: an APP segment it does not keep, or a comment. */
function dropsSegment(marker: number): boolean {
  const isApp = marker >= 0xe0 && marker <= 0xef;
  return (isApp && !KEEP_APP.has(marker)) || marker === 0xfe;
}

/**
 * Copies a JPEG without APP1 (EXIF/XMP), APP13 (IPTC), other vendor APP segments and
 * comments; when the image had an orientation other than 1, a minimal EXIF carrying only
 * that orientation is written back so it still displays upright.
 */
export async function stripJpeg(
  src: string,
  dst: string,
  orientation: number,
  buffers: StripBuffers = new StripBuffers(),
): Promise<void> {
  await transform(src, dst, buffers, jpegPass(orientation));
}

/** stripJpeg's pass. */
export function jpegPass(orientation: number): StripPass {
  return async (r, w) => {
    const soi = await r.peek(2);
    if (soi[0] !== 0xff || soi[1] !== 0xd8) {
      throw new MalformedImage("not a JPEG");
    }
    await r.take(2, w.write);
    let wroteOrientation = orientation <= 1;
    const writeOrientation = async () => {
      if (!wroteOrientation) await w.write(orientationApp1(orientation));
      wroteOrientation = true;
    };
    while (r.pos < r.size) {
      const h = await r.peek(4);
      if (h.length < 2 || h[0] !== 0xff) {
        throw new MalformedImage("bad JPEG marker");
      }
      const m = h[1];
      if (m === 0xff) { // fill byte
        await r.take(1);
        continue;
      }
      if (m === 0xda || m === 0xd9) { // start of scan / end: the rest is image data
        await writeOrientation();
        await r.take(r.size - r.pos, w.write);
        return;
      }
      if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
        await r.take(2, w.write);
        continue;
      }
      if (h.length < 4) throw new MalformedImage("truncated JPEG");
      const len = (h[2] << 8) | h[3];
      if (dropsSegment(m)) {
        await r.take(2 + len);
        continue;
      }
      if (m !== 0xe0) await writeOrientation();
      await r.take(2 + len, w.write);
    }
    throw new MalformedImage("JPEG without image data");
  };
}

/**
 * Whether stripJpeg would write these bytes back unchanged: a well-formed JPEG whose
 * segments before its scan are all kept (no EXIF, XMP, IPTC, other APP segment, comment
 * or fill byte), with no orientation to write. Such a file is stored as it came, without
 * a copy (issue #49: a copy is as large as the upload, in memory on Deno Deploy).
 * Anything this does not recognise answers false, and the strip runs as before.
 */
export function jpegKeepsAll(bytes: Uint8Array, orientation: number): boolean {
  if (orientation > 1 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return false;
  let at = 2;
  while (at + 1 < bytes.length) {
    if (bytes[at] !== 0xff) return false;
    const m = bytes[at + 1];
    if (m === 0xda) return true; // the scan: the rest is image data, copied as it is
    if (m === 0xff || m === 0xd9) return false; // a fill byte is dropped; no image
    if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      at += 2;
      continue;
    }
    if (at + 3 >= bytes.length) return false;
    if (dropsSegment(m)) return false;
    at += 2 + ((bytes[at + 2] << 8) | bytes[at + 3]);
  }
  return false;
}

const DROP_PNG = new Set(["eXIf", "tEXt", "zTXt", "iTXt", "tIME"]);

/** Copies a PNG without its EXIF, text and time chunks. */
export async function stripPng(
  src: string,
  dst: string,
  buffers: StripBuffers = new StripBuffers(),
): Promise<void> {
  await transform(src, dst, buffers, pngPass);
}

/** stripPng's pass. */
export const pngPass: StripPass = async (r, w) => {
  await r.take(8, w.write);
  while (r.pos + 12 <= r.size) {
    const h = await r.peek(8);
    const len = new DataView(h.buffer, h.byteOffset, 8).getUint32(0);
    const type = String.fromCharCode(h[4], h[5], h[6], h[7]);
    const total = 12 + len;
    if (r.pos + total > r.size) {
      throw new MalformedImage("truncated PNG chunk");
    }
    await r.take(total, DROP_PNG.has(type) ? undefined : w.write);
    if (type === "IEND") return;
  }
  throw new MalformedImage("PNG without IEND");
};

/**
 * Application extensions that change how a GIF shows: the loop count (Netscape's and its
 * twin) and a colour profile. Others (XMP, editors' private data) are dropped.
 */
const KEEP_GIF_APP = new Set(["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"]);

/**
 * Copies a GIF without its comments, plain-text blocks and application extensions other
 * than the loop count and colour profile: libvips reports none of them, so a GIF was stored
 * with its XMP (creator, GPS) and comments. Frames and their timing are copied byte for
 * byte. A GIF that ends where a block should start is given its trailer, as browsers show
 * it; one cut inside a block is damaged.
 */
export async function stripGif(
  src: string,
  dst: string,
  buffers: StripBuffers = new StripBuffers(),
): Promise<void> {
  await transform(src, dst, buffers, gifPass);
}

/** stripGif's pass. */
export const gifPass: StripPass = async (r, w) => {
  const head = await r.peek(13);
  const sig = String.fromCharCode(...head.subarray(0, 6));
  if (head.length < 13 || (sig !== "GIF87a" && sig !== "GIF89a")) {
    throw new MalformedImage("not a GIF");
  }
  await r.take(13 + colourTable(head[10]), w.write);
  for (;;) {
    const b = await r.peek(1);
    if (b.length === 0 || b[0] === 0x3b) { // the trailer; anything after it is dropped
      await w.write(new Uint8Array([0x3b]));
      return;
    }
    if (b[0] === 0x2c) { // an image: descriptor, local colours, LZW code size, data
      const d = await r.peek(10);
      if (d.length < 10) throw new MalformedImage("truncated GIF image");
      await r.take(10 + colourTable(d[9]) + 1, w.write);
      await gifSubBlocks(r, w.write);
    } else if (b[0] === 0x21) {
      const e = await r.peek(14);
      if (e.length < 2) throw new MalformedImage("truncated GIF extension");
      const keep = e[1] === 0xf9 || // graphic control: frame delay, transparency
        (e[1] === 0xff && e.length === 14 && e[2] === 11 &&
          KEEP_GIF_APP.has(String.fromCharCode(...e.subarray(3, 14))));
      const sink = keep ? w.write : undefined;
      await r.take(2, sink);
      await gifSubBlocks(r, sink);
    } else throw new MalformedImage("unknown GIF block");
  }
};

/** Bytes of the colour table a GIF's packed field announces (0 without one). */
function colourTable(packed: number): number {
  return packed & 0x80 ? 3 << ((packed & 7) + 1) : 0;
}

/** Size-prefixed data blocks up to the empty one that ends them. */
async function gifSubBlocks(
  r: SeqReader,
  sink?: (b: Uint8Array) => Promise<void>,
) {
  for (;;) {
    const n = await r.peek(1);
    if (n.length === 0) throw new MalformedImage("truncated GIF data");
    await r.take(1 + n[0], sink);
    if (n[0] === 0) return;
  }
}

/** WebP chunks that make up the picture; any other (EXIF, XMP, an editor's) is dropped. */
const KEEP_WEBP = new Set([
  "VP8X",
  "VP8 ",
  "VP8L",
  "ALPH",
  "ANIM",
  "ANMF",
  "ICCP",
]);
/** What an animation frame holds besides its 16-byte header. */
const KEEP_WEBP_FRAME = new Set(["VP8 ", "VP8L", "ALPH"]);
/** VP8X flags announcing EXIF (0x08) and XMP (0x04), cleared with their chunks gone. */
const VP8X_METADATA = 0x0c;

/**
 * Copies a WebP without its EXIF and XMP chunks, chunks this format does not define
 * (top level and inside animation frames) and anything after the RIFF's end: libvips reads
 * EXIF and XMP but keeps the rest, so a WebP was re-encoded (a lossless one came back
 * lossy) or stored with whatever it carried. The picture's chunks are copied byte for
 * byte; the sizes that counted dropped chunks (the RIFF's, a frame's) are written anew.
 */
export async function stripWebp(
  src: string,
  dst: string,
  buffers: StripBuffers = new StripBuffers(),
): Promise<void> {
  await transform(src, dst, buffers, webpPass);
}

/** stripWebp's pass. */
export const webpPass: StripPass = async (r, w) => {
  const head = await r.peek(12);
  if (!isWebpHead(head)) throw new MalformedImage("not a WebP");
  const end = 8 + le32(head, 4);
  if (end > r.size) throw new MalformedImage("truncated WebP");
  await r.take(12, w.write);
  let pictures = 0;
  while (r.pos + 8 <= end) {
    const c = await r.peek(8);
    const type = fourcc(c, 0), size = le32(c, 4);
    if (!KEEP_WEBP.has(type)) await webpChunk(r, end, undefined);
    else if (type === "ANMF") {
      if (size < 16) throw new MalformedImage("WebP frame too short");
      const at = w.pos;
      await r.take(8 + 16, w.write);
      const frameEnd = r.pos - 16 + size;
      if (frameEnd > end) throw new MalformedImage("truncated WebP frame");
      while (r.pos + 8 <= frameEnd) {
        const t = fourcc(await r.peek(4), 0);
        await webpChunk(
          r,
          frameEnd,
          KEEP_WEBP_FRAME.has(t) ? w.write : undefined,
        );
      }
      await r.take(frameEnd - r.pos);
      if (size & 1 && r.pos < end) await r.take(1);
      // The frame's chunks are all even-sized as written, so it needs no pad of its own.
      await w.patch(at + 4, u32le(w.pos - at - 8));
      pictures++;
    } else if (type === "VP8X") {
      // 10 bytes by the format; the bound also keeps the peek inside one window.
      if (size < 10 || size > 64) throw new MalformedImage("bad WebP VP8X");
      const x = (await r.peek(8 + size)).slice();
      if (x.length < 8 + size) throw new MalformedImage("truncated WebP");
      x[8] &= ~VP8X_METADATA;
      await w.write(x);
      await webpChunk(r, end, undefined);
    } else {
      if (type !== "ALPH" && type !== "ANIM" && type !== "ICCP") pictures++;
      await webpChunk(r, end, w.write);
    }
  }
  if (pictures === 0) throw new MalformedImage("WebP without image data");
  await w.patch(4, u32le(w.pos - 8));
};

/** Whether a file's first 12 bytes are a WebP's RIFF header. */
function isWebpHead(head: Uint8Array): boolean {
  return head.length >= 12 && fourcc(head, 0) === "RIFF" &&
    fourcc(head, 8) === "WEBP";
}

/** Chunk headers read at most by webpIsLossless: a frame bomb must not cost a read each. */
const MAX_WEBP_CHUNKS = 100_000;

/**
 * Whether every picture of a WebP (the still image, or each animation frame) is lossless
 * (VP8L), reading chunk headers only through `read(offset, n)`. False for a lossy or mixed
 * file and for anything it cannot walk: a re-encode then keeps the lossy quality setting,
 * as before. A lossless WebP that must be re-encoded (turned upright by its EXIF) is
 * re-encoded losslessly so, turned, its pixels stay exact.
 */
export async function webpIsLossless(read: Read): Promise<boolean> {
  const head = await read(0, 12);
  if (!isWebpHead(head)) return false;
  const end = 8 + le32(head, 4);
  let lossless = 0, chunks = 0;
  const walk = async (from: number, to: number, frames: boolean) => {
    for (let at = from; at + 8 <= to;) {
      if (++chunks > MAX_WEBP_CHUNKS) return false;
      const c = await read(at, 8);
      if (c.length < 8) return false;
      const type = fourcc(c, 0), size = le32(c, 4);
      if (type === "VP8 ") return false;
      if (type === "VP8L") lossless++;
      if (type === "ANMF" && frames) {
        if (size < 16 || !(await walk(at + 24, at + 8 + size, false))) {
          return false;
        }
      }
      at += 8 + size + (size & 1);
    }
    return true;
  };
  return await walk(12, end, true) && lossless > 0;
}

/**
 * Takes one chunk ending by `end`, to `sink` or dropped. An odd size's pad byte is written
 * as zero whatever it held (and given when the file's last chunk lacks it).
 */
async function webpChunk(
  r: SeqReader,
  end: number,
  sink?: (b: Uint8Array) => Promise<void>,
) {
  const size = le32(await r.peek(8), 4);
  if (r.pos + 8 + size > end) throw new MalformedImage("truncated WebP chunk");
  await r.take(8 + size, sink);
  if (size & 1) {
    if (r.pos < end) await r.take(1);
    if (sink) await sink(new Uint8Array(1));
  }
}

/** The four characters at `at` (a RIFF chunk's or an ISOBMFF box's type). */
export function fourcc(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at], b[at + 1], b[at + 2], b[at + 3]);
}

function le32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>>
    0;
}

function u32le(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}
