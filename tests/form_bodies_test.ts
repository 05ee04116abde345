import assert from "node:assert/strict";
import fc from "fast-check";
import { test, testEnv, userWithKey } from "./helpers.ts";
import {
  decodeForm,
  receiveJson,
  receiveUrlencoded,
} from "../services/bodies/form_bodies.ts";
import { Base64File, MAX_URL_LENGTH } from "../services/bodies/base64_file.ts";
import { receiveMultipart } from "../services/bodies/multipart.ts";
import { TextPartMarker } from "../services/bodies/multipart_text_parts.ts";
import { makeImage } from "./fixtures.ts";
import { ApiError } from "../schemas/errors.ts";

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

/**
 * A body of `head`, then `unit` repeated up to `total` bytes, then `tail`, made as it is
 * pulled; `pulled()` says how many bytes the reader asked for before it stopped.
 */
function endlessBody(head: string, unit: string, total: number, tail = "") {
  const enc = new TextEncoder();
  const block = enc.encode(unit.repeat(Math.ceil(65_536 / unit.length)));
  let sent = 0;
  let state: "head" | "body" | "tail" | "done" = "head";
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (state === "head") {
        state = "body";
        const h = enc.encode(head);
        sent += h.length;
        return c.enqueue(h);
      }
      if (state === "body" && sent < total) {
        sent += block.length;
        return c.enqueue(block.slice());
      }
      if (state !== "done") {
        state = "done";
        if (tail) c.enqueue(enc.encode(tail));
      }
      c.close();
    },
  });
  return { stream, pulled: () => sent };
}

