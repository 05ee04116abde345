import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import {
  fetchBytes,
  test,
  type TestEnv,
  testEnv,
  upload,
  uploadDeclared,
  userWithKey,
} from "./helpers.ts";
import {
  assertBentCopies,
  concatBytes,
  formWith,
  makeAnimatedGif,
} from "./fixtures.ts";
import {
  rewriteTiff,
  tiffHasOtherTags,
} from "../services/images/formats/tiff_tags.ts";
import { readBytes } from "../services/images/formats/positioned_read.ts";
import { rewriteAvif } from "../services/images/formats/avif_strip.ts";
import {
  MalformedImage,
  stripWebp,
  webpIsLossless,
} from "../services/images/formats/metadata_strip.ts";

/**
 * Personal data a camera or an editor leaves in a file, each a string the stored bytes are
 * searched for: the test looks at bytes, not at what one metadata parser happens to read.
 */
const SECRETS = {
  make: "TestCamSecretMake",
  artist: "Jane Q. Author",
  gps: "GPSSecretArea",
  xmp: "xmp-secret-creator",
  iptc: "iptc-secret-byline",
  comment: "jpeg-comment-secret",
  text: "png-text-author-secret",
  itxt: "png-itxt-secret",
  ztxt: "png-ztxt-secret",
};

const latin1 = (b: Uint8Array) => new TextDecoder("latin1").decode(b);

/** A JPEG segment: marker and length-prefixed payload. */
function segment(marker: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + payload.length);
  out.set([
    0xff,
    marker,
    (payload.length + 2) >> 8,
    (payload.length + 2) & 255,
  ]);
  out.set(payload, 4);
  return out;
}

const cat = concatBytes;
const ascii = (s: string) => new TextEncoder().encode(s);

/**
 * A JPEG with EXIF (make, artist, GPS area), XMP, IPTC (APP13) and a comment (COM), the
 * last two spliced in by hand after the start-of-image marker.
 */
