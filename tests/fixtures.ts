import assert from "node:assert/strict";
import fc from "fast-check";
import sharp from "sharp";

/** A solid-colour image of the given format, made in memory for a test. */
export async function makeImage(
  format: "jpeg" | "png" | "webp" | "gif" | "avif" | "tiff",
  opts: { width?: number; height?: number; color?: string } = {},
): Promise<Uint8Array> {
  const img = sharp({
    create: {
      width: opts.width ?? 64,
      height: opts.height ?? 48,
      channels: 3,
      background: opts.color ?? "#3366cc",
    },
  });
  return new Uint8Array(await img.toFormat(format).toBuffer());
}

/** An animated GIF of `frames` differently coloured frames. */
export async function makeAnimatedGif(frames = 3): Promise<Uint8Array> {
  const colors = ["red", "green", "blue", "yellow"];
  const parts = await Promise.all(
    Array.from(
      { length: frames },
      (_, i) =>
        sharp({
          create: {
            width: 32,
            height: 32,
            channels: 3,
            background: colors[i % 4],
          },
        }).png()
          .toBuffer(),
    ),
  );
  return new Uint8Array(
    await sharp(parts, { join: { animated: true } }).gif().toBuffer(),
  );
}

/** A JPEG carrying GPS coordinates, camera make, artist and orientation 6. */
export async function makeJpegWithGps(): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp({
      create: { width: 80, height: 40, channels: 3, background: "#884422" },
    })
      .jpeg({ quality: 90 })
      .withExif({
        IFD0: { Make: "TestCam", Artist: "Alice Example" },
        IFD3: {
          GPSLatitudeRef: "N",
          GPSLatitude: "51/1 30/1 0/1",
          GPSLongitudeRef: "W",
          GPSLongitude: "0/1 7/1 0/1",
        },
      })
      .withMetadata({ orientation: 6 })
      .toBuffer(),
  );
}

/**
 * A random-noise JPEG of `width`×`height` (noise defeats compression, so it is large);
 * with `exif`, carrying an EXIF segment (a copyright).
 */
export async function makeNoiseJpeg(
  width: number,
  height: number,
  opts: { exif?: boolean } = {},
): Promise<Uint8Array> {
  const raw = new Uint8Array(width * height * 3);
  crypto.getRandomValues(raw.subarray(0, Math.min(raw.length, 65536)));
  for (let i = 65536; i < raw.length; i += 65536) {
    raw.copyWithin(i, (i * 7919) % 65536, Math.min(raw.length, i + 65536));
  }
  let img = sharp(raw, { raw: { width, height, channels: 3 } });
  if (opts.exif) img = img.withExif({ IFD0: { Copyright: "someone" } });
  return new Uint8Array(await img.jpeg({ quality: 95 }).toBuffer());
}

/** Builds multipart form data from named files. */
export function formWith(
  files: { field?: string; name: string; bytes: Uint8Array; type?: string }[],
  fields: Record<string, string> = {},
): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const f of files) {
    fd.append(
      f.field ?? "images",
      new File([f.bytes as Uint8Array<ArrayBuffer>], f.name, {
        type: f.type ?? "application/octet-stream",
      }),
    );
  }
  return fd;
}

/**
 * GIF LZW data (minimum code size 2) for `count` pixels of colour 0, as image sub-blocks.
 * A uniform run compresses about 1000:1, as far as LZW goes.
 */
function lzwUniform(count: number): number[] {
  const bytes: number[] = [];
  let acc = 0;
  let bits = 0;
  let width = 3;
  let next = 6;
  const emit = (code: number) => {
    acc |= code << bits;
    bits += width;
    while (bits >= 8) {
      bytes.push(acc & 0xff);
      acc >>>= 8;
      bits -= 8;
    }
  };
  // Codes after a clear: 6 is a run of 2 zeros, 7 a run of 3, and so on.
  const runCode = (len: number) => (len === 1 ? 0 : 4 + len);
  emit(4);
  let left = count;
  let run = 1;
  while (left > 0) {
    const len = Math.min(run, left);
    emit(runCode(len));
    left -= len;
    if (next < 4096) {
      // The decoder adds the previous string plus a zero; the encoder keeps step with it.
      next++;
      if (next === 1 << width && width < 12) width++;
      run++;
    } else {
      emit(4);
      width = 3;
      next = 6;
      run = 1;
    }
  }
  emit(5);
  if (bits > 0) bytes.push(acc & 0xff);
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i += 255) {
    const block = bytes.slice(i, i + 255);
    out.push(block.length, ...block);
  }
  out.push(0);
  return out;
}

