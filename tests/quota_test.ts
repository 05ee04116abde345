/**
 * Quotas (issue #47): storage, image count and monthly captures, checked before anything
 * is stored and counted atomically, so concurrent uploads pass a limit by at most one
 * request's bytes; usage and limits on GET /api/1/account and /account.
 */
import assert from "node:assert/strict";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";
import {
  apiCall,
  databaseKinds,
  storedKeys,
  test,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { createSession } from "../services/accounts/accounts.ts";
import { Quotas } from "../services/accounts/quotas.ts";

for (const kind of databaseKinds()) {
  test(`[${kind}] sixteen concurrent uploads from one account near its storage limit overshoot it by at most one request's bytes, the refused ones answer 180 before anything is stored, and GET /api/1/account shows usage and limits`, async () => {
    const env = await testEnv({ kind, env: { USER_STORAGE_MB: "1" } });
    try {
      const { key } = await userWithKey(env);
      const limit = 1024 * 1024;
      const files = await Promise.all(
        Array.from({ length: 16 }, (_, i) => makeNoiseJpeg(160 + i, 120)),
      );
      const largest = Math.max(...files.map((f) => f.length));
      // Filled first until about five of the sixteen still fit.
      let used = 0;
      for (let i = 0; limit - used > 5 * largest; i++) {
        const side = Math.min(
          400,
          Math.floor(Math.sqrt((limit - used - 5 * largest) / 2)) + 20,
        );
        const r = await upload(
          env,
          key,
          formWith([{
            name: "fill.jpg",
            bytes: await makeNoiseJpeg(side + i, side),
          }]),
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        used += r.body.data.size;
      }
      const answers = await Promise.all(
        files.map((bytes, i) =>
          upload(env, key, formWith([{ name: `s${i}.jpg`, bytes }]))
        ),
      );
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 403);
      assert.equal(ok.length + refused.length, 16);
      assert.ok(ok.length > 0, "some fit");
      assert.ok(refused.length > 0, "some do not");
      for (const r of refused) {
        assert.equal(r.body.error.code, 180);
        assert.equal(r.body.error.details[0].path, "storage");
      }
      const account = await apiCall(env, key, "GET", "/api/1/account");
      assert.equal(account.status, 200);
      const stored = account.body.data.usage.bytes;
      assert.ok(
        stored <= limit + largest,
        `${stored} bytes stored, limit ${limit} + one request ${largest}`,
      );
      assert.equal(account.body.data.limits.storage_bytes, limit);
      const filled = (await env.deps.database.db.selectFrom("images")
        .select("id").where("title", "=", "fill.jpg").execute()).length;
      assert.equal(account.body.data.usage.images, filled + ok.length);
      // The store holds exactly the accepted originals: a refusal stored nothing.
      assert.equal((await storedKeys(env)).length, filled + ok.length);
      // No hold outlives its upload.
      const holds = await env.deps.database.db.selectFrom("quota_holds")
        .selectAll().execute();
      assert.deepEqual(holds, []);
    } finally {
      await env.close();
    }
  });
}

test("an image-count quota refuses the upload past it, deleting an image frees its place, and the defaults are overridden per account", async () => {
  const env = await testEnv({ env: { USER_IMAGES_MAX: "2" } });
  try {
    const a = await userWithKey(env);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await upload(
        env,
        a.key,
        formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(40 + i, 40) }]),
      );
      assert.equal(r.status, 200);
      ids.push(r.body.data.id);
    }
    const third = await upload(
      env,
      a.key,
      formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(50, 40) }]),
    );
    assert.equal(third.status, 403);
    assert.equal(third.body.error.code, 180);
    assert.match(third.body.error.details[0].message, /2 of 2 images/);
    const del = await apiCall(env, a.key, "DELETE", `/api/1/images/${ids[0]}`);
    assert.equal(del.status, 200);
    const fourth = await upload(
      env,
      a.key,
      formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(51, 40) }]),
    );
    assert.equal(fourth.status, 200);
    // The same bytes again are a duplicate, not a new image: no quota is spent.
    const dup = await upload(
      env,
      a.key,
      formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(51, 40) }]),
    );
    assert.equal(dup.status, 403, "at the limit even a duplicate is checked");
    // An override of 0 lifts the limit for that account alone.
    await env.deps.database.db.updateTable("users").set({ quota_images: 0 })
      .where("id", "=", a.user.id).execute();
    env.clock.advance(6_000); // past the limits' cache
    const lifted = await upload(
      env,
      a.key,
      formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(52, 40) }]),
    );
    assert.equal(lifted.status, 200);
    const b = await userWithKey(env);
    const account = await apiCall(env, b.key, "GET", "/api/1/account");
    assert.equal(account.body.data.limits.images, 2);
    assert.equal(account.body.data.role, "user");
  } finally {
    await env.close();
  }
});

test("monthly captures are counted atomically: concurrent counts never pass the limit, a failed capture is given back, and a new month starts again", async () => {
  const env = await testEnv({ env: { SCREENSHOTS_PER_MONTH: "5" } });
  try {
    const { user } = await userWithKey(env);
    const quotas = new Quotas(env.deps.database.db, env.clock, env.config);
    const tries = await Promise.allSettled(
      Array.from({ length: 12 }, () => quotas.countScreenshot(user.id)),
    );
    assert.equal(tries.filter((t) => t.status === "fulfilled").length, 5);
    for (const t of tries.filter((t) => t.status === "rejected")) {
      assert.equal((t as PromiseRejectedResult).reason.code, 180);
    }
    await quotas.uncountScreenshot(user.id);
    await quotas.countScreenshot(user.id);
    await assert.rejects(quotas.countScreenshot(user.id), { code: 180 });
    env.clock.advance(31 * 86_400_000);
    await quotas.countScreenshot(user.id);
  } finally {
    await env.close();
  }
});

test("/account shows the account's usage beside its limits", async () => {
  const env = await testEnv({
    env: { USER_STORAGE_MB: "50", SCREENSHOTS_PER_MONTH: "100" },
  });
  try {
    const { user, key } = await userWithKey(env);
    await upload(
      env,
      key,
      formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(200, 200) }]),
    );
    const sid = await createSession(env.deps.database.db, user.id, env.clock);
    const page = await (await env.app.request("/account", {
      headers: { cookie: `sid=${sid}` },
    })).text();
    assert.match(page, /data-usage="bytes">\d+(\.\d+)? KB of 50(\.0+)? MB</);
    assert.match(page, /data-usage="images">1</);
    assert.match(page, /data-usage="screenshots">0 of 100</);
  } finally {
    await env.close();
  }
});
