/**
 * The operator's console at /admin and the Report form (issue #47), through HTTP as a
 * browser sends it: every page and form is 404 to anyone but a signed-in admin; the
 * admin's forms act and are audited; anyone reports from a viewer page.
 */
import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  signedInAccount,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";

const ORIGIN = "http://localhost:8080";

const browserOf = (env: TestEnv, role: "admin" | "user", email: string) =>
  signedInAccount(env, { role, email });

/** A form post as the site's pages send it. */
async function post(
  env: TestEnv,
  path: string,
  who: { cookie: string; token: string } | undefined,
  fields: Record<string, string> = {},
) {
  const res = await env.app.request(path, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: ORIGIN,
      accept: "text/html",
      ...(who ? { cookie: who.cookie } : {}),
    },
    body: new URLSearchParams({
      ...(who ? { _csrf: who.token } : {}),
      ...fields,
    }),
  });
  return {
    status: res.status,
    location: res.headers.get("location"),
    text: await res.text(),
  };
}

test("every /admin page and form answers 404 to a guest, a user and a disabled admin, and the pages serve an admin with the console's figures", async () => {
  const env = await testEnv();
  try {
    const root = await browserOf(env, "admin", "root@example.com");
    const user = await browserOf(env, "user", "user@example.com");
    const fired = await browserOf(env, "admin", "fired@example.com");
    await env.deps.database.db.updateTable("users").set({
      disabled_at: new Date(),
    })
      .where("id", "=", fired.user.id).execute();
    const up = await upload(
      env,
      user.key,
      formWith([{ name: "cat.png", bytes: await makeImage("png") }]),
    );
    const pages = [
      "/admin",
      "/admin/users",
      "/admin/images",
      "/admin/reports",
      "/admin/invites",
      "/admin/audit",
    ];
    const forms = [
      `/admin/users/${user.user.id}/disable`,
      `/admin/users/${user.user.id}/enable`,
      `/admin/users/${user.user.id}/ban`,
      `/admin/users/${user.user.id}/delete`,
      `/admin/users/${user.user.id}/quota`,
      `/admin/images/${up.body.data.id}/takedown`,
      "/admin/reports/x/dismiss",
      "/admin/reports/x/takedown",
      "/admin/invites",
      "/admin/invites/x/revoke",
    ];
    const strangers: [string, { cookie: string; token: string } | undefined][] =
      [
        ["guest", undefined],
        ["user", user],
        ["disabled admin", fired],
      ];
    for (const [who, b] of strangers) {
      for (const p of pages) {
        const res = await env.app.request(p, {
          headers: { accept: "text/html", ...(b ? { cookie: b.cookie } : {}) },
        });
        assert.equal(res.status, 404, `${who} GET ${p}`);
        assert.match(await res.text(), /Page not found/);
      }
      for (const p of forms) {
        assert.equal((await post(env, p, b)).status, 404, `${who} POST ${p}`);
      }
    }
    // Nothing happened.
    assert.equal(
      (await apiCall(env, user.key, "GET", "/api/1/images")).status,
      200,
    );
    assert.equal((await storedKeys(env)).length, 1);

    for (const p of pages) {
      const res = await env.app.request(p, {
        headers: { cookie: root.cookie },
      });
      assert.equal(res.status, 200, p);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const html = await res.text();
      assert.match(html, /<a href="\/admin" aria-current="page">Admin<\/a>/);
    }
    const home = await (await env.app.request("/admin", {
      headers: { cookie: root.cookie },
    })).text();
    assert.match(home, /<strong>3<\/strong>Accounts/);
    assert.match(home, /<strong>1<\/strong>Images/);
    const users = await (await env.app.request("/admin/users?q=user@", {
      headers: { cookie: root.cookie },
    })).text();
    assert.match(users, /user@example\.com/);
    assert.doesNotMatch(users, /root@example\.com/);
    const images = await (await env.app.request("/admin/images", {
      headers: { cookie: root.cookie },
    })).text();
    assert.match(images, /cat\.png/);
    assert.match(images, new RegExp(`/${up.body.data.id}\\.th\\.png`));
    // A user's pages show no Admin link.
    const mine = await (await env.app.request("/account", {
      headers: { cookie: user.cookie },
    })).text();
    assert.doesNotMatch(mine, /href="\/admin"/);
  } finally {
    await env.close();
  }
});

