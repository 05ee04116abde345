import { ApiError } from "../schemas/errors.ts";
import { ScratchBudget } from "../services/images/formats/scratch_budget.ts";
import assert from "node:assert/strict";
import sharp from "sharp";
import {
  fetchBytes,
  scratchFiles,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { assertBentCopies, formWith, makeBmp24 } from "./fixtures.ts";
import {
  BMP_HEAD_BYTES,
  BmpTimeout,
  bmpToTiff,
  MalformedBmp,
  parseBmp,
} from "../services/images/formats/bmp.ts";

/**
 * Fixtures in tests/images/bmp: ImageMagick 6.9 wrote most of them and decoded each to the
 * PNG beside it (an independent decoder); make_bmp.py wrote the kinds ImageMagick does not
 * (top-down, 5-5-5, BGRX, RLE4 with jumps). See tests/images/bmp/README.md.
 */
const DATA = new URL("./images/bmp/", import.meta.url);
const read = (name: string) => Deno.readFile(new URL(name, DATA));

/** RGBA pixels and size of an image's bytes. */
async function rgba(bytes: Uint8Array) {
  const { data, info } = await sharp(bytes).ensureAlpha().raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height };
}

/** Uploads a BMP; returns the record and the original's and thumbnail's bytes. */
async function uploadBmp(env: TestEnv, key: string, bytes: Uint8Array) {
  const r = await upload(env, key, formWith([{ name: "x.bmp", bytes }]));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const d = r.body.data;
  const original = await fetchBytes(env, new URL(d.url).pathname);
  const thumb = await fetchBytes(env, new URL(d.thumb.url).pathname);
  assert.equal(original.res.headers.get("content-type"), "image/bmp");
  assert.equal(thumb.res.status, 200);
  return { d, original: original.bytes, thumb: thumb.bytes };
}

/** Channel values at (x, y) of RGBA pixels `width` wide. */
function at(img: { data: Uint8Array; width: number }, x: number, y: number) {
  const i = (y * img.width + x) * 4;
  return [...img.data.subarray(i, i + 4)];
}

test("BMPs of every common kind are stored as uploaded, and their thumbnails have the pixels ImageMagick decodes", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const kinds = [
      "rgb24", // BITMAPINFOHEADER, bottom-up
      "td24", // top-down
      "core24", // OS/2 1.x BITMAPCOREHEADER
      "core4", // a core header's 3-byte palette
      "pal8",
      "pal4",
      "bw1",
      "rle8",
      "rgb555", // 16-bit without masks
      "rgb565", // V5 header, bit fields
      "argb32", // V5 header, bit fields with an alpha mask
    ];
    for (const kind of kinds) {
      const bmp = await read(`${kind}.bmp`);
      const { d, original, thumb } = await uploadBmp(env, key, bmp);
      const want = await rgba(await read(`${kind}.png`));
      assert.equal(d.image.mime, "image/bmp", kind);
      assert.equal(d.image.extension, "bmp", kind);
      assert.deepEqual([d.width, d.height], [want.width, want.height], kind);
      assert.deepEqual(original, bmp, kind);
      const got = await rgba(thumb);
      assert.deepEqual([got.width, got.height], [want.width, want.height]);
      if (kind.startsWith("rgb5")) {
        // 5- and 6-bit channels: ImageMagick widens them by repeating their high bits,
        // browsers (Chromium's table) and this decoder by rounding v × 255 / max; the
        // two differ by at most 1.
        assert.ok(got.data.every((v, i) => Math.abs(v - want.data[i]) <= 1));
        assert.ok(got.data.some((v, i) => v !== want.data[i]));
      } else assert.deepEqual(got.data, want.data, kind);
    }
    // Alpha survives where the BMP has it, and only there.
    const argb = await rgba(
      (await uploadBmp(env, key, await read("argb32.bmp"))).thumb,
    );
    assert.ok(argb.data.some((v, i) => i % 4 === 3 && v < 255));
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});

test("a 32-bit BMP without masks ignores its fourth byte, as the format defines it", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    // bgrx32 holds td24's pixels with 0x55 in every unused byte.
    const got = await rgba(
      (await uploadBmp(env, key, await read("bgrx32.bmp"))).thumb,
    );
    const want = await rgba(await read("td24.png"));
    assert.deepEqual(got.data, want.data);
  } finally {
    await env.close();
  }
});

