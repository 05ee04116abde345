import assert from "node:assert/strict";
import {
  fetchBytes,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";

/** Uploads one PNG (a colour of its own) with an expiration; returns its record. */
async function uploadExpiring(env: TestEnv, key: string, seconds?: number) {
  const r = await upload(
    env,
    key,
    formWith(
      [{
        name: "e.png",
        bytes: await makeImage("png", {
          width: 30 + Math.floor(Math.random() * 200),
        }),
      }],
      seconds ? { expiration: String(seconds) } : {},
    ),
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}

test("an expired image is gone on every route at once, before any sweep: file, thumbnail, viewer, API record, API delete, delete link", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const rec = await uploadExpiring(env, key, 60);
    const auth = { authorization: `Bearer ${key}` };
    const routes: [string, () => Response | Promise<Response>][] = [
      ["file", () => env.app.request(new URL(rec.url).pathname)],
      ["thumbnail", () => env.app.request(new URL(rec.thumb.url).pathname)],
      ["viewer", () => env.app.request(new URL(rec.url_viewer).pathname)],
      [
        "API record",
        () => env.app.request(`/api/1/images/${rec.id}`, { headers: auth }),
      ],
      [
        "delete link page",
        () => env.app.request(new URL(rec.delete_url).pathname),
      ],
    ];
    for (const [what, go] of routes) {
      const r = await go();
      await r.body?.cancel();
      assert.equal(r.status, 200, `${what} before expiry`);
    }
    env.clock.advance(61_000);
    for (const [what, go] of routes) {
      const r = await go();
      await r.body?.cancel();
      assert.equal(r.status, 404, `${what} after expiry`);
    }
    const del = await env.app.request(`/api/1/images/${rec.id}`, {
      method: "DELETE",
      headers: auth,
    });
    assert.equal(del.status, 404, "API delete after expiry");
    const link = await env.app.request(new URL(rec.delete_url).pathname, {
      method: "POST",
      headers: { origin: "http://localhost:8080" },
    });
    assert.equal(link.status, 404, "delete link after expiry");
  } finally {
    await env.close();
  }
});

test("the delete link refuses a cross-site POST (403) and keeps the image; the same origin deletes it", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const rec = await uploadExpiring(env, key);
    const path = new URL(rec.delete_url).pathname;
    const attempts: Record<string, string>[] = [
      { origin: "https://evil.example" },
      { origin: "null" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of attempts) {
      const r = await env.app.request(path, {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "",
      });
      await r.body?.cancel();
      assert.equal(r.status, 403, JSON.stringify(headers));
      const still = await fetchBytes(env, new URL(rec.url).pathname);
      assert.equal(still.res.status, 200, "the image is still there");
    }
    const ok = await env.app.request(path, {
      method: "POST",
      headers: {
        origin: "http://localhost:8080",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "",
    });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /Image deleted/);
    const gone = await env.app.request(new URL(rec.url).pathname);
    await gone.body?.cancel();
    assert.equal(gone.status, 404);
  } finally {
    await env.close();
  }
});

test("an image that expires while its row is still cached (within the cache's 10 s) is 404 on the fast paths too: a revalidation gets no 304, and with IMAGE_SERVE=proxy no X-Accel-Redirect", async () => {
  for (const serve of ["app", "proxy"]) {
    const env = await testEnv({ env: { IMAGE_SERVE: serve } });
    try {
      const { key } = await userWithKey(env);
      const rec = await uploadExpiring(env, key, 60);
      const path = new URL(rec.url).pathname;
      // Read (and cached) five seconds before it expires.
      env.clock.advance(55_000);
      const warm = await env.app.request(path);
      await warm.body?.cancel();
      assert.equal(warm.status, 200, serve);
      const etag = warm.headers.get("etag")!;
      const again = await env.app.request(path, {
        headers: { "if-none-match": etag },
      });
      await again.body?.cancel();
      assert.equal(again.status, 304, `${serve}: fresh and cached`);
      // Six seconds later: expired, though the cached row is younger than its TTL.
      env.clock.advance(6_000);
      const revalidated = await env.app.request(path, {
        headers: { "if-none-match": etag },
      });
      await revalidated.body?.cancel();
      assert.equal(
        revalidated.status,
        404,
        `${serve}: revalidation after expiry`,
      );
      const plain = await env.app.request(path);
      await plain.body?.cancel();
      assert.equal(plain.status, 404, `${serve}: GET after expiry`);
      assert.equal(plain.headers.get("x-accel-redirect"), null);
    } finally {
      await env.close();
    }
  }
});
