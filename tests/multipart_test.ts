import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  BODY_BUFFERS,
  receiveMultipart,
} from "../services/bodies/multipart.ts";
import { BufferPool } from "../services/bodies/buffer_pool.ts";
import { ApiError } from "../schemas/errors.ts";
import { test } from "./helpers.ts";

const enc = new TextEncoder();

/** Deterministic pseudo-random bytes (xorshift), so a failure can be replayed. */
function rng(seed: number) {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

type Part = { field: string; filename?: string; data: Uint8Array };

function body(parts: Part[], boundary: string, closed = true): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    const disp = p.filename === undefined
      ? `form-data; name="${p.field}"`
      : `form-data; name="${p.field}"; filename="${p.filename}"`;
    chunks.push(
      enc.encode(`--${boundary}\r\nContent-Disposition: ${disp}\r\n\r\n`),
      p.data,
      enc.encode("\r\n"),
    );
  }
  if (closed) chunks.push(enc.encode(`--${boundary}--\r\n`));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** A plain (non-byte) stream of the bytes in chunks of random sizes. */
function chunked(bytes: Uint8Array, rand: () => number, max: number) {
  let off = 0;
  return new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (off >= bytes.length) return ctl.close();
      const n = 1 + Math.floor(rand() * max);
      // A copy, as a network stream would hand out fresh buffers.
      ctl.enqueue(bytes.slice(off, off + n));
      off += n;
    },
  });
}

/** Random bytes that also contain boundary-like runs, to tempt the parser. */
function tricky(rand: () => number, size: number, boundary: string) {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = Math.floor(rand() * 256);
  const lure = enc.encode(`\r\n--${boundary.slice(0, -1)}`);
  for (let k = 0; k < 3 && size > lure.length; k++) {
    b.set(lure, Math.floor(rand() * (size - lure.length)));
  }
  return b;
}

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

