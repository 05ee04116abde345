import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import sharp from "sharp";
import {
  jpegKeepsAll,
  stripJpeg,
} from "../services/images/formats/metadata_strip.ts";
import {
  fetchBytes,
  storedKeys,
  test,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { formWith } from "./fixtures.ts";

/** A noise JPEG of about `side`² pixels: noise does not compress, so it is large. */
async function noiseJpeg(side: number, exif = false): Promise<Uint8Array> {
  const raw = new Uint8Array(side * side * 3);
  for (let i = 0; i < raw.length; i += 65536) {
    crypto.getRandomValues(raw.subarray(i, Math.min(raw.length, i + 65536)));
  }
  let img = sharp(raw, { raw: { width: side, height: side, channels: 3 } });
  if (exif) img = img.withExif({ IFD0: { Copyright: "someone" } });
  return new Uint8Array(await img.jpeg({ quality: 95 }).toBuffer());
}

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
  const plain = await noiseJpeg(64);
  const cases: [string, Uint8Array, number][] = [
    ["plain", plain, 1],
    ["with EXIF", await noiseJpeg(64, true), 1],
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
    // As a browser sends it: with its length, so the body is received into one buffer.
    const send = async (bytes: Uint8Array, name: string) => {
      const form = new Response(formWith([{ name, bytes }]));
      const body = new Uint8Array(await form.arrayBuffer());
      const res = await env.app.request("/api/1/upload", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": form.headers.get("content-type")!,
          "content-length": String(body.length),
        },
        body,
      });
      return { status: res.status, body: await res.json() };
    };
    const plain = await noiseJpeg(3050);
    assert.ok(plain.length > 8.5e6 && plain.length < 11e6, `${plain.length}`);
    const kept = await send(plain, "plain.jpg");
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    const served = await fetchBytes(
      env,
      new URL(kept.body.data.url).pathname,
    );
    assert.ok(Buffer.from(served.bytes).equals(Buffer.from(plain)));
    const withExif = await noiseJpeg(3050, true);
    const refused = await send(withExif, "exif.jpg");
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
