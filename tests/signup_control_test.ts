/**
 * Sign-up control and account actions of the operator (issue #47): the first account is
 * the admin, SIGNUP=open|invite|closed with invitations an admin makes and revokes,
 * disabling, enabling, deleting and banning accounts, reports rate-limited per address.
 */
import assert from "node:assert/strict";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
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
import { createSession } from "../services/accounts/accounts.ts";

const HTML = {
  accept: "text/html",
  "content-type": "application/x-www-form-urlencoded",
};

/** Posts the sign-up form as a browser does; the answer with its page. */
async function signUp(
  env: TestEnv,
  email: string,
  extra: Record<string, string> = {},
  headers: Record<string, string> = HTML,
) {
  const res = await env.app.request("/signup", {
    method: "POST",
    headers: { ...headers, origin: "http://localhost:8080" },
    body: new URLSearchParams({
      email,
      password: "correct horse battery",
      ...extra,
    }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function roleOf(env: TestEnv, email: string) {
  const row = await env.deps.database.db.selectFrom("users").select("role")
    .where("email", "=", email).executeTakeFirst();
  return row?.role;
}

async function adminKey(env: TestEnv) {
  const a = await signedInAccount(env, {
    role: "admin",
    email: "root@example.com",
  });
  return { id: a.user.id, key: a.key };
}

test("on an empty instance the sign-up page says the first account is the admin, and it is; the next is a user, and two racing first sign-ups make one admin", async () => {
  const env = await testEnv();
  try {
    const page = await (await env.app.request("/signup")).text();
    assert.match(page, /first account made here is its\s+admin/);
    const first = await signUp(env, "first@example.com");
    assert.equal(first.status, 303);
    assert.equal(await roleOf(env, "first@example.com"), "admin");
    const after = await (await env.app.request("/signup")).text();
    assert.doesNotMatch(after, /first account made here/);
    await signUp(env, "second@example.com");
    assert.equal(await roleOf(env, "second@example.com"), "user");
  } finally {
    await env.close();
  }
  const race = await testEnv({ env: { ACCOUNT_ATTEMPTS_PER_MINUTE: "0" } });
  try {
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => signUp(race, `r${i}@example.com`)),
    );
    const admins = await race.deps.database.db.selectFrom("users")
      .select("email").where("role", "=", "admin").execute();
    assert.equal(admins.length, 1);
  } finally {
    await race.close();
  }
});

test("SIGNUP=closed refuses sign-up with a page that says why (403) and 181 to non-browsers, once the instance has its admin", async () => {
  const env = await testEnv({ env: { SIGNUP: "closed" } });
  try {
    // The first account is still taken: someone has to run the place.
    assert.equal((await signUp(env, "first@example.com")).status, 303);
    const page = await env.app.request("/signup", {
      headers: { accept: "text/html" },
    });
    assert.equal(page.status, 403);
    assert.match(await page.text(), /Sign-up is closed on this instance/);
    const post = await signUp(env, "late@example.com");
    assert.equal(post.status, 403);
    assert.match(post.text, /data-code="181"/);
    const api = await signUp(env, "late@example.com", {}, {
      "content-type": "application/x-www-form-urlencoded",
    });
    assert.equal(api.status, 403);
    assert.equal(JSON.parse(api.text).error.code, 181);
    assert.equal(await roleOf(env, "late@example.com"), undefined);
  } finally {
    await env.close();
  }
});

test("with SIGNUP=closed or invite, sign-ups racing on an empty instance make its admin and nobody else: the others are refused 181 as any late one is", async () => {
  for (const mode of ["closed", "invite"]) {
    const env = await testEnv({
      env: { SIGNUP: mode, ACCOUNT_ATTEMPTS_PER_MINUTE: "0" },
    });
    try {
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => signUp(env, `r${i}@example.com`)),
      );
      const users = await env.deps.database.db.selectFrom("users")
        .select("role").execute();
      assert.deepEqual(users.map((u) => u.role), ["admin"], mode);
      assert.deepEqual(
        answers.map((a) => a.status).sort(),
        [303, 403, 403, 403, 403, 403],
        mode,
      );
      for (const a of answers.filter((a) => a.status === 403)) {
        assert.match(a.text, /data-code="181"/);
      }
    } finally {
      await env.close();
    }
  }
});

