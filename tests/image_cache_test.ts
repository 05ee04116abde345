import { revokeApiKey } from "../services/accounts/api_keys.ts";
import assert from "node:assert/strict";
import {
  databaseKinds,
  fetchBytes,
  json,
  test,
  testDatabase,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
  waitUntilAsync,
} from "./helpers.ts";
import type { Database } from "../services/db/database.ts";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
import { BlobCache } from "../services/images/blob_cache.ts";
import { ImageRowCache } from "../services/images/image_cache.ts";
import { FsStore } from "../services/store/fs_store.ts";
import type { BlobStore } from "../services/store/blob_store.ts";

/**
 * A filesystem store that records every read reaching it; with `streams`, it answers every
 * get with a chunked stream, as the S3 store does.
 */
async function countingStore(dir: string, streams = false) {
  const inner = await new FsStore(dir).init();
  const reads: string[] = [];
  const store: BlobStore = {
    kind: inner.kind,
    put: inner.put.bind(inner),
    putFile: inner.putFile.bind(inner),
    delete: inner.delete.bind(inner),
    ping: inner.ping.bind(inner),
    list: inner.list.bind(inner),
    stat(key) {
      reads.push(`stat ${key}`);
      return inner.stat(key);
    },
    async get(key, range) {
      reads.push(
        range ? `get ${key} ${range.start}-${range.end}` : `get ${key}`,
      );
      const blob = await inner.get(key, range);
      if (!blob || !streams || !(blob.body instanceof Uint8Array)) return blob;
      const bytes = blob.body;
      return {
        size: blob.size,
        body: new ReadableStream({
          start(ctl) {
            for (let i = 0; i < bytes.length; i += 10_000) {
              ctl.enqueue(bytes.slice(i, i + 10_000));
            }
            ctl.close();
          },
        }),
      };
    },
  };
  return { store, reads };
}

