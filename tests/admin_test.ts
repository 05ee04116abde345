import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  json,
  signedInAccount,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";

/** An admin with a key and a signed-in browser. */
const adminOf = (env: TestEnv, email = "root@example.com") =>
  signedInAccount(env, { role: "admin", email });

/** A user's signed-in browser and key. */
const signedIn = (env: TestEnv) => signedInAccount(env);

/** Every admin operation, with a body where it takes one. */
const ADMIN_CALLS: [string, string, unknown?][] = [
  ["GET", "/api/1/admin/stats"],
  ["GET", "/api/1/admin/users"],
  ["GET", "/api/1/admin/users?q=example"],
  ["PATCH", "/api/1/admin/users/TARGET", { quota_images: 5 }],
  ["POST", "/api/1/admin/users/TARGET/ban", { reason: "x" }],
  ["DELETE", "/api/1/admin/users/TARGET"],
  ["GET", "/api/1/admin/images"],
  ["POST", "/api/1/admin/images/IMAGE/takedown", { reason: "x" }],
  ["GET", "/api/1/admin/reports"],
  ["POST", "/api/1/admin/reports/REPORT/dismiss"],
  ["GET", "/api/1/admin/invites"],
  ["POST", "/api/1/admin/invites", { max_uses: 1 }],
  ["DELETE", "/api/1/admin/invites/INVITE"],
  ["GET", "/api/1/admin/audit"],
];

