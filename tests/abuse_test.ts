import assert from "node:assert/strict";
import { json, test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { processTag } from "../services/scratch_dir.ts";

/**
 * A multipart body of `fileBytes` zero bytes in one `images` part, produced lazily, with
 * `fields` before the file; counts how many bytes the server pulled from it.
 */
function countingUpload(
  fileBytes: number,
  fields: Record<string, string> = {},
) {
  const boundary = "----abuse" + crypto.randomUUID();
  const enc = new TextEncoder();
  let head = "";
  for (const [k, v] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${k}"` +
      `\r\n\r\n${v}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="images"; ` +
    `filename="big.png"\r\nContent-Type: image/png\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const chunk = new Uint8Array(64 * 1024);
  const stats = { pulled: 0 };
  let sent = 0;
  let stage = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      let piece: Uint8Array;
      if (stage === 0) {
        piece = enc.encode(head);
        stage = 1;
      } else if (sent < fileBytes) {
        piece = chunk.subarray(0, Math.min(chunk.length, fileBytes - sent));
        sent += piece.length;
      } else if (stage === 1) {
        piece = enc.encode(tail);
        stage = 2;
      } else {
        c.close();
        return;
      }
      stats.pulled += piece.length;
      c.enqueue(piece.slice());
    },
  });
  return {
    stats,
    init: {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    } as RequestInit,
  };
}

/** Files left in this process's scratch folders (upload temp files). */
function scratchFiles(env: TestEnv): string[] {
  const out: string[] = [];
  for (const dir of [`${env.dataDir}/tmp/${processTag()}`]) {
    try {
      for (const e of Deno.readDirSync(dir)) out.push(e.name);
    } catch { /* never created */ }
  }
  return out;
}

test("an upload without a valid key is refused after reading at most a 64 KB prefix of its body, and leaves nothing on disk", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const size = 30 * 1024 * 1024;
    // The bound: the 64 KB prefix plus the reads in flight when the check runs.
    const bound = 64 * 1024 * 4;

    // No key anywhere: 100 once the file part begins.
    let up = countingUpload(size);
    let r = await json(await env.app.request("/api/1/upload", up.init));
    assert.deepEqual([r.status, r.body.error.code], [401, 100]);
    assert.ok(up.stats.pulled <= bound, `pulled ${up.stats.pulled} bytes`);

    // A bad header key: 110 before the body is read at all.
    up = countingUpload(size);
    r = await json(
      await env.app.request("/api/1/upload", {
        ...up.init,
        headers: {
          ...(up.init.headers as Record<string, string>),
          authorization: "Bearer ihk_not_a_key",
        },
      }),
    );
    assert.deepEqual([r.status, r.body.error.code], [401, 110]);
    assert.ok(up.stats.pulled <= 64 * 1024, `pulled ${up.stats.pulled} bytes`);

    // A bad body key, and a bad query key: 110 at the first file part.
    up = countingUpload(size, { key: "ihk_wrong" });
    r = await json(await env.app.request("/api/1/upload", up.init));
    assert.deepEqual([r.status, r.body.error.code], [401, 110]);
    assert.ok(up.stats.pulled <= bound, `pulled ${up.stats.pulled} bytes`);
    up = countingUpload(size);
    r = await json(await env.app.request("/api/1/upload?key=ihk_bad", up.init));
    assert.deepEqual([r.status, r.body.error.code], [401, 110]);
    assert.ok(up.stats.pulled <= bound, `pulled ${up.stats.pulled} bytes`);

    // Fields alone, over 64 KB of them, with no key among them: refused at the prefix.
    up = countingUpload(size, { a: "x".repeat(60_000), b: "y".repeat(60_000) });
    r = await json(await env.app.request("/api/1/upload", up.init));
    assert.deepEqual([r.status, r.body.error.code], [401, 100]);
    assert.ok(up.stats.pulled <= bound + 64 * 1024, `${up.stats.pulled}`);

    assert.deepEqual(scratchFiles(env), []);

    // A valid key in the body, ahead of the file, still uploads (here: a real PNG).
    const png = await makeImage("png");
    r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        body: formWith([{ name: "ok.png", bytes: png }], { key }),
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
  } finally {
    await env.close();
  }
});

test("a keyless upload to a real server is answered 401 while the client is still sending, and the server keeps serving", async () => {
  const env = await testEnv();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    env.app.fetch,
  );
  try {
    const up = countingUpload(200 * 1024 * 1024);
    const base = `http://127.0.0.1:${server.addr.port}`;
    const res = await fetch(`${base}/api/1/upload`, up.init);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 100);
    // The client's stream was not drained to its end: the server stopped reading early.
    assert.ok(up.stats.pulled < 50 * 1024 * 1024, `${up.stats.pulled}`);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await server.shutdown();
    await env.close();
  }
});

test("an empty key in a JSON body, a form or the query does not hide a real key of lower precedence", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png");
    // Multipart: an empty `key` field, the real key in the query.
    let r = await json(
      await env.app.request(`/api/1/upload?key=${key}`, {
        method: "POST",
        body: formWith([{ name: "e.png", bytes: png }], { key: "" }),
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // JSON: {"key":""} with the real key in the query reaches the route, which refuses the
    // loopback address (210): authentication passed.
    r = await json(
      await env.app.request(`/api/1/screenshot?key=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key: "", url: "http://127.0.0.1:1/" }),
      }),
    );
    assert.deepEqual([r.status, r.body.error.code], [403, 210]);
    // And with nothing but empty keys: 100, not 110.
    r = await json(
      await env.app.request(`/api/1/images/abcdefgh?key=`, {
        method: "GET",
      }),
    );
    assert.deepEqual([r.status, r.body.error.code], [401, 100]);
  } finally {
    await env.close();
  }
});

test("expiration is a plain decimal integer: hex, exponent, sign, fraction and spaces get 160", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 33 });
    for (
      const bad of ["0x100", "1e3", "+600", "600.0", " 600", "600 ", "٦٠٠"]
    ) {
      const r = await json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: formWith([{ name: "e.png", bytes: png }], { expiration: bad }),
        }),
      );
      assert.deepEqual(
        [r.status, r.body.error.code, r.body.error.details?.[0]?.path],
        [400, 160, "expiration"],
        `expiration=${JSON.stringify(bad)}`,
      );
    }
    const r = await json(
      await env.app.request("/api/1/upload?expiration=600", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{ name: "e.png", bytes: png }]),
      }),
    );
    assert.deepEqual([r.status, r.body.data.expiration], [200, 600]);
  } finally {
    await env.close();
  }
});
