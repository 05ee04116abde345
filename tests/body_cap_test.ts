import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  base64Length,
  bodyCap,
  bodyKindOf,
} from "../services/bodies/budgets.ts";
import { memoryFileNames } from "../services/runtime/scratch_files.ts";
import { json, test, testEnv, uploadDeclared, userWithKey } from "./helpers.ts";
import { makeNoiseJpeg } from "./fixtures.ts";

const MiB = 1024 * 1024;

/**
 * A body stream that only says how much of it was asked for: nothing is queued before a
 * read (highWaterMark 0), so `pulled` counts exactly what the service read.
 */
function watchedBody(chunk: number, chunks: number) {
  const seen = { pulled: 0, cancelled: false };
  let left = chunks;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (left-- <= 0) return c.close();
      seen.pulled += chunk;
      c.enqueue(new Uint8Array(chunk));
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, seen };
}

test("an upload body's cap is every image as base64 text, bounded by the request's budget where there is one, in each body kind's encoding", () => {
  const limits = { maxFiles: 15, maxFileBytes: 32 * MiB };
  const framing = 4 * MiB;
  assert.equal(
    bodyCap("multipart", limits),
    15 * base64Length(32 * MiB) + framing,
  );
  // A form's base64 may be percent-encoded (three characters each), JSON's escaped (two).
  assert.equal(
    bodyCap("urlencoded", limits),
    3 * 15 * base64Length(32 * MiB) + framing,
  );
  assert.equal(
    bodyCap("json", limits),
    2 * 15 * base64Length(32 * MiB) + framing,
  );
  // Memory scratch: 32 MB of images a request, however many files: ~48 MB of body.
  const memory = bodyCap("multipart", { ...limits, requestBytes: 32 * MiB });
  assert.equal(memory, base64Length(32 * MiB) + 15 * 1024 + framing);
  assert.ok(memory > 47 * MiB && memory < 48 * MiB, String(memory));
  // A budget larger than the files' own limits changes nothing.
  assert.equal(
    bodyCap("json", { ...limits, requestBytes: 10_000 * MiB }),
    bodyCap("json", limits),
  );
  // base64 of n bytes: 4 characters per 3, a line break each 76, some slack.
  assert.equal(base64Length(3), 4 + 2 + 1024);
  assert.ok(
    base64Length(MiB) >= Buffer.from(new Uint8Array(MiB)).toString("base64")
      .length,
  );
  assert.equal(bodyKindOf("multipart/form-data; boundary=x"), "multipart");
  assert.equal(bodyKindOf("Application/JSON; charset=utf-8"), "json");
  assert.equal(
    bodyKindOf("application/x-www-form-urlencoded"),
    "urlencoded",
  );
  assert.equal(bodyKindOf("text/plain"), undefined);
});

test("an upload declared longer than its images could come to is 413 before a byte is read (memory and disk scratch), and one within it is read and stored", async () => {
  // Memory scratch with 1 MB of images a request: the body cap is ~5.4 MB.
  const mem = await testEnv({
    env: { SCRATCH: "memory", MEMORY_REQUEST_MB: "1" },
  });
  // Disk scratch, one file of at most 1000 bytes: the cap is ~4 MB.
  const disk = await testEnv({
    env: { MAX_FILES: "1", MAX_FILE_BYTES: "1000" },
  });
  try {
    for (const [env, declared] of [[mem, 6 * MiB], [disk, 5 * MiB]] as const) {
      const { key } = await userWithKey(env);
      const { stream, seen } = watchedBody(64 * 1024, declared / (64 * 1024));
      const r = await json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "multipart/form-data; boundary=zzz",
            "content-length": String(declared),
          },
          body: stream,
        }),
      );
      assert.deepEqual([r.status, r.body.error.code], [413, 413]);
      assert.match(
        r.body.error.details[0].message,
        /longer than this request's images could come to/,
      );
      assert.equal(seen.pulled, 0, "not a byte of the body was read");
      assert.equal(seen.cancelled, true);
    }
    // Within the cap, a body that carries its image as base64 text (a third larger than
    // the image: what the cap allows for) is read and stored as ever, though the body is
    // longer than the request's 1 MB of images.
    const { key } = await userWithKey(mem);
    const jpeg = await makeNoiseJpeg(950, 950);
    const text = Buffer.from(jpeg).toString("base64");
    assert.ok(jpeg.length < MiB && text.length > MiB, String(jpeg.length));
    const fd = new FormData();
    fd.append("image", text);
    const ok = await uploadDeclared(mem, key, fd);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.data.size, jpeg.length);
    assert.deepEqual(memoryFileNames(), []);
  } finally {
    await mem.close();
    await disk.close();
  }
});
