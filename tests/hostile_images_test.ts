import assert from "node:assert/strict";
import sharp from "sharp";
import {
  fetchBytes,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import {
  concatBytes,
  formWith,
  makeAnimatedGif,
  makeFrameBombGif,
  makeImage,
  makeNoiseJpeg,
} from "./fixtures.ts";

const enc = new TextEncoder();
const cat = concatBytes;

/** Offsets of each PNG chunk: [start, type, end]. */
function pngChunks(png: Uint8Array): [number, string, number][] {
  const out: [number, string, number][] = [];
  const dv = new DataView(png.buffer, png.byteOffset, png.byteLength);
  for (let p = 8; p + 8 <= png.length;) {
    const len = dv.getUint32(p);
    const type = String.fromCharCode(...png.subarray(p + 4, p + 8));
    out.push([p, type, p + 12 + len]);
    p += 12 + len;
  }
  return out;
}

/** A PNG whose IHDR claims `w`×`h`, with one tiny IDAT: a bomb by declared pixels. */
function pngClaiming(base: Uint8Array, w: number, h: number): Uint8Array {
  const out = base.slice();
  const dv = new DataView(out.buffer);
  dv.setUint32(16, w);
  dv.setUint32(20, h);
  return out; // (the IHDR CRC is now wrong too, as an attacker would not bother)
}

interface Case {
  name: string;
  bytes: Uint8Array;
  /** The answers this case may get; every case also must not be a 5xx. */
  expect: number[];
}

/** The corpus: truncations, wrong tails, bombs (pixels, frames, ratio), polyglots, SVG. */
async function corpus(): Promise<Case[]> {
  const png = await makeImage("png", { width: 120, height: 90 });
  const jpg = await makeNoiseJpeg(200, 150);
  const gif = await makeAnimatedGif(3);
  const webp = await makeImage("webp", { width: 120, height: 90 });
  const avif = await makeImage("avif", { width: 64, height: 64 });
  const tiff = await makeImage("tiff", { width: 64, height: 64 });
  const chunks = pngChunks(png);
  const iend = chunks.find((c) => c[1] === "IEND")!;
  const idat = chunks.find((c) => c[1] === "IDAT")!;
  const renamed = png.slice();
  renamed.set(enc.encode("IENX"), iend[0] + 4);
  const badCrc = png.slice();
  badCrc[idat[2] - 1] ^= 0xff;
  // A TIFF whose directory chain loops back to its first directory.
  const loopedTiff = tiff.slice();
  {
    const v = new DataView(loopedTiff.buffer);
    const little = v.getUint16(0) === 0x4949;
    const ifd = v.getUint32(4, little);
    v.setUint32(ifd + 2 + v.getUint16(ifd, little) * 12, ifd, little);
  }
  const big = await sharp({
    create: { width: 5000, height: 5000, channels: 3, background: "#fff" },
  }).png({ compressionLevel: 9 }).toBuffer();
  const cases: Case[] = [
    {
      name: "PNG without IEND",
      bytes: png.subarray(0, iend[0]),
      expect: [141],
    },
    {
      name: "PNG, IEND cut short",
      bytes: png.subarray(0, iend[2] - 5),
      expect: [141],
    },
    { name: "PNG, IEND renamed", bytes: renamed, expect: [141] },
    {
      name: "PNG, IEND replaced by junk",
      bytes: cat(
        png.subarray(0, iend[0]),
        crypto.getRandomValues(new Uint8Array(12)),
      ),
      expect: [141],
    },
    {
      name: "PNG, half an IEND and junk",
      bytes: cat(png.subarray(0, iend[0] + 6), enc.encode("<html>")),
      expect: [141],
    },
    {
      name: "PNG, IDAT cut in half",
      bytes: png.subarray(0, (idat[0] + idat[2]) >> 1),
      expect: [141],
    },
    { name: "PNG, IDAT with a bad CRC", bytes: badCrc, expect: [200, 141] },
    { name: "PNG signature only", bytes: png.subarray(0, 8), expect: [141] },
    { name: "PNG, first 30 bytes", bytes: png.subarray(0, 30), expect: [141] },
    {
      name: "PNG claiming 100000×100000",
      bytes: pngClaiming(png, 100_000, 100_000),
      expect: [142, 141],
    },
    {
      name: "PNG claiming 2^31-1 wide",
      bytes: pngClaiming(png, 0x7fffffff, 1),
      expect: [142, 141],
    },
    {
      name: "PNG 5000×5000 of one colour (ratio bomb)",
      bytes: new Uint8Array(big),
      expect: [142],
    },
    {
      name: "PNG + HTML polyglot",
      bytes: cat(png, enc.encode("<script>alert(1)</script>")),
      expect: [200],
    },
    {
      name: "JPEG cut at half",
      bytes: jpg.subarray(0, jpg.length >> 1),
      expect: [141],
    },
    {
      name: "JPEG without EOI",
      bytes: jpg.subarray(0, jpg.length - 2),
      expect: [200, 141],
    },
    { name: "JPEG SOI only", bytes: jpg.subarray(0, 2), expect: [141] },
    {
      name: "JPEG SOI + junk",
      bytes: cat(jpg.subarray(0, 2), enc.encode("not a marker at all")),
      expect: [141],
    },
    {
      name: "JPEG, APP1 longer than the file",
      bytes: cat(
        jpg.subarray(0, 2),
        new Uint8Array([0xff, 0xe1, 0xff, 0xf0]),
        enc.encode("Exif\0\0"),
      ),
      expect: [141],
    },
    {
      name: "JPEG + ZIP polyglot",
      bytes: cat(jpg, enc.encode("PK\x03\x04 zip payload")),
      expect: [200],
    },
    {
      name: "GIF cut at half",
      bytes: gif.subarray(0, gif.length >> 1),
      expect: [200, 141],
    },
    {
      name: "GIF without trailer",
      bytes: gif.subarray(0, gif.length - 1),
      expect: [200, 141],
    },
    {
      name: "GIF bomb: 90 frames of 4000×4000",
      bytes: makeFrameBombGif(4000, 4000, 90),
      expect: [142],
    },
    { name: "GIF header only", bytes: gif.subarray(0, 13), expect: [141] },
    {
      name: "GIF + HTML after the trailer",
      bytes: cat(gif, enc.encode("<script>alert(1)</script>")),
      expect: [200],
    },
    {
      name: "WebP cut at half",
      bytes: webp.subarray(0, webp.length >> 1),
      expect: [141],
    },
    {
      name: "WebP RIFF size lies",
      bytes: (() => {
        const w = webp.slice();
        new DataView(w.buffer).setUint32(4, 0x7ffffff0, true);
        return w;
      })(),
      expect: [200, 141],
    },
    {
      name: "AVIF cut at half",
      bytes: avif.subarray(0, avif.length >> 1),
      expect: [141],
    },
    {
      name: "TIFF cut at half",
      bytes: tiff.subarray(0, tiff.length >> 1),
      expect: [141],
    },
    // Was a 500: the whole-file re-encode met libvips' "IFD looping".
    {
      name: "TIFF whose directory chain loops",
      bytes: loopedTiff,
      expect: [141],
    },
    {
      name: "SVG",
      bytes: enc.encode(
        `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`,
      ),
      expect: [141],
    },
    {
      name: "HTML named .png",
      bytes: enc.encode("<!doctype html><script>alert(1)</script>"),
      expect: [141],
    },
    { name: "empty file", bytes: new Uint8Array(0), expect: [141] },
    { name: "one byte", bytes: new Uint8Array([0x89]), expect: [141] },
    {
      name: "random 4 KB",
      bytes: crypto.getRandomValues(new Uint8Array(4096)),
      expect: [141],
    },
  ];
  return cases;
}

const storedCount = async (env: TestEnv) => (await storedKeys(env)).length;

test("a corpus of broken and hostile images gets only 200/141/142 in the envelope: no 5xx, nothing stored for a refusal, stored ones decode and carry no trailing payload", async () => {
  const env = await testEnv({ env: { MAX_IMAGE_PIXELS: "20000000" } });
  try {
    const { key } = await userWithKey(env);
    const tally: Record<string, number> = {};
    for (const c of await corpus()) {
      const before = await storedCount(env);
      const r = await upload(
        env,
        key,
        formWith([{ name: "x.png", bytes: c.bytes }]),
      );
      tally[r.status] = (tally[r.status] ?? 0) + 1;
      const code = r.status === 200 ? 200 : r.body.error?.code;
      assert.ok(
        c.expect.includes(code),
        `${c.name}: ${r.status} ${JSON.stringify(r.body)}`,
      );
      assert.equal(typeof r.body.success, "boolean", c.name);
      if (r.status !== 200) {
        assert.equal(
          await storedCount(env),
          before,
          `${c.name}: nothing stored`,
        );
        continue;
      }
      const served = await fetchBytes(env, new URL(r.body.data.url).pathname);
      assert.equal(served.res.status, 200, c.name);
      assert.equal(served.res.headers.get("x-content-type-options"), "nosniff");
      assert.match(served.res.headers.get("content-type")!, /^image\//, c.name);
      const meta = await sharp(served.bytes).metadata();
      assert.ok(
        meta.width && meta.height,
        `${c.name}: the stored file decodes`,
      );
      if (c.name.startsWith("PNG") || c.name.startsWith("GIF")) {
        const text = new TextDecoder("latin1").decode(served.bytes);
        assert.doesNotMatch(text, /<script>/, `${c.name}: the tail is gone`);
      }
    }
    assert.equal(
      Object.keys(tally).filter((s) => Number(s) >= 500).length,
      0,
      JSON.stringify(tally),
    );
  } finally {
    await env.close();
  }
});
