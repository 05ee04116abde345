import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
  waitUntilAsync,
} from "./helpers.ts";
import { revokeApiKey } from "../services/accounts/api_keys.ts";
import { disableUser } from "../services/accounts/accounts.ts";
import { imageFastPath, StoredFixed } from "../routes/host.ts";
import { ImageRowCache } from "../services/images/image_cache.ts";

test("a revalidation of a hot image is answered 304 ahead of the router with the full path's ETag and Cache-Control, a request id and its log line", async () => {
  const env = await testEnv({ env: { LOG_REQUESTS: "true" } });
  try {
    const { key } = await userWithKey(env);
    const up = await upload(
      env,
      key,
      formWith([{ name: "h.png", bytes: await makeImage("png") }], {
        expiration: "7200",
      }),
    );
    const path = `/${up.body.data.image.filename}`;
    const etag = `"${up.body.data.image.filename}"`;
    // The first revalidation finds the row cold and takes the full path (which warms it);
    // the second is answered by the fast path. The same answer.
    const full = await env.app.request(path, {
      method: "HEAD",
      headers: { "if-none-match": `W/${etag}` },
    });
    const fast = await env.app.request(`${path}?v=1`, {
      headers: { "if-none-match": etag, "x-request-id": "abc-123" },
    });
    for (const r of [fast, full]) {
      assert.equal(r.status, 304);
      assert.equal(r.headers.get("etag"), etag);
      assert.equal(r.headers.get("cache-control"), "public, max-age=7200");
      assert.ok(r.headers.get("x-request-id"));
    }
    assert.equal(fast.headers.get("x-request-id"), "abc-123");
    const logged = env.log.lines.filter((l) =>
      l.msg === "request" && l.status === 304 && l.request_id === "abc-123"
    );
    assert.equal(logged.length, 1);
    assert.equal(logged[0].path, path);
  } finally {
    await env.close();
  }
});

/**
 * A stored PNG expiring in 600 s, a row cache following deletions and the fast path over
 * it (config from `env`), handed to `body`; everything closed after.
 */
async function withFastPath(
  env: Record<string, string>,
  body: (t: {
    env: TestEnv;
    key: string;
    rec: { id: string; image: { filename: string } };
    rows: ImageRowCache;
    fast: ReturnType<typeof imageFastPath>;
    req: (path: string, init?: RequestInit) => Request;
  }) => Promise<void>,
) {
  const t = await testEnv({ env });
  try {
    const { key } = await userWithKey(t);
    const up = await upload(
      t,
      key,
      formWith([{ name: "f.png", bytes: await makeImage("png") }], {
        expiration: "600",
      }),
    );
    const rows = new ImageRowCache(t.deps.database.db, t.clock);
    const stop = await rows.follow(t.deps.database);
    try {
      await body({
        env: t,
        key,
        rec: up.body.data,
        rows,
        fast: imageFastPath(t.deps, rows, new StoredFixed()),
        req: (path, init = {}) =>
          new Request(`http://localhost:8080${path}`, init),
      });
    } finally {
      await stop();
    }
  } finally {
    await t.close();
  }
}

test("the fast path answers only what it can vouch for: a cold, deleted or expired row, another tag, a variant the image lacks, another extension, a POST or no If-None-Match all go the full way", async () => {
  await withFastPath({}, async ({ env, key, rec, rows, fast, req }) => {
    const tag = `"${rec.image.filename}"`;
    const conditional = { headers: { "if-none-match": tag } };
    const file = `/${rec.image.filename}`;
    assert.equal(fast(req(file, conditional)), undefined, "cold row");
    assert.ok(await rows.get(rec.id));
    const hit = fast(req(file, conditional));
    assert.equal(hit?.status, 304);
    assert.equal(hit?.headers.get("etag"), tag);
    assert.equal(fast(req(file)), undefined, "no If-None-Match");
    assert.equal(
      fast(req(file, { headers: { "if-none-match": '"other"' } })),
      undefined,
    );
    assert.equal(
      fast(req(file, { ...conditional, method: "POST" })),
      undefined,
    );
    // Each twice: the second look finds the name already parsed.
    for (let i = 0; i < 2; i++) {
      assert.equal(
        fast(req(`/${rec.id}.md.png`, {
          headers: { "if-none-match": `"${rec.id}.md.png"` },
        })),
        undefined,
        "a small image has no medium file",
      );
      assert.equal(
        fast(req(`/${rec.id}.jpg`, {
          headers: { "if-none-match": `"${rec.id}.jpg"` },
        })),
        undefined,
        "another extension than the stored file's",
      );
      assert.equal(fast(req(file, conditional))?.status, 304);
    }
    env.clock.advance(601_000);
    assert.equal(fast(req(file, conditional)), undefined, "expired");
    env.clock.advance(-601_000);
    assert.equal(fast(req(file, conditional))?.status, 304);
    rows.invalidate(rec.id);
    assert.equal(fast(req(file, conditional)), undefined, "deleted here");
    // And through the app: a deleted image is 404 even to a revalidation.
    await env.app.request(`/api/1/images/${rec.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${key}` },
    });
    const gone = await env.app.request(file, conditional);
    assert.equal(gone.status, 404);
    await gone.body?.cancel();
  });
});

