import assert from "node:assert/strict";
import {
  fetchBytes,
  json,
  scratchFiles,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { makeImage } from "./fixtures.ts";
import { countingListener, startFixture } from "./fixture_server.ts";
import { nameOf } from "../services/net/url_import.ts";
import { createApiClient } from "../sdk/src/client.ts";
import type { ServiceError } from "../sdk/src/errors.ts";

const PNG = new Uint8Array(await makeImage("png", { width: 70, height: 40 }));

/** Downloads of /slow under way now, and the most at once. */
const slowGets = { now: 0, most: 0 };

/** The image fixture: allowed by FETCH_ALLOW_PRIVATE for its port only. */
function imageFixture(deniedPort: number) {
  const redirect = (to: string, status = 302) =>
    new Response(null, { status, headers: { location: to } });
  return startFixture({
    "/cat.png": () =>
      new Response(PNG, { headers: { "content-type": "image/png" } }),
    // Bytes decide, not headers: a PNG served as HTML is a PNG.
    "/lying.html": () =>
      new Response(PNG, { headers: { "content-type": "text/html" } }),
    "/notes.txt": () => new Response("just words, not an image"),
    "/to-cat": () => redirect("/cat.png", 301),
    "/chain": (req) => {
      const n = Number(new URL(req.url).searchParams.get("n"));
      return redirect(n <= 0 ? "/cat.png" : `/chain?n=${n - 1}`, 307);
    },
    "/to-denied": () => redirect(`http://127.0.0.1:${deniedPort}/x.png`),
    "/to-ftp": () => redirect("ftp://127.0.0.1/x.png"),
    "/big-announced": () =>
      new Response(new Uint8Array(50_000), {
        headers: { "content-length": "50000" },
      }),
    // Chunked, no length: the limit must cut the stream itself.
    "/big-streamed": () => {
      let sent = 0;
      return new Response(
        new ReadableStream({
          pull(c) {
            if (sent >= 200_000) return c.close();
            sent += 10_000;
            c.enqueue(new Uint8Array(10_000));
          },
        }),
      );
    },
    // Headers, a few bytes, then nothing: only the import's deadline ends it.
    "/stall": () =>
      new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(PNG.slice(0, 16));
          },
        }),
      ),
    "/missing.png": () => new Response("gone", { status: 404 }),
    // A PNG after 300 ms, counting how many are being fetched at once.
    "/slow": async () => {
      slowGets.most = Math.max(slowGets.most, ++slowGets.now);
      await new Promise((r) => setTimeout(r, 300));
      slowGets.now--;
      return new Response(PNG, { headers: { "content-type": "image/png" } });
    },
  });
}

async function withImportEnv(
  fn: (
    env: TestEnv,
    key: string,
    fx: ReturnType<typeof imageFixture>,
    denied: ReturnType<typeof countingListener>,
  ) => Promise<void>,
) {
  const denied = countingListener();
  const fx = imageFixture(denied.port);
  const env = await testEnv({
    env: {
      FETCH_ALLOW_PRIVATE: `127.0.0.1:${fx.port}`,
      MAX_FILE_BYTES: "20000",
      URL_IMPORT_TIMEOUT_MS: "1500",
    },
  });
  try {
    const { key } = await userWithKey(env);
    await fn(env, key, fx, denied);
  } finally {
    await env.close();
    await fx.close();
    await denied.close();
  }
}

