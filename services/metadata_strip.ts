/**
 * Lossless removal of personal metadata (EXIF incl. GPS, XMP, IPTC, comments, text chunks)
 * from JPEG and PNG files by dropping segments, so pixels are never re-encoded. Both work
 * file to file in bounded memory: only segment headers are held, image data is copied.
 */

async function readFull(
  f: Deno.FsFile,
  pos: number,
  n: number,
): Promise<Uint8Array> {
  await f.seek(pos, Deno.SeekMode.Start);
  const buf = new Uint8Array(n);
  let off = 0;
  while (off < n) {
    const r = await f.read(buf.subarray(off));
    if (r === null) break;
    off += r;
  }
  return buf.subarray(0, off);
}

async function copyRange(
  src: Deno.FsFile,
  dst: Deno.FsFile,
  pos: number,
  len: number,
) {
  await src.seek(pos, Deno.SeekMode.Start);
  const buf = new Uint8Array(Math.min(len, 256 * 1024) || 1);
  let left = len;
  while (left > 0) {
    const r = await src.read(buf.subarray(0, Math.min(left, buf.length)));
    if (r === null) throw new Error("unexpected end of file");
    let off = 0;
    while (off < r) off += await dst.write(buf.subarray(off, r));
    left -= r;
  }
}

async function writeAll(dst: Deno.FsFile, bytes: Uint8Array) {
  let off = 0;
  while (off < bytes.length) off += await dst.write(bytes.subarray(off));
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

/**
 * Copies a JPEG without APP1 (EXIF/XMP), APP13 (IPTC), other vendor APP segments and
 * comments; when the image had an orientation other than 1, a minimal EXIF carrying only
 * that orientation is written back so it still displays upright.
 */
export async function stripJpeg(
  src: string,
  dst: string,
  orientation: number,
): Promise<void> {
  const f = await Deno.open(src, { read: true });
  const out = await Deno.open(dst, { write: true, createNew: true });
  try {
    const size = (await f.stat()).size;
    const soi = await readFull(f, 0, 2);
    if (soi[0] !== 0xff || soi[1] !== 0xd8) throw new Error("not a JPEG");
    await writeAll(out, soi);
    let pos = 2;
    let wroteOrientation = orientation <= 1;
    while (pos < size) {
      const h = await readFull(f, pos, 4);
      if (h.length < 2 || h[0] !== 0xff) throw new Error("bad JPEG marker");
      const m = h[1];
      if (m === 0xff) { // fill byte
        pos += 1;
        continue;
      }
      if (m === 0xda || m === 0xd9) { // start of scan / end: the rest is image data
        if (!wroteOrientation) {
          await writeAll(out, orientationApp1(orientation));
          wroteOrientation = true;
        }
        await copyRange(f, out, pos, size - pos);
        return;
      }
      if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
        await writeAll(out, h.subarray(0, 2));
        pos += 2;
        continue;
      }
      if (h.length < 4) throw new Error("truncated JPEG");
      const len = (h[2] << 8) | h[3];
      const isApp = m >= 0xe0 && m <= 0xef;
      if ((isApp && !KEEP_APP.has(m)) || m === 0xfe) {
        pos += 2 + len;
        continue;
      }
      if (!wroteOrientation && m !== 0xe0) {
        await writeAll(out, orientationApp1(orientation));
        wroteOrientation = true;
      }
      await copyRange(f, out, pos, 2 + len);
      pos += 2 + len;
    }
    throw new Error("JPEG without image data");
  } finally {
    f.close();
    out.close();
  }
}

const DROP_PNG = new Set(["eXIf", "tEXt", "zTXt", "iTXt", "tIME"]);

/** Copies a PNG without its EXIF, text and time chunks. */
export async function stripPng(src: string, dst: string): Promise<void> {
  const f = await Deno.open(src, { read: true });
  const out = await Deno.open(dst, { write: true, createNew: true });
  try {
    const size = (await f.stat()).size;
    await copyRange(f, out, 0, 8);
    let pos = 8;
    while (pos + 12 <= size) {
      const h = await readFull(f, pos, 8);
      const len = new DataView(h.buffer, h.byteOffset).getUint32(0);
      const type = new TextDecoder().decode(h.subarray(4, 8));
      const total = 12 + len;
      if (pos + total > size) throw new Error("truncated PNG chunk");
      if (!DROP_PNG.has(type)) await copyRange(f, out, pos, total);
      pos += total;
      if (type === "IEND") return;
    }
    throw new Error("PNG without IEND");
  } finally {
    f.close();
    out.close();
  }
}
