import assert from "node:assert/strict";
import fc from "fast-check";
import { test } from "./helpers.ts";
import { receiveJson, receiveUrlencoded } from "../services/form_bodies.ts";
import { makeImage } from "./fixtures.ts";
import type { ApiError } from "../schemas/errors.ts";

/** A body stream of `text` cut at the given places (chunk edges inside escapes included). */
function chunked(text: string, cuts: number[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const edges = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((
    a,
    b,
  ) => a - b);
  const parts: Uint8Array[] = [];
  let last = 0;
  for (const e of [...edges, bytes.length]) {
    if (e > last) parts.push(bytes.slice(last, e));
    last = Math.max(last, e);
  }
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(p);
      c.close();
    },
  });
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

test("JSON and form bodies cut at any byte give the same fields and the exact image bytes (property test)", async () => {
  const tmpDir = await Deno.makeTempDir();
  const png = await makeImage("png", { width: 37, height: 21 });
  const opts = { tmpDir, maxFileBytes: 1_000_000, maxFiles: 5 };
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            "key",
            "title",
            "expiration",
            "format",
            "note",
            "ünï",
          ),
          fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String)),
          { maxKeys: 4 },
        ),
        fc.constantFrom("image", "source", "images"),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (members, field, dataUri, slashes, cuts) => {
          const value = (dataUri ? "data:image/png;base64," : "") + b64(png);
          // PHP's json_encode writes "\/" for "/"; JSON.stringify does not.
          let json = JSON.stringify({ ...members, [field]: value });
          if (slashes) json = json.replace(/\//g, "\\/");
          const fromJson = await receiveJson(chunked(json, cuts), opts);
          const form = [...Object.entries(members), [field, value]]
            .map(([k, v]) =>
              `${encodeURIComponent(k)}=${encodeURIComponent(v)}`
            )
            .join("&");
          const fromForm = await receiveUrlencoded(chunked(form, cuts), opts);
          for (const got of [fromJson, fromForm]) {
            assert.deepEqual(got.fields, { ...members });
            assert.equal(got.files.length, 1);
            assert.deepEqual(await Deno.readFile(got.files[0].path), png);
            await got.cleanup();
          }
        },
      ),
      { numRuns: 300 },
    );
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("malformed JSON bodies are 160 and leave no temp file", async () => {
  const tmpDir = await Deno.makeTempDir();
  const opts = { tmpDir, maxFileBytes: 1_000_000, maxFiles: 5 };
  try {
    for (
      const body of [
        "",
        "[]",
        '{"image": "aGVsbG8="',
        '{"a": {"nested": 1}}',
        '{"a": 1,}',
        '{"image": "aGVsbG8="} trailing',
        '{"image": ["aGVsbG8=", 5]}',
        '{"a": "\\x"}',
        '{"a": tru}',
      ]
    ) {
      await assert.rejects(
        receiveJson(chunked(body, [3, 9]), opts),
        (e: ApiError) => e.code === 160,
        body,
      );
    }
    assert.deepEqual([...Deno.readDirSync(tmpDir)], []);
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});
