import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { test } from "./helpers.ts";
import {
  MalformedImage,
  stripGif,
  stripJpeg,
  stripPng,
  stripWebp,
} from "../services/images/formats/metadata_strip.ts";
import {
  fitsInPlace,
  inPlacePass,
  planStrip,
  stripInPlace,
} from "../services/images/formats/strip_in_place.ts";
import {
  readScratch,
  removeScratch,
  writeScratch,
} from "../services/runtime/scratch_files.ts";

const u16be = (n: number) => [n >> 8, n & 0xff];
const u32le = (
  n: number,
) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24];
const u32be = (
  n: number,
) => [n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const bytesOf = (max: number) =>
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: max });

/** JPEG segments before the scan: kept, dropped, fill bytes, restart-like markers. */
const jpegSegment = fc.oneof(
  fc.record({
    marker: fc.constantFrom(
      0xe0,
      0xe1,
      0xe2,
      0xed,
      0xee,
      0xef,
      0xfe,
      0xdb,
      0xc0,
      0xc4,
    ),
    payload: bytesOf(80),
  }).map((
    { marker, payload },
  ) => [0xff, marker, ...u16be(payload.length + 2), ...payload]),
  fc.constant([0xff]), // a fill byte before the next marker's 0xff
);

/** A JPEG's structure (SOI, segments, SOS and scan bytes), and an orientation. */
const jpegCase = fc.record({
  segments: fc.array(jpegSegment, { maxLength: 8 }),
  scan: bytesOf(200),
  orientation: fc.integer({ min: 1, max: 8 }),
}).map(({ segments, scan, orientation }) => ({
  ext: "jpg",
  orientation,
  bytes: new Uint8Array([0xff, 0xd8, ...segments.flat(), 0xff, 0xda, ...scan]),
}));

/** PNG chunks, kept and dropped; CRCs are not the strip's business. */
const pngCase = fc.array(
  fc.record({
    type: fc.constantFrom(
      "IHDR",
      "IDAT",
      "tEXt",
      "zTXt",
      "iTXt",
      "eXIf",
      "tIME",
      "pHYs",
    ),
    data: bytesOf(60),
  }),
  { maxLength: 8 },
).map((chunks) => {
  const out = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  for (const c of [...chunks, { type: "IEND", data: [] }]) {
    out.push(...u32be(c.data.length), ...ascii(c.type), ...c.data, 1, 2, 3, 4);
  }
  return { ext: "png", orientation: 1, bytes: new Uint8Array(out) };
});

/** Size-prefixed GIF sub-blocks ending in the empty one. */
const subBlocks = fc.array(bytesOf(20).filter((b) => b.length > 0), {
  maxLength: 3,
})
  .map((blocks) => [...blocks.flatMap((b) => [b.length, ...b]), 0]);

const gifBlock = fc.oneof(
  subBlocks.map((d) => [0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, ...d]), // an image
  subBlocks.map((d) => [0x21, 0xf9, ...d]), // graphic control (kept)
  subBlocks.map((d) => [0x21, 0xfe, ...d]), // a comment (dropped)
  fc.tuple(
    fc.constantFrom("NETSCAPE2.0", "XMP DataXMP", "ICCRGBG1012"),
    subBlocks,
  )
    .map(([name, d]) => [0x21, 0xff, 11, ...ascii(name), ...d]),
);

/** A GIF: header with or without colours, blocks, and a trailer or none. */
const gifCase = fc.record({
  colours: fc.boolean(),
  blocks: fc.array(gifBlock, { maxLength: 6 }),
  trailer: fc.boolean(),
}).map(({ colours, blocks, trailer }) => ({
  ext: "gif",
  orientation: 1,
  bytes: new Uint8Array([
    ...ascii("GIF89a"),
    1,
    0,
    1,
    0,
    colours ? 0x80 : 0,
    0,
    0,
    ...(colours ? [0, 0, 0, 255, 255, 255] : []),
    ...blocks.flat(),
    ...(trailer ? [0x3b] : []),
  ]),
}));

const riff = (type: string, data: number[]) => [
  ...ascii(type),
  ...u32le(data.length),
  ...data,
  ...(data.length & 1 ? [7] : []),
];