/** A bottom-up 32-bit V4 BMP with bit-field masks, alpha in the top byte: px(x, y) RGBA. */
function makeBmpArgb(
  width: number,
  height: number,
  px: (x: number, y: number) => [number, number, number, number],
): Uint8Array {
  const data = 14 + 108, size = data + width * height * 4;
  const b = new Uint8Array(size);
  const v = new DataView(b.buffer);
  b.set([0x42, 0x4d]);
  v.setUint32(2, size, true);
  v.setUint32(10, data, true);
  v.setUint32(14, 108, true); // BITMAPV4HEADER
  v.setInt32(18, width, true);
  v.setInt32(22, height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, 32, true);
  v.setUint32(30, 3, true); // BI_BITFIELDS
  v.setUint32(34, width * height * 4, true);
  [0x00ff0000, 0x0000ff00, 0x000000ff, 0xff000000].forEach((m, i) =>
    v.setUint32(54 + i * 4, m, true)
  );
  v.setUint32(70, 0x73524742, true); // "sRGB"
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, bl, a] = px(x, y);
      b.set([bl, g, r, a], data + ((height - 1 - y) * width + x) * 4);
    }
  }
  return b;
}

test("a 32-bit bit-field BMP whose alpha is 0 in every pixel is shown opaque, as browsers show it; one with any alpha keeps it", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const colours: [number, number, number][][] = [
      [[255, 0, 0], [0, 255, 0], [0, 0, 255]],
      [[255, 255, 255], [10, 20, 30], [0, 0, 0]],
    ];
    // What Windows writes for an opaque image: the alpha byte left 0 everywhere.
    const zero = makeBmpArgb(3, 2, (x, y) => [...colours[y][x], 0]);
    const img = await rgba((await uploadBmp(env, key, zero)).thumb);
    colours.forEach((row, y) =>
      row.forEach((c, x) => assert.deepEqual(at(img, x, y), [...c, 255]))
    );
    // One pixel with alpha: then alpha means what it says, 0 included.
    const some = makeBmpArgb(
      3,
      2,
      (x, y) => [...colours[y][x], x === 1 && y === 1 ? 128 : 0],
    );
    const img2 = await rgba((await uploadBmp(env, key, some)).thumb);
    assert.equal(at(img2, 1, 1)[3], 128);
    assert.equal(at(img2, 0, 0)[3], 0);
    // Wider than a window (rows of one strip each, written in pieces): made opaque too.
    const wide = makeBmpArgb(20000, 2, (x) => [x % 256, 40, 90, 0]);
    const img3 = await rgba((await uploadBmp(env, key, wide)).thumb);
    assert.equal(img3.width, 320);
    assert.ok(
      img3.data.every((b, i) => i % 4 !== 3 || b === 255),
      "every pixel opaque",
    );
    assert.deepEqual(at(img3, 100, 0).slice(1), [40, 90, 255]);
  } finally {
    await env.close();
  }
});

test("an RLE4 BMP decodes its runs, literal runs, row ends and jumps, and the pixels it skips are transparent", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const img = await rgba(
      (await uploadBmp(env, key, await read("rle4.bmp"))).thumb,
    );
    assert.deepEqual([img.width, img.height], [9, 4]);
    const K = [0, 0, 0, 255], R = [255, 0, 0, 255], G = [0, 255, 0, 255];
    const B = [0, 0, 255, 255], W = [255, 255, 255, 255], _ = [0, 0, 0, 0];
    const rows = [
      [_, _, _, G, K, G, _, _, _], // after a jump right 3 and up 1, then end of bitmap
      [_, _, _, _, _, _, _, _, _], // jumped over
      [B, W, R, G, B, W, W, _, _], // a literal run, a run, then end of row
      [R, G, R, G, R, G, R, G, R], // the bottom row, stored first
    ];
    rows.forEach((row, y) =>
      row.forEach((want, x) =>
        assert.deepEqual(at(img, x, y), want, `${x},${y}`)
      )
    );
  } finally {
    await env.close();
  }
});