/** Every way a client can send one URL, crossed with every place it can put the key. */
function requestsFor(url: string, key: string): [string, Request][] {
  const u = encodeURIComponent(url);
  const base = "http://localhost/api/1/upload";
  const form = (fields: [string, string][]) => {
    const f = new FormData();
    for (const [k, v] of fields) f.append(k, v);
    return f;
  };
  return [
    [
      "multipart source field, body key",
      new Request(base, {
        method: "POST",
        body: form([["key", key], ["source", url]]),
      }),
    ],
    [
      "multipart image field, bearer",
      new Request(base, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: form([["image", url]]),
      }),
    ],
    [
      "urlencoded source, body key",
      new Request(base, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `key=${key}&source=${u}&format=json`,
      }),
    ],
    [
      "urlencoded image, X-API-Key",
      new Request(base, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-api-key": key,
        },
        body: `image=${u}`,
      }),
    ],
    [
      "JSON image, body key",
      new Request(base, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key, image: url }),
      }),
    ],
    [
      "JSON image, query key",
      new Request(`${base}?key=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ image: url }),
      }),
    ],
    [
      "POST ?source= without a body, query key",
      new Request(`${base}?key=${key}&source=${u}`, { method: "POST" }),
    ],
    [
      "GET ?source=, X-API-Key",
      new Request(`${base}?source=${u}`, { headers: { "x-api-key": key } }),
    ],
    [
      "GET ?source=, bearer",
      new Request(`${base}?source=${u}`, {
        headers: { authorization: `Bearer ${key}` },
      }),
    ],
  ];
}

function tempFiles(env: TestEnv): string[] {
  return scratchFiles(env);
}

test("a URL in any body type or ?source=, with the key in any place, is downloaded and stored byte for byte (sniffed from the bytes, named after the path)", async () => {
  await withImportEnv(async (env, key, fx) => {
    const cases = [
      ...requestsFor(`${fx.origin}/cat.png`, key),
      ...requestsFor(`${fx.origin}/to-cat`, key).slice(0, 1),
      ...requestsFor(`${fx.origin}/lying.html`, key).slice(2, 3),
      ...requestsFor(`${fx.origin}/chain?n=4`, key).slice(4, 5),
    ];
    let first: string | undefined;
    for (const [what, req] of cases) {
      const r = await json(await env.app.request(req));
      assert.equal(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
      const rec = r.body.data;
      assert.equal(rec.image.mime, "image/png", what);
      assert.deepEqual([rec.width, rec.height], [70, 40], what);
      const served = await fetchBytes(env, new URL(rec.url).pathname);
      assert.deepEqual(served.bytes, PNG, what);
      // The same bytes every time: one image, later ones are duplicates of it.
      first ??= rec.id;
      assert.equal(rec.id, first, what);
    }
    assert.equal(
      fx.requests.filter((q) => q.path === "/cat.png").length,
      cases.length - 1, // all but the one served as .html
    );
    assert.deepEqual(tempFiles(env), []);
  });
});

test("several URLs (a list, repeated fields, ?source= and a body) are several images; a failing one is a per-file error", async () => {
  await withImportEnv(async (env, key, fx) => {
    const other = await makeImage("png", { width: 33 });
    const r = await json(
      await env.app.request(
        `/api/1/upload?source=${encodeURIComponent(`${fx.origin}/cat.png`)}`,
        {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": key },
          body: JSON.stringify({
            image: [
              `data:image/png;base64,${btoa(String.fromCharCode(...other))}`,
              `${fx.origin}/notes.txt`,
            ],
          }),
        },
      ),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.count, 2);
    assert.deepEqual(
      r.body.data.images.map((i: { width: number }) => i.width),
      [33, 70],
    );
    assert.deepEqual(r.body.data.errors, [{
      index: 1,
      filename: `${fx.origin}/notes.txt`,
      code: 141,
      message: "Unsupported image type",
    }]);
  });
});

test("the URL imports of one request are fetched URL_IMPORTS_AT_ONCE at a time, and all share one URL_IMPORT_TIMEOUT_MS (they ran one after another: 15 slow ones took 90 s)", async () => {
  await withImportEnv(async (env, key, fx) => {
    const post = (urls: string[]) =>
      env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ image: urls }),
      });
    slowGets.most = 0;
    const eight = await json(
      await post(
        Array.from({ length: 8 }, (_, i) => `${fx.origin}/slow?i=${i}`),
      ),
    );
    assert.equal(eight.status, 200, JSON.stringify(eight.body));
    assert.equal(eight.body.data.count, 8);
    assert.equal(slowGets.most, 4, "four at a time (the default)");
    // Six stalled downloads, 1.5 s allowed (URL_IMPORT_TIMEOUT_MS here): one deadline for
    // all of them, not 1.5 s each one after another (9 s).
    const t0 = Date.now();
    const stalled = await json(
      await post(
        Array.from({ length: 6 }, (_, i) => `${fx.origin}/stall?i=${i}`),
      ),
    );
    const ms = Date.now() - t0;
    assert.equal(stalled.status, 422, JSON.stringify(stalled.body));
    assert.equal(stalled.body.error.code, 150);
    assert.deepEqual(
      stalled.body.error.details.map((d: { code: number }) => d.code),
      [231, 231, 231, 231, 231, 231],
    );
    assert.ok(ms < 6000, `answered after ${ms} ms`);
    assert.deepEqual(scratchFiles(env), []);
  });
});

test("URL import errors: non-image 141, too large 130 (announced or streamed), stalled 231, HTTP 404 and too many redirects 221, bad scheme 200; nothing stored, no temp file left", async () => {
  await withImportEnv(async (env, key, fx) => {
    const cases: [string, number, number][] = [
      ["/notes.txt", 415, 141],
      ["/big-announced", 413, 130],
      ["/big-streamed", 413, 130],
      ["/stall", 504, 231],
      ["/missing.png", 502, 221],
      // Six redirects, one past the five allowed (chain?n=4, five, is stored above).
      ["/chain?n=5", 502, 221],
      ["/chain?n=6", 502, 221],
      ["/to-ftp", 400, 200],
    ];
    for (const [path, status, code] of cases) {
      const r = await json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key, image: `${fx.origin}${path}` }),
        }),
      );
      assert.deepEqual(
        [r.status, r.body.error?.code],
        [status, code],
        `${path}: ${JSON.stringify(r.body)}`,
      );
      // The import's own errors name the field; 141 is the pipeline's verdict on bytes.
      if (code !== 141) {
        assert.equal(r.body.error.details?.[0]?.path, "image", path);
      }
    }
    const bad = await json(
      await env.app.request(
        `/api/1/upload?key=${key}&source=${
          encodeURIComponent("ftp://x/y.png")
        }`,
      ),
    );
    assert.deepEqual([bad.status, bad.body.error.code], [400, 200]);
    const none = await json(
      await env.app.request(`/api/1/upload?key=${key}`),
    );
    assert.deepEqual(
      [none.status, none.body.error.code, none.body.error.details[0].path],
      [400, 160, "source"],
    );
    assert.deepEqual(await storedKeys(env), []);
    assert.deepEqual(tempFiles(env), []);
  });
});

test("a URL to a denied address, directly, over https (CONNECT) or by redirect, is 210 and the denied port never sees a connection", async () => {
  await withImportEnv(async (env, key, fx, denied) => {
    const targets = [
      `http://127.0.0.1:${denied.port}/x.png`,
      `https://127.0.0.1:${denied.port}/x.png`,
      `http://localhost:${denied.port}/x.png`,
      `http://[::ffff:127.0.0.1]:${denied.port}/x.png`,
      `${fx.origin}/to-denied`,
    ];
    for (const target of targets) {
      for (const [what, req] of requestsFor(target, key).slice(2, 5)) {
        const r = await json(await env.app.request(req));
        assert.deepEqual(
          [r.status, r.body.error?.code],
          [403, 210],
          `${target} (${what}): ${JSON.stringify(r.body)}`,
        );
      }
    }
    assert.equal(denied.accepted, 0, "connections the denied port accepted");
    assert.deepEqual(await storedKeys(env), []);
  });
});

