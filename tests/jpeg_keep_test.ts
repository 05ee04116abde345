import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  jpegKeepsAll,
  orientationApp1,
  stripJpeg,
} from "../services/images/formats/metadata_strip.ts";
import {
  fetchBytes,
  scratchFiles,
  storedKeys,
  test,
  testEnv,
  uploadDeclared,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";

/** stripJpeg's output for `bytes`, through real scratch files. */
async function strippedOf(bytes: Uint8Array, orientation = 1) {
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
    const same = Buffer.from(await strippedOf(bytes, orientation)).equals(
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

test("with SCRATCH=memory a 9 MB JPEG is stored without a copy within MEMORY_BODY_MB=16: as it came with nothing to strip, stripped within its own bytes with EXIF; one whose orientation must be written back before anything is dropped needs its copy and is refused", async () => {
  const env = await testEnv({
    env: { SCRATCH: "memory", MEMORY_BODY_MB: "16", MEMORY_REQUEST_MB: "12" },
  });
  try {
    const { key } = await userWithKey(env);
    const plain = await makeNoiseJpeg(3050, 3050);
    assert.ok(plain.length > 8.5e6 && plain.length < 11e6, `${plain.length}`);
    // As a browser sends it, with its length: the body is received into one buffer.
    const storedAs = async (name: string, bytes: Uint8Array) => {
      const res = await uploadDeclared(
        env,
        key,
        formWith([{ name, bytes }]),
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (await fetchBytes(env, new URL(res.body.data.url).pathname))
        .bytes;
    };
    const kept = await storedAs("plain.jpg", plain);
    assert.ok(Buffer.from(kept).equals(Buffer.from(plain)));
    const withExif = await makeNoiseJpeg(3050, 3050, { exif: true });
    const stripped = await storedAs("exif.jpg", withExif);
    assert.ok(
      Buffer.from(stripped).equals(Buffer.from(await strippedOf(withExif))),
    );
    assert.ok(stripped.length < withExif.length);
    // Cut short, it fails its check, which comes first: nothing stored, nothing moved.
    const cut = await uploadDeclared(
      env,
      key,
      formWith([{ name: "cut.jpg", bytes: withExif.subarray(0, 6e6) }]),
    );
    assert.deepEqual([cut.status, cut.body.error.code], [415, 141]);
    // EXIF with orientation 6 after the first table: the strip writes the orientation
    // back at that table, before the EXIF is dropped, so it cannot fit within the bytes.
    const dqt = plain.indexOf(0xdb, 2) - 1;
    const dqtEnd = dqt + 2 + ((plain[dqt + 2] << 8) | plain[dqt + 3]);
    const late = new Uint8Array([
      ...plain.subarray(0, dqtEnd),
      ...orientationApp1(6),
      ...plain.subarray(dqtEnd),
    ]);
    const refused = await uploadDeclared(
      env,
      key,
      formWith([{ name: "late.jpg", bytes: late }]),
    );
    assert.deepEqual(
      [refused.status, refused.body.error.code],
      [503, 250],
    );
    assert.match(JSON.stringify(refused.body.error), /MEMORY_BODY_MB/);
    assert.equal(
      (await storedKeys(env)).filter((k) => /\.jpg$/.test(k)).length,
      2,
    );
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});