/** WebP chunks, animation frames with chunks of their own, odd sizes with their pads. */
const webpChunk = fc.oneof(
  fc.constant(riff("VP8X", [0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
  fc.tuple(
    fc.constantFrom("VP8L", "VP8 ", "ALPH", "ICCP", "EXIF", "XMP ", "abcd"),
    bytesOf(30),
  )
    .map(([t, d]) => riff(t, d)),
  fc.array(
    fc.tuple(fc.constantFrom("VP8L", "ALPH", "EXIF", "zzzz"), bytesOf(20)),
    { maxLength: 3 },
  ).map((inner) =>
    riff("ANMF", [
      ...new Array(16).fill(1),
      ...inner.flatMap(([t, d]) => riff(t, d)),
    ])
  ),
);

const webpCase = fc.record({
  chunks: fc.array(webpChunk, { maxLength: 6 }),
  trailing: bytesOf(5),
}).map(({ chunks, trailing }) => {
  const body = [...ascii("WEBP"), ...chunks.flat()];
  return {
    ext: "webp",
    orientation: 1,
    bytes: new Uint8Array([
      ...ascii("RIFF"),
      ...u32le(body.length),
      ...body,
      ...trailing,
    ]),
  };
});

const COPY = {
  jpg: stripJpeg,
  png: stripPng,
  gif: stripGif,
  webp: stripWebp,
} as const;

/** What the copying strip writes for `bytes` (through memory scratch files), or its error. */
async function copied(
  ext: keyof typeof COPY,
  bytes: Uint8Array,
  orientation: number,
): Promise<Uint8Array | MalformedImage> {
  const id = crypto.randomUUID();
  const src = `memory:/strip-test/${id}-in`;
  const dst = `memory:/strip-test/${id}-out`;
  await writeScratch(src, bytes.slice());
  try {
    if (ext === "jpg") await stripJpeg(src, dst, orientation);
    else await COPY[ext](src, dst);
    return (await readScratch(dst)).slice();
  } catch (e) {
    if (e instanceof MalformedImage) return e;
    throw e;
  } finally {
    await removeScratch(src);
    await removeScratch(dst).catch(() => {});
  }
}

test("a strip within the file's own bytes writes exactly what the copying strip writes, or declines and leaves every byte as it was (JPEG, PNG, GIF, WebP; property test)", async () => {
  let inPlace = 0, declined = 0, malformed = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(jpegCase, pngCase, gifCase, webpCase),
      async (c) => {
        const ext = c.ext as keyof typeof COPY;
        const expected = await copied(ext, c.bytes, c.orientation);
        const bytes = c.bytes.slice();
        let length: number | null;
        try {
          length = await stripInPlace(bytes, ext, c.orientation);
        } catch (e) {
          assert.ok(
            expected instanceof MalformedImage,
            `copy wrote, in place threw ${e}`,
          );
          assert.ok(e instanceof MalformedImage);
          // Refused before anything moved.
          assert.ok(Buffer.from(bytes).equals(Buffer.from(c.bytes)));
          malformed++;
          return;
        }
        assert.ok(
          !(expected instanceof MalformedImage),
          "in place wrote, the copy threw",
        );
        if (length === null) {
          assert.ok(
            Buffer.from(bytes).equals(Buffer.from(c.bytes)),
            "declined, yet moved bytes",
          );
          declined++;
          return;
        }
        assert.ok(
          Buffer.from(bytes.subarray(0, length)).equals(Buffer.from(expected)),
        );
        inPlace++;
      },
    ),
    { numRuns: 600 },
  );
  // The generators reach every outcome.
  assert.ok(
    inPlace > 200 && declined > 0 && malformed > 0,
    `${inPlace} ${declined} ${malformed}`,
  );
});

test("a JPEG whose orientation must be written back before anything was dropped does not fit within its bytes: declined, untouched; dropped EXIF before it makes room", async () => {
  const dqt = [0xff, 0xdb, 0, 6, 1, 2, 3, 4];
  const exif = [0xff, 0xe1, 0, 40, ...new Array(38).fill(9)];
  const scan = [0xff, 0xda, 5, 6, 7];
  const late = new Uint8Array([0xff, 0xd8, ...dqt, ...exif, ...scan]);
  const plan = await planStrip(late, inPlacePass("jpg", 6)!);
  assert.equal(fitsInPlace(late, plan), null);
  const before = late.slice();
  assert.equal(await stripInPlace(late, "jpg", 6), null);
  assert.ok(Buffer.from(late).equals(Buffer.from(before)));

  const early = new Uint8Array([0xff, 0xd8, ...exif, ...dqt, ...scan]);
  const expected = await copied("jpg", early, 6);
  const n = await stripInPlace(early, "jpg", 6);
  assert.equal(n, 2 + 36 + dqt.length + scan.length);
  assert.ok(
    Buffer.from(early.subarray(0, n!)).equals(
      Buffer.from(expected as Uint8Array),
    ),
  );
  // Files shorter than what a pass first looks at are broken files, as for the copy.
  for (const ext of ["jpg", "png", "gif", "webp"] as const) {
    for (
      const tiny of [new Uint8Array(0), new Uint8Array([0xff, 0xd8, 0xff])]
    ) {
      assert.ok(await copied(ext, tiny, 1) instanceof MalformedImage, ext);
      await assert.rejects(
        stripInPlace(tiny.slice(), ext, 1),
        MalformedImage,
        ext,
      );
    }
  }
  // A WebP turned by its EXIF and the formats without such a pass are not rewritten here.
  assert.equal(inPlacePass("webp", 6), undefined);
  assert.equal(inPlacePass("tiff", 1), undefined);
  assert.equal(await stripInPlace(early, "avif", 1), null);
});