test("parsing budgets: a 20 MB JSON number, 100k JSON members, 1M urlencoded fields and 100k multipart fields are each 160 after reading only the start of the body", async () => {
  const tmpDir = await Deno.makeTempDir();
  const opts = {
    tmpDir,
    maxFileBytes: 32 * 1024 * 1024,
    maxFiles: 15,
    maxFields: 100,
    maxToken: 256,
  };
  const MB = 1024 * 1024;
  try {
    const cases = [
      {
        what: "a 20 MB number",
        body: endlessBody('{"n": ', "1234567890", 20 * MB, "}"),
        read: receiveJson,
        message: /longer than 256 characters/,
      },
      {
        what: "100k JSON members",
        body: endlessBody('{"a0": 1', ', "a": 1', 100_000 * 8, "}"),
        read: receiveJson,
        message: /at most 100 fields/,
      },
      {
        what: "1M urlencoded fields",
        body: endlessBody("a=1", "&b=2", 4 * MB),
        read: receiveUrlencoded,
        message: /at most 100 fields/,
      },
    ];
    for (const c of cases) {
      const err = await c.read(c.body.stream, opts).then(
        () => undefined,
        (e) => e as ApiError,
      );
      assert.equal(err?.code, 160, `${c.what}: ${err}`);
      assert.match(err!.details![0].message, c.message, c.what);
      // The rest of the body was never asked for.
      assert.ok(c.body.pulled() < 2 * MB, `${c.what}: read ${c.body.pulled()}`);
    }
    const boundary = "----budget";
    const field = (i: number) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nx\r\n`;
    const mp = endlessBody(field(0), field(1), 100_000 * field(1).length);
    const err = await receiveMultipart(
      mp.stream,
      `multipart/form-data; boundary=${boundary}`,
      opts,
    ).then(() => undefined, (e) => e as ApiError);
    assert.equal(err?.code, 160, String(err));
    assert.match(err!.details![0].message, /at most 100 fields/);
    assert.ok(mp.pulled() < 2 * MB, `multipart: read ${mp.pulled()}`);
    // Empty fields ("&&&…", 4 MB in one chunk) are no fields: read through, nothing kept
    // (searching for the next "=" at every "&" made this take ~70 s).
    const amps = await receiveUrlencoded(chunked("&".repeat(4 * MB), []), opts);
    assert.deepEqual(amps.fields, {});
    assert.equal(amps.files.length, 0);
    // At the budget, not over it: 100 members and a 256-digit number are fine.
    const fine = `{${
      Array.from({ length: 99 }, (_, i) => `"m${i}": 1`).join(", ")
    }, "n": ${"7".repeat(256)}}`;
    const ok = await receiveJson(chunked(fine, []), opts);
    assert.equal(ok.fields.n, "7".repeat(256));
    assert.equal(Object.keys(ok.fields).length, 100);
    assert.deepEqual([...Deno.readDirSync(tmpDir)], []);
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("the upload route keeps BODY_MAX_FIELDS and BODY_MAX_TOKEN from the config: JSON, urlencoded and multipart bodies over them are 160", async () => {
  const env = await testEnv({
    env: { BODY_MAX_FIELDS: "3", BODY_MAX_TOKEN: "10" },
  });
  try {
    const { key } = await userWithKey(env);
    const auth = { authorization: `Bearer ${key}` };
    const post = async (body: BodyInit, type?: string) => {
      const r = await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { ...auth, ...(type ? { "content-type": type } : {}) },
        body,
      });
      return [r.status, (await r.json()).error?.code];
    };
    const json = "application/json";
    assert.deepEqual(await post('{"a":1,"b":2,"c":3,"d":4}', json), [400, 160]);
    assert.deepEqual(await post('{"n": 12345678901}', json), [400, 160]);
    const form = "application/x-www-form-urlencoded";
    assert.deepEqual(await post("a=1&b=2&c=3&d=4", form), [400, 160]);
    const fd = new FormData();
    for (const k of ["a", "b", "c", "d"]) fd.append(k, "1");
    fd.append(
      "images",
      new Blob([await makeImage("png") as BlobPart]),
      "x.png",
    );
    assert.deepEqual(await post(fd), [400, 160]);
    // Within the budget the upload goes through.
    const ok = new FormData();
    ok.append("title", "fine");
    ok.append(
      "images",
      new Blob([await makeImage("png") as BlobPart]),
      "y.png",
    );
    assert.deepEqual(await post(ok), [200, undefined]);
  } finally {
    await env.close();
  }
});

test("a base64 image is cut at MAX_FILE_BYTES exactly: one byte over is marked truncated with no more than the cap written, the cap itself is whole", async () => {
  const tmpDir = await Deno.makeTempDir();
  const opts = { tmpDir, maxFileBytes: 20_000, maxFiles: 5 };
  try {
    for (const [n, truncated] of [[20_000, false], [20_001, true]] as const) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      for (
        const read of [
          () =>
            receiveUrlencoded(
              chunked(`image=${encodeURIComponent(b64(bytes))}`, [1000]),
              opts,
            ),
          () =>
            receiveJson(
              chunked(JSON.stringify({ image: b64(bytes) }), [1000]),
              opts,
            ),
        ]
      ) {
        const form = await read();
        const [file] = form.files;
        assert.equal(file.truncated, truncated, `${n}`);
        assert.ok(file.size <= 20_000, `${n}: ${file.size} bytes written`);
        const written = (await Deno.stat(file.path)).size;
        assert.ok(written <= 20_000, `${n}: ${written} bytes on disk`);
        await form.cleanup();
      }
    }
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("a keyless multipart body of text fields alone is refused once its first 64 KiB are in, the rest unread", async () => {
  const tmpDir = await Deno.makeTempDir();
  try {
    const boundary = "----keyless";
    const field = (i: number) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n${
        "x".repeat(30_000)
      }\r\n`;
    // Some 90 fields of 30 KB, no file part: 2.7 MB that no key ever admits.
    const body = endlessBody(field(0), field(1), 90 * field(1).length);
    let asked = 0;
    const err = await receiveMultipart(
      body.stream,
      `multipart/form-data; boundary=${boundary}`,
      {
        tmpDir,
        maxFileBytes: 1_000_000,
        maxFiles: 5,
        admit: () => {
          asked++;
          return Promise.reject(new ApiError(100));
        },
      },
    ).then(() => undefined, (e) => e as ApiError);
    assert.equal(err?.code, 100);
    assert.equal(asked, 1);
    assert.ok(body.pulled() < 512 * 1024, `read ${body.pulled()} bytes`);
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("a form value decodes as decodeURIComponent with + as a space would, escape for escape, and fails (160) where it fails (property test)", () => {
  const reference = (t: string) => {
    try {
      return decodeURIComponent(t.replace(/\+/g, " "));
    } catch {
      return "160";
    }
  };
  const ours = (t: string) => {
    try {
      return decodeForm(t);
    } catch (e) {
      assert.ok(e instanceof ApiError && e.code === 160, String(e));
      return "160";
    }
  };
  // Pieces that make escapes, half escapes and multi-byte sequences, whole or broken.
  const piece = fc.constantFrom(
    "%2B",
    "%2b",
    "%2F",
    "%2f",
    "%3D",
    "%3d",
    "%25",
    "%",
    "%2",
    "%3",
    "%C3",
    "%A9",
    "%E2%98%83",
    "%0A",
    "+",
    "A",
    "b",
    "2",
    "B",
    "F",
    "D",
    "é",
    "=",
    "/",
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
      const t = parts.join("");
      assert.equal(ours(t), reference(t), JSON.stringify(t));
    }),
    { numRuns: 3000 },
  );
});

test("a base64 value gives the same bytes however it is written and cut (standard, URL-safe, MIME lines, spaces for +, with or without padding), and any stray character is 141 (property test)", async () => {
  const tmpDir = await Deno.makeTempDir();
  const read = async (pieces: string[]) => {
    const f = new Base64File(0, "image", tmpDir, 1_000_000);
    try {
      for (const p of pieces) f.push(p);
      await f.finish();
      return await Deno.readFile(f.rec.path);
    } catch (e) {
      await f.abandon();
      throw e;
    } finally {
      await Deno.remove(f.rec.path).catch(() => {});
    }
  };
  const cutAt = (text: string, cuts: number[]) => {
    const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((
      a,
      b,
    ) => a - b);
    const out: string[] = [];
    let from = 0;
    for (const c of at) {
      out.push(text.slice(from, c));
      from = c;
    }
    out.push(text.slice(from));
    return out;
  };
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 600 }),
        fc.constantFrom("plain", "url-safe", "lines", "spaces", "unpadded"),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.option(
          fc.record({
            at: fc.nat(),
            char: fc.constantFrom("$", "é", "%", "*", "=", "☃", "."),
          }),
        ),
        async (bytes, style, cuts, stray) => {
          let text = b64(bytes);
          if (style === "url-safe") {
            text = text.replace(/\+/g, "-").replace(/\//g, "_");
          }
          if (style === "lines") text = text.replace(/.{1,76}/g, "$&\r\n");
          if (style === "spaces") text = text.replace(/\+/g, " ");
          if (style === "unpadded") text = text.replace(/=+$/, "");
          if (stray) {
            // A "=" before the last group is as stray as any other character.
            const at = stray.at %
              Math.max(1, text.replace(/=+$/, "").length - 4);
            text = text.slice(0, at) + stray.char + text.slice(at);
          }
          const got = await read(cutAt(text, cuts)).catch((e) => e);
          if (stray) {
            assert.ok(
              got instanceof ApiError && got.code === 141,
              `${JSON.stringify(text)}: ${got}`,
            );
          } else {
            assert.ok(got instanceof Uint8Array, `${text}: ${got}`);
            assert.deepEqual(got, bytes);
          }
        },
      ),
      { numRuns: 400 },
    );
    // Every cut of short padded values, the two "=" of "QQ==" split apart included. Past
    // 8 characters: the first 8 are gathered whole (a data: URI or an address?), so the
    // padding of anything shorter is never cut.
    for (let n = 7; n <= 11; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      const text = b64(bytes);
      for (let a = 0; a <= text.length; a++) {
        for (let b = a; b <= text.length; b++) {
          const pieces = [text.slice(0, a), text.slice(a, b), text.slice(b)];
          assert.deepEqual(await read(pieces), bytes, pieces.join("|"));
        }
      }
    }
    // Text after the padding, and a leftover that is not base64, are refused too.
    for (const pieces of [["QUJDQQ==", "QUJD"], ["QUJD$$"], ["QUJD", "Q$"]]) {
      const got = await read(pieces).catch((e) => e);
      assert.ok(got instanceof ApiError && got.code === 141, pieces.join("|"));
    }
  } finally {
    await Deno.remove(tmpDir, { recursive: true });
  }
});