/** Sends one admin call as a kind of caller; the answer with its status. */
async function callAs(
  env: TestEnv,
  who: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
) {
  return await json(
    await env.app.request(path, {
      method,
      headers: {
        ...who,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

test("every admin operation answers 404 to a guest, a user's key or session, a disabled admin and a wrong key, and serves an admin", async () => {
  const env = await testEnv();
  try {
    const root = await adminOf(env);
    const user = await signedIn(env);
    const fired = await adminOf(env, "fired@example.com");
    const target = await userWithKey(env);
    const up = await upload(
      env,
      target.key,
      formWith([{ name: "a.png", bytes: await makeImage("png") }]),
    );
    assert.equal(up.status, 200);
    const report = await json(
      await env.app.request("/api/1/reports", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ image_id: up.body.data.id, reason: "spam" }),
      }),
    );
    assert.equal(report.status, 200);
    const invite = await apiCall(
      env,
      root.key,
      "POST",
      "/api/1/admin/invites",
      {
        max_uses: 1,
      },
    );
    assert.equal(invite.status, 200);
    // The fired admin's account is disabled by root: their key and session stop working.
    const disable = await apiCall(
      env,
      root.key,
      "PATCH",
      `/api/1/admin/users/${fired.user.id}`,
      { disabled: true },
    );
    assert.equal(disable.status, 200);
    assert.equal(disable.body.data.state, "disabled");

    const fill = (p: string) =>
      p.replace("TARGET", target.user.id).replace("IMAGE", up.body.data.id)
        .replace("REPORT", report.body.data.id)
        .replace("INVITE", invite.body.data.id);
    const strangers: [string, Record<string, string>][] = [
      ["a guest", {}],
      ["a user's key", { authorization: `Bearer ${user.key}` }],
      ["a user's X-API-Key", { "x-api-key": user.key }],
      ["a user's session", {
        cookie: user.cookie,
        "x-csrf-token": user.token,
      }],
      ["a disabled admin's key", { authorization: `Bearer ${fired.key}` }],
      ["a disabled admin's session", {
        cookie: fired.cookie,
        "x-csrf-token": fired.token,
      }],
      ["a wrong key", { authorization: "Bearer ihk_nope" }],
      ["an admin's cookie without its token", { cookie: root.cookie }],
      ["a malformed Authorization", { authorization: "Basic abc" }],
    ];
    for (const [method, path, body] of ADMIN_CALLS) {
      for (const [who, headers] of strangers) {
        const r = await callAs(env, headers, method, fill(path), body);
        assert.equal(r.status, 404, `${who}: ${method} ${path}`);
        assert.equal(r.body.error.code, 404, `${who}: ${method} ${path}`);
      }
    }
    // Nothing a stranger sent changed anything.
    const still = await apiCall(env, target.key, "GET", "/api/1/images");
    assert.equal(still.status, 200);
    assert.equal(still.body.data.total, 1);
    // ... and the admin is served, by key and by session, every operation but the
    // destructive ones (their own tests) answering 200.
    for (const [method, path, body] of ADMIN_CALLS) {
      if (/ban|DELETE|takedown|dismiss/.test(`${method} ${path}`)) continue;
      const byKey = await callAs(
        env,
        { authorization: `Bearer ${root.key}` },
        method,
        fill(path),
        body,
      );
      assert.equal(byKey.status, 200, `${method} ${path}`);
      const bySession = await callAs(
        env,
        {
          cookie: root.cookie,
          "x-csrf-token": root.token,
        },
        method,
        fill(path),
        body,
      );
      assert.equal(bySession.status, 200, `session ${method} ${path}`);
    }
    // A session call from another site's page is refused like a stranger's.
    const foreign = await callAs(
      env,
      {
        cookie: root.cookie,
        "x-csrf-token": root.token,
        "sec-fetch-site": "cross-site",
      },
      "GET",
      "/api/1/admin/users",
    );
    assert.equal(foreign.status, 404);
  } finally {
    await env.close();
  }
});

test("the admin lists accounts with what each stores, searches them, and sets quotas", async () => {
  const env = await testEnv();
  try {
    const root = await adminOf(env);
    const a = await userWithKey(env, "alice@example.com");
    await userWithKey(env, "bob@example.org");
    for (const color of ["#ff0000", "#00ff00"]) {
      const r = await upload(
        env,
        a.key,
        formWith([{ name: "x.png", bytes: await makeImage("png", { color }) }]),
      );
      assert.equal(r.status, 200);
    }
    const list = await apiCall(env, root.key, "GET", "/api/1/admin/users");
    assert.equal(list.status, 200);
    assert.equal(list.body.data.total, 3);
    const alice = list.body.data.users.find((u: { email: string }) =>
      u.email === "alice@example.com"
    );
    assert.equal(alice.images, 2);
    assert.ok(alice.bytes > 0);
    assert.equal(alice.role, "user");
    assert.equal(alice.state, "active");
    assert.ok(alice.last_active > 0);
    const found = await apiCall(
      env,
      root.key,
      "GET",
      "/api/1/admin/users?q=EXAMPLE.ORG",
    );
    assert.deepEqual(
      found.body.data.users.map((u: { email: string }) => u.email),
      ["bob@example.org"],
    );
    const admins = await apiCall(
      env,
      root.key,
      "GET",
      "/api/1/admin/users?state=admin",
    );
    assert.deepEqual(
      admins.body.data.users.map((u: { email: string }) => u.email),
      ["root@example.com"],
    );
    const set = await apiCall(
      env,
      root.key,
      "PATCH",
      `/api/1/admin/users/${a.user.id}`,
      { quota_images: 2, quota_storage_mb: 0 },
    );
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.data.quota, {
      images: 2,
      storage_mb: 0,
      screenshots_per_month: null,
    });
    // Alice holds two images: a third is refused before anything is stored.
    const before = (await storedKeys(env)).length;
    const third = await upload(
      env,
      a.key,
      formWith([{ name: "y.png", bytes: await makeImage("png") }]),
    );
    assert.equal(third.status, 403);
    assert.equal(third.body.error.code, 180);
    assert.equal(third.body.error.details[0].path, "images");
    assert.equal((await storedKeys(env)).length, before);
    // The admin may not lock themselves out.
    const self = await apiCall(
      env,
      root.key,
      "PATCH",
      `/api/1/admin/users/${root.user.id}`,
      { disabled: true },
    );
    assert.equal(self.status, 400);
    assert.equal(self.body.error.code, 160);
    const unknown = await apiCall(
      env,
      root.key,
      "PATCH",
      "/api/1/admin/users/nobody",
      { quota_images: 1 },
    );
    assert.equal(unknown.status, 404);
    const extra = await apiCall(
      env,
      root.key,
      "PATCH",
      `/api/1/admin/users/${a.user.id}`,
      { quota_bananas: 1 },
    );
    assert.equal(extra.status, 400);
  } finally {
    await env.close();
  }
});