test("SIGNUP=invite takes only an admin's invitation: its uses are counted (a failed sign-up gives its use back), and a used, expired or revoked link is refused with the reason", async () => {
  const env = await testEnv({ env: { SIGNUP: "invite" } });
  try {
    const root = await adminKey(env);
    assert.equal((await signUp(env, "nolink@example.com")).status, 403);
    const made = await apiCall(env, root.key, "POST", "/api/1/admin/invites", {
      max_uses: 1,
      expires_in: 3600,
    });
    assert.equal(made.status, 200);
    const { token, url } = made.body.data;
    assert.equal(url, `http://localhost:8080/signup?invite=${token}`);
    const form = await (await env.app.request(`/signup?invite=${token}`))
      .text();
    assert.match(form, new RegExp(`name="invite" value="${token}"`));
    // A bad password fails the sign-up: the use is given back.
    const weak = await signUp(env, "a@example.com", {
      invite: token,
      password: "short",
    });
    assert.equal(weak.status, 400);
    assert.equal(
      (await signUp(env, "a@example.com", { invite: token })).status,
      303,
    );
    assert.equal(await roleOf(env, "a@example.com"), "user");
    const used = await signUp(env, "b@example.com", { invite: token });
    assert.equal(used.status, 403);
    assert.match(used.text, /used already/);

    const two = await apiCall(env, root.key, "POST", "/api/1/admin/invites", {
      max_uses: 5,
      expires_in: 60,
    });
    env.clock.advance(61_000);
    const late = await signUp(env, "c@example.com", {
      invite: two.body.data.token,
    });
    assert.equal(late.status, 403);
    assert.match(late.text, /expired/);

    const three = await apiCall(env, root.key, "POST", "/api/1/admin/invites", {
      max_uses: 5,
    });
    const revoked = await apiCall(
      env,
      root.key,
      "DELETE",
      `/api/1/admin/invites/${three.body.data.id}`,
    );
    assert.equal(revoked.status, 200);
    const gone = await env.app.request(
      `/signup?invite=${three.body.data.token}`,
      { headers: { accept: "text/html" } },
    );
    assert.equal(gone.status, 403);
    assert.match(await gone.text(), /withdrawn/);
    const listed = await apiCall(env, root.key, "GET", "/api/1/admin/invites");
    assert.deepEqual(
      listed.body.data.invites.map((i: { state: string }) => i.state).sort(),
      ["expired", "revoked", "used"],
    );
    const audit = await apiCall(env, root.key, "GET", "/api/1/admin/audit");
    assert.deepEqual(
      audit.body.data.entries.map((e: { action: string }) => e.action),
      ["invite.revoke", "invite.create", "invite.create", "invite.create"],
    );
  } finally {
    await env.close();
  }
});