test("Base64File refuses text after a value's padding (QUJDQQ==QUI is 141, never the bytes ABCA with more after) and caps an address at 8192 characters (200), without reaching any network", async () => {
  const tmpDir = await Deno.makeTempDir();
  const read = async (pieces: string[]) => {
    const f = new Base64File(0, "image", tmpDir, 1_000_000);
    try {
      for (const p of pieces) f.push(p);
      await f.finish();
      return {
        bytes: await Deno.readFile(f.rec.path).catch(() => undefined),
        f,
      };
    } catch (e) {
      await f.abandon();
      throw e;
    }
  };
  try {
    for (
      const pieces of [["QUJDQQ==QUI"], ["QUJDQQ==", "QUI"], [
        "QUJD",
        "QQ==QUI",
      ]]
    ) {
      const got = await read(pieces).catch((e) => e);
      assert.ok(
        got instanceof ApiError && got.code === 141,
        `${pieces.join("|")}: ${
          got instanceof ApiError ? got.code : JSON.stringify(got)
        }`,
      );
    }
    const ok = await read(["QUJDQQ=="]);
    assert.deepEqual(ok.bytes, new TextEncoder().encode("ABCA"));
    // An address is taken whole up to MAX_URL_LENGTH, refused past it.
    const url = (n: number) => `https://images.test/${"a".repeat(n - 20)}`;
    const fits = new Base64File(0, "image", tmpDir, 1_000_000);
    for (const piece of url(MAX_URL_LENGTH).match(/.{1,1000}/g)!) {
      fits.push(piece);
    }
    await fits.finish();
    assert.equal(fits.rec.url, url(MAX_URL_LENGTH));
    await fits.abandon();
    const long = new Base64File(0, "image", tmpDir, 1_000_000);
    const over = (() => {
      try {
        for (const piece of url(MAX_URL_LENGTH + 1).match(/.{1,1000}/g)!) {
          long.push(piece);
        }
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    await long.abandon();
    assert.ok(over instanceof ApiError && over.code === 200, String(over));
  } finally {
    await Deno.remove(tmpDir, { recursive: true }).catch(() => {});
  }
});
