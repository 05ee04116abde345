import assert from "node:assert/strict";
import { appSettled } from "../app.ts";
import sharp from "sharp";
import { join } from "node:path";
import { proxyPath } from "../routes/host.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import {
  formWith,
  makeBmp24,
  makeImage,
  makeJpegWithGps,
  makeNoiseJpeg,
} from "./fixtures.ts";
import {
  CountingStore,
  fetchBytes,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";

async function withStore(
  fn: (
    env: TestEnv,
    store: CountingStore,
    key: string,
    dir: string,
  ) => Promise<void>,
  env: Record<string, string> = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-fixed-" });
  const store = await new CountingStore(dir, /\.(th|md)\./).init();
  const e = await testEnv({ store: store as BlobStore, env });
  try {
    const { key } = await userWithKey(e);
    await fn(e, store, key, dir);
  } finally {
    await e.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function uploaded(
  env: TestEnv,
  key: string,
  bytes: Uint8Array,
  name: string,
) {
  const r = await upload(env, key, formWith([{ name, bytes }]));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}

const pathOf = (url: string) => new URL(url).pathname;

test("an upload stores its original alone; the medium its record names is made at its first request (1024 px, the thumbnail's encoding), stored, and then served as a file with 304, HEAD and ranges", async () => {
  await withStore(async (env, store, key) => {
    const d = await uploaded(env, key, await makeNoiseJpeg(1500, 900), "p.jpg");
    const mediumPath = pathOf(d.medium.url);
    assert.equal(mediumPath, `/${d.id}.md.jpg`);
    assert.deepEqual(await storedKeys(env), [`${d.id}.jpg`]);
    const first = await fetchBytes(env, mediumPath);
    assert.equal(first.res.status, 200);
    assert.equal(first.res.headers.get("content-type"), "image/jpeg");
    assert.equal(first.res.headers.get("etag"), `"${d.id}.md.jpg"`);
    const meta = await sharp(first.bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [1024, 614]);
    assert.equal(store.puts, 1);
    // Its file is written after the answer (sent from memory): there once settled.
    await appSettled(env.app);
    assert.ok((await storedKeys(env)).includes(`${d.id}.md.jpg`));
    const again = await fetchBytes(env, mediumPath);
    assert.deepEqual(again.bytes, first.bytes);
    assert.equal(store.puts, 1, "made once, then served as stored");
    const fresh = await env.app.request(mediumPath, {
      headers: { "if-none-match": `"${d.id}.md.jpg"` },
    });
    assert.equal(fresh.status, 304);
    const head = await env.app.request(mediumPath, { method: "HEAD" });
    assert.equal(
      head.headers.get("content-length"),
      String(first.bytes.length),
    );
    const part = await fetchBytes(env, mediumPath, {
      headers: { range: "bytes=2-9" },
    });
    assert.equal(part.res.status, 206);
    assert.deepEqual(part.bytes, first.bytes.subarray(2, 10));
    // The record and its URLs are what they were: ImgBB's shape, both variants named.
    assert.equal(pathOf(d.thumb.url), `/${d.id}.th.jpg`);
    assert.equal(d.medium.mime, "image/jpeg");
  });
});

test("eight concurrent first requests for a medium make it once, and all get the same bytes", async () => {
  await withStore(async (env, store, key) => {
    const d = await uploaded(
      env,
      key,
      await makeNoiseJpeg(1400, 1000),
      "p.jpg",
    );
    const all = await Promise.all(
      Array.from({ length: 8 }, () => fetchBytes(env, pathOf(d.medium.url))),
    );
    assert.deepEqual(all.map((a) => a.res.status), Array(8).fill(200));
    for (const a of all) assert.deepEqual(a.bytes, all[0].bytes);
    assert.equal(store.puts, 1);
  });
});

test("a thumbnail a crash lost, or cut to an empty file, is made again at its next request, 320 px as before", async () => {
  await withStore(async (env, store, key, dir) => {
    const d = await uploaded(env, key, await makeNoiseJpeg(1200, 800), "p.jpg");
    const thumbPath = pathOf(d.thumb.url);
    const before = await fetchBytes(env, thumbPath);
    assert.equal(before.res.status, 200);
    assert.equal(store.puts, 1, "made at its first request");
    // Stored without a sync: a crash may leave no file, or an empty one (the name
    // reached the disk, the bytes did not).
    await Deno.writeFile(
      join(dir, d.id.slice(0, 2), `${d.id}.th.jpg`),
      new Uint8Array(),
    );
    const remade = await fetchBytes(env, thumbPath);
    assert.equal(remade.res.status, 200);
    assert.ok(remade.bytes.length > 0);
    const meta = await sharp(remade.bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [320, 213]);
    await store.delete(`${d.id}.th.jpg`);
    const again = await fetchBytes(env, thumbPath);
    assert.equal(again.res.status, 200);
    assert.deepEqual(again.bytes, remade.bytes);
    assert.equal(store.puts, 3);
    // A fixed variant of an image that has none stays 404: a small image has no medium
    // (its record's medium is the original, as ImgBB's is).
    const small = await uploaded(env, key, await makeImage("png"), "s.png");
    assert.equal(pathOf(small.medium.url), `/${small.id}.png`);
    const none = await env.app.request(`/${small.id}.md.png`);
    assert.equal(none.status, 404);
    await none.body?.cancel();
  }, { IMAGE_CACHE_MB: "0" }); // As after a crash: nothing held in memory.
});

test("variants of an image turned by its EXIF orientation are upright: the medium, the thumbnail remade, and transform URLs", async () => {
  await withStore(async (env, _store, key) => {
    // 80 × 40 stored with orientation 6: shown 40 wide and 80 high.
    const d = await uploaded(env, key, await makeJpegWithGps(), "turned.jpg");
    assert.deepEqual([d.width, d.height], [40, 80]);
    const t = await fetchBytes(env, `${pathOf(d.url)}?w=160&format=webp`);
    assert.equal(t.res.status, 200);
    const tm = await sharp(t.bytes).metadata();
    assert.deepEqual([tm.width, tm.height], [40, 80]);
    await env.deps.store.delete(`${d.id}.th.jpg`);
    const th = await fetchBytes(env, pathOf(d.thumb.url));
    const thm = await sharp(th.bytes).metadata();
    assert.deepEqual([thm.width, thm.height, thm.orientation ?? 1], [
      40,
      80,
      1,
    ]);
  });
});

test("with IMAGE_SERVE=proxy a medium not made yet is made before nginx is told to send it, and the fast path vouches for it only once it is stored", async () => {
  await withStore(async (env, store, key) => {
    const d = await uploaded(env, key, await makeNoiseJpeg(1500, 900), "p.jpg");
    const url = `http://localhost:8080${pathOf(d.medium.url)}`;
    // The original asked for first: its row is then in the cache the fast path reads.
    const original = await env.app.fetch(
      new Request(`http://localhost:8080${pathOf(d.url)}`),
    );
    assert.equal(original.status, 200);
    assert.ok(original.headers.get("x-accel-redirect"));
    // Twice through the app's whole fetch (fast path first): the first answer comes
    // after the make, and the file nginx is sent to exists by then.
    const first = await env.app.fetch(new Request(url));
    assert.equal(first.status, 200);
    assert.equal(
      first.headers.get("x-accel-redirect"),
      proxyPath(`${d.id}.md.jpg`),
    );
    assert.ok((await store.stat(`${d.id}.md.jpg`))!.size > 0);
    const second = await env.app.fetch(new Request(url));
    assert.equal(second.status, 200);
    assert.equal(
      second.headers.get("x-accel-redirect"),
      first.headers.get("x-accel-redirect"),
    );
    assert.equal(store.puts, 1);
  }, { IMAGE_SERVE: "proxy" });
});

test("a BMP's medium and transform URLs are made from its pixels (libvips has no BMP loader), leaving no scratch behind", async () => {
  await withStore(async (env, _store, key) => {
    // A light grey 24-bit BMP, 1300 × 200 (libvips cannot write one).
    const bmp = makeBmp24(1300, 200, () => [200, 200, 200]);
    const d = await uploaded(env, key, bmp, "w.bmp");
    const md = await fetchBytes(env, pathOf(d.medium.url));
    assert.equal(md.res.status, 200);
    assert.equal(md.res.headers.get("content-type"), "image/png");
    const mm = await sharp(md.bytes).metadata();
    assert.deepEqual([mm.width, mm.height], [1024, 158]);
    const t = await fetchBytes(env, `${pathOf(d.url)}?w=320&format=webp`);
    assert.equal(t.res.status, 200);
    const tm = await sharp(t.bytes).raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([tm.info.width, tm.info.height], [320, 49]);
    assert.ok(Math.abs(tm.data[0] - 200) <= 3, `grey kept: ${tm.data[0]}`);
    const tmp = join(env.config.DATA_DIR, "tmp");
    const left: string[] = [];
    for await (const dir of Deno.readDir(tmp)) {
      for await (const f of Deno.readDir(join(tmp, dir.name))) {
        left.push(f.name);
      }
    }
    assert.deepEqual(left, []);
  });
});