async function cacheEnv(
  opts: {
    cacheMb?: number;
    streams?: boolean;
    shareWith?: TestEnv;
    database?: Database;
  } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-test-" });
  const counted = await countingStore(dir, opts.streams);
  const env = await testEnv({
    env: { IMAGE_CACHE_MB: String(opts.cacheMb ?? 32) },
    store: opts.shareWith?.deps.store ?? counted.store,
    database: opts.database ?? opts.shareWith?.deps.database,
  });
  return {
    env,
    reads: counted.reads,
    storedBytes: (key: string) =>
      Deno.readFile(`${dir}/${key.slice(0, 2)}/${key}`),
    async close() {
      await env.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function uploadOne(env: TestEnv, key: string, bytes: Uint8Array) {
  const r = await upload(env, key, formWith([{ name: "x", bytes }]));
  assert.equal(r.status, 200);
  return r.body.data;
}

/** A new user and one PNG of theirs, uploaded. */
async function userWithPng(
  env: TestEnv,
  opts: { width: number; height: number },
) {
  const { key } = await userWithKey(env);
  return { key, d: await uploadOne(env, key, await makeImage("png", opts)) };
}

async function deleteByApi(env: TestEnv, key: string, id: string) {
  const del = await env.app.request(`/api/1/images/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(del.status, 200);
  await del.body?.cancel();
}

test("a hot image is read from the store once; later GETs, HEADs and ranges are answered from memory with the same bytes", async () => {
  const t = await cacheEnv();
  try {
    const { d } = await userWithPng(t.env, { width: 90, height: 60 });
    const path = new URL(d.url).pathname;
    const first = await fetchBytes(t.env, path);
    assert.equal(first.res.status, 200);
    assert.deepEqual(first.bytes, await t.storedBytes(path.slice(1)));
    assert.equal(t.reads.length, 1);
    for (let i = 0; i < 3; i++) {
      const again = await fetchBytes(t.env, path);
      assert.equal(again.res.status, 200);
      assert.deepEqual(again.bytes, first.bytes);
      assert.equal(
        again.res.headers.get("content-length"),
        String(first.bytes.length),
      );
      assert.equal(
        again.res.headers.get("etag"),
        first.res.headers.get("etag"),
      );
    }
    const head = await t.env.app.request(path, { method: "HEAD" });
    assert.equal(
      head.headers.get("content-length"),
      String(first.bytes.length),
    );
    const part = await fetchBytes(t.env, path, {
      headers: { range: "bytes=5-14" },
    });
    assert.equal(part.res.status, 206);
    assert.deepEqual(part.bytes, first.bytes.subarray(5, 15));
    const bad = await fetchBytes(t.env, path, {
      headers: { range: "bytes=999999-" },
    });
    assert.equal(bad.res.status, 416);
    assert.deepEqual(t.reads, [`get ${path.slice(1)}`]);
  } finally {
    await t.close();
  }
});

test("with IMAGE_CACHE_MB=0 every GET reads the store, and HEAD, ranges and 416 answer as they do from memory", async () => {
  const on = await cacheEnv();
  const off = await cacheEnv({ cacheMb: 0 });
  try {
    const png = await makeImage("png", { width: 80, height: 80 });
    const answers = [];
    for (const t of [on, off]) {
      const { key } = await userWithKey(t.env);
      const path = new URL((await uploadOne(t.env, key, png)).url).pathname;
      const full = [];
      for (let i = 0; i < 3; i++) {
        full.push((await fetchBytes(t.env, path)).bytes);
      }
      const head = await t.env.app.request(path, { method: "HEAD" });
      const part = await fetchBytes(t.env, path, {
        headers: { range: "bytes=-7" },
      });
      const bad = await fetchBytes(t.env, path, {
        headers: { range: "bytes=999999-" },
      });
      answers.push({
        full,
        head: [head.status, head.headers.get("content-length")],
        part: [part.res.status, part.res.headers.get("content-range"), [
          ...part.bytes,
        ]],
        bad: [bad.res.status, bad.res.headers.get("content-range")],
        gets: t.reads.filter((r) => r.startsWith("get")).length,
      });
    }
    const [fromMemory, fromStore] = answers;
    assert.equal(fromMemory.gets, 1);
    // Three full GETs and one range; HEAD and the 416 only stat.
    assert.equal(fromStore.gets, 4);
    assert.deepEqual(fromStore.full[0], fromMemory.full[0]);
    for (const a of answers) {
      for (const f of a.full) assert.deepEqual(f, a.full[0]);
    }
    const size = String(fromMemory.full[0].length);
    assert.deepEqual(fromMemory.head, [200, size]);
    assert.deepEqual(fromStore.head, fromMemory.head);
    assert.deepEqual(fromStore.part, fromMemory.part);
    assert.deepEqual(fromMemory.bad, [416, `bytes */${size}`]);
    assert.deepEqual(fromStore.bad, fromMemory.bad);
  } finally {
    await on.close();
    await off.close();
  }
});

test("a store that answers with streams (as S3 does) has its small objects cached whole; objects over the entry limit stream through each time", async () => {
  // 1 MiB of cache keeps objects up to 64 KiB.
  const t = await cacheEnv({ cacheMb: 1, streams: true });
  try {
    const { key } = await userWithKey(t.env);
    const small = await uploadOne(
      t.env,
      key,
      await makeImage("png", { width: 40, height: 40 }),
    );
    const large = await uploadOne(t.env, key, await makeNoiseJpeg(300, 300));
    for (const d of [small, large]) {
      const path = new URL(d.url).pathname;
      const stored = await t.storedBytes(path.slice(1));
      for (let i = 0; i < 3; i++) {
        const r = await fetchBytes(t.env, path);
        assert.equal(r.res.status, 200);
        assert.deepEqual(r.bytes, stored);
      }
    }
    assert.ok((await t.storedBytes(`${large.id}.jpg`)).length > 64 * 1024);
    assert.deepEqual(t.reads, [
      `get ${small.id}.png`,
      `get ${large.id}.jpg`,
      `get ${large.id}.jpg`,
      `get ${large.id}.jpg`,
    ]);
  } finally {
    await t.close();
  }
});

test("an image deleted through this instance is 404 at once, original and thumbnail, though both were served from memory", async () => {
  const t = await cacheEnv();
  try {
    const { key, d } = await userWithPng(t.env, { width: 700, height: 500 });
    const paths = [d.url, d.thumb.url].map((u: string) => new URL(u).pathname);
    for (const p of paths) {
      assert.equal((await fetchBytes(t.env, p)).res.status, 200);
      const read = t.reads.length;
      assert.equal((await fetchBytes(t.env, p)).res.status, 200);
      assert.equal(t.reads.length, read, `${p} again, from memory`);
    }
    await deleteByApi(t.env, key, d.id);
    for (const p of paths) {
      const r = await json(await t.env.app.request(p));
      assert.deepEqual([r.status, r.body.error.code], [404, 404]);
    }
  } finally {
    await t.close();
  }
});

for (const kind of databaseKinds()) {
  test(`[${kind}] an image deleted through another instance stops answering 200 and 304 there within 1 s (LISTEN/NOTIFY), though its row and bytes are in memory`, async () => {
    const shared = await testDatabase(kind);
    // On PostgreSQL the second instance has connections of its own, as a second process would.
    const other = shared.another ? await shared.another() : shared;
    const a = await cacheEnv({ database: shared });
    const b = await cacheEnv({ shareWith: a.env, database: other });
    try {
      const { key, d } = await userWithPng(a.env, { width: 50, height: 50 });
      const path = new URL(d.url).pathname;
      const etag = `"${path.slice(1)}"`;
      const revalidate = () =>
        fetchBytes(a.env, path, { headers: { "if-none-match": etag } });
      assert.equal((await fetchBytes(a.env, path)).res.status, 200);
      assert.equal((await revalidate()).res.status, 304);
      await deleteByApi(b.env, key, d.id);
      assert.equal((await fetchBytes(b.env, path)).res.status, 404);
      // A's clock does not move: its 10 s row window never runs out in this test, so only
      // the notice can make A let go.
      let status = 200;
      await waitUntilAsync(
        async () =>
          (status = (await fetchBytes(a.env, path)).res.status) === 404,
        1000,
      );
      assert.equal(status, 404);
      assert.equal((await revalidate()).res.status, 404);
      assert.deepEqual(a.reads, [`get ${path.slice(1)}`]);
    } finally {
      await b.close();
      await a.close();
      if (other !== shared) await other.close();
      await shared.close();
    }
  });
}

test("while its link to the database's notices is down an instance trusts no cached row: another instance's deletion is 404 there at once", async () => {
  const shared = await testDatabase();
  // A hears nothing (its deletion notices are dropped) but is told when its link is up;
  // every listener of A (the row cache and the key cache each have one) is told.
  const links: ((up: boolean) => void)[] = [];
  const link = (up: boolean) => links.forEach((l) => l(up));
  const deaf: Database = {
    ...shared,
    listen: (_channel, _onMessage, onLink) => {
      if (onLink) {
        links.push(onLink);
        onLink(true);
      }
      return Promise.resolve(() => Promise.resolve());
    },
  };
  const a = await cacheEnv({ database: deaf });
  const b = await cacheEnv({ shareWith: a.env, database: shared });
  try {
    const { key, d } = await userWithPng(a.env, { width: 50, height: 50 });
    const path = new URL(d.url).pathname;
    const other = await userWithPng(a.env, { width: 51, height: 50 });
    const otherPath = new URL(other.d.url).pathname;
    assert.equal((await fetchBytes(a.env, path)).res.status, 200);
    assert.equal((await fetchBytes(a.env, otherPath)).res.status, 200);
    // Link up, notice lost: the cached row is trusted for its 10 s window only.
    await deleteByApi(b.env, key, d.id);
    a.env.clock.advance(9_000);
    assert.equal((await fetchBytes(a.env, path)).res.status, 200);
    a.env.clock.advance(1_001);
    assert.equal((await fetchBytes(a.env, path)).res.status, 404);
    // Link down: rows read meanwhile are not kept, not even fresh ones.
    link(false);
    assert.equal((await fetchBytes(a.env, otherPath)).res.status, 200);
    await deleteByApi(b.env, other.key, other.d.id);
    assert.equal((await fetchBytes(a.env, otherPath)).res.status, 404);
  } finally {
    await b.close();
    await a.close();
    await shared.close();
  }
});

test("while its link to the database's notices is down an instance trusts no cached key: a key revoked through another instance is 110 there at once", async () => {
  const shared = await testDatabase();
  // Every listener of A (the key cache and the row cache each have one) is told.
  const links: ((up: boolean) => void)[] = [];
  const link = (up: boolean) => links.forEach((l) => l(up));
  const deaf: Database = {
    ...shared,
    listen: (_channel, _onMessage, onLink) => {
      if (onLink) {
        links.push(onLink);
        onLink(true);
      }
      return Promise.resolve(() => Promise.resolve());
    },
  };
  const a = await cacheEnv({ database: deaf });
  const b = await cacheEnv({ shareWith: a.env, database: shared });
  try {
    const { key, user } = await userWithKey(a.env);
    const use = async () =>
      (await a.env.app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${key}` },
      })).status;
    assert.equal(await use(), 200);
    // The link goes down; the key is used meanwhile (read from the database, and not to
    // be kept), then revoked through B, whose notice A cannot hear.
    link(false);
    assert.equal(await use(), 200);
    const keyId = (await shared.db.selectFrom("api_keys").select("id")
      .where("user_id", "=", user.id).executeTakeFirstOrThrow()).id;
    assert.ok(
      await revokeApiKey(shared.db, user.id, keyId, b.env.clock),
    );
    const r = await a.env.app.request("/api/1/screenshot/presets", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(r.status, 401);
    assert.equal((await r.json()).error.code, 110);
  } finally {
    await b.close();
    await a.close();
    await shared.close();
  }
});