test("large BMPs, bottom-up and top-down, over 1 MB and with rows wider than a window, keep their orientation and colours in every variant", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    // Top half red, bottom half blue, a green band on the right: 900 px rows fill a
    // window with 24 rows, so 700 rows are 30 strips and a partial one (bottom-up, the
    // partial strip is written first).
    const bands = (w: number, h: number) => (x: number, y: number) =>
      (x >= w - w / 8
        ? [0, 200, 0]
        : y < h / 2
        ? [220, 0, 0]
        : [0, 0, 220]) as [number, number, number];
    for (const topDown of [false, true]) {
      const bmp = makeBmp24(900, 700, bands(900, 700), topDown);
      assert.ok(bmp.length > 1024 * 1024); // decoded from its file, not memory
      const { d } = await uploadBmp(env, key, bmp);
      assert.deepEqual([d.width, d.height], [900, 700]);
      const thumb = await rgba(
        (await fetchBytes(env, new URL(d.thumb.url).pathname)).bytes,
      );
      assert.deepEqual([thumb.width, thumb.height], [320, 249]);
      assert.deepEqual(at(thumb, 100, 40), [220, 0, 0, 255]);
      assert.deepEqual(at(thumb, 100, 200), [0, 0, 220, 255]);
      assert.deepEqual(at(thumb, 315, 40), [0, 200, 0, 255]);
    }
    // 30000 px rows (90 KB) are strips of one row, written in pieces.
    const wide = makeBmp24(
      30000,
      6,
      (x) => x < 26000 ? [220, 0, 0] : [0, 200, 0],
    );
    const { d } = await uploadBmp(env, key, wide);
    assert.ok(d.medium);
    const medium = await rgba(
      (await fetchBytes(env, new URL(d.medium.url).pathname)).bytes,
    );
    assert.equal(medium.width, 1024);
    assert.deepEqual(at(medium, 500, 0), [220, 0, 0, 255]);
    assert.deepEqual(at(medium, 1020, 0), [0, 200, 0, 255]);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});

