import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  jpegKeepsAll,
  stripJpeg,
} from "../services/images/formats/metadata_strip.ts";
import {
  fetchBytes,
  storedKeys,
  test,
  testEnv,
  uploadDeclared,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";

/** stripJpeg's output for `bytes`, through real scratch files. */
async function stripped(bytes: Uint8Array, orientation = 1) {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/in.jpg`, bytes);
    await stripJpeg(`${dir}/in.jpg`, `${dir}/out.jpg`, orientation);
    return await Deno.readFile(`${dir}/out.jpg`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Inserts a segment (marker, payload) right after SOI. */
function withSegment(jpeg: Uint8Array, marker: number, payload: number[]) {
  const len = payload.length + 2;
  return new Uint8Array([
    0xff,
    0xd8,
    0xff,
    marker,
    len >> 8,
    len & 0xff,
    ...payload,
    ...jpeg.subarray(2),
  ]);
}

test("a JPEG is kept as it came exactly when the strip would write it back unchanged: not with EXIF, XMP, a comment, a vendor APP segment, a fill byte or an orientation to write", async () => {
  const plain = await makeNoiseJpeg(64, 64);
  const cases: [string, Uint8Array, number][] = [
    ["plain", plain, 1],
    ["with EXIF", await makeNoiseJpeg(64, 64, { exif: true }), 1],
    ["with a comment", withSegment(plain, 0xfe, [0x68, 0x69]), 1],
    ["with APP13 (IPTC)", withSegment(plain, 0xed, [1, 2, 3]), 1],
    ["with APP2 (ICC, kept)", withSegment(plain, 0xe2, [1, 2, 3]), 1],
    ["with APP14 (Adobe, kept)", withSegment(plain, 0xee, [1, 2, 3]), 1],
    [
      "with a fill byte",
      new Uint8Array([0xff, 0xd8, 0xff, ...plain.subarray(2)]),
      1,
    ],
    ["plain, orientation 6", plain, 6],
  ];
  for (const [name, bytes, orientation] of cases) {
    const same = Buffer.from(await stripped(bytes, orientation)).equals(
      Buffer.from(bytes),
    );
    assert.equal(jpegKeepsAll(bytes, orientation), same, name);
  }
  assert.ok(jpegKeepsAll(plain, 1), "a plain JPEG is kept");
  // Not a JPEG, cut before its scan, or a segment running past the end: not kept.
  for (
    const bad of [
      new Uint8Array([0x89, 0x50]),
      plain.subarray(0, 20),
      new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0xff, 0xff]),
    ]
  ) {
    assert.equal(jpegKeepsAll(bad, 1), false);
  }
});

test("with SCRATCH=memory a JPEG with nothing to strip is stored as it came without a copy: 9 MB fits MEMORY_BODY_MB=16 where the same with EXIF, which needs its copy, does not", async () => {
  const env = await testEnv({
    env: { SCRATCH: "memory", MEMORY_BODY_MB: "16", MEMORY_REQUEST_MB: "12" },
  });
  try {
    const { key } = await userWithKey(env);
    const plain = await makeNoiseJpeg(3050, 3050);
    assert.ok(plain.length > 8.5e6 && plain.length < 11e6, `${plain.length}`);
    // As a browser sends it, with its length: the body is received into one buffer.
    const kept = await uploadDeclared(
      env,
      key,
      formWith([{ name: "plain.jpg", bytes: plain }]),
    );
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    const served = await fetchBytes(
      env,
      new URL(kept.body.data.url).pathname,
    );
    assert.ok(Buffer.from(served.bytes).equals(Buffer.from(plain)));
    const withExif = await makeNoiseJpeg(3050, 3050, { exif: true });
    const refused = await uploadDeclared(
      env,
      key,
      formWith([{ name: "exif.jpg", bytes: withExif }]),
    );
    assert.deepEqual(
      [refused.status, refused.body.error.code],
      [503, 250],
    );
    assert.equal(
      (await storedKeys(env)).filter((k) => /\.jpg$/.test(k)).length,
      1,
    );
  } finally {
    await env.close();
  }
});
