import assert from "node:assert/strict";
import { json, test, testEnv } from "./helpers.ts";
import { ConfigError, loadConfig } from "../schemas/config.ts";
import { openApiYaml } from "../routes/docs.ts";
import { documentApp } from "../scripts/document_app.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import { Lifecycle } from "../server/lifecycle.ts";

test("unknown paths get 404 and wrong methods 405 with Allow, both in the envelope", async () => {
  const env = await testEnv();
  try {
    const nf = await json(await env.app.request("/no/such/thing"));
    assert.deepEqual(nf.body, {
      status: 404,
      success: false,
      error: { code: 404, message: "Not found" },
    });
    const { userWithKey } = await import("./helpers.ts");
    const { key } = await userWithKey(env);
    const wrong = await env.app.request("/api/1/upload", {
      method: "PUT",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(wrong.status, 405);
    assert.deepEqual(
      wrong.headers.get("allow")!.split(", ").sort(),
      ["GET", "HEAD", "POST"],
    );
    assert.deepEqual((await wrong.json()).error, {
      code: 405,
      message: "Method not allowed",
    });
    const post = await json(
      await env.app.request("/healthz", { method: "POST" }),
    );
    assert.deepEqual([post.status, post.body.error.code], [405, 405]);
    // Paths no route can match are 404 whatever the method, even when they look like an
    // image file name to a careless pattern (several dots, upper case, NUL, too short).
    for (
      const path of ["/a.b.c.d", "/x.PNG", "/%00.png", "/abc.png", "/..png"]
    ) {
      for (const method of ["GET", "HEAD", "POST"]) {
        const r = await env.app.request(path, { method });
        assert.equal(r.status, 404, `${method} ${path}`);
        if (method !== "HEAD") assert.equal((await r.json()).error.code, 404);
      }
    }
    // A real image-file path with a wrong method is still 405.
    const del = await env.app.request("/abcdefgh.png", { method: "DELETE" });
    assert.equal(del.status, 405);
    assert.equal(del.headers.get("allow"), "GET, HEAD");
  } finally {
    await env.close();
  }
});

test("TRACE, CONNECT, PROPFIND and made-up methods get 405 in the envelope before anything runs, with Allow on a path of ours", async () => {
  const env = await testEnv();
  // A real server wrapped as main.ts wraps it (fetch refuses to build a TRACE request,
  // so the bytes go by hand).
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    new Lifecycle().track(env.app.fetch),
  );
  const raw = async (method: string, path: string) => {
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.addr.port,
    });
    try {
      await conn.write(
        new TextEncoder().encode(
          `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        ),
      );
      const text = await new Response(conn.readable).text();
      const [head, body] = text.split("\r\n\r\n");
      return { status: Number(head.split(" ")[1]), head, body };
    } catch (e) {
      conn.close();
      throw e;
    }
  };
  try {
    for (const method of ["TRACE", "PROPFIND", "BREW"]) {
      const r = await raw(method, "/api/1/images");
      assert.equal(r.status, 405, `${method}: ${r.head}`);
      assert.deepEqual(JSON.parse(r.body), {
        status: 405,
        success: false,
        error: { code: 405, message: "Method not allowed" },
      });
      assert.match(r.head, /\r\nallow: GET, HEAD\r\n/i);
      assert.match(r.head, /\r\ncontent-type: application\/json/i);
    }
    // Not a path of ours: still 405 (the method is what is wrong), without Allow.
    const r = await raw("TRACE", "/nowhere/at/all");
    assert.equal(r.status, 405);
    assert.doesNotMatch(r.head, /\r\nallow:/i);
    // CONNECT, as a proxy client sends it (authority-form): the same envelope. (A CONNECT
    // with a path instead, which HTTP does not allow, is refused by Deno's own parser with
    // an empty 400 before any handler runs.)
    const tunnel = await raw("CONNECT", "127.0.0.1:9");
    assert.equal(tunnel.status, 405, tunnel.head);
    assert.equal(JSON.parse(tunnel.body).error.code, 405);
    assert.doesNotMatch(tunnel.head, /\r\nallow:/i);
  } finally {
    await server.shutdown();
    await env.close();
  }
});

test("malformed JSON gets 160, a wrong content type 415, unknown fields 160 with their path", async () => {
  const env = await testEnv();
  try {
    const { userWithKey } = await import("./helpers.ts");
    const { key } = await userWithKey(env);
    const auth = { authorization: `Bearer ${key}` };
    let r = await json(
      await env.app.request("/api/1/screenshot", {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: '{"url": "http://x", ',
      }),
    );
    assert.deepEqual([r.status, r.body.success, r.body.error.code], [
      400,
      false,
      160,
    ]);
    r = await json(
      await env.app.request("/api/1/screenshot", {
        method: "POST",
        headers: { ...auth, "content-type": "text/plain" },
        body: "url=http://x",
      }),
    );
    assert.deepEqual([r.status, r.body.error.code], [415, 415]);
    r = await json(
      await env.app.request("/api/1/screenshot", {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({
          url: "http://x",
          preset: "nokia-3310",
          zoom: 7,
          bogus: 1,
        }),
      }),
    );
    assert.equal(r.body.error.code, 160);
    const paths = r.body.error.details.map((d: { path: string }) => d.path)
      .sort();
    assert.deepEqual(paths, ["", "preset", "zoom"]);
  } finally {
    await env.close();
  }
});

test("a thrown bug becomes a 500 envelope without a stack trace, and is logged with the request id", async () => {
  const broken: BlobStore = {
    kind: "broken",
    put: () => Promise.reject(new Error("disk on fire")),
    putFile: () => Promise.reject(new Error("disk on fire")),
    get: () => Promise.reject(new Error("disk on fire")),
    stat: () => Promise.reject(new Error("disk on fire")),
    delete: () => Promise.reject(new Error("disk on fire")),
    ping: () => Promise.resolve(true),
    list: () => ({
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(new Error("disk on fire")),
      }),
    }),
  };
  const env = await testEnv({ store: broken });
  try {
    const { userWithKey } = await import("./helpers.ts");
    const { key } = await userWithKey(env);
    const { makeImage, formWith } = await import("./fixtures.ts");
    const res = await env.app.request("/api/1/upload", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: formWith([{ name: "a.png", bytes: await makeImage("png") }]),
    });
    const text = await res.text();
    assert.equal(res.status, 500);
    assert.deepEqual(JSON.parse(text), {
      status: 500,
      success: false,
      error: { code: 500, message: "Internal error" },
    });
    assert.doesNotMatch(text, /disk on fire|at \w+/);
    const rid = res.headers.get("x-request-id")!;
    assert.ok(
      env.log.lines.some((l) =>
        l.request_id === rid && String(l.error).includes("disk on fire")
      ),
    );
    // Nothing half-written: no row for the failed upload.
    assert.equal(
      (await env.deps.database.db.selectFrom("images").selectAll().execute())
        .length,
      0,
    );
  } finally {
    await env.close();
  }
});

test("every request is logged with method, path, status, ms and the X-Request-Id it answered with", async () => {
  const env = await testEnv({ env: { LOG_REQUESTS: "true" } });
  try {
    // A handler answering with immutable headers (Response.redirect); added before the
    // first request builds the router.
    env.app.get(
      "/test-immutable",
      () => Response.redirect("http://127.0.0.1/", 302),
    );
    const res = await env.app.request("/healthz");
    const rid = res.headers.get("x-request-id");
    assert.ok(rid);
    const line = env.log.lines.find((l) => l.msg === "request")!;
    assert.equal(line.method, "GET");
    assert.equal(line.path, "/healthz");
    assert.equal(line.status, 200);
    assert.equal(typeof line.ms, "number");
    assert.equal(line.request_id, rid);

    // Error answers carry it too; a caller's well-formed id is kept, a malformed one is
    // replaced.
    const missing = await env.app.request("/no/such/page");
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get("x-request-id")!, /^[0-9a-f-]{36}$/);
    const mine = await env.app.request("/healthz", {
      headers: { "x-request-id": "trace-42" },
    });
    assert.equal(mine.headers.get("x-request-id"), "trace-42");
    const bad = await env.app.request("/healthz", {
      headers: { "x-request-id": "<script>" },
    });
    assert.match(bad.headers.get("x-request-id")!, /^[0-9a-f-]{36}$/);

    const redirect = await env.app.request("/test-immutable");
    assert.equal(redirect.status, 302);
    assert.match(redirect.headers.get("x-request-id")!, /^[0-9a-f-]{36}$/);
  } finally {
    await env.close();
  }
});

test("healthz answers, and readyz is 503 naming each dependency that is down (database, store, browser)", async () => {
  let browserUp = true;
  const env = await testEnv({
    screenshotter: {
      capture: () => Promise.reject(new Error("not used")),
      ready: () => Promise.resolve(browserUp),
      close: () => Promise.resolve(),
    },
  });
  try {
    assert.deepEqual(
      (await json(await env.app.request("/healthz"))).body.data,
      { ok: true },
    );
    const ready = await json(await env.app.request("/readyz"));
    assert.equal(ready.status, 200);
    assert.equal(ready.body.data.database, "pglite");
    const downNow = async () => {
      const r = await json(await env.app.request("/readyz"));
      assert.equal(r.status, 503);
      assert.equal(r.body.error.code, 250);
      assert.equal(r.headers.get("retry-after"), "5");
      return r.body.error.details.map((d: { path: string }) => d.path);
    };
    env.deps.database.ping = () => Promise.resolve(false);
    assert.deepEqual(await downNow(), ["database"]);
    env.deps.store.ping = () => Promise.resolve(false);
    browserUp = false;
    assert.deepEqual(await downNow(), ["database", "store", "browser"]);
    env.deps.database.ping = () => Promise.resolve(true);
    env.deps.store.ping = () => Promise.resolve(true);
    assert.deepEqual(await downNow(), ["browser"]);
    browserUp = true;
    assert.equal((await env.app.request("/readyz")).status, 200);
  } finally {
    await env.close();
  }
});

test("Swagger UI is at /docs and the spec at /openapi.json and /openapi.yaml", async () => {
  const env = await testEnv();
  try {
    const docs = await env.app.request("/docs");
    assert.equal(docs.status, 200);
    assert.match(await docs.text(), /swagger-ui/i);
    const spec = await (await env.app.request("/openapi.json")).json();
    assert.equal(spec.openapi, "3.1.0");
    assert.ok(spec.paths["/api/1/upload"].post);
    const codes = JSON.stringify(spec.paths["/api/1/upload"].post.responses);
    for (const c of [100, 110, 120, 130, 131, 140, 141, 142, 150]) {
      assert.ok(codes.includes(`"code":${c}`), `code ${c}`);
    }
    const yaml = await env.app.request("/openapi.yaml");
    assert.match(yaml.headers.get("content-type")!, /yaml/);
    assert.match(await yaml.text(), /^openapi: 3\.1\.0/);
  } finally {
    await env.close();
  }
});

test("the committed openapi.yaml equals a fresh generation and lints with 0 errors and 0 warnings", async () => {
  const { app } = await documentApp();
  const fresh = await openApiYaml(app);
  const committed = await Deno.readTextFile(
    new URL("../openapi.yaml", import.meta.url),
  );
  assert.equal(
    committed,
    fresh,
    "openapi.yaml is stale: run `deno task openapi`",
  );
  // No anchors or aliases: the yaml package's parser with its defaults (at most 100
  // aliases) and generators that cannot follow them read it as it is.
  assert.doesNotMatch(fresh, /(?:^|[\s:-])[&*]a\d+\b/m);
  const { parse } = await import("yaml");
  assert.equal(parse(fresh).openapi, "3.1.0");
  const out = await new Deno.Command("npx", {
    // Pinned: a newer recommended rule set must not fail a clean clone by itself.
    args: [
      "-y",
      "@redocly/cli@2.77.0",
      "lint",
      "openapi.yaml",
      "--format=summary",
    ],
    cwd: new URL("..", import.meta.url).pathname,
    env: { REDOCLY_TELEMETRY: "off", NO_UPDATE_NOTIFIER: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.doesNotMatch(text, /^error /m);
  // Warnings too: ambiguous paths, examples that contradict their schema, and the like.
  assert.doesNotMatch(text, /You have \d+ warning/i, text);
});

test("bad configuration values name the variable", () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: "abc" }, /PORT/],
    [{ MAX_FILES: "0" }, /MAX_FILES/],
    [{ BASE_URL: "ftp://x" }, /BASE_URL/],
    [{ STORE: "floppy" }, /STORE/],
    [{ DATABASE_URL: "mysql://x" }, /DATABASE_URL/],
    [{ STORE: "s3" }, /S3_ENDPOINT/],
    [{ SCREENSHOT_TIMEOUT_MS: "-5" }, /SCREENSHOT_TIMEOUT_MS/],
    [{ SCREENSHOT_ALLOW_PRIVATE: "everything" }, /SCREENSHOT_ALLOW_PRIVATE/],
    [{ FETCH_ALLOW_PRIVATE: "10.0.0.0/8,nonsense" }, /FETCH_ALLOW_PRIVATE/],
    [{ URL_IMPORT_TIMEOUT_MS: "5" }, /URL_IMPORT_TIMEOUT_MS/],
    [{ IMAGE_CACHE_MB: "-1" }, /IMAGE_CACHE_MB/],
    [{ SCRATCH: "tape" }, /SCRATCH/],
    [{ SCRATCH: "memory", MEMORY_BODY_MB: "1" }, /MEMORY_BODY_MB/],
    [{ BROWSER_TOKEN: "short" }, /BROWSER_TOKEN/],
    [
      { BROWSER_TOKEN: "0123456789abcdef0" },
      /BROWSER_TOKEN.*BROWSER_WS_ENDPOINT/,
    ],
  ];
  for (const [env, re] of bad) {
    assert.throws(
      () => loadConfig(env),
      (e: Error) => e instanceof ConfigError && re.test(e.message),
    );
  }
  const ok = loadConfig({ PORT: "9000", MAX_FILES: "5" });
  assert.equal(ok.BASE_URL, "http://localhost:9000");
  assert.equal(ok.IMAGE_HOST_URL, "http://localhost:9000");
  assert.equal(ok.MAX_FILES, 5);
  assert.equal(ok.MAX_FILE_BYTES, 32 * 1024 * 1024);
  assert.equal(ok.IMAGE_CACHE_MB, 32);
});

test("a configuration error names a secret variable and its rule, never its value: tokens, keys, secret keys and URLs that may carry a password; other values are quoted", () => {
  const secrets: Record<string, string>[] = [
    { BROWSER_TOKEN: "hunter2-short" },
    { IMAGE_SIGNING_KEY: "hunter2-short" },
    { METRICS_TOKEN: "hunter2-short" },
    { DATABASE_URL: "mysql://admin:hunter2-pass@db.internal/images" },
    { STORE: "s3", S3_ENDPOINT: "ftp://key:hunter2-s3@s3.internal" },
    { BROWSER_WS_ENDPOINT: "tcp://hunter2-endpoint" },
  ];
  for (const env of secrets) {
    const name = Object.keys(env).at(-1)!;
    let message = "";
    try {
      loadConfig(env);
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      message = e.message;
    }
    assert.match(message, new RegExp(name), JSON.stringify(env));
    assert.doesNotMatch(message, /hunter2/, message);
  }
  let plain = "";
  try {
    loadConfig({ PORT: "eighty" });
  } catch (e) {
    plain = (e as Error).message;
  }
  assert.match(plain, /PORT.*\(got "eighty"\)/);
});

test("the service refuses to start on a bad value (a CHROMIUM_PATH naming nothing included) and says which variable", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-badconfig-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: new URL("..", import.meta.url).pathname,
      env: { PORT: "seventy", DATA_DIR: dir },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    assert.match(new TextDecoder().decode(out.stderr), /PORT: .*"seventy"/);
    // Refused before anything was opened: no database or files in the data dir.
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    // An explicit CHROMIUM_PATH naming nothing stops start-up too (it used to fall back
    // to the system's Chromium and log "browser ready").
    const chromium = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: new URL("..", import.meta.url).pathname,
      env: { CHROMIUM_PATH: "/nonexistent", SCREENSHOTS: "on", DATA_DIR: dir },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(chromium.code, 2);
    assert.match(
      new TextDecoder().decode(chromium.stderr),
      /CHROMIUM_PATH: no file at "\/nonexistent"/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("a request with huge headers is refused by the server and the server keeps serving", async () => {
  const env = await testEnv();
  const server = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    onListen: () => {},
  }, env.app.fetch);
  try {
    const { port } = server.addr;
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const big = "x".repeat(256 * 1024);
    await conn.write(
      new TextEncoder().encode(
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${big}\r\n\r\n`,
      ),
    ).catch(() => 0);
    const buf = new Uint8Array(4096);
    const n = await conn.read(buf).catch(() => null);
    conn.close();
    const head = n ? new TextDecoder().decode(buf.subarray(0, n)) : "";
    // Either an explicit 4xx (431/400) or a closed connection; never a 200 or a crash.
    assert.ok(head === "" || /^HTTP\/1\.1 4\d\d/.test(head), head.slice(0, 80));
    const after = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(after.status, 200);
    await after.body?.cancel();
  } finally {
    await server.shutdown();
    await env.close();
  }
});

test("the logged client address is the connection's peer, and X-Forwarded-For's first hop only behind TRUST_PROXY", async () => {
  const forwarded = { "x-forwarded-for": "203.0.113.9, 10.0.0.1" };
  const peer = { remoteAddr: { hostname: "127.0.0.7" } };
  for (
    const [trust, expected] of [["false", "127.0.0.7"], ["true", "203.0.113.9"]]
  ) {
    const env = await testEnv({
      env: { LOG_REQUESTS: "true", TRUST_PROXY: trust },
    });
    try {
      await env.app.request("/healthz", { headers: forwarded }, peer);
      const line = env.log.lines.find((l) => l.msg === "request")!;
      assert.equal(line.ip, expected, `TRUST_PROXY=${trust}`);
    } finally {
      await env.close();
    }
  }
});