async function jpegWithEverything(): Promise<Uint8Array> {
  const base = new Uint8Array(
    await sharp({
      create: { width: 64, height: 48, channels: 3, background: "#336699" },
    }).jpeg({ quality: 90 }).withExif({
      IFD0: { Make: SECRETS.make, Artist: SECRETS.artist },
      IFD3: {
        GPSLatitudeRef: "N",
        GPSLatitude: "51/1 30/1 0/1",
        GPSMapDatum: SECRETS.gps,
      },
    }).withXmp(
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:creator="${SECRETS.xmp}"/></rdf:RDF></x:xmpmeta>`,
    ).toBuffer(),
  );
  const iptc = segment(
    0xed,
    cat(
      ascii("Photoshop 3.0\0"),
      ascii(`8BIM\x04\x04\0\0\0\0\0\x20\x1c\x02\x50\0\x12${SECRETS.iptc}`),
    ),
  );
  const com = segment(0xfe, ascii(SECRETS.comment));
  return cat(base.subarray(0, 2), iptc, com, base.subarray(2));
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** A PNG chunk with its CRC. */
function chunk(type: string, data: Uint8Array): Uint8Array {
  const body = cat(ascii(type), data);
  let crc = 0xffffffff;
  for (const b of body) crc = CRC_TABLE[(crc ^ b) & 255] ^ (crc >>> 8);
  crc = (crc ^ 0xffffffff) >>> 0;
  const out = new Uint8Array(8 + body.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, data.length);
  out.set(body, 4);
  dv.setUint32(4 + body.length, crc);
  return out;
}

/** A PNG with eXIf, tEXt, iTXt, zTXt and tIME chunks after its IHDR. */
async function pngWithEverything(): Promise<
  { png: Uint8Array; plain: Uint8Array }
> {
  const plain = new Uint8Array(
    await sharp({
      create: { width: 40, height: 30, channels: 3, background: "#22aa44" },
    }).png().toBuffer(),
  );
  const ihdrEnd = 8 + 25;
  const exif = cat(ascii("MM\0\x2a\0\0\0\x08"), ascii(SECRETS.make));
  const extra = cat(
    chunk("eXIf", exif),
    chunk("tEXt", ascii(`Author\0${SECRETS.text}`)),
    chunk("iTXt", ascii(`Comment\0\0\0\0\0${SECRETS.itxt}`)),
    chunk(
      "zTXt",
      cat(ascii("Description\0\0"), deflateSync(ascii(SECRETS.ztxt))),
    ),
    chunk("tIME", new Uint8Array([7, 234, 11, 23, 12, 0, 0])),
  );
  return {
    png: cat(plain.subarray(0, ihdrEnd), extra, plain.subarray(ihdrEnd)),
    plain,
  };
}

/** PNG chunk types in order. */
function chunkTypes(png: Uint8Array): string[] {
  const dv = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const out: string[] = [];
  for (let p = 8; p + 8 <= png.length; p += 12 + dv.getUint32(p)) {
    out.push(latin1(png.subarray(p + 4, p + 8)));
  }
  return out;
}

test("a JPEG's EXIF (camera, artist, GPS), XMP, IPTC and comment are gone from the stored bytes, not just unreadable to one parser", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const jpeg = await jpegWithEverything();
    const before = latin1(jpeg);
    for (
      const s of [
        SECRETS.make,
        SECRETS.artist,
        SECRETS.gps,
        SECRETS.xmp,
        SECRETS.iptc,
        SECRETS.comment,
      ]
    ) {
      assert.ok(before.includes(s), `the fixture carries ${s}`);
    }
    const r = await upload(
      env,
      key,
      formWith([{ name: "all.jpg", bytes: jpeg }]),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const url of [r.body.data.url, r.body.data.thumb.url]) {
      const { bytes } = await fetchBytes(env, new URL(url).pathname);
      const text = latin1(bytes);
      for (const [what, s] of Object.entries(SECRETS)) {
        assert.ok(
          !text.includes(s),
          `${url}: ${what} (${s}) is still in the bytes`,
        );
      }
      assert.ok(!text.includes("Photoshop 3.0"), "no APP13 left");
      assert.ok(!text.includes("http://ns.adobe.com/xap"), "no XMP left");
    }
  } finally {
    await env.close();
  }
});

test("a PNG's eXIf, tEXt, iTXt, zTXt and tIME chunks are dropped from the stored file and its pixels are kept exactly", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const { png, plain } = await pngWithEverything();
    assert.deepEqual(
      chunkTypes(png).filter((t) =>
        ["eXIf", "tEXt", "iTXt", "zTXt", "tIME"].includes(t)
      ),
      ["eXIf", "tEXt", "iTXt", "zTXt", "tIME"],
    );
    const r = await upload(
      env,
      key,
      formWith([{ name: "all.png", bytes: png }]),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const { bytes } = await fetchBytes(env, new URL(r.body.data.url).pathname);
    assert.deepEqual(chunkTypes(bytes), chunkTypes(plain));
    const text = latin1(bytes);
    for (const [what, s] of Object.entries(SECRETS)) {
      assert.ok(!text.includes(s), `${what} is still in the bytes`);
    }
    // Lossless: the stored file is the plain PNG, byte for byte.
    assert.deepEqual(bytes, plain);
  } finally {
    await env.close();
  }
});

/** Both files decode to exactly the same pixels (libvips, first page). */
async function assertSamePixels(a: Uint8Array, b: Uint8Array) {
  const [pa, pb] = await Promise.all(
    [a, b].map((x) => sharp(x).raw().toBuffer()),
  );
  assert.ok(pa.equals(pb), "the decoded pixels, exactly");
}

/** Uploads a file and returns its stored original, asserting none of SECRETS is in it. */
async function storedWithoutSecrets(
  env: TestEnv,
  key: string,
  name: string,
  bytes: Uint8Array,
): Promise<Uint8Array> {
  const r = await upload(env, key, formWith([{ name, bytes }]));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const { bytes: stored } = await fetchBytes(
    env,
    new URL(r.body.data.url).pathname,
  );
  const text = latin1(stored);
  for (const [what, s] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(s), `${name}: ${what} (${s}) is in the bytes`);
  }
  return stored;
}

/**
 * A TIFF written tag by tag: 64×48 RGB, 8 or 16 bits a channel, in either byte order,
 * `pages` directories (each its own pixels), with `extra` tags (ASCII) and, when `gps` is
 * given, a GPS directory holding it; `junk` goes between the pixels and the values, where
 * no tag points. Like libtiff, it puts each directory after its pixels.
 */
function makeTiff(opts: {
  bigEndian?: boolean;
  bits?: 8 | 16;
  pages?: number;
  extra?: [tag: number, value: string][];
  gps?: string;
  junk?: string;
}): { bytes: Uint8Array; pixels: Uint8Array[] } {
  const little = !opts.bigEndian, bits = opts.bits ?? 8;
  const w = 64, h = 48, bps = bits / 8;
  const blobs: Uint8Array[] = [];
  let end = 8;
  const place = (b: Uint8Array) => {
    const at = end + (end & 1);
    blobs.push(new Uint8Array(at - end), b);
    end = at + b.length;
    return at;
  };
  const short = (n: number) => {
    const b = new Uint8Array(2);
    new DataView(b.buffer).setUint16(0, n, little);
    return b;
  };
  const directory = (list: [number, number, number, number][]) => {
    list.sort((a, b) => a[0] - b[0]);
    const b = new Uint8Array(2 + list.length * 12 + 4);
    const v = new DataView(b.buffer);
    v.setUint16(0, list.length, little);
    list.forEach(([tag, type, count, value], i) => {
      v.setUint16(2 + i * 12, tag, little);
      v.setUint16(4 + i * 12, type, little);
      v.setUint32(6 + i * 12, count, little);
      if (type === 3 && count === 1) v.setUint16(10 + i * 12, value, little);
      else v.setUint32(10 + i * 12, value, little);
    });
    return b;
  };
  const all: Uint8Array[] = [];
  const links: number[] = [4];
  for (let page = 0; page < (opts.pages ?? 1); page++) {
    const pixels = new Uint8Array(w * h * 3 * bps);
    for (let i = 0; i < pixels.length; i++) {
      pixels[i] = (i * 7 + page * 91) % 251;
    }
    all.push(pixels);
    const px = pixels.slice();
    if (bits === 16 && !little) {
      for (let i = 0; i < px.length; i += 2) {
        [px[i], px[i + 1]] = [px[i + 1], px[i]];
      }
    }
    const pxAt = place(px);
    if (opts.junk) place(ascii(opts.junk));
    const bpsAt = place(cat(short(bits), short(bits), short(bits)));
    // [tag, type, count, value or offset]
    const entries: [number, number, number, number][] = [
      [256, 4, 1, w],
      [257, 4, 1, h],
      [258, 3, 3, bpsAt],
      [259, 3, 1, 1],
      [262, 3, 1, 2],
      [273, 4, 1, pxAt],
      [277, 3, 1, 3],
      [278, 4, 1, h],
      [279, 4, 1, px.length],
    ];
    for (const [tag, text] of opts.extra ?? []) {
      const b = ascii(text + "\0");
      entries.push([tag, 2, b.length, place(b)]);
    }
    if (opts.gps !== undefined) {
      const area = ascii(opts.gps);
      const gpsAt = place(directory([[28, 7, area.length, place(area)]]));
      entries.push([34853, 4, 1, gpsAt]);
    }
    const dir = directory(entries);
    const at = place(dir);
    links.push(at, at + dir.length - 4);
  }
  const head = new Uint8Array(8);
  head.set(little ? [0x49, 0x49] : [0x4d, 0x4d]);
  new DataView(head.buffer).setUint16(2, 42, little);
  const bytes = cat(head, ...blobs);
  // Each link (the header's, then each directory's next) points at the next directory.
  const v = new DataView(bytes.buffer);
  for (let i = 0; i + 1 < links.length; i += 2) {
    v.setUint32(links[i], links[i + 1], little);
  }
  return { bytes, pixels: all };
}

test("a TIFF's camera, artist, XMP and GPS tags are gone from the stored bytes, in either byte order, and its pixels are kept", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    for (const bigEndian of [false, true]) {
      const { bytes } = makeTiff({
        bigEndian,
        // libvips reports a TIFF's XMP and nothing else of these: the little-endian
        // file carries only tags it does not report.
        extra: [
          [271, SECRETS.make],
          [315, SECRETS.artist],
          ...(bigEndian
            ? [
              [700, `<x:xmpmeta>${SECRETS.xmp}</x:xmpmeta>`] as [
                number,
                string,
              ],
            ]
            : []),
        ],
        gps: SECRETS.gps,
      });
      for (const s of [SECRETS.make, SECRETS.artist, SECRETS.gps]) {
        assert.ok(latin1(bytes).includes(s), `the fixture carries ${s}`);
      }
      const stored = await storedWithoutSecrets(env, key, "t.tif", bytes);
      await assertSamePixels(bytes, stored);
    }
  } finally {
    await env.close();
  }
});

test("a TIFF with camera tags is rewritten losslessly: 16 bits a channel and every page kept, each page's pixels exact, and bytes no tag points at dropped", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    for (const bigEndian of [false, true]) {
      const { bytes } = makeTiff({
        bigEndian,
        bits: 16,
        pages: 2,
        extra: [
          [271, SECRETS.make],
          [306, "2026:11:24 10:00:00"],
          [315, SECRETS.artist],
        ],
        gps: SECRETS.gps,
        junk: SECRETS.comment,
      });
      const stored = await storedWithoutSecrets(env, key, "p.tif", bytes);
      assert.equal(await tiffHasOtherTags(readBytes(stored)), false);
      assert.ok(!latin1(stored).includes("2026:11:24"), "no date left");
      const meta = await sharp(stored).metadata();
      assert.deepEqual([meta.pages, meta.depth], [2, "ushort"]);
      for (const page of [0, 1]) {
        const [a, b] = await Promise.all(
          [bytes, stored].map((x) =>
            sharp(x, { page }).raw({ depth: "ushort" }).toBuffer()
          ),
        );
        assert.ok(a.equals(b), `page ${page}: the same 16-bit pixels`);
      }
    }
  } finally {
    await env.close();
  }
});

test("rewriteTiff leaves to a re-encode what it cannot copy losslessly: BigTIFF, JPEG-compressed pixels or a JPEG stream's offset, pixels outside the file, a tag given twice or of an unknown type, and strips pointed at over and over", async () => {
  const dir = await Deno.makeTempDir();
  let n = 0;
  const rewrite = (b: Uint8Array) =>
    rewriteTiff(readBytes(b), b.length, `${dir}/${n++}.tif`);
  try {
    const { bytes } = makeTiff({ extra: [[271, SECRETS.make]] });
    assert.equal(await rewrite(bytes), true);
    const v = () => new DataView(bytes.buffer);
    const ifd = v().getUint32(4, true);
    /** A copy with directory entry `tag`'s value (inline) set to `value`. */
    const withEntry = (tag: number, value: number) => {
      const b = bytes.slice();
      const d = new DataView(b.buffer);
      for (let i = 0; i < d.getUint16(ifd, true); i++) {
        const e = ifd + 2 + i * 12;
        if (d.getUint16(e, true) !== tag) continue;
        if (d.getUint16(e + 2, true) === 3) d.setUint16(e + 8, value, true);
        else d.setUint32(e + 8, value, true);
        return b;
      }
      throw new Error(`no tag ${tag}`);
    };
    /** A copy with entry `tag` renamed to `to` (and its type set to `type`). */
    const retagged = (tag: number, to: number, type?: number) => {
      const b = bytes.slice();
      const d = new DataView(b.buffer);
      for (let i = 0; i < d.getUint16(ifd, true); i++) {
        const e = ifd + 2 + i * 12;
        if (d.getUint16(e, true) !== tag) continue;
        d.setUint16(e, to, true);
        if (type !== undefined) d.setUint16(e + 2, type, true);
        return b;
      }
      throw new Error(`no tag ${tag}`);
    };
    const big = bytes.slice();
    new DataView(big.buffer).setUint16(2, 43, true);
    const cases = {
      big,
      jpeg: withEntry(259, 7),
      oldJpeg: withEntry(259, 6),
      outside: withEntry(273, bytes.length - 10),
      // An old-style JPEG stream's offset, which a copy would leave pointing anywhere.
      jpegStream: retagged(278, 513),
      // Two SamplesPerPixel: which one libtiff believes is not ours to guess.
      twice: retagged(278, 277),
      unknownType: retagged(278, 278, 14),
    };
    for (const [what, b] of Object.entries(cases)) {
      assert.equal(await rewrite(b), false, what);
    }
    // 4000 strips all naming the same 9216 bytes: 36 MB out of 10 KB is refused.
    const strips = 4000, len = 64 * 48 * 3;
    const repeat = cat(
      bytes,
      new Uint8Array(bytes.length & 1),
      new Uint8Array(strips * 8),
    );
    const at = bytes.length + (bytes.length & 1);
    const r = new DataView(repeat.buffer);
    for (let i = 0; i < strips; i++) {
      r.setUint32(at + i * 4, 8, true);
      r.setUint32(at + strips * 4 + i * 4, len, true);
    }
    for (let i = 0; i < r.getUint16(ifd, true); i++) {
      const e = ifd + 2 + i * 12, tag = r.getUint16(e, true);
      if (tag === 273 || tag === 279) {
        r.setUint32(e + 4, strips, true);
        r.setUint32(e + 8, tag === 273 ? at : at + strips * 4, true);
      }
    }
    assert.equal(await rewrite(repeat), false, "repeated strips");
    // Nothing was left behind by the refusals: only the first call wrote a file.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["0.tif"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("bent TIFFs (random bytes changed, or cut short) either rewrite to a TIFF with pixel tags only, no larger than twice the file, or are left to a re-encode, never otherwise", async () => {
  const dir = await Deno.makeTempDir();
  const seeds = [
    makeTiff({ pages: 2, extra: [[271, SECRETS.make]], gps: SECRETS.gps }),
    makeTiff({ bigEndian: true, bits: 16, extra: [[315, SECRETS.artist]] }),
  ].map((t) => t.bytes);
  let n = 0;
  try {
    await assertBentCopies(seeds, async (bytes) => {
      const out = `${dir}/${n++}.tif`;
      if (!(await rewriteTiff(readBytes(bytes), bytes.length, out))) {
        return false;
      }
      const copy = await Deno.readFile(out);
      assert.equal(await tiffHasOtherTags(readBytes(copy)), false);
      assert.ok(copy.length <= 2 * bytes.length + 4096);
      return true;
    }, {
      runs: 300,
      // Edits land on the directories (at the end) as often as anywhere.
      place: (at, length) =>
        at % 2 ? length - 1 - (at >> 1) % 400 : at % length,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("a TIFF with only pixel tags is stored byte for byte (16 bits a channel kept), and one whose directory lies past its first 4100 bytes is accepted from memory and from disk", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const sixteen = makeTiff({ bits: 16, bigEndian: true }).bytes;
    // libvips' own TIFFs put the directory after the pixels too: 4 MB, decoded from disk.
    const large = new Uint8Array(
      await sharp({
        create: { width: 1500, height: 900, channels: 3, background: "#246" },
      }).tiff({ compression: "none" }).toBuffer(),
    );
    assert.ok(large.length > 1024 * 1024);
    for (const bytes of [sixteen, large]) {
      const r = await upload(env, key, formWith([{ name: "t.tif", bytes }]));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data.image.mime, "image/tiff");
      const { bytes: stored } = await fetchBytes(
        env,
        new URL(r.body.data.url).pathname,
      );
      assert.deepEqual(stored, bytes);
    }
    assert.equal((await sharp(sixteen).metadata()).depth, "ushort");
  } finally {
    await env.close();
  }
});

/**
 * A JPEG-compressed TIFF as libvips writes it (every tag a pixel tag: JPEGTables holds the
 * shared tables, the strip an abbreviated JPEG stream), with an APP1 segment holding
 * `secret` put after the strip's SOI and an APP13 after the tables' SOI. libjpeg skips
 * both when it decodes, so a reader sees a plain image.
 */
async function makeJpegTiffWithAppSegments(
  secret: string,
): Promise<Uint8Array> {
  const src = new Uint8Array(
    await sharp({
      create: { width: 64, height: 48, channels: 3, background: "#3a7" },
    }).tiff({ compression: "jpeg", quality: 90 }).toBuffer(),
  );
  const v = new DataView(src.buffer);
  const little = src[0] === 0x49;
  const ifd = v.getUint32(4, little);
  const entry = (tag: number) => {
    for (let i = 0; i < v.getUint16(ifd, little); i++) {
      if (v.getUint16(ifd + 2 + i * 12, little) === tag) {
        return ifd + 2 + i * 12;
      }
    }
    throw new Error(`no tag ${tag}`);
  };
  // One strip (a 64×48 image), and tables too long to sit in their entry.
  const stripAt = v.getUint32(entry(273) + 8, little);
  const stripLen = v.getUint32(entry(279) + 8, little);
  const tablesAt = v.getUint32(entry(347) + 8, little);
  const tablesLen = v.getUint32(entry(347) + 4, little);
  const withApp = (stream: Uint8Array, marker: number) =>
    cat(
      stream.subarray(0, 2),
      segment(marker, ascii(`Exif\0\0${secret}`)),
      stream.subarray(2),
    );
  const strip = withApp(src.subarray(stripAt, stripAt + stripLen), 0xe1);
  const tables = withApp(src.subarray(tablesAt, tablesAt + tablesLen), 0xed);
  const out = cat(src, strip, tables);
  const ov = new DataView(out.buffer);
  ov.setUint32(entry(273) + 8, src.length, little);
  ov.setUint32(entry(279) + 8, strip.length, little);
  ov.setUint32(entry(347) + 4, tables.length, little);
  ov.setUint32(entry(347) + 8, src.length + strip.length, little);
  out.fill(0, stripAt, stripAt + stripLen); // the old strip and tables: nothing left
  out.fill(0, tablesAt, tablesAt + tablesLen);
  return out;
}

test("a JPEG-compressed TIFF with only pixel tags is not kept byte for byte: APP segments in its strips and tables are gone, its pixels kept", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const bytes = await makeJpegTiffWithAppSegments(SECRETS.gps);
    // Every tag is a pixel tag; the JPEG streams are what cannot be kept.
    assert.equal(await tiffHasOtherTags(readBytes(bytes)), true);
    assert.ok(latin1(bytes).includes(SECRETS.gps));
    const stored = await storedWithoutSecrets(env, key, "j.tif", bytes);
    assert.equal((await sharp(stored).metadata()).format, "tiff");
    await assertSamePixels(bytes, stored);
  } finally {
    await env.close();
  }
});

test("tiffHasOtherTags walks every directory of the chain and answers true (re-encode) for what it cannot walk", async () => {
  const plain = makeTiff({}).bytes;
  assert.equal(await tiffHasOtherTags(readBytes(plain)), false);
  const v = new DataView(plain.buffer);
  const ifd = v.getUint32(4, true);
  const next = ifd + 2 + v.getUint16(ifd, true) * 12;
  // A second directory (here, the first again) is a loop: walked once, then refused.
  const loop = plain.slice();
  new DataView(loop.buffer).setUint32(next, ifd, true);
  assert.equal(await tiffHasOtherTags(readBytes(loop)), true);
  // A second directory with a tag off the list: found although the first is clean.
  const second = cat(
    plain,
    new Uint8Array(plain.length & 1),
    new Uint8Array(18),
  );
  const at = plain.length + (plain.length & 1);
  const sv = new DataView(second.buffer);
  sv.setUint32(next, at, true);
  sv.setUint16(at, 1, true);
  sv.setUint16(at + 2, 271, true); // Make
  assert.equal(await tiffHasOtherTags(readBytes(second)), true);
  // Pixel tags only, but naming a JPEG stream (513), or JPEG compression given as a
  // LONG: the streams may carry APP segments, so these are not kept either.
  sv.setUint16(at + 2, 513, true);
  assert.equal(await tiffHasOtherTags(readBytes(second)), true);
  sv.setUint16(at + 2, 259, true);
  sv.setUint16(at + 4, 4, true);
  sv.setUint32(at + 6, 1, true);
  for (const [compression, other] of [[1, false], [5, false], [6, true]]) {
    sv.setUint32(at + 10, compression as number, true);
    assert.equal(await tiffHasOtherTags(readBytes(second)), other);
  }
  // BigTIFF, a directory past the end, and a cut header.
  const big = plain.slice();
  new DataView(big.buffer).setUint16(2, 43, true);
  const outside = plain.slice();
  new DataView(outside.buffer).setUint32(4, plain.length + 100, true);
  for (const b of [big, outside, plain.subarray(0, 6)]) {
    assert.equal(await tiffHasOtherTags(readBytes(b)), true);
  }
});

/**
 * An AVIF with alpha (a second av01 item), EXIF (camera, artist, GPS) and XMP items, then
 * a top-level box of another tool's holding a comment, and a page of HTML after the last
 * box. The tool's box and the HTML come after the media data, so no offset moves.
 */
async function makeAvifWithMetadata(): Promise<Uint8Array> {
  const avif = new Uint8Array(
    await sharp({
      create: {
        width: 64,
        height: 48,
        channels: 4,
        background: { r: 10, g: 200, b: 30, alpha: 0.5 },
      },
    }).avif({ quality: 50 }).withExif({
      IFD0: { Make: SECRETS.make, Artist: SECRETS.artist },
      IFD3: { GPSLatitudeRef: "N", GPSAreaInformation: SECRETS.gps },
    }).withXmp(
      `<x:xmpmeta xmlns:x="adobe:ns:meta/"><dc:creator>${SECRETS.xmp}</dc:creator></x:xmpmeta>`,
    ).toBuffer(),
  );
  const note = ascii(`....${SECRETS.comment}`);
  new DataView(note.buffer).setUint32(0, 0); // a 4-byte field of the tool's own
  const tool = cat(new Uint8Array(4), ascii("tOOl"), note);
  new DataView(tool.buffer).setUint32(0, tool.length);
  return cat(avif, tool, ascii(`<html>${SECRETS.text}</html>`));
}

/** Offset of the first `type` in bytes (a box's type, found as text), or -1. */
const textAt = (bytes: Uint8Array, type: string) => latin1(bytes).indexOf(type);

test("an AVIF's EXIF and XMP items, other tools' boxes and trailing bytes are dropped without re-encoding it (its AV1 data and pixels kept exactly), and one with a property the rewrite does not know is re-encoded", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const bytes = await makeAvifWithMetadata();
    const before = await sharp(bytes).metadata();
    assert.ok(before.exif && before.xmp && before.hasAlpha);
    const stored = await storedWithoutSecrets(env, key, "a.avif", bytes);
    const after = await sharp(stored).metadata();
    assert.equal(after.exif, undefined);
    assert.equal(after.xmp, undefined);
    assert.deepEqual(
      [after.format, after.width, after.height, after.hasAlpha],
      ["heif", 64, 48, true],
    );
    // Every offset kept: the media data sits where it was, byte for byte but for the
    // metadata's bytes, now zeros; the HTML after the last box is gone.
    const mdat = textAt(bytes, "mdat") - 4;
    assert.equal(textAt(stored, "mdat") - 4, mdat);
    const size = new DataView(bytes.buffer).getUint32(mdat);
    const [was, is] = [bytes, stored].map((b) => b.subarray(mdat, mdat + size));
    const changed = was.filter((x, i) => x !== is[i]).length;
    assert.ok(changed > 0 && is.every((x, i) => x === was[i] || x === 0));
    const tool = textAt(bytes, "tOOl") - 4;
    const html = `<html>${SECRETS.text}</html>`;
    assert.equal(stored.length, bytes.length - html.length);
    assert.equal(latin1(stored.subarray(tool + 4, tool + 8)), "free");
    await assertSamePixels(bytes, stored);
    // Without EXIF or XMP but with a property the rewrite does not know (here a user
    // description, free text): re-encoded rather than kept as it came.
    const plain = new Uint8Array(
      await sharp({
        create: { width: 64, height: 48, channels: 3, background: "#2a6" },
      }).avif({ quality: 50 }).toBuffer(),
    );
    plain.set(ascii("udes"), textAt(plain, "pixi"));
    const reencoded = await storedWithoutSecrets(env, key, "u.avif", plain);
    assert.equal(textAt(reencoded, "udes"), -1);
    assert.equal((await sharp(reencoded).metadata()).width, 64);
  } finally {
    await env.close();
  }
});

test("rewriteAvif leaves to a re-encode what it cannot rewrite with certainty: an animated AVIF, a box or property it does not know, a picture referring to metadata, data cut short", async () => {
  const avif = await makeAvifWithMetadata();
  const dir = await Deno.makeTempDir();
  try {
    let n = 0;
    const rewrites = (b: Uint8Array) =>
      rewriteAvif(readBytes(b), b.length, `${dir}/${n++}.avif`);
    assert.equal(await rewrites(avif), "rewritten");
    const edit = (at: number, text: string) => {
      const b = avif.slice();
      b.set(ascii(text), at);
      return b;
    };
    // A compatible brand made "avis" (an image sequence); the item references box made an
    // entity groups box; the pixel information property made a user description (free
    // text); the metadata's reference made from the picture to the EXIF item.
    const refusals: Uint8Array[] = [
      edit(textAt(avif, "mif1"), "avis"),
      edit(textAt(avif, "iref"), "grpl"),
      edit(textAt(avif, "pixi"), "udes"),
    ];
    const cdsc = textAt(avif, "cdsc");
    const swapped = avif.slice();
    const v = new DataView(swapped.buffer);
    const [from, to] = [v.getUint16(cdsc + 4), v.getUint16(cdsc + 8)];
    v.setUint16(cdsc + 4, to);
    v.setUint16(cdsc + 8, from);
    refusals.push(swapped);
    // A file of a thousand empty boxes after its picture: not read box by box.
    refusals.push(cat(
      avif.subarray(0, textAt(avif, "<html>")),
      ...Array(1000).fill(cat(
        new Uint8Array([0, 0, 0, 8]),
        ascii("free"),
      )),
    ));
    // The media data cut short: the metadata's bytes lie past the end.
    refusals.push(avif.subarray(0, textAt(avif, "tOOl") - 40));
    for (const [i, b] of refusals.entries()) {
      assert.equal(await rewrites(b), i === 0 ? "sequence" : "refused", `${i}`);
    }
    // Nothing was written for any of them.
    assert.equal([...Deno.readDirSync(dir)].length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("bent AVIFs (random bytes changed, or cut short) either rewrite to a file without the metadata or are left to a re-encode, never otherwise", async () => {
  const seeds = [await makeAvifWithMetadata()];
  const dir = await Deno.makeTempDir();
  try {
    let n = 0;
    const metaEnd = textAt(seeds[0], "mdat");
    await assertBentCopies(seeds, async (b) => {
      const out = `${dir}/${n++}.avif`;
      const done = await rewriteAvif(readBytes(b), b.length, out);
      if (done !== "rewritten") return false;
      const text = latin1(await Deno.readFile(out));
      for (const s of [SECRETS.make, SECRETS.xmp, SECRETS.comment]) {
        assert.ok(!text.includes(s), `${s} left in a rewrite`);
      }
      return true;
    }, { runs: 300, head: metaEnd });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("a GIF's comments, plain-text blocks, XMP and other private extensions are dropped, while its frames, timing and loop count are kept byte for byte", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    // Played twice: the loop count is a NETSCAPE2.0 application extension.
    const plain = new Uint8Array(
      await sharp(await makeAnimatedGif(3), { animated: true }).gif({ loop: 2 })
        .toBuffer(),
    );
    // Extensions go after the header and global colour table, before the first frame.
    const start = 13 + (plain[10] & 0x80 ? 3 << ((plain[10] & 7) + 1) : 0);
    const blocks = (data: Uint8Array) =>
      cat(new Uint8Array([data.length]), data);
    const ext = (label: number, ...parts: Uint8Array[]) =>
      cat(new Uint8Array([0x21, label]), ...parts, new Uint8Array([0]));
    const gif = cat(
      plain.subarray(0, start),
      ext(0xfe, blocks(ascii(SECRETS.comment))),
      ext(0xff, blocks(ascii("XMP DataXMP")), blocks(ascii(SECRETS.xmp))),
      ext(0xff, blocks(ascii("EDITOR01abc")), blocks(ascii(SECRETS.artist))),
      ext(0x01, blocks(new Uint8Array(12)), blocks(ascii(SECRETS.text))),
      plain.subarray(start),
    );
    const stored = await storedWithoutSecrets(env, key, "a.gif", gif);
    assert.ok(latin1(stored).includes("NETSCAPE2.0"), "the loop count is kept");
    // What is left is the GIF as it was before the extensions went in.
    assert.deepEqual(stored, plain);
    const [a, b] = await Promise.all(
      [plain, stored].map((x) => sharp(x, { animated: true }).metadata()),
    );
    assert.deepEqual([b.pages, b.delay, b.loop], [a.pages, a.delay, a.loop]);
    assert.deepEqual([b.pages, b.loop], [3, 2]);
  } finally {
    await env.close();
  }
});

/** A RIFF chunk: four-character type, little-endian size, data, a pad byte when odd. */
function riffChunk(type: string, data: Uint8Array): Uint8Array {
  const head = new Uint8Array(8);
  head.set(ascii(type));
  new DataView(head.buffer).setUint32(4, data.length, true);
  return cat(head, data, new Uint8Array(data.length & 1));
}

/** A WebP's chunks in order (type and data); inside `from`..`to` when given (ANMF). */
function webpChunks(
  webp: Uint8Array,
  from = 12,
  to = webp.length,
): { type: string; data: Uint8Array }[] {
  const out = [];
  const v = new DataView(webp.buffer, webp.byteOffset, webp.byteLength);
  for (let p = from; p + 8 <= to;) {
    const n = v.getUint32(p + 4, true);
    out.push({
      type: latin1(webp.subarray(p, p + 4)),
      data: webp.subarray(p + 8, p + 8 + n),
    });
    p += 8 + n + (n & 1);
  }
  return out;
}

/** A WebP made of these chunks (the RIFF size worked out). */
function webpOf(...chunks: Uint8Array[]): Uint8Array {
  const body = cat(ascii("WEBP"), ...chunks);
  const head = cat(ascii("RIFF"), new Uint8Array(4));
  new DataView(head.buffer).setUint32(4, body.length, true);
  return cat(head, body);
}

/** Pixels that any lossy encoding would change: a pattern of hard edges and noise. */
function busyPixels(w: number, h: number): Uint8Array {
  const px = new Uint8Array(w * h * 3);
  let s = 7;
  for (let i = 0; i < px.length; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    px[i] = (i % 7 === 0) ? 255 : s >> 23;
  }
  return px;
}

test("a lossless WebP's EXIF, XMP and unknown chunks are dropped without re-encoding it: the stored file is still lossless, its pixel data byte for byte", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const [w, h] = [48, 32];
    const raw = { raw: { width: w, height: h, channels: 3 as const } };
    const plain = new Uint8Array(
      await sharp(busyPixels(w, h), raw).webp({ lossless: true }).toBuffer(),
    );
    const withMeta = new Uint8Array(
      await sharp(busyPixels(w, h), raw).webp({ lossless: true }).withExif({
        IFD0: { Make: SECRETS.make, Artist: SECRETS.artist },
        IFD3: { GPSLatitudeRef: "N", GPSAreaInformation: SECRETS.gps },
      }).withXmp(
        `<x:xmpmeta xmlns:x="adobe:ns:meta/"><dc:creator>${SECRETS.xmp}</dc:creator></x:xmpmeta>`,
      ).toBuffer(),
    );
    const chunks = webpChunks(withMeta);
    assert.deepEqual(chunks.map((c) => c.type), [
      "VP8X",
      "VP8L",
      "EXIF",
      "XMP ",
    ]);
    // An editor's private chunk, and a page of HTML after the RIFF's end.
    const webp = cat(
      webpOf(
        ...chunks.map((c) => riffChunk(c.type, c.data)),
        riffChunk("ZEDT", ascii(SECRETS.comment)),
      ),
      ascii(`<html>${SECRETS.text}</html>`),
    );
    const stored = await storedWithoutSecrets(env, key, "l.webp", webp);
    const kept = webpChunks(stored);
    assert.deepEqual(kept.map((c) => c.type), ["VP8X", "VP8L"]);
    // VP8X no longer announces EXIF (0x08) or XMP (0x04).
    assert.equal(kept[0].data[0] & 0x0c, 0);
    assert.deepEqual(kept[1].data, webpChunks(plain)[0].data);
    const riffSize = new DataView(stored.buffer, stored.byteOffset).getUint32(
      4,
      true,
    );
    assert.equal(riffSize, stored.length - 8);
    const px = await sharp(stored).raw().toBuffer();
    assert.deepEqual(new Uint8Array(px), busyPixels(w, h));
    // Without EXIF or XMP, a private chunk and trailing bytes were kept as they came: now
    // the stored file is the plain WebP itself.
    const onlyPrivate = cat(
      webpOf(
        ...webpChunks(plain).map((c) => riffChunk(c.type, c.data)),
        riffChunk("ZEDT", ascii(SECRETS.comment)),
      ),
      ascii(`<html>${SECRETS.text}</html>`),
    );
    assert.deepEqual(
      await storedWithoutSecrets(env, key, "p.webp", onlyPrivate),
      plain,
    );
  } finally {
    await env.close();
  }
});

test("a WebP turned by its EXIF orientation is stored upright without its metadata, and a lossless one stays lossless with its pixels exact", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const [w, h] = [48, 32];
    const raw = { raw: { width: w, height: h, channels: 3 as const } };
    // Orientation 6: shown turned 90° clockwise, so the upright image is 32×48.
    const upright = await sharp(busyPixels(w, h), raw).rotate(90).raw()
      .toBuffer();
    for (const lossless of [true, false]) {
      const bytes = new Uint8Array(
        await sharp(busyPixels(w, h), raw).webp(
          lossless ? { lossless: true } : { quality: 90 },
        ).withMetadata({ orientation: 6 }).withExifMerge({
          IFD0: { Make: SECRETS.make },
        })
          .toBuffer(),
      );
      assert.equal((await sharp(bytes).metadata()).orientation, 6);
      const stored = await storedWithoutSecrets(env, key, "o.webp", bytes);
      const meta = await sharp(stored).metadata();
      assert.deepEqual([meta.width, meta.height, meta.orientation], [
        h,
        w,
        undefined,
      ]);
      const types = webpChunks(stored).map((c) => c.type);
      assert.ok(types.includes(lossless ? "VP8L" : "VP8 "), types.join());
      if (lossless) {
        const px = await sharp(stored).raw().toBuffer();
        assert.ok(px.equals(upright), "the turned pixels, exactly");
      }
    }
  } finally {
    await env.close();
  }
});

test("webpIsLossless is true only when every picture, each animation frame included, is VP8L, and false for what it cannot walk", async () => {
  const raw = { raw: { width: 16, height: 8, channels: 3 as const } };
  const still = async (lossless: boolean) =>
    new Uint8Array(
      await sharp(busyPixels(16, 8), raw).webp({ lossless }).toBuffer(),
    );
  const [vp8l, vp8] = [await still(true), await still(false)];
  const is = (b: Uint8Array) => webpIsLossless(readBytes(b));
  assert.equal(await is(vp8l), true);
  assert.equal(await is(vp8), false);
  // Animated: frames of VP8L, or one of them VP8.
  const frame = (pic: Uint8Array) =>
    riffChunk(
      "ANMF",
      cat(
        new Uint8Array(16),
        ...webpChunks(pic).map((c) => riffChunk(c.type, c.data)),
      ),
    );
  const vp8x = riffChunk("VP8X", new Uint8Array(10));
  const anim = riffChunk("ANIM", new Uint8Array(6));
  assert.equal(await is(webpOf(vp8x, anim, frame(vp8l), frame(vp8l))), true);
  assert.equal(await is(webpOf(vp8x, anim, frame(vp8l), frame(vp8))), false);
  // No picture at all, not a RIFF, a frame too short.
  assert.equal(await is(webpOf(vp8x, anim)), false);
  assert.equal(await is(ascii("RIFX\0\0\0\0WEBPVP8L")), false);
  assert.equal(
    await is(webpOf(vp8x, riffChunk("ANMF", new Uint8Array(8)))),
    false,
  );
  const cut = webpOf(
    vp8x,
    ...webpChunks(vp8l).map((c) => riffChunk(c.type, c.data)),
  );
  assert.equal(await is(cut), true);
  // The RIFF claims 100 bytes more than there are: a chunk header is missing.
  new DataView(cut.buffer).setUint32(4, cut.length + 100, true);
  assert.equal(await is(cut), false);
});

test("an animated WebP keeps its frames, timing and loop count while XMP and chunks hidden in a frame are dropped", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const anim = new Uint8Array(
      await sharp(await makeAnimatedGif(3), { animated: true })
        .webp({ lossless: true, loop: 2 }).withXmp(
          `<x:xmpmeta xmlns:x="adobe:ns:meta/"><dc:creator>${SECRETS.xmp}</dc:creator></x:xmpmeta>`,
        ).toBuffer(),
    );
    const chunks = webpChunks(anim);
    const frame = chunks.findIndex((c) => c.type === "ANMF");
    assert.ok(frame > 0 && chunks.some((c) => c.type === "XMP "));
    // A private chunk inside the first frame, after its image data.
    const f = chunks[frame].data;
    const hidden = cat(f, riffChunk("ZEDT", ascii(SECRETS.artist)));
    const webp = webpOf(
      ...chunks.map((c, i) => riffChunk(c.type, i === frame ? hidden : c.data)),
    );
    const stored = await storedWithoutSecrets(env, key, "a.webp", webp);
    const kept = webpChunks(stored);
    assert.deepEqual(
      kept.map((c) => c.type),
      chunks.map((c) => c.type).filter((t) => t !== "XMP "),
    );
    // Each frame is the original frame, byte for byte.
    assert.deepEqual(
      kept.filter((c) => c.type === "ANMF").map((c) => c.data),
      chunks.filter((c) => c.type === "ANMF").map((c) => c.data),
    );
    const [a, b] = await Promise.all(
      [anim, stored].map((x) => sharp(x, { animated: true }).metadata()),
    );
    assert.deepEqual([b.pages, b.delay, b.loop], [a.pages, a.delay, a.loop]);
    assert.deepEqual([b.pages, b.loop], [3, 2]);
  } finally {
    await env.close();
  }
});

/** Asserts `webp` is a RIFF whose sizes add up and which holds only picture chunks. */
function assertCleanWebp(webp: Uint8Array) {
  const v = new DataView(webp.buffer, webp.byteOffset, webp.byteLength);
  assert.equal(latin1(webp.subarray(0, 4)), "RIFF");
  assert.equal(v.getUint32(4, true), webp.length - 8);
  const walk = (from: number, to: number, allowed: string[]) => {
    let p = from;
    for (const c of webpChunks(webp, from, to)) {
      assert.ok(allowed.includes(c.type), `kept ${c.type}`);
      if (c.type === "VP8X") assert.equal(c.data[0] & 0x0c, 0);
      if (c.type === "ANMF") {
        walk(p + 8 + 16, p + 8 + c.data.length, ["VP8 ", "VP8L", "ALPH"]);
      }
      p += 8 + c.data.length + (c.data.length & 1);
    }
    assert.equal(p, to, "the chunks fill their container exactly");
  };
  walk(12, webp.length, [
    "VP8X",
    "VP8 ",
    "VP8L",
    "ALPH",
    "ANIM",
    "ANMF",
    "ICCP",
  ]);
}

test("bent WebPs (random bytes changed, or cut short) either strip to a RIFF of picture chunks whose sizes add up or fail as MalformedImage, never otherwise", async () => {
  const dir = await Deno.makeTempDir();
  const xmp = `<x:xmpmeta xmlns:x="adobe:ns:meta/">${SECRETS.xmp}</x:xmpmeta>`;
  const seeds = [
    new Uint8Array(
      await sharp(await makeAnimatedGif(2), { animated: true }).webp()
        .withXmp(xmp).withExif({ IFD0: { Make: SECRETS.make } }).toBuffer(),
    ),
    new Uint8Array(
      await sharp(busyPixels(20, 10), {
        raw: { width: 20, height: 10, channels: 3 },
      }).webp({ lossless: true }).withXmp(xmp).toBuffer(),
    ),
  ];
  // A VP8X claiming 4 GB in a file larger than the reader's window must be refused, not
  // peeked at (a window cannot hold it).
  const huge = cat(seeds[1], new Uint8Array(2 << 20));
  new DataView(huge.buffer).setUint32(4, huge.length - 8, true);
  new DataView(huge.buffer).setUint32(16, 0xfffffff0, true);
  let n = 0;
  const attempt = async (bytes: Uint8Array) => {
    const src = `${dir}/${n}.webp`, dst = `${dir}/${n++}.out`;
    await Deno.writeFile(src, bytes);
    try {
      await stripWebp(src, dst);
      assertCleanWebp(await Deno.readFile(dst));
      return true;
    } catch (e) {
      if (!(e instanceof MalformedImage)) throw e;
      return false;
    }
  };
  try {
    for (const s of seeds) assert.ok(await attempt(s));
    assert.equal(await attempt(huge), false);
    // Only a VP8X and a private chunk: no picture at all.
    const vp8x = webpChunks(seeds[0]).find((c) => c.type === "VP8X")!;
    assert.equal(
      await attempt(
        webpOf(riffChunk("VP8X", vp8x.data), riffChunk("ZEDT", ascii("x"))),
      ),
      false,
    );
    // A copy longer than the writer's window: the RIFF size is patched in the file, not
    // in the buffer, and the result is the plain WebP byte for byte.
    const noise = new Uint8Array(1024 * 512 * 3);
    for (let i = 0; i < noise.length; i += 65536) {
      crypto.getRandomValues(noise.subarray(i, i + 65536));
    }
    const large = new Uint8Array(
      await sharp(noise, { raw: { width: 1024, height: 512, channels: 3 } })
        .webp({ lossless: true }).toBuffer(),
    );
    assert.ok(large.length > 1 << 20);
    const [pic] = webpChunks(large);
    await Deno.writeFile(
      `${dir}/large.webp`,
      webpOf(riffChunk(pic.type, pic.data), riffChunk("ZEDT", ascii("x"))),
    );
    await stripWebp(`${dir}/large.webp`, `${dir}/large.out`);
    assert.deepEqual(await Deno.readFile(`${dir}/large.out`), large);
    await assertBentCopies(seeds, attempt, { runs: 400, head: 120 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A TIFF of `pages` directories (30×1 RGB each) that all point at one strip of pixels and
 * share their values, with a camera Make tag, as the 306 KB file of 3000 pages:
 * its lossless rewrite copies the shared pieces per page, so it comes to more than the
 * body itself.
 */
function manyPageTiff(pages: number): Uint8Array {
  const little = true;
  const entries = 12;
  const dirLen = 2 + entries * 12 + 4;
  const bps = 8, make = 16, res = 24, strip = 40; // offsets
  const first = 40 + 90;
  const size = first + pages * dirLen;
  const b = new Uint8Array(size);
  const v = new DataView(b.buffer);
  b.set([0x49, 0x49, 42, 0]);
  v.setUint32(4, first, little);
  for (let i = 0; i < 90; i++) b[strip + i] = i;
  v.setUint32(res, 72, little);
  v.setUint32(res + 4, 1, little);
  v.setUint16(bps, 8, little);
  v.setUint16(bps + 2, 8, little);
  v.setUint16(bps + 4, 8, little);
  b.set(new TextEncoder().encode("Camera\0"), make);
  for (let p = 0; p < pages; p++) {
    const at = first + p * dirLen;
    v.setUint16(at, entries, little);
    const list: [number, number, number, number][] = [
      [256, 3, 1, 30],
      [257, 3, 1, 1],
      [258, 3, 3, bps],
      [259, 3, 1, 1],
      [262, 3, 1, 2],
      [271, 2, 7, make],
      [273, 4, 1, strip],
      [277, 3, 1, 3],
      [278, 3, 1, 1],
      [279, 4, 1, 90],
      [282, 5, 1, res],
      [283, 5, 1, res],
    ];
    list.forEach(([tag, type, count, val], i) => {
      const e = at + 2 + i * 12;
      v.setUint16(e, tag, little);
      v.setUint16(e + 2, type, little);
      v.setUint32(e + 4, count, little);
      if (type === 3 && count === 1) v.setUint16(e + 8, val, little);
      else v.setUint32(e + 8, val, little);
    });
    v.setUint32(at + dirLen - 4, p + 1 < pages ? at + dirLen : 0, little);
  }
  return b;
}

test("a small TIFF of 3000 pages sharing one strip is stored on the disk profile (its rewrite outgrows the body's memory reservation, which then grows), every page kept and the camera tag gone", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const tiff = manyPageTiff(3000);
    // Declared by Content-Length, as curl sends it: a body under 1 MB is received into
    // memory (routes' requestScratch).
    const r = await uploadDeclared(
      env,
      key,
      formWith([{ name: "p.tiff", bytes: tiff }]),
    );
    const answer = r.body;
    assert.equal(r.status, 200, JSON.stringify(answer));
    const stored = (await fetchBytes(env, new URL(answer.data.url).pathname))
      .bytes;
    assert.ok(
      stored.length > tiff.length,
      "the rewrite is larger than the body",
    );
    const meta = await sharp(stored).metadata();
    assert.deepEqual([meta.pages, meta.width, meta.height], [3000, 30, 1]);
    assert.ok(!new TextDecoder().decode(stored).includes("Camera"));
  } finally {
    await env.close();
  }
});
