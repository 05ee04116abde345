/**
 * IMAGE_SERVE=proxy behind a real nginx with deploy/nginx-images.conf as shipped: the app
 * decides (live row, 304), nginx sends the bytes; deletions and expiry still hold.
 */
import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import { test, testEnv, upload, userWithKey } from "./helpers.ts";
import { startNginx } from "./nginx.ts";
import { loadConfig } from "../schemas/config.ts";
import { proxyPath } from "../routes/host.ts";

const SNIPPET = new URL("../deploy/nginx-images.conf", import.meta.url);

/** nginx on loopback in front of `appPort`, with the shipped snippet pointed at `images`. */
async function startProxy(appPort: number, images: string) {
  const snippet = (await Deno.readTextFile(SNIPPET))
    .replace("alias /data/images/;", `alias ${images}/;`);
  assert.ok(snippet.includes(`alias ${images}/;`), "the snippet's alias line");
  return await startNginx(`  server {
    listen LISTEN;
    location / {
      proxy_pass http://127.0.0.1:${appPort};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
${snippet}
  }`);
}

test("IMAGE_SERVE=proxy needs the fs store: with S3 start-up stops and says what to do instead", () => {
  assert.throws(
    () =>
      loadConfig({
        IMAGE_SERVE: "proxy",
        STORE: "s3",
        S3_ENDPOINT: "http://127.0.0.1:9",
        S3_BUCKET: "b",
      }),
    /IMAGE_SERVE.*STORE=fs/s,
  );
  assert.equal(loadConfig({}).IMAGE_SERVE, "app");
});

test("with IMAGE_SERVE=proxy nginx sends the bytes the app vouched for: same bytes and headers, ranges, HEAD, 304 from the app, and deleted or expired images stay 404", async () => {
  const env = await testEnv({ env: { IMAGE_SERVE: "proxy" } });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req) => env.app.fetch(req),
  );
  const nginx = await startProxy(server.addr.port, `${env.dataDir}/images`);
  try {
    const { key } = await userWithKey(env);
    const bytes = await makeImage("jpeg", { width: 700, height: 300 });
    const up = await upload(
      env,
      key,
      formWith([{ name: "p.jpg", bytes }], { expiration: "3600" }),
    );
    const rec = up.body.data;
    const path = `/${rec.image.filename}`;

    // The app alone answers headers and the redirect, no body.
    const direct = await env.app.request(path);
    assert.equal(direct.status, 200);
    assert.equal(
      direct.headers.get("x-accel-redirect"),
      proxyPath(rec.image.filename),
    );
    assert.equal((await direct.arrayBuffer()).byteLength, 0);

    const stored = await Deno.readFile(
      `${env.dataDir}/images/${path.slice(1, 3)}${path}`,
    );
    // What the app sends itself with IMAGE_SERVE=app, from the same database and files.
    const plain = await testEnv({
      database: env.deps.database,
      store: env.deps.store,
    });
    let own = new Response();
    try {
      // The row is cached after the upload, so the fast path answers first; 10 s later
      // the cache no longer vouches for it and the full path answers. Both alike.
      for (const [pass, wait] of [["fast", 0], ["full", 10_001]] as const) {
        env.clock.advance(wait);
        plain.clock.t = env.clock.t;
        own = await plain.app.request(path);
        assert.equal(own.status, 200);
        await own.body?.cancel();
        const got = await fetch(`${nginx.base}${path}`);
        assert.equal(got.status, 200);
        assert.deepEqual(new Uint8Array(await got.arrayBuffer()), stored);
        assert.equal(got.headers.get("x-accel-redirect"), null);
        for (
          const h of [
            "etag",
            "cache-control",
            "content-type",
            "content-security-policy",
            "x-content-type-options",
            "access-control-allow-origin",
            "cross-origin-resource-policy",
            "accept-ranges",
          ]
        ) {
          assert.equal(got.headers.get(h), own.headers.get(h), `${pass}: ${h}`);
        }
        assert.match(got.headers.get("cache-control")!, /max-age=3[56]\d\d$/);
        assert.ok(got.headers.get("x-request-id"));
        assert.equal(got.headers.get("last-modified"), null);
      }
    } finally {
      await plain.close();
    }

    const part = await fetch(`${nginx.base}${path}`, {
      headers: { range: "bytes=10-19" },
    });
    assert.equal(part.status, 206);
    assert.deepEqual(
      new Uint8Array(await part.arrayBuffer()),
      stored.subarray(10, 20),
    );
    const head = await fetch(`${nginx.base}${path}`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), String(stored.length));
    await head.body?.cancel();
    const again = await fetch(`${nginx.base}${path}`, {
      headers: { "if-none-match": own.headers.get("etag")! },
    });
    assert.equal(again.status, 304);
    await again.body?.cancel();
    // The internal location is not reachable from outside.
    const sneak = await fetch(
      `${nginx.base}${proxyPath(rec.image.filename)}`,
    );
    assert.equal(sneak.status, 404);
    await sneak.body?.cancel();
    const thumb = await fetch(`${nginx.base}/${rec.thumb.filename}`);
    assert.equal(thumb.status, 200);
    assert.equal(thumb.headers.get("content-type"), "image/jpeg");
    await thumb.body?.cancel();

    // A transform URL: the app makes the variant, nginx sends its file, Vary and all.
    const webp = await fetch(`${nginx.base}${path}?w=320&format=auto`, {
      headers: { accept: "image/webp,*/*" },
    });
    assert.equal(webp.status, 200);
    assert.equal(webp.headers.get("content-type"), "image/webp");
    assert.equal(webp.headers.get("vary"), "Accept");
    const made = new Uint8Array(await webp.arrayBuffer());
    const variantKey = `${rec.id}.v320x0iq75.webp`;
    assert.deepEqual(
      made,
      await Deno.readFile(
        `${env.dataDir}/images/${variantKey.slice(0, 2)}/${variantKey}`,
      ),
    );
    assert.equal(webp.headers.get("etag"), `"${variantKey}"`);
    const sameAgain = await fetch(`${nginx.base}${path}?w=320&format=auto`, {
      headers: { accept: "image/webp,*/*", "if-none-match": `"${variantKey}"` },
    });
    assert.equal(sameAgain.status, 304);
    await sameAgain.body?.cancel();

    // Expired: the file may still be on disk until the sweeper runs; it is not sent.
    env.clock.advance(3601_000);
    const expired = await fetch(`${nginx.base}${path}`);
    assert.equal(expired.status, 404);
    await expired.body?.cancel();
    env.clock.advance(-3601_000);

    const other = await upload(
      env,
      key,
      formWith([{ name: "q.png", bytes: await makeImage("png") }]),
    );
    const del = await env.app.request(`/api/1/images/${other.body.data.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(del.status, 200);
    const gone = await fetch(`${nginx.base}/${other.body.data.image.filename}`);
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  } finally {
    await nginx.close();
    await server.shutdown();
    await env.close();
  }
});
