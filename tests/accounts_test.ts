import assert from "node:assert/strict";
import { makeImage } from "./fixtures.ts";
import { waitText } from "../routes/account.tsx";
import {
  databaseKinds,
  json,
  test,
  TestClock,
  testDatabase,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import {
  AccountError,
  createUser,
  deleteUser,
  disableUser,
  verifyLogin,
} from "../services/accounts/accounts.ts";
import { verifyPassword } from "../services/accounts/crypto.ts";
import { revokeApiKey } from "../services/accounts/api_keys.ts";
import { ApiError } from "../schemas/errors.ts";

const ORIGIN = "http://localhost:8080";

function form(
  data: Record<string, string>,
  extra: Record<string, string> = {},
) {
  return {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: ORIGIN,
      ...extra,
    },
    body: new URLSearchParams(data).toString(),
  };
}

function cookieOf(res: Response) {
  return res.headers.get("set-cookie")?.split(";")[0] ?? "";
}

for (const kind of databaseKinds()) {
  test(`[${kind}] a key in the Authorization header, the body and the query each authenticate`, async () => {
    const env = await testEnv({ kind });
    try {
      const { key } = await userWithKey(env);
      const viaHeader = await env.app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(viaHeader.status, 200);
      assert.equal((await viaHeader.json()).success, true);
      const viaQuery = await env.app.request(
        `/api/1/screenshot/presets?key=${key}`,
      );
      assert.equal(viaQuery.status, 200);
      assert.equal((await viaQuery.json()).success, true);
      const viaBody = await env.app.request("/api/1/screenshot", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ key, url: "ftp://x" }),
      });
      // Authenticated, so the request reaches validation of url (200 = Invalid URL code).
      assert.equal((await json(viaBody)).body.error.code, 200);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] header beats body beats query when several keys are sent`, async () => {
    const env = await testEnv({ kind });
    try {
      const { key } = await userWithKey(env);
      const bad = "ihk_" + "x".repeat(43);
      // Header valid, body and query invalid: passes.
      let r = await json(
        await env.app.request(`/api/1/screenshot?key=${bad}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${key}`,
          },
          body: JSON.stringify({ key: bad, url: "ftp://x" }),
        }),
      );
      assert.equal(r.body.error.code, 200);
      // Header invalid, body valid: the header wins, so 110.
      r = await json(
        await env.app.request(`/api/1/screenshot`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${bad}`,
          },
          body: JSON.stringify({ key, url: "ftp://x" }),
        }),
      );
      assert.equal(r.body.error.code, 110);
      // Body valid, query invalid: body wins.
      r = await json(
        await env.app.request(`/api/1/screenshot?key=${bad}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key, url: "ftp://x" }),
        }),
      );
      assert.equal(r.body.error.code, 200);
      // Body invalid, query valid: body wins, so 110.
      r = await json(
        await env.app.request(`/api/1/screenshot?key=${key}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key: bad, url: "ftp://x" }),
        }),
      );
      assert.equal(r.body.error.code, 110);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] no key gives 100, an unknown or malformed key 110, each with HTTP 401`, async () => {
    const env = await testEnv({ kind });
    try {
      let r = await json(await env.app.request("/api/1/screenshot/presets"));
      assert.deepEqual([r.status, r.body], [401, {
        status: 401,
        success: false,
        error: { code: 100, message: "No API key provided" },
      }]);
      r = await json(
        await env.app.request("/api/1/screenshot/presets?key=ihk_nope"),
      );
      assert.deepEqual([r.status, r.body.error], [401, {
        code: 110,
        message: "Invalid API key",
      }]);
      r = await json(
        await env.app.request("/api/1/screenshot/presets", {
          headers: { authorization: "Basic abc" },
        }),
      );
      assert.equal(r.body.error.code, 110);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] a revoked key gives 110 and a deleted or disabled owner 120`, async () => {
    const env = await testEnv({ kind });
    try {
      const db = env.deps.database.db;
      const a = await userWithKey(env);
      await db.updateTable("api_keys").set({ revoked_at: new Date() }).where(
        "id",
        "=",
        a.keyId,
      )
        .execute();
      let r = await json(
        await env.app.request(`/api/1/screenshot/presets?key=${a.key}`),
      );
      assert.equal(r.body.error.code, 110);

      const b = await userWithKey(env);
      await deleteUser(db, b.user.id, env.clock);
      r = await json(
        await env.app.request(`/api/1/screenshot/presets?key=${b.key}`),
      );
      assert.deepEqual([r.status, r.body.error], [401, {
        code: 120,
        message: "User not found",
      }]);

      const c = await userWithKey(env);
      await disableUser(db, c.user.id, env.clock);
      r = await json(
        await env.app.request(`/api/1/screenshot/presets?key=${c.key}`),
      );
      assert.equal(r.body.error.code, 120);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] a key over RATE_LIMIT_PER_MINUTE gets 170 with Retry-After until the next minute; every answer says the limit, what is left and when it resets`, async () => {
    const env = await testEnv({ kind, env: { RATE_LIMIT_PER_MINUTE: "3" } });
    try {
      const { key } = await userWithKey(env);
      const other = await userWithKey(env);
      const call = (k: string) =>
        env.app.request("/api/1/screenshot/presets", {
          headers: { authorization: `Bearer ${k}` },
        });
      for (let i = 0; i < 3; i++) {
        const ok = await call(key);
        assert.equal(ok.status, 200);
        assert.equal(ok.headers.get("x-ratelimit-remaining"), String(2 - i));
        assert.equal(ok.headers.get("x-ratelimit-limit"), "3");
        const reset = Number(ok.headers.get("x-ratelimit-reset"));
        assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
        assert.ok(ok.headers.get("x-request-id"));
        await ok.body?.cancel();
      }
      const limited = await call(key);
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get("retry-after")) >= 1);
      assert.equal(
        limited.headers.get("x-ratelimit-reset"),
        limited.headers.get("retry-after"),
      );
      assert.deepEqual((await limited.json()).error.code, 170);
      // Another key has its own budget; the next minute restores this one.
      assert.equal((await call(other.key)).status, 200);
      env.clock.advance(60_000);
      assert.equal((await call(key)).status, 200);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] with leases of several calls the limit is still exact: 121 a minute admits 121 calls, not one more`, async () => {
    // 121/min is leased two calls at a time: the last lease has room for one.
    const env = await testEnv({ kind, env: { RATE_LIMIT_PER_MINUTE: "121" } });
    try {
      const { key } = await userWithKey(env);
      const statuses: number[] = [];
      for (let i = 0; i < 123; i++) {
        const r = await env.app.request("/api/1/screenshot/presets", {
          headers: { authorization: `Bearer ${key}` },
        });
        await r.body?.cancel();
        statuses.push(r.status);
      }
      assert.equal(statuses.filter((s) => s === 200).length, 121);
      assert.deepEqual(statuses.slice(121), [429, 429]);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] the database holds no clear key or password`, async () => {
    const env = await testEnv({ kind });
    try {
      const db = env.deps.database.db;
      const { key, user } = await userWithKey(env);
      const keyRow = await db.selectFrom("api_keys").selectAll().where(
        "user_id",
        "=",
        user.id,
      )
        .executeTakeFirstOrThrow();
      const userRow = await db.selectFrom("users").selectAll().where(
        "id",
        "=",
        user.id,
      )
        .executeTakeFirstOrThrow();
      const everything = JSON.stringify([keyRow, userRow]);
      assert.ok(!everything.includes(key));
      assert.ok(!everything.includes(key.slice(4, 20)));
      assert.ok(!everything.includes("correct horse battery"));
      // Floors from outside the code: scrypt's paper and RFC 7914 give N = 2^14, r = 8 as
      // the interactive-login minimum; a 16-byte salt at least (NIST SP 800-132: 128 bits).
      const [alg, n, r, p, salt, hash] = userRow.password_hash.split("$");
      assert.equal(alg, "scrypt");
      assert.ok(Number(n) >= 2 ** 14 && Number(r) >= 8 && Number(p) >= 1);
      assert.ok(atob(salt.replace(/-/g, "+").replace(/_/g, "/")).length >= 16);
      assert.ok(hash.length >= 43, "a 256-bit derived key");
      assert.match(keyRow.key_hash, /^[0-9a-f]{64}$/);
      assert.equal(keyRow.last4, key.slice(-4));
    } finally {
      await env.close();
    }
  });
}

test("sign-up in the browser flow sets a safe session cookie and a key generated on the account page works with curl-style Bearer auth", async () => {
  const env = await testEnv();
  try {
    const res = await env.app.request(
      "/signup",
      form({ email: "alice@example.com", password: "a long enough password" }),
    );
    assert.equal(res.status, 303);
    // To the uploader (it was /account): what people came to do.
    assert.equal(res.headers.get("location"), "/");
    const setCookie = res.headers.get("set-cookie")!;
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Lax/);
    assert.doesNotMatch(setCookie, /Secure/); // BASE_URL is http here
    const cookie = cookieOf(res);

    const page = await env.app.request("/account", { headers: { cookie } });
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.match(html, /alice@example.com/);
    const csrfToken = html.match(/name="_csrf" value="([^"]+)"/)![1];

    // POST, redirect, GET: the key is shown on that one GET; a reload creates nothing.
    const gen = await env.app.request(
      "/account/keys",
      form({ _csrf: csrfToken, label: "laptop" }, { cookie }),
    );
    assert.equal(gen.status, 303);
    assert.equal(gen.headers.get("location"), "/account");
    const carried = gen.headers.get("set-cookie")!;
    assert.match(carried, /HttpOnly/);
    assert.match(carried, /SameSite=Strict/);
    assert.match(carried, /Path=\/account/);
    const shown = await env.app.request("/account", {
      headers: { cookie: `${cookie}; ${carried.split(";")[0]}` },
    });
    assert.equal(shown.headers.get("cache-control"), "no-store");
    assert.match(
      shown.headers.get("set-cookie") ?? "",
      /ih_new_key=;.*Max-Age=0/,
    );
    const genHtml = await shown.text();
    const key =
      genHtml.match(/id="new-key" type="text" readonly="" value="(ihk_[^"]+)"/)
        ?.[1] ??
        genHtml.match(/value="(ihk_[A-Za-z0-9_-]{43})"/)![1];
    assert.match(genHtml, /laptop/);
    // Every column of the keys table is named (axe: an empty header), the last for
    // screen readers only.
    assert.doesNotMatch(genHtml, /<th>\s*<\/th>/);
    assert.match(genHtml, /<th><span class="sr-only">Actions<\/span><\/th>/);
    // Reloading (the browser sends what it has left: the session) shows no key and makes
    // none; the key's last use is still "never".
    const reload = await (await env.app.request("/account", {
      headers: { cookie },
    })).text();
    assert.ok(!reload.includes(key));
    const keyRows = await env.deps.database.db.selectFrom("api_keys")
      .selectAll().execute();
    assert.equal(keyRows.length, 1);
    // Someone else's key in the cookie is not shown.
    const stranger = await userWithKey(env);
    const foreign = await (await env.app.request("/account", {
      headers: { cookie: `${cookie}; ih_new_key=${stranger.key}` },
    })).text();
    assert.ok(!foreign.includes(stranger.key));

    const api = await env.app.request("/api/1/screenshot/presets", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(api.status, 200);

    // The listing afterwards shows only the last 4 characters, never the key.
    const again =
      await (await env.app.request("/account", { headers: { cookie } })).text();
    assert.ok(!again.includes(key));
    assert.ok(again.includes(`…${key.slice(-4)}`));

    // ShareX config for that key, two minutes after the key's last use.
    const usedAt = (await env.deps.database.db.selectFrom("api_keys")
      .select("last_used_at").where("user_id", "=", keyRows[0].user_id)
      .executeTakeFirstOrThrow()).last_used_at;
    assert.ok(usedAt, "the API call counted as a use");
    env.clock.advance(120_000);
    const sx = await env.app.request(
      "/account/sharex",
      form({ _csrf: csrfToken, key }, { cookie }),
    );
    assert.equal(sx.status, 200);
    // A file name Windows accepts: no colon from the port.
    assert.match(
      sx.headers.get("content-disposition")!,
      /filename="localhost-8080\.sxcu"/,
    );
    // Downloading the config is not a use of the key: its last use stays the API call's.
    const afterSx = await env.deps.database.db.selectFrom("api_keys")
      .select("last_used_at").where("user_id", "=", keyRows[0].user_id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(afterSx.last_used_at, usedAt);
    const sxcu = await sx.json();
    assert.equal(sxcu.RequestURL, "http://localhost:8080/api/1/upload");
    assert.equal(sxcu.Headers.Authorization, `Bearer ${key}`);
    assert.equal(sxcu.FileFormName, "images");
    // Used as ShareX uses it: its request, then its {json:…} paths into the answer.
    const shared = new FormData();
    shared.append(
      sxcu.FileFormName,
      new File([
        await makeImage("png", { width: 400 }) as Uint8Array<ArrayBuffer>,
      ], "shot.png"),
    );
    const sent = await env.app.request(sxcu.RequestURL, {
      method: sxcu.RequestMethod,
      headers: sxcu.Headers,
      body: shared,
    });
    assert.equal(sent.status, 200);
    const answer = await sent.json();
    const pick = (template: string) =>
      template.match(/^\{json:([\w.]+)\}$/)![1].split(".").reduce(
        // deno-lint-ignore no-explicit-any
        (o: any, k) => o?.[k],
        answer,
      );
    assert.match(pick(sxcu.URL), /^http:\/\/localhost:8080\/[\w-]+\.png$/);
    assert.match(pick(sxcu.ThumbnailURL), /\.th\.png$/);
    assert.match(pick(sxcu.DeletionURL), /\/delete\//);

    // Revoke from the page; the key then gives 110.
    const keyId = again.match(/action="\/account\/keys\/([^/]+)\/revoke"/)![1];
    const rev = await env.app.request(
      `/account/keys/${keyId}/revoke`,
      form({ _csrf: csrfToken }, { cookie }),
    );
    assert.equal(rev.status, 303);
    const after = await json(
      await env.app.request(`/api/1/screenshot/presets?key=${key}`),
    );
    assert.equal(after.body.error.code, 110);
  } finally {
    await env.close();
  }
});

test("behind HTTPS (BASE_URL https) the session cookie is Secure and pages send HSTS", async () => {
  const env = await testEnv({ env: { BASE_URL: "https://img.example.com" } });
  try {
    const res = await env.app.request("https://img.example.com/signup", {
      ...form({ email: "s@example.com", password: "a long enough password" }, {
        origin: "https://img.example.com",
      }),
    });
    assert.equal(res.status, 303);
    assert.match(res.headers.get("set-cookie")!, /Secure/);
    const page = await env.app.request("https://img.example.com/login");
    assert.match(
      page.headers.get("strict-transport-security")!,
      /^max-age=\d{7,}/,
    );
    await page.body?.cancel();
  } finally {
    await env.close();
  }
});

test("forms from another origin or without the session token are refused", async () => {
  const env = await testEnv();
  try {
    const cross = await env.app.request(
      "/signup",
      form({ email: "evil@example.com", password: "a long enough password" }, {
        origin: "https://evil.example",
      }),
    );
    assert.equal(cross.status, 403);
    const r = await env.app.request(
      "/signup",
      form({ email: "bob@example.com", password: "a long enough password" }),
    );
    const cookie = cookieOf(r);
    const noToken = await env.app.request(
      "/account/keys",
      form({ label: "x" }, { cookie }),
    );
    assert.equal(noToken.status, 403);
    const body = await noToken.json();
    assert.equal(body.success, false);
    const wrongToken = await env.app.request(
      "/account/keys",
      form({ label: "x", _csrf: "forged" }, { cookie }),
    );
    assert.equal(wrongToken.status, 403);
    const keys = await env.deps.database.db.selectFrom("api_keys").selectAll()
      .execute();
    assert.equal(keys.length, 0);
  } finally {
    await env.close();
  }
});

test("a wrong password is refused and repeated failures are throttled with Retry-After, the page saying how long", async () => {
  const env = await testEnv({ env: { LOGIN_MAX_FAILURES: "3" } });
  try {
    await env.app.request(
      "/signup",
      form({ email: "carol@example.com", password: "a long enough password" }),
    );
    for (let i = 0; i < 3; i++) {
      const r = await env.app.request(
        "/login",
        form({ email: "carol@example.com", password: "wrong password!" }),
      );
      assert.equal(r.status, 401);
      assert.match(await r.text(), /Wrong e-mail or password/);
    }
    // Even the right password is refused while throttled.
    const locked = await env.app.request(
      "/login",
      form({ email: "CAROL@example.com", password: "a long enough password" }),
    );
    assert.equal(locked.status, 429);
    const wait = Number(locked.headers.get("retry-after"));
    assert.ok(wait > 0);
    // The page says how long, in words, matching Retry-After.
    assert.match(
      await locked.text(),
      new RegExp(`Try again in ${waitText(wait)}\\.`),
    );
    assert.deepEqual(
      [waitText(1), waitText(45), waitText(60), waitText(61), waitText(900)],
      ["1 second", "45 seconds", "1 minute", "2 minutes", "15 minutes"],
    );
    env.clock.advance(16 * 60_000);
    const ok = await env.app.request(
      "/login",
      form({ email: "carol@example.com", password: "a long enough password" }),
    );
    assert.equal(ok.status, 303);
    assert.match(ok.headers.get("set-cookie")!, /^sid=/);
  } finally {
    await env.close();
  }
});

test("one account cannot revoke another's key: the page's revoke route and revokeApiKey both leave it working", async () => {
  const env = await testEnv();
  try {
    // Mallory, signed in on the site; Alice's key, whose id Mallory has learnt.
    const r = await env.app.request(
      "/signup",
      form({
        email: "mallory@example.com",
        password: "a long enough password",
      }),
    );
    const cookie = cookieOf(r);
    const html =
      await (await env.app.request("/account", { headers: { cookie } })).text();
    const csrfToken = html.match(/name="_csrf" value="([^"]+)"/)![1];
    const alice = await userWithKey(env);
    const aliceKey = await env.deps.database.db.selectFrom("api_keys")
      .select("id").where("user_id", "=", alice.user.id)
      .executeTakeFirstOrThrow();
    const works = async () =>
      (await env.app.request("/api/1/screenshot/presets", {
        headers: { authorization: `Bearer ${alice.key}` },
      })).status;
    assert.equal(await works(), 200);
    const rev = await env.app.request(
      `/account/keys/${aliceKey.id}/revoke`,
      form({ _csrf: csrfToken }, { cookie }),
    );
    assert.equal(rev.status, 303);
    assert.equal(await works(), 200, "Alice's key still works");
    const mallory = await env.deps.database.db.selectFrom("users")
      .select("id").where("email", "=", "mallory@example.com")
      .executeTakeFirstOrThrow();
    assert.equal(
      await revokeApiKey(
        env.deps.database.db,
        mallory.id,
        aliceKey.id,
        env.deps.clock,
      ),
      false,
    );
    const row = await env.deps.database.db.selectFrom("api_keys")
      .select("revoked_at").where("id", "=", aliceKey.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.revoked_at, null);
    assert.equal(await works(), 200);
    // Her own revoke does take it away.
    assert.equal(
      await revokeApiKey(
        env.deps.database.db,
        alice.user.id,
        aliceKey.id,
        env.deps.clock,
      ),
      true,
    );
  } finally {
    await env.close();
  }
});

test("log out ends the session", async () => {
  const env = await testEnv();
  try {
    const r = await env.app.request(
      "/signup",
      form({ email: "dave@example.com", password: "a long enough password" }),
    );
    const cookie = cookieOf(r);
    const html =
      await (await env.app.request("/account", { headers: { cookie } })).text();
    const csrfToken = html.match(/name="_csrf" value="([^"]+)"/)![1];
    const out = await env.app.request(
      "/logout",
      form({ _csrf: csrfToken }, { cookie }),
    );
    assert.equal(out.status, 303);
    const page = await env.app.request("/account", { headers: { cookie } });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get("location"), "/login");
  } finally {
    await env.close();
  }
});

test("sign-up refuses a short password and a taken e-mail", async () => {
  const env = await testEnv();
  try {
    const short = await env.app.request(
      "/signup",
      form({ email: "e@example.com", password: "short" }),
    );
    assert.equal(short.status, 400);
    assert.match(await short.text(), /at least 10 characters/);
    await env.app.request(
      "/signup",
      form({ email: "e@example.com", password: "a long enough password" }),
    );
    const dup = await env.app.request(
      "/signup",
      form({ email: "E@example.com", password: "a long enough password" }),
    );
    assert.equal(dup.status, 400);
    assert.match(await dup.text(), /already exists/);
  } finally {
    await env.close();
  }
});

for (const kind of databaseKinds()) {
  test(`[${kind}] 40 concurrent wrong logins for one e-mail, over two instances, check at most LOGIN_MAX_FAILURES passwords; the rest get 170 with Retry-After`, async () => {
    const shared = await testDatabase(kind);
    const other = shared.another ? await shared.another() : shared;
    try {
      const user = await createUser(
        shared.db,
        "target@example.com",
        "correct horse battery",
      );
      let checked = 0;
      const counting: typeof verifyPassword = async (p, h) => {
        checked++;
        return await verifyPassword(p, h);
      };
      const clock = new TestClock();
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          verifyLogin(
            (i % 2 ? other : shared).db,
            i % 3 ? "TARGET@example.com" : "target@example.com",
            `wrong ${i}`,
            clock,
            5,
            counting,
          ).then(() => "in", (e) =>
            e instanceof ApiError
              ? `${e.code} ${e.headers?.["Retry-After"]}`
              : e instanceof AccountError
              ? "wrong"
              : `unexpected ${e}`)),
      );
      assert.equal(checked, 5);
      assert.equal(outcomes.filter((o) => o === "wrong").length, 5);
      assert.equal(outcomes.filter((o) => o === "170 900").length, 35);
      // Even the right password waits out the window...
      await assert.rejects(
        verifyLogin(shared.db, user.email, "correct horse battery", clock, 5),
        (e) => e instanceof ApiError && e.code === 170,
      );
      // ...after which it gets in, and frees the slots.
      clock.advance(15 * 60_000 + 1);
      assert.equal(
        (await verifyLogin(
          other.db,
          user.email,
          "correct horse battery",
          clock,
          5,
        )).id,
        user.id,
      );
      const left = await shared.db.selectFrom("login_attempts").selectAll()
        .execute();
      assert.deepEqual(left, []);
    } finally {
      if (other !== shared) await other.close();
      await shared.close();
    }
  });
}