test("random multipart bodies in random chunk sizes are received byte for byte with their fields", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (let seed = 1; seed <= 12; seed++) {
      const rand = rng(seed * 7919);
      const boundary = `----b${seed}x${Math.floor(rand() * 1e9)}`;
      const parts: Part[] = [];
      const expected: Uint8Array[] = [];
      const fields: Record<string, string> = {};
      const count = 1 + Math.floor(rand() * 5);
      for (let i = 0; i < count; i++) {
        if (rand() < 0.5) {
          // Fields up to 60 KB, so some straddle the 64 KB reads.
          const value = "v".repeat(Math.floor(rand() * 60_000)) + `#${i}`;
          fields[`f${i}`] = value;
          parts.push({ field: `f${i}`, data: enc.encode(value) });
        }
        const size = [0, 1, 65_535, 65_536, 300_000][Math.floor(rand() * 5)] +
          Math.floor(rand() * 3);
        const data = tricky(rand, size, boundary);
        expected.push(data);
        parts.push({ field: "images", filename: `f${i}.bin`, data });
      }
      const bytes = body(parts, boundary);
      const form = await receiveMultipart(
        // The first seeds trickle in pieces of at most 50 bytes, as a slow client would.
        chunked(bytes, rand, seed <= 3 ? 50 : 1 + Math.floor(rand() * 200_000)),
        `multipart/form-data; boundary=${boundary}`,
        { tmpDir: dir, maxFileBytes: 1_000_000, maxFiles: 15 },
      );
      assert.equal(form.files.length, expected.length, `seed ${seed}`);
      for (const [i, f] of form.files.entries()) {
        const got = await Deno.readFile(f.path);
        assert.equal(got.length, expected[i].length, `seed ${seed} file ${i}`);
        assert.ok(got.every((b, k) => b === expected[i][k]), `seed ${seed}`);
        assert.equal(f.size, expected[i].length);
        assert.equal(f.sha256, sha(expected[i]));
        assert.equal(f.truncated, false);
        assert.equal(f.filename, `f${i}.bin`);
      }
      assert.deepEqual(form.fields, fields, `seed ${seed}`);
      await form.cleanup();
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A real server (its request bodies are byte streams, read BYOB) that receives each body
 * with receiveMultipart and answers what arrived: the fields, and each file's size, its
 * hash as received and the hash of its bytes on disk.
 */
function receivingServer(dir: string) {
  return Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (req) => {
      const form = await receiveMultipart(
        req.body!,
        req.headers.get("content-type")!,
        { tmpDir: dir, maxFileBytes: 3_000_000, maxFiles: 15 },
      );
      const files = await Promise.all(form.files.map(async (f) => ({
        size: f.size,
        sha: f.sha256,
        disk: sha(await Deno.readFile(f.path)),
      })));
      await form.cleanup();
      return Response.json({ fields: form.fields, files });
    },
  );
}

test("a request body read by a real server (BYOB reads into reused buffers) arrives intact", async () => {
  const dir = await Deno.makeTempDir();
  const rand = rng(42);
  const boundary = "----served";
  const files = [
    tricky(rand, 2_000_000, boundary),
    tricky(rand, 70_000, boundary),
  ];
  const key = "k".repeat(64_000);
  const bytes = body([
    { field: "images", filename: "a.jpg", data: files[0] },
    { field: "key", data: enc.encode(key) },
    { field: "images", filename: "b.jpg", data: files[1] },
  ], boundary);
  const server = receivingServer(dir);
  try {
    const r = await fetch(`http://127.0.0.1:${server.addr.port}/`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body: chunked(bytes, rand, 100_000),
    });
    const out = await r.json();
    assert.equal(out.fields.key, key);
    assert.deepEqual(
      out.files,
      files.map((f) => ({ size: f.length, sha: sha(f), disk: sha(f) })),
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

test("a file over the per-file limit is cut there and marked truncated", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = tricky(rng(5), 500_000, "----t");
    const form = await receiveMultipart(
      chunked(
        body([{ field: "images", filename: "x", data }], "----t"),
        rng(6),
        70_000,
      ),
      "multipart/form-data; boundary=----t",
      { tmpDir: dir, maxFileBytes: 100_000, maxFiles: 15 },
    );
    assert.equal(form.files[0].truncated, true);
    assert.equal(form.files[0].size, 100_000);
    assert.equal((await Deno.stat(form.files[0].path)).size, 100_000);
    await form.cleanup();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Sends one file part of `size` tricky bytes (the closing boundary left off when `closed`
 * is false) and returns what receiving it threw, after checking it left no temp file.
 */
async function refusal(
  seed: number,
  size: number,
  limits: { maxFileBytes: number; maxFiles: number },
  opts: { closed?: boolean; missingDir?: boolean } = {},
): Promise<unknown> {
  const dir = await Deno.makeTempDir();
  try {
    const boundary = `----r${seed}`;
    const data = tricky(rng(seed), size, boundary);
    const bytes = body(
      [{ field: "images", filename: "x", data }],
      boundary,
      opts.closed ?? true,
    );
    const err = await receiveMultipart(
      chunked(bytes, rng(seed + 1), 65_536),
      `multipart/form-data; boundary=${boundary}`,
      // A folder that does not exist stands in for a full or broken disk.
      { tmpDir: opts.missingDir ? `${dir}/missing` : dir, ...limits },
    ).then(() => undefined, (e) => e);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    return err;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const isCode = (e: unknown, code: number) =>
  e instanceof ApiError && e.code === code;

test("a body cut off before its closing boundary gets 160 and leaves no temp file", async () => {
  const err = await refusal(7, 300_000, {
    maxFileBytes: 1_000_000,
    maxFiles: 15,
  }, { closed: false });
  assert.ok(isCode(err, 160), String(err));
});

test("a body over the whole-request cap gets 413 and leaves no temp file", async () => {
  // Cap: 1 file × 10 KB + 4 MB; the body is 5 MB.
  const err = await refusal(9, 5_000_000, {
    maxFileBytes: 10_000,
    maxFiles: 1,
  });
  assert.ok(isCode(err, 413), String(err));
});

test("a temp file that cannot be written is an internal error, not a malformed body", async () => {
  const err = await refusal(11, 200_000, {
    maxFileBytes: 1_000_000,
    maxFiles: 15,
  }, { missingDir: true });
  assert.ok(err instanceof Deno.errors.NotFound, String(err));
});

test("concurrent bodies read by a real server share the process's buffers, each arriving intact, and the next request reuses them", async () => {
  const dir = await Deno.makeTempDir();
  const rand = rng(4242);
  const boundary = "----pooled";
  const server = receivingServer(dir);
  const send = async (files: Uint8Array[]) => {
    const bytes = body(
      files.map((data, i) => ({ field: "images", filename: `${i}.jpg`, data })),
      boundary,
    );
    const r = await fetch(`http://127.0.0.1:${server.addr.port}/`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body: chunked(bytes, rand, 100_000),
    });
    assert.deepEqual(
      (await r.json()).files,
      files.map((f) => ({ size: f.length, sha: sha(f), disk: sha(f) })),
    );
  };
  const { reads, writes } = BODY_BUFFERS;
  try {
    // Sixteen bodies at once, of one to three files from 1 byte to 600 KB: no request's
    // bytes end up in another's file, whichever buffers they were handed.
    await Promise.all(Array.from({ length: 16 }, (_, i) =>
      send(Array.from(
        { length: 1 + (i % 3) },
        (_, k) =>
          tricky(rand, [1, 65_536, 200_000, 600_000][(i + k) % 4], boundary),
      ))));
    assert.ok(reads.free > 0 && reads.free <= reads.keep, `${reads.free}`);
    assert.ok(writes.free > 0 && writes.free <= writes.keep, `${writes.free}`);
    // One request after another takes what the previous one gave back: the pools
    // neither grow (new buffers) nor shrink (buffers kept).
    await send([tricky(rand, 200_000, boundary)]);
    const after = [reads.free, writes.free];
    for (let i = 0; i < 3; i++) {
      await send([tricky(rand, 200_000, boundary)]);
      assert.deepEqual([reads.free, writes.free], after);
    }
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

test("the buffer pool keeps at most its bound, never a detached buffer or one given twice", () => {
  const pool = new BufferPool(1024, 2);
  const a = pool.take(), b = pool.take(), c = pool.take();
  assert.equal(a.byteLength, 1024);
  pool.give(a);
  pool.give(a);
  assert.equal(pool.free, 1);
  assert.equal(pool.take(), a);
  // A BYOB read detaches the buffer it was handed: that one is never reused.
  const moved = b.transfer();
  pool.give(b);
  assert.equal(pool.free, 0);
  pool.give(new ArrayBuffer(512));
  assert.equal(pool.free, 0);
  pool.give(moved);
  pool.give(c);
  pool.give(a);
  assert.equal(pool.free, 2);
  assert.notEqual(pool.take(), pool.take());
  assert.equal(pool.free, 0);
});
