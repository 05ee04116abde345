import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import { fetchBytes, test, testEnv, upload, userWithKey } from "./helpers.ts";
import { concatBytes, formWith } from "./fixtures.ts";

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