/**
 * A small GIF that decodes huge: `frames` full frames of `width`×`height` in one colour
 * (about a thousandth of a byte per pixel), so libvips decodes frames × width × height
 * pixels from a file of about a megabyte: a decompression bomb by frames.
 */
export function makeFrameBombGif(
  width: number,
  height: number,
  frames: number,
): Uint8Array {
  const out: number[] = [];
  const u16 = (n: number) => out.push(n & 0xff, n >> 8);
  out.push(...new TextEncoder().encode("GIF89a"));
  u16(width);
  u16(height);
  out.push(0x80, 0, 0); // global colour table of 2 entries
  out.push(0, 0, 0, 255, 255, 255);
  // NETSCAPE2.0 loop extension: an animation.
  out.push(0x21, 0xff, 0x0b, ...new TextEncoder().encode("NETSCAPE2.0"));
  out.push(3, 1, 0, 0, 0);
  const data = lzwUniform(width * height);
  for (let i = 0; i < frames; i++) {
    out.push(0x21, 0xf9, 4, 0, 10, 0, 0, 0); // graphic control: 0.1 s
    out.push(0x2c);
    u16(0);
    u16(0);
    u16(width);
    u16(height);
    out.push(0, 2); // no local table; LZW minimum code size 2
    for (const b of data) out.push(b);
  }
  out.push(0x3b);
  return new Uint8Array(out);
}

/** The byte arrays one after another, in one new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/**
 * A property over bent copies of `seeds`, with a fixed seed: 1–4 bytes changed and maybe
 * the copy cut short. An edit lands at `place(at, length)`: by default anywhere, or within
 * the first `head` bytes (the headers) half the time. `attempt` answers whether the copy
 * was taken (true), refused as the code means to refuse it (false), or neither counts
 * (undefined), and throws on anything else; taken and refused must each happen over 20
 * times, so the property is not vacuous.
 */
export async function assertBentCopies(
  seeds: Uint8Array[],
  attempt: (bytes: Uint8Array) => Promise<boolean | undefined>,
  opts: {
    runs: number;
    head?: number;
    place?: (at: number, length: number) => number;
  },
): Promise<void> {
  const place = opts.place ?? ((at, length) => at % length);
  let taken = 0, refused = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.nat(seeds.length - 1),
      fc.array(
        fc.tuple(
          opts.head ? fc.oneof(fc.nat(opts.head), fc.nat()) : fc.nat(),
          fc.nat(255),
        ),
        { minLength: 1, maxLength: 4 },
      ),
      fc.option(fc.nat(), { nil: undefined }),
      async (which, edits, cut) => {
        const b = seeds[which].slice();
        for (const [at, v] of edits) b[place(at, b.length)] = v;
        const got = await attempt(
          cut === undefined ? b : b.subarray(0, cut % b.length),
        );
        if (got === true) taken++;
        else if (got === false) refused++;
      },
    ),
    { numRuns: opts.runs, seed: 0x5eed },
  );
  assert.ok(taken > 20 && refused > 20, `${taken} taken / ${refused} refused`);
}

/** A 24-bit BMP whose pixel (x, y) (top-left origin) is `px(x, y)`. */
export function makeBmp24(
  width: number,
  height: number,
  px: (x: number, y: number) => [number, number, number],
  topDown = false,
): Uint8Array {
  const rowBytes = Math.ceil((width * 3) / 4) * 4;
  const out = new Uint8Array(54 + rowBytes * height);
  const v = new DataView(out.buffer);
  out.set([0x42, 0x4d]);
  v.setUint32(2, out.length, true);
  v.setUint32(10, 54, true);
  v.setUint32(14, 40, true);
  v.setInt32(18, width, true);
  v.setInt32(22, topDown ? -height : height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, 24, true);
  for (let r = 0; r < height; r++) {
    const y = topDown ? r : height - 1 - r;
    for (let x = 0; x < width; x++) {
      const [red, green, blue] = px(x, y);
      out.set([blue, green, red], 54 + r * rowBytes + x * 3);
    }
  }
  return out;
}
