import assert from "node:assert/strict";
import fc from "fast-check";
import { test } from "./helpers.ts";
import {
  receiveJson,
  receiveUrlencoded,
} from "../services/bodies/form_bodies.ts";
import { receiveMultipart } from "../services/bodies/multipart.ts";
import { TextPartMarker } from "../services/bodies/multipart_text_parts.ts";
import { makeImage } from "./fixtures.ts";
import type { ApiError } from "../schemas/errors.ts";

/** A body stream of `text` cut at the given places (chunk edges inside escapes included). */
function chunked(text: string, cuts: number[]): ReadableStream<Uint8Array> {
  return chunkedBytes(new TextEncoder().encode(text), cuts);
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

test("multipart bodies cut at any byte give the same fields, files and decoded text images, typed or not, with or without line breaks (property test)", async () => {
  const tmpDir = await Deno.makeTempDir();
  const png = await makeImage("png", { width: 41, height: 13 });
  const opts = { tmpDir, maxFileBytes: 1_000_000, maxFiles: 6 };
  const boundary = "----b0undary";
  const part = fc.oneof(
    fc.record({
      kind: fc.constant("field" as const),
      name: fc.constantFrom("key", "title", "note", "expiration"),
      // Text that looks like a boundary but is not one (no CRLF before it) included.
      value: fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.constant(`x--${boundary}y`),
      ),
    }),
    fc.record({
      kind: fc.constant("text" as const),
      name: fc.constantFrom("image", "source", "images[]"),
      dataUri: fc.boolean(),
      lineBreaks: fc.boolean(),
      typed: fc.boolean(),
    }),
    fc.record({
      kind: fc.constant("file" as const),
      name: fc.constantFrom("images", "source"),
    }),
  );
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(part, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 16 }),
        async (parts, cuts) => {
          const fields: Record<string, string> = {};
          let body = "preamble is ignored\r\n";
          let images = 0;
          for (const p of parts) {
            body += `--${boundary}\r\n`;
            if (p.kind === "field") {
              fields[p.name] = p.value;
              body +=
                `Content-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`;
            } else if (p.kind === "text") {
              let v = b64(png);
              if (p.lineBreaks) v = v.replace(/.{76}/g, "$&\r\n");
              if (p.dataUri) v = `data:image/png;base64,${v}`;
              body += `Content-Disposition: form-data; name="${p.name}"\r\n` +
                (p.typed ? "Content-Type: text/plain\r\n" : "") +
                `\r\n${v}\r\n`;
              images++;
            } else {
              // Latin-1 text carries the PNG's bytes one char each.
              body +=
                `Content-Disposition: form-data; name="${p.name}"; filename="x.png"\r\n` +
                `Content-Type: image/png\r\n\r\n${
                  String.fromCharCode(...png)
                }\r\n`;
              images++;
            }
          }
          body += `--${boundary}--\r\nepilogue`;
          const bytes = Uint8Array.from(body, (c) => c.charCodeAt(0));
          const got = await receiveMultipart(
            chunkedBytes(bytes, cuts),
            `multipart/form-data; boundary=${boundary}`,
            opts,
          );
          try {
            assert.deepEqual(got.fields, fields);
            assert.equal(got.files.length, images);
            for (const f of got.files) {
              assert.deepEqual(await Deno.readFile(f.path), png);
              assert.equal(f.size, png.length);
            }
          } finally {
            await got.cleanup();
          }
        },
      ),
      { numRuns: 200 },
    );
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("the text-part marker passes every byte of a body without image text parts through unchanged, whatever the cuts", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 300 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      (noise, cuts) => {
        const head = new TextEncoder().encode(
          `--B\r\nContent-Disposition: form-data; name="note"\r\n\r\n`,
        );
        const tail = new TextEncoder().encode(`\r\n--B--\r\n`);
        const body = new Uint8Array([...head, ...noise, ...tail]);
        const m = new TextPartMarker("B", new Set(["image"]), "x-mark");
        const out: number[] = [];
        let last = 0;
        for (
          const e of [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((
            a,
            b,
          ) => a - b).concat(body.length)
        ) {
          if (e <= last) continue;
          for (const p of m.push(body.slice(last, e))) out.push(...p);
          last = e;
        }
        for (const p of m.flush()) out.push(...p);
        assert.deepEqual(new Uint8Array(out), body);
      },
    ),
    { numRuns: 300 },
  );
});

/** A body stream of `bytes` cut at the given places. */
function chunkedBytes(
  bytes: Uint8Array,
  cuts: number[],
): ReadableStream<Uint8Array> {
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

test("an image text part with a header block over 16 KB (more than the marker reads) is a malformed body, as busboy refuses it, and leaves no temp file", async () => {
  const tmpDir = await Deno.makeTempDir();
  const png = await makeImage("png", { width: 23, height: 11 });
  try {
    const body = new TextEncoder().encode(
      `--B\r\nContent-Disposition: form-data; name="image"\r\n` +
        `X-Pad: ${"a".repeat(17_000)}\r\n\r\n${b64(png)}\r\n--B--\r\n`,
    );
    await assert.rejects(
      receiveMultipart(
        chunkedBytes(body, [5000, 20_000]),
        "multipart/form-data; boundary=B",
        { tmpDir, maxFileBytes: 1_000_000, maxFiles: 5 },
      ),
      (e: ApiError) => e.code === 160,
    );
    assert.deepEqual([...Deno.readDirSync(tmpDir)], []);
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});