test("a damaged or unsupported BMP is refused with 141 naming the problem, and one over MAX_IMAGE_PIXELS with 142 before its pixels are read", async () => {
  const env = await testEnv({ env: { MAX_IMAGE_PIXELS: "1000000" } });
  try {
    const { key } = await userWithKey(env);
    const good = await read("rgb24.bmp");
    const withHeader = (patch: (v: DataView) => void) => {
      const b = good.slice();
      patch(new DataView(b.buffer));
      return b;
    };
    const cases: [string, Uint8Array, RegExp][] = [
      ["truncated", good.subarray(0, good.length - 10), /pixel data is/],
      ["jpeg inside", withHeader((v) => v.setUint32(30, 4, true)), /compr/],
      ["zero width", withHeader((v) => v.setInt32(18, 0, true)), /no pixels/],
      ["12 bpp", withHeader((v) => v.setUint16(28, 12, true)), /12 bits/],
      ["header size", withHeader((v) => v.setUint32(14, 99, true)), /header/],
    ];
    for (const [what, bytes, message] of cases) {
      const r = await upload(env, key, formWith([{ name: "b.bmp", bytes }]));
      assert.deepEqual([r.status, r.body.error.code], [415, 141], what);
      assert.match(r.body.error.message, /damaged/, what);
      assert.match(r.body.error.message, message, what);
    }
    // A 10-byte RLE image claiming 20000 × 20000 pixels: refused from its header.
    const bomb = withHeader((v) => {
      v.setInt32(18, 20000, true);
      v.setInt32(22, 20000, true);
      v.setUint16(28, 8, true);
      v.setUint32(30, 1, true);
    });
    const r = await upload(
      env,
      key,
      formWith([{ name: "b.bmp", bytes: bomb }]),
    );
    assert.deepEqual([r.status, r.body.error.code], [413, 142]);
    assert.match(r.body.error.details[0].message, /20000×20000/);
    assert.deepEqual(await storedKeys(env), []);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});

test("a BMP whose rewrite needs more scratch disk than BMP_SCRATCH_MB is 142 before any pixel is read, and nothing is left behind", async () => {
  const env = await testEnv({ env: { BMP_SCRATCH_MB: "1" } });
  try {
    const { key } = await userWithKey(env);
    // 800 × 500 with alpha: 1.6 MB of pixels to write, over the 1 MB allowed.
    const big = makeBmpArgb(800, 500, (x, y) => [x % 256, y % 256, 90, 255]);
    const r = await upload(env, key, formWith([{ name: "b.bmp", bytes: big }]));
    assert.deepEqual([r.status, r.body.error.code], [413, 142]);
    assert.match(r.body.error.details[0].message, /BMP_SCRATCH_MB/);
    assert.deepEqual(await storedKeys(env), []);
    assert.deepEqual(scratchFiles(env), []);
    // One that fits is stored as before.
    const small = makeBmpArgb(300, 200, (x, y) => [x % 256, y % 256, 90, 255]);
    const ok = await upload(
      env,
      key,
      formWith([{ name: "s.bmp", bytes: small }]),
    );
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  } finally {
    await env.close();
  }
});

test("the scratch budget: one file over its share is 142, the process over its total is 250 with Retry-After until space is given back", () => {
  const MiB = 1024 * 1024;
  const budget = new ScratchBudget(4, 6);
  assert.throws(
    () => budget.reserve(5 * MiB),
    (e) => e instanceof ApiError && e.code === 142,
  );
  const a = budget.reserve(4 * MiB);
  assert.throws(
    () => budget.reserve(3 * MiB),
    (e) =>
      e instanceof ApiError && e.code === 250 &&
      e.headers?.["Retry-After"] === "5",
  );
  const b = budget.reserve(2 * MiB);
  assert.equal(budget.inUse, 6 * MiB);
  budget.release(a);
  budget.release(b);
  assert.equal(budget.inUse, 0);
  budget.release(budget.reserve(3 * MiB));
  assert.equal(budget.inUse, 0);
});

test("parseBmp reads what each header holds and refuses what cannot be rewritten", async () => {
  const info = (b: Uint8Array) =>
    parseBmp(b.subarray(0, BMP_HEAD_BYTES), b.length);
  const core = info(await read("core4.bmp"));
  assert.deepEqual(
    [core.width, core.height, core.bitCount, core.encoding, core.channels],
    [7, 5, 4, "rgb", 3],
  );
  const td = info(await read("td24.bmp"));
  assert.deepEqual([td.topDown, td.height], [true, 5]);
  const argb = info(await read("argb32.bmp"));
  assert.deepEqual([argb.encoding, argb.channels], ["bitfields", 4]);
  assert.equal(argb.masks[3] >>> 0, 0xff000000);
  const rle = info(await read("rle4.bmp"));
  assert.deepEqual([rle.encoding, rle.channels], ["rle4", 4]);
  assert.deepEqual([...rle.palette.subarray(0, 6)], [0, 0, 0, 255, 0, 0]);
  // RLE has no top-down form.
  const rle8 = (await read("rle8.bmp")).slice();
  new DataView(rle8.buffer).setInt32(22, -30, true);
  assert.throws(() => info(rle8), MalformedBmp);
  assert.throws(() => parseBmp(new Uint8Array([0x42, 0x4d]), 2), MalformedBmp);
});

test("bmpToTiff stops with BmpTimeout once its deadline has passed, and in time writes a TIFF libvips reads back pixel for pixel", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bmp = makeBmp24(300, 300, () => [1, 2, 3]);
    const head = parseBmp(bmp.subarray(0, BMP_HEAD_BYTES), bmp.length);
    await assert.rejects(
      bmpToTiff(bmp, head, `${dir}/late.tif`, Date.now() - 1),
      BmpTimeout,
    );
    // In time, the same call writes a TIFF libvips reads back pixel for pixel.
    await bmpToTiff(bmp, head, `${dir}/ok.tif`);
    const img = await rgba(await Deno.readFile(`${dir}/ok.tif`));
    assert.deepEqual([img.width, img.height], [300, 300]);
    assert.ok(img.data.every((v, i) => v === [1, 2, 3, 255][i % 4]));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("bent BMPs (random bytes changed, or cut short) either rewrite to a TIFF of the header's size or fail as MalformedBmp, never otherwise", async () => {
  const dir = await Deno.makeTempDir();
  const names = ["rgb24", "td24", "core4", "pal8", "bw1", "rle8", "rle4"]
    .map((n) => `${n}.bmp`).concat("argb32.bmp", "rgb565.bmp", "bgrx32.bmp");
  const files = await Promise.all(names.map(read));
  let n = 0;
  try {
    await assertBentCopies(files, async (bytes) => {
      const out = `${dir}/${n++}.tif`;
      try {
        const info = parseBmp(bytes.subarray(0, BMP_HEAD_BYTES), bytes.length);
        if (info.width * info.height > 4_000_000) return; // the pipeline's 142
        await bmpToTiff(bytes, info, out);
        const img = await sharp(out).metadata();
        assert.deepEqual([img.width, img.height], [info.width, info.height]);
        return true;
      } catch (e) {
        if (!(e instanceof MalformedBmp)) throw e;
        return false;
      }
    }, { runs: 400, head: 150 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