test("the console's forms disable, set quotas, make and revoke invitations, take down reported images and dismiss reports, each audited; a form without its token is refused", async () => {
  const env = await testEnv({ env: { SIGNUP: "invite" } });
  try {
    const root = await browserOf(env, "admin", "root@example.com");
    const u = await userWithKey(env);
    const up = await upload(
      env,
      u.key,
      formWith([{
        name: "dog.png",
        bytes: await makeImage("png", { color: "#123456" }),
      }]),
    );
    const noToken = await post(env, `/admin/users/${u.user.id}/disable`, {
      cookie: root.cookie,
      token: "wrong",
    });
    assert.equal(noToken.status, 403);

    const quota = await post(env, `/admin/users/${u.user.id}/quota`, root, {
      quota_storage_mb: "10",
      quota_images: "",
      quota_screenshots: "0",
    });
    assert.equal(quota.status, 303);
    assert.match(quota.location!, /^\/admin\/users\?done=Quotas/);
    const row = await env.deps.database.db.selectFrom("users")
      .select(["quota_storage_mb", "quota_images", "quota_screenshots"])
      .where("id", "=", u.user.id).executeTakeFirstOrThrow();
    assert.deepEqual(row, {
      quota_storage_mb: 10,
      quota_images: null,
      quota_screenshots: 0,
    });
    const badQuota = await post(env, `/admin/users/${u.user.id}/quota`, root, {
      quota_images: "-3",
    });
    assert.equal(badQuota.status, 400);

    const invite = await post(env, "/admin/invites", root, {
      max_uses: "2",
      expires_in: "86400",
    });
    assert.equal(invite.status, 303);
    const link = decodeURIComponent(invite.location!.split("link=")[1]);
    assert.match(link, /^http:\/\/localhost:8080\/signup\?invite=/);
    const shown = await (await env.app.request(invite.location!, {
      headers: { cookie: root.cookie },
    })).text();
    assert.ok(
      shown.includes(link.replaceAll("&", "&amp;")),
      "the link shown once",
    );
    const signup = await env.app.request(
      new URL(link).pathname + new URL(link).search,
    );
    assert.equal(signup.status, 200);
    await signup.body?.cancel();

    // A report from the viewer's form, then taken down from the queue.
    const viewer = await (await env.app.request(`/i/${up.body.data.id}`))
      .text();
    assert.match(
      viewer,
      new RegExp(`href="/report\\?image=${up.body.data.id}"`),
    );
    const form =
      await (await env.app.request(`/report?image=${up.body.data.id}`)).text();
    assert.match(form, /name="reason" value="copyright"/);
    const sent = await post(env, "/report", undefined, {
      image_id: up.body.data.id,
      reason: "copyright",
      note: "my photo",
    });
    assert.equal(sent.status, 200);
    assert.match(sent.text, /Thank you/);
    const queue = await (await env.app.request("/admin/reports", {
      headers: { cookie: root.cookie },
    })).text();
    assert.match(queue, /Copyright infringement/);
    assert.match(queue, /my photo/);
    const { id: reportId } = await env.deps.database.db.selectFrom("reports")
      .select("id")
      .executeTakeFirstOrThrow();
    const down = await post(env, `/admin/reports/${reportId}/takedown`, root);
    assert.equal(down.status, 303);
    const file = await env.app.request(`/${up.body.data.image.filename}`);
    assert.equal(file.status, 451);
    await file.body?.cancel();
    assert.deepEqual(await storedKeys(env), []);

    const dis = await post(env, `/admin/users/${u.user.id}/disable`, root);
    assert.equal(dis.status, 303);
    assert.equal(
      (await apiCall(env, u.key, "GET", "/api/1/images")).body.error.code,
      120,
    );

    const audit = await (await env.app.request("/admin/audit", {
      headers: { cookie: root.cookie },
    })).text();
    for (
      const action of [
        "user.update",
        "invite.create",
        "image.takedown",
        "user.disable",
      ]
    ) {
      assert.match(audit, new RegExp(`>${action.replace(".", "\\.")}`), action);
    }
  } finally {
    await env.close();
  }
});