test("without an allow-list entry the image fixture itself is refused: loopback is never fetched by default", async () => {
  const fx = imageFixture(1);
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const r = await json(
      await env.app.request(
        `/api/1/upload?key=${key}&source=${
          encodeURIComponent(`${fx.origin}/cat.png`)
        }`,
      ),
    );
    assert.deepEqual([r.status, r.body.error.code], [403, 210]);
    assert.equal(fx.requests.length, 0);
  } finally {
    await env.close();
    await fx.close();
  }
});

test("an import's name is the last path segment, decoded, without control characters", () => {
  assert.equal(
    nameOf(new URL("http://h/a/b/cat%20pic.png?x=1")),
    "cat pic.png",
  );
  assert.equal(nameOf(new URL("http://h/")), "image");
  assert.equal(nameOf(new URL("http://h/%E0%A4%A")), "%E0%A4%A");
  assert.equal(nameOf(new URL("http://h/a%0Ab.png")), "ab.png");
});

test("the typed SDK imports by URL (importUrls) and its errors carry the import's code", async () => {
  await withImportEnv(async (env, key, fx) => {
    const api = createApiClient({
      baseUrl: "http://localhost",
      apiKey: key,
      fetch: (async (input: string, init?: RequestInit) =>
        await env.app.request(input, init)) as typeof fetch,
    });
    const one = await api.importUrls(`${fx.origin}/cat.png`, {
      title: "from the web",
    });
    const rec = one.data as { title: string; width: number };
    assert.deepEqual([rec.title, rec.width], ["from the web", 70]);
    await assert.rejects(
      api.importUrls(`${fx.origin}/missing.png`),
      (e: ServiceError) => e.code === 221 && e.status === 502,
    );
  });
});

test("URL imports count against MAX_FILES (131, nothing fetched) and when every one fails the answer is 150 with each file's error", async () => {
  await withImportEnv(async (env, key, fx) => {
    const url = (p: string) => encodeURIComponent(`${fx.origin}${p}`);
    const many = Array.from({ length: 16 }, () => `source=${url("/cat.png")}`)
      .join("&");
    const before = fx.requests.length;
    const r = await json(
      await env.app.request(`/api/1/upload?key=${key}&${many}`),
    );
    assert.deepEqual([r.status, r.body.error.code], [400, 131]);
    assert.equal(fx.requests.length, before, "nothing fetched");
    const all = await json(
      await env.app.request(
        `/api/1/upload?key=${key}&source=${url("/notes.txt")}&source=${
          url("/missing.png")
        }`,
        { method: "POST" },
      ),
    );
    assert.deepEqual([all.status, all.body.error.code], [422, 150]);
    assert.deepEqual(
      all.body.error.details.map((d: { index: number; code: number }) => [
        d.index,
        d.code,
      ]),
      [[0, 141], [1, 221]],
    );
  });
});