test("with IMAGE_SERVE=proxy the fast path also answers a plain GET or HEAD of a live cached image with the proxy's 200 (X-Accel-Redirect, no body), and still declines a cold, expired or deleted row or a file the image lacks", async () => {
  await withFastPath(
    { IMAGE_SERVE: "proxy" },
    async ({ env, rec, rows, fast, req }) => {
      const file = `/${rec.image.filename}`;
      assert.equal(fast(req(file)), undefined, "cold row");
      assert.ok(await rows.get(rec.id));
      for (const method of ["GET", "HEAD"]) {
        const hit = fast(req(file, { method }));
        assert.equal(hit?.status, 200);
        assert.equal(
          hit?.headers.get("x-accel-redirect"),
          `/_image_files/${
            rec.image.filename.slice(0, 2)
          }/${rec.image.filename}`,
        );
        assert.equal(hit?.headers.get("content-type"), "image/png");
        assert.equal(hit?.headers.get("etag"), `"${rec.image.filename}"`);
        assert.equal(hit?.headers.get("cache-control"), "public, max-age=600");
        assert.ok(hit?.headers.get("x-request-id"));
        assert.equal(await hit?.text(), "");
      }
      const revalidated = fast(req(file, {
        headers: { "if-none-match": `"${rec.image.filename}"` },
      }));
      assert.equal(revalidated?.status, 304);
      assert.equal(revalidated?.headers.get("x-accel-redirect"), null);
      assert.equal(
        fast(req(`/${rec.id}.md.png`)),
        undefined,
        "a small image has no medium file",
      );
      assert.equal(fast(req(`/${rec.id}.jpg`)), undefined, "another extension");
      assert.equal(fast(req(file, { method: "POST" })), undefined);
      env.clock.advance(601_000);
      assert.equal(fast(req(file)), undefined, "expired");
      env.clock.advance(-601_000);
      rows.invalidate(rec.id);
      assert.equal(fast(req(file)), undefined, "deleted here");
    },
  );
});

test("a checked key is trusted for 10 s without a lookup, and a revocation or a disabled user made through another instance is refused here as soon as its notice arrives", async () => {
  const env = await testEnv();
  const second = await testEnv({ database: env.deps.database });
  try {
    const presets = async (key: string) => {
      const r = await env.app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${key}` },
      });
      await r.body?.cancel();
      return r.status;
    };
    const a = await userWithKey(env);
    assert.equal(await presets(a.key), 200);
    // Revoked behind the service's back (no notice): the cached check stands for its 10 s.
    await env.deps.database.db.updateTable("api_keys")
      .set({ revoked_at: env.clock.now() }).where("id", "=", a.keyId)
      .execute();
    assert.equal(await presets(a.key), 200);
    env.clock.advance(10_001);
    assert.equal(await presets(a.key), 401);

    const b = await userWithKey(env);
    assert.equal(await presets(b.key), 200);
    await revokeApiKey(
      second.deps.database.db,
      b.user.id,
      b.keyId,
      second.clock,
    );
    await waitUntilAsync(async () => (await presets(b.key)) === 401);
    assert.equal(await presets(b.key), 401);

    const c = await userWithKey(env);
    assert.equal(await presets(c.key), 200);
    await disableUser(second.deps.database.db, c.user.id, second.clock);
    await waitUntilAsync(async () => (await presets(c.key)) === 401);
    const refused = await env.app.request("/api/1/screenshot/presets", {
      headers: { authorization: `Bearer ${c.key}` },
    });
    assert.equal((await refused.json()).error.code, 120);
  } finally {
    await second.close();
    await env.close();
  }
});

test("the per-minute limit reserves calls in leases: one database write per 10 calls at 600/min with Remaining counting down by one, and two instances together never exceed the limit", async () => {
  const env = await testEnv({ env: { RATE_LIMIT_PER_MINUTE: "600" } });
  try {
    const { key, keyId } = await userWithKey(env);
    const remaining: number[] = [];
    for (let i = 0; i < 25; i++) {
      const r = await env.app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(r.status, 200);
      remaining.push(Number(r.headers.get("x-ratelimit-remaining")));
      await r.body?.cancel();
    }
    assert.deepEqual(remaining, Array.from({ length: 25 }, (_, i) => 599 - i));
    const row = await env.deps.database.db.selectFrom("rate_limits")
      .select("count").where("key_id", "=", keyId).executeTakeFirstOrThrow();
    assert.equal(row.count, 30, "three leases of 10");
    // Calls at the same moment share the lease being reserved instead of each taking one.
    const other = await userWithKey(env);
    const together = await Promise.all(
      Array.from(
        { length: 30 },
        () =>
          Promise.resolve(env.app.request("/api/1/screenshot/presets", {
            headers: { authorization: `Bearer ${other.key}` },
          })).then(async (r) => {
            await r.body?.cancel();
            return r.status;
          }),
      ),
    );
    assert.ok(together.every((s) => s === 200));
    const shared = await env.deps.database.db.selectFrom("rate_limits")
      .select("count").where("key_id", "=", other.keyId)
      .executeTakeFirstOrThrow();
    assert.equal(shared.count, 30, "three leases of 10, not one per call");
  } finally {
    await env.close();
  }

  // 120/min: leases of 2. Two instances on one database, a key used through both.
  const a = await testEnv({ env: { RATE_LIMIT_PER_MINUTE: "120" } });
  const b = await testEnv({
    database: a.deps.database,
    env: { RATE_LIMIT_PER_MINUTE: "120" },
  });
  try {
    b.clock.t = a.clock.t;
    const { key } = await userWithKey(a);
    let accepted = 0;
    for (let i = 0; i < 130; i++) {
      const app = i % 2 ? b.app : a.app;
      const r = await app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${key}` },
      });
      if (r.status === 200) accepted++;
      else assert.equal((await r.clone().json()).error.code, 170);
      await r.body?.cancel();
    }
    assert.ok(accepted <= 120, `${accepted} accepted`);
    assert.ok(
      accepted >= 118,
      `${accepted} accepted (at most 1 early per instance)`,
    );
  } finally {
    await b.close();
    await a.close();
  }
});