test("the byte cache never holds more than its bound, evicts the least recently used first and forgets an image's original and variants together", () => {
  const cache = new BlobCache(16 * 100);
  assert.equal(cache.maxEntryBytes, 100);
  const bytes = (n: number, v: number) => new Uint8Array(n).fill(v);
  assert.equal(cache.accepts(101), false);
  cache.set("AAAAAAAA.png", bytes(101, 1));
  assert.equal(cache.get("AAAAAAAA.png"), undefined);
  assert.equal(cache.accepts(0), false);

  for (let i = 0; i < 16; i++) cache.set(`img${i}xxxx.png`, bytes(100, i));
  assert.deepEqual([cache.size, cache.bytes], [16, 1600]);
  // Touch the oldest: the second oldest is the next to go.
  assert.equal(cache.get("img0xxxx.png")![0], 0);
  cache.set("newestxx.png", bytes(100, 99));
  assert.deepEqual([cache.size, cache.bytes], [16, 1600]);
  assert.equal(cache.get("img1xxxx.png"), undefined);
  assert.ok(cache.get("img0xxxx.png"));

  // Replacing a key does not count it twice.
  cache.set("newestxx.png", bytes(50, 98));
  assert.deepEqual([cache.size, cache.bytes], [16, 1550]);
  assert.equal(cache.get("newestxx.png")![0], 98);

  cache.set("img2xxxx.th.png", bytes(10, 2));
  cache.set("img2xxxx.md.png", bytes(10, 2));
  cache.forget("img2xxxx");
  for (const k of ["img2xxxx.png", "img2xxxx.th.png", "img2xxxx.md.png"]) {
    assert.equal(cache.get(k), undefined);
  }
  assert.deepEqual([cache.size, cache.bytes], [15, 1450]);
  cache.forget("never-cached");
  assert.equal(cache.bytes, 1450);

  const off = new BlobCache(0);
  off.set("AAAAAAAA.png", bytes(1, 1));
  assert.deepEqual([off.size, off.bytes], [0, 0]);
});

test("the row cache drops an image's cached bytes when it is told of a deletion and when a re-read finds no live row", async () => {
  const t = await cacheEnv();
  try {
    const { key } = await userWithKey(t.env);
    const png = await makeImage("png", { width: 30, height: 30 });
    const [d1, d2] = [
      await uploadOne(t.env, key, png),
      await uploadOne(t.env, key, await makeImage("png", { color: "#123456" })),
    ];
    const bodies = new BlobCache(1024 * 1024);
    const rows = new ImageRowCache(t.env.deps.database.db, t.env.clock, bodies);
    for (const d of [d1, d2]) {
      assert.ok(await rows.get(d.id));
      bodies.set(`${d.id}.png`, png);
      bodies.set(`${d.id}.th.png`, png);
    }
    rows.invalidate(d1.id);
    assert.deepEqual([bodies.size, bodies.get(`${d2.id}.png`)], [2, png]);

    await deleteByApi(t.env, key, d2.id);
    t.env.clock.advance(10_001);
    assert.equal(await rows.get(d2.id), undefined);
    assert.deepEqual([bodies.size, bodies.bytes], [0, 0]);
  } finally {
    await t.close();
  }
});