test("disabling an account ends its sessions and refuses its key (uploads too) while its images stay online; enabling brings the key back; every step is in the audit log with the admin's address", async () => {
  // Behind a proxy the service trusts, the client's address is X-Forwarded-For's first.
  const env = await testEnv({ env: { TRUST_PROXY: "true" } });
  try {
    const root = await adminKey(env);
    const u = await userWithKey(env);
    const up = await upload(
      env,
      u.key,
      formWith([{ name: "a.png", bytes: await makeImage("png") }]),
    );
    const sid = await createSession(env.deps.database.db, u.user.id, env.clock);
    const off = await json(
      await env.app.request(`/api/1/admin/users/${u.user.id}`, {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${root.key}`,
          "content-type": "application/json",
          "x-forwarded-for": "203.0.113.9, 10.0.0.1",
        },
        body: JSON.stringify({ disabled: true }),
      }),
    );
    assert.equal(off.status, 200);
    const refused = await upload(
      env,
      u.key,
      formWith([{
        name: "b.png",
        bytes: await makeImage("png", { color: "#fff" }),
      }]),
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, 120);
    const account = await env.app.request("/account", {
      headers: { cookie: `sid=${sid}` },
    });
    assert.equal(account.status, 303, "the session ended");
    const file = await env.app.request(`/${up.body.data.image.filename}`);
    assert.equal(file.status, 200, "images stay online");
    await file.arrayBuffer();
    const on = await apiCall(
      env,
      root.key,
      "PATCH",
      `/api/1/admin/users/${u.user.id}`,
      {
        disabled: false,
      },
    );
    assert.equal(on.body.data.state, "active");
    assert.equal(
      (await apiCall(env, u.key, "GET", "/api/1/images")).status,
      200,
    );
    const audit = await apiCall(
      env,
      root.key,
      "GET",
      `/api/1/admin/audit?target=${u.user.id}`,
    );
    assert.deepEqual(
      audit.body.data.entries.map((e: { action: string }) => e.action),
      ["user.enable", "user.disable"],
    );
    const disabled = audit.body.data.entries.find((e: { action: string }) =>
      e.action === "user.disable"
    );
    assert.equal(disabled.address, "203.0.113.9");
    assert.equal(disabled.actor_email, "root@example.com");
    assert.ok(disabled.time > 0);
  } finally {
    await env.close();
  }
});

test("deleting an account removes every image's bytes and variants from the store, its albums and keys; a ban disables and takes down every image at once", async () => {
  const env = await testEnv();
  try {
    const root = await adminKey(env);
    const gone = await userWithKey(env);
    const kept = await userWithKey(env);
    await apiCall(env, gone.key, "POST", "/api/1/albums", { title: "A" });
    for (let i = 0; i < 3; i++) {
      const r = await upload(
        env,
        gone.key,
        formWith([{ name: "x.jpg", bytes: await makeNoiseJpeg(1100 + i, 80) }]),
      );
      await (await env.app.request(`/${r.body.data.image.filename}?w=320`))
        .arrayBuffer();
      await (await env.app.request(`/${r.body.data.id}.md.jpg`)).arrayBuffer();
    }
    const keep = await upload(
      env,
      kept.key,
      formWith([{ name: "k.jpg", bytes: await makeNoiseJpeg(90, 80) }]),
    );
    const del = await apiCall(
      env,
      root.key,
      "DELETE",
      `/api/1/admin/users/${gone.user.id}`,
    );
    assert.equal(del.status, 200);
    assert.equal(del.body.data.images_deleted, 3);
    assert.deepEqual(await storedKeys(env), [keep.body.data.image.filename]);
    assert.equal(
      (await apiCall(env, gone.key, "GET", "/api/1/images")).status,
      401,
    );
    const albums = await env.deps.database.db.selectFrom("albums").selectAll()
      .where("user_id", "=", gone.user.id).execute();
    assert.deepEqual(albums, []);

    const banned = await apiCall(
      env,
      root.key,
      "POST",
      `/api/1/admin/users/${kept.user.id}/ban`,
      {
        reason: "spam",
      },
    );
    assert.equal(banned.status, 200);
    assert.equal(banned.body.data.images_taken_down, 1);
    assert.deepEqual(await storedKeys(env), []);
    const file = await env.app.request(`/${keep.body.data.image.filename}`);
    assert.equal(file.status, 451);
    await file.arrayBuffer();
    assert.equal(
      (await apiCall(env, kept.key, "GET", "/api/1/images")).status,
      401,
    );
  } finally {
    await env.close();
  }
});

test("anyone may report a visible image with a reason from the list; past REPORTS_PER_MINUTE an address gets 170; private images and unknown reasons are refused; the queue never says who reported", async () => {
  const env = await testEnv({ env: { REPORTS_PER_MINUTE: "2" } });
  try {
    const root = await adminKey(env);
    const u = await userWithKey(env);
    const up = await upload(
      env,
      u.key,
      formWith([{ name: "a.png", bytes: await makeImage("png") }]),
    );
    const hidden = await upload(
      env,
      u.key,
      formWith([{
        name: "b.png",
        bytes: await makeImage("png", { color: "#0f0" }),
      }]),
    );
    const hide = await apiCall(
      env,
      u.key,
      "PATCH",
      `/api/1/images/${hidden.body.data.id}`,
      { privacy: "private" },
    );
    assert.equal(hide.status, 200);
    const report = async (body: unknown) =>
      await json(
        await env.app.request("/api/1/reports", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const bad = await report({ image_id: up.body.data.id, reason: "meh" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 160);
    const priv = await report({
      image_id: hidden.body.data.id,
      reason: "spam",
    });
    assert.equal(priv.status, 404);
    const ok = await report({
      image_id: up.body.data.id,
      reason: "spam",
      note: "buy now",
    });
    assert.equal(ok.status, 200);
    const limited = await report({
      image_id: up.body.data.id,
      reason: "abuse",
    });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 170);
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    const queue = await apiCall(env, root.key, "GET", "/api/1/admin/reports");
    assert.equal(queue.body.data.total, 1);
    const item = queue.body.data.reports[0];
    assert.equal(item.note, "buy now");
    assert.equal(item.image.owner_id, u.user.id);
    assert.deepEqual(
      Object.keys(item).sort(),
      ["id", "image", "image_id", "note", "others", "reason", "state", "time"],
    );
    const dismissed = await apiCall(
      env,
      root.key,
      "POST",
      `/api/1/admin/reports/${item.id}/dismiss`,
    );
    assert.equal(dismissed.status, 200);
    const empty = await apiCall(env, root.key, "GET", "/api/1/admin/reports");
    assert.equal(empty.body.data.total, 0);
    // The image stays.
    const file = await env.app.request(`/${up.body.data.image.filename}`);
    assert.equal(file.status, 200);
    await file.arrayBuffer();
  } finally {
    await env.close();
  }
});
