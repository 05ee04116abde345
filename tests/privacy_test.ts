import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { createSession } from "../services/accounts/accounts.ts";
import { sha256Hex } from "../services/accounts/crypto.ts";

/** A user with a key and a signed-in browser's cookie. */
async function person(env: TestEnv) {
  const { user, key } = await userWithKey(env);
  const { db } = env.deps.database;
  const sid = await createSession(db, user.id, env.clock);
  const { csrf_token } = await db.selectFrom("sessions").select("csrf_token")
    .where("id_hash", "=", sha256Hex(sid)).executeTakeFirstOrThrow();
  return { key, cookie: `sid=${sid}`, csrf: csrf_token };
}

/** The status of a GET as `who` asks it, the body read. */
async function statusOf(
  env: TestEnv,
  path: string,
  who: { key?: string; cookie?: string },
  headers: Record<string, string> = {},
) {
  const res = await env.app.fetch(
    new Request(`http://localhost:8080${path}`, {
      headers: {
        ...(who.key ? { authorization: `Bearer ${who.key}` } : {}),
        ...(who.cookie ? { cookie: who.cookie } : {}),
        ...headers,
      },
    }),
  );
  await res.arrayBuffer();
  return { status: res.status, cacheControl: res.headers.get("cache-control") };
}

for (const serve of ["app", "proxy"] as const) {
  test(`[${serve}] privacy × who × route: public and unlisted images open to anyone with the link, private and password ones to their owner alone (session or key) and 404 to everyone else on files, variants, records, lists and albums (a password image's page only asks for it), with no cache or 304 telling`, async () => {
    const env = await testEnv({ env: { IMAGE_SERVE: serve } });
    try {
      const owner = await person(env);
      const other = await person(env);
      const nobody = {};
      const album = (await apiCall(env, owner.key, "POST", "/api/1/albums", {
        title: "Mixed",
      })).body.data;
      const ids: Record<string, string> = {};
      for (
        const [i, privacy] of ([
          "public",
          "unlisted",
          "private",
          "password",
        ] as const).entries()
      ) {
        const form = formWith([{
          name: `${privacy}.png`,
          bytes: await makeImage("png", { width: 500 + i, height: 40 }),
        }]);
        form.append("album_id", album.id);
        env.clock.advance(1000);
        const up = await upload(env, owner.key, form);
        assert.equal(up.status, 200);
        ids[privacy] = up.body.data.id;
        const set = await apiCall(
          env,
          owner.key,
          "PATCH",
          `/api/1/images/${up.body.data.id}`,
          privacy === "password" ? { privacy, password: "open sesame" } : {
            privacy,
          },
        );
        assert.equal(set.body.data.privacy, privacy);
      }
      const routes = (id: string) => [
        `/${id}.png`,
        `/${id}.th.png`,
        `/${id}.png?w=160&format=webp`,
        `/i/${id}`,
      ];
      for (const [privacy, id] of Object.entries(ids)) {
        for (const path of routes(id)) {
          for (
            const [whoName, who] of [
              ["owner's session", { cookie: owner.cookie }],
              ["owner's key", { key: owner.key }],
              ["another user", { cookie: other.cookie, key: other.key }],
              ["nobody", nobody],
              ["a wrong key", { key: "ihk_wrong" }],
            ] as const
          ) {
            const isOwner = whoName.startsWith("owner");
            const restricted = privacy === "private" || privacy === "password";
            // A password image's page answers others with its password form alone.
            const gate = privacy === "password" && path.startsWith("/i/") &&
              !isOwner;
            const want = restricted && !isOwner && !gate ? 404 : 200;
            const got = await statusOf(env, path, who);
            assert.equal(got.status, want, `${privacy} ${path} by ${whoName}`);
            if (restricted && got.status === 200) {
              assert.equal(got.cacheControl, "private, no-store", path);
            }
          }
        }
        // The owner's key in the headers opens the viewer page as it opens the files:
        // the image itself, not a password image's form (issue #51).
        const page = await env.app.request(`/i/${id}`, {
          headers: { "x-api-key": owner.key },
        });
        const html = await page.text();
        assert.equal(page.status, 200);
        assert.match(html, /class="viewer-figure"/, `${privacy} page by key`);
        // A revalidation never confirms a private file to someone else, even with the
        // row in the cache the fast path reads (the owner's request just put it there).
        const path = `/${id}.png`;
        await statusOf(env, path, { cookie: owner.cookie });
        const etag = `"${id}.png"`;
        const reval = await statusOf(env, path, nobody, {
          "if-none-match": etag,
        });
        assert.equal(
          reval.status,
          privacy === "private" || privacy === "password" ? 404 : 304,
          `${privacy} revalidation by nobody`,
        );
        const mine = await statusOf(env, path, { cookie: owner.cookie }, {
          "if-none-match": etag,
        });
        assert.equal(mine.status, 304, `${privacy} revalidation by its owner`);
      }
      // Records and lists: the owner's alone, whatever the privacy.
      for (const id of Object.values(ids)) {
        assert.equal(
          (await apiCall(env, owner.key, "GET", `/api/1/images/${id}`)).status,
          200,
        );
        assert.equal(
          (await apiCall(env, other.key, "GET", `/api/1/images/${id}`)).status,
          404,
        );
      }
      const listed = await apiCall(env, owner.key, "GET", "/api/1/images");
      assert.equal(listed.body.data.total, 4);
      assert.equal(
        (await apiCall(env, other.key, "GET", "/api/1/images")).body.data.total,
        0,
      );
      // The album's page lists the public image to others, all three to its owner.
      const page = async (who: { cookie?: string }) =>
        await (await env.app.request(`/a/${album.id}`, {
          headers: who.cookie ? { cookie: who.cookie } : {},
        })).text();
      const seen = (html: string) =>
        Object.entries(ids).filter(([, id]) => html.includes(`/i/${id}"`))
          .map(([p]) => p);
      assert.deepEqual(seen(await page(owner)), [
        "public",
        "unlisted",
        "private",
        "password",
      ]);
      assert.deepEqual(seen(await page(other)), ["public"]);
      const publicView = await page(nobody);
      assert.deepEqual(seen(publicView), ["public"]);
      for (const hidden of [ids.private, ids.password]) {
        assert.ok(!publicView.includes(hidden), "no trace of the others");
      }
      assert.match(publicView, /1 image/);
      // A private album: its owner's alone.
      await apiCall(env, owner.key, "PATCH", `/api/1/albums/${album.id}`, {
        privacy: "private",
      });
      const closed = await env.app.request(`/a/${album.id}`);
      assert.equal(closed.status, 404);
      await closed.body?.cancel();
      assert.deepEqual(seen(await page(owner)).length, 4);
      // Made public again, the image's files are open at once (its row re-read).
      await apiCall(env, owner.key, "PATCH", `/api/1/images/${ids.private}`, {
        privacy: "public",
      });
      assert.equal(
        (await statusOf(env, `/${ids.private}.png`, nobody)).status,
        200,
      );
    } finally {
      await env.close();
    }
  });
}

/** Posts a page's password form as a browser on our own origin would. */
function postPassword(
  env: TestEnv,
  path: string,
  password: string,
  headers: Record<string, string> = {},
) {
  return env.app.request(path, {
    method: "POST",
    headers: {
      origin: "http://localhost:8080",
      "content-type": "application/x-www-form-urlencoded",
      ...headers,
    },
    body: new URLSearchParams({ password }),
  });
}

/**
 * The token with its MAC's first character changed (always to another one: a fixed
 * suffix such as "AA" was the real MAC once in 256 runs, a base64url MAC of 16 bytes
 * ending in one of only four characters).
 */
function altered(token: string): string {
  const [exp, mac] = token.split(".");
  return `${exp}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
}

/** The `unlock=…` pair of a Set-Cookie, and the whole header. */
function unlockCookie(res: Response) {
  const set = res.headers.get("set-cookie") ?? "";
  return { pair: set.split(";")[0], set };
}

/** Every signed file URL of a page (`…?access=` or `…&access=`), as paths. */
function signedPaths(html: string): string[] {
  // The page names them as paths (issue #52: at whatever address it was opened).
  const found = html.match(
    /(?<=["\s,])(?:http:\/\/localhost:8080)?\/[^"\s,]*access=[^"\s,]+/g,
  ) ?? [];
  return [
    ...new Set(found.map((u) => u.replace(/^http:\/\/localhost:8080/, ""))),
  ].map((p) => p.replaceAll("&amp;", "&"));
}

for (const serve of ["app", "proxy"] as const) {
  test(`[${serve}] a password image's page asks for its password and shows nothing before; the right one unlocks that page alone, whose signed file URLs work for PASSWORD_URL_SECONDS and for that image only; a new password ends every unlock and URL`, async () => {
    const env = await testEnv({
      env: {
        IMAGE_SERVE: serve,
        PASSWORD_URL_SECONDS: "600",
        PASSWORD_UNLOCK_SECONDS: "3600",
      },
    });
    try {
      const owner = await person(env);
      const bytes = await makeImage("png", { width: 700, height: 50 });
      const up = await upload(
        env,
        owner.key,
        formWith([{ name: "secret-plans.png", bytes }]),
      );
      const id = up.body.data.id;
      const other = await upload(
        env,
        owner.key,
        formWith([{
          name: "other.png",
          bytes: await makeImage("png", { width: 701, height: 50 }),
        }]),
      );
      for (const image of [id, other.body.data.id]) {
        const set = await apiCall(
          env,
          owner.key,
          "PATCH",
          `/api/1/images/${image}`,
          {
            privacy: "password",
            password: "open sesame",
          },
        );
        assert.equal(set.status, 200);
        assert.equal(set.body.data.privacy, "password");
        assert.ok(!JSON.stringify(set.body).includes("password_hash"));
        assert.ok(!JSON.stringify(set.body).includes("open sesame"));
      }

      // My images sets both at once, as most people will: one hash for the selection.
      const bulk = await env.app.request("/images/privacy", {
        method: "POST",
        headers: {
          cookie: owner.cookie,
          origin: "http://localhost:8080",
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams([
          ["_csrf", owner.csrf],
          ["id", id],
          ["id", other.body.data.id],
          ["privacy", "password"],
          ["password", "open sesame"],
        ]),
      });
      assert.equal(bulk.status, 303);
      const hashes = await env.deps.database.db.selectFrom("images")
        .select("password_hash").where("id", "in", [id, other.body.data.id])
        .execute();
      assert.equal(new Set(hashes.map((h) => h.password_hash)).size, 1);

      // Locked: the form, and nothing of the image (its title, its files).
      const locked = await env.app.request(`/i/${id}`);
      const lockedHtml = await locked.text();
      assert.equal(locked.status, 200);
      assert.match(lockedHtml, /type="password"/);
      assert.ok(!lockedHtml.includes("secret-plans"), "no title before");
      assert.ok(!lockedHtml.includes(`${id}.png`), "no file before");
      assert.equal(locked.headers.get("cache-control"), "private, no-store");
      assert.equal(locked.headers.get("x-robots-tag"), "noindex");

      // A wrong password: the form again, 403, no cookie.
      const wrong = await postPassword(env, `/i/${id}`, "open sesame!");
      assert.equal(wrong.status, 403);
      assert.match(await wrong.text(), /not right/);
      assert.equal(wrong.headers.get("set-cookie"), null);
      // From another site's page: refused before any password check.
      const foreign = await postPassword(env, `/i/${id}`, "open sesame", {
        origin: "http://evil.localhost",
      });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers.get("set-cookie"), null);
      await foreign.body?.cancel();

      // The right one: an unlock for this page's path alone.
      const right = await postPassword(env, `/i/${id}`, "open sesame");
      assert.equal(right.status, 303);
      assert.equal(right.headers.get("location"), `/i/${id}`);
      const cookie = unlockCookie(right);
      assert.match(cookie.set, new RegExp(`Path=/i/${id}(;|$)`));
      assert.match(cookie.set, /HttpOnly/);
      assert.match(cookie.set, /SameSite=Lax/);
      // The same cookie does not open the other image's page.
      const elsewhere = await env.app.request(`/i/${other.body.data.id}`, {
        headers: { cookie: cookie.pair },
      });
      assert.ok(!(await elsewhere.text()).includes("other.png"));

      const open = await env.app.request(`/i/${id}`, {
        headers: { cookie: cookie.pair },
      });
      const html = await open.text();
      assert.equal(open.status, 200);
      assert.match(html, /secret-plans/);
      assert.equal(open.headers.get("cache-control"), "private, no-store");
      assert.ok(!html.includes('property="og:image"'), "no OpenGraph image");
      const signed = signedPaths(html);
      const original = signed.find((p) =>
        new RegExp(`^/${id}\\.png\\?access=[^&]+$`).test(p)
      );
      assert.ok(original, `a signed original among ${signed.join(" ")}`);
      const variant = signed.find((p) =>
        /access=[^&]+&w=160&format=webp$/.test(p)
      );
      assert.ok(variant, "signed srcset entries");
      for (const path of [original, variant]) {
        const res = await env.app.request(path);
        assert.equal(res.status, 200, path);
        assert.equal(res.headers.get("cache-control"), "private, no-store");
        if (serve === "proxy") {
          assert.ok(res.headers.get("x-accel-redirect"), "nginx sends it");
          await res.body?.cancel();
        } else if (path === original) {
          assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
        } else {
          const got = new Uint8Array(await res.arrayBuffer());
          assert.equal(
            String.fromCharCode(...got.slice(8, 12)),
            "WEBP",
            "a WebP",
          );
        }
      }
      const token = original.split("access=")[1];
      // The token is this image's: not another's, not altered, not unsigned.
      for (
        const path of [
          `/${other.body.data.id}.png?access=${token}`,
          `/${id}.png?access=${altered(token)}`,
          `/${id}.png?access=${Number(token.split(".")[0]) + 1}.${
            token.split(".")[1]
          }`,
          `/${id}.png`,
        ]
      ) {
        assert.equal((await statusOf(env, path, {})).status, 404, path);
      }

      // Past PASSWORD_URL_SECONDS the URL is dead; the unlock still stands, and the page
      // hands out fresh ones.
      env.clock.advance(601_000);
      assert.equal((await statusOf(env, original, {})).status, 404);
      const later = await (await env.app.request(`/i/${id}`, {
        headers: { cookie: cookie.pair },
      })).text();
      const fresh = signedPaths(later).find((p) =>
        p.startsWith(`/${id}.png?access=`)
      )!;
      assert.equal((await statusOf(env, fresh, {})).status, 200);

      // A new password ends the unlock and every URL made under the old one.
      await apiCall(env, owner.key, "PATCH", `/api/1/images/${id}`, {
        password: "another one",
      });
      assert.equal((await statusOf(env, fresh, {})).status, 404);
      const relocked = await (await env.app.request(`/i/${id}`, {
        headers: { cookie: cookie.pair },
      })).text();
      assert.ok(!relocked.includes("secret-plans"), "locked again");

      // Made private, a signed URL opens nothing, even a fresh one.
      const unlocked2 = unlockCookie(
        await postPassword(env, `/i/${id}`, "another one"),
      );
      const url2 = signedPaths(
        await (await env.app.request(`/i/${id}`, {
          headers: { cookie: unlocked2.pair },
        })).text(),
      ).find((p) => p.startsWith(`/${id}.png?access=`))!;
      assert.equal((await statusOf(env, url2, {})).status, 200);
      await apiCall(env, owner.key, "PATCH", `/api/1/images/${id}`, {
        privacy: "private",
      });
      assert.equal((await statusOf(env, url2, {})).status, 404);
      const privatePage = await env.app.request(`/i/${id}`, {
        headers: { cookie: unlocked2.pair },
      });
      assert.equal(privatePage.status, 404);
      await privatePage.body?.cancel();
      // Back to password needs a new password: the old hash went with the privacy.
      const left = await env.deps.database.db.selectFrom("images")
        .select("password_hash").where("id", "=", id).executeTakeFirstOrThrow();
      assert.equal(left.password_hash, null);
      const again = await apiCall(
        env,
        owner.key,
        "PATCH",
        `/api/1/images/${id}`,
        {
          privacy: "password",
        },
      );
      assert.equal(again.status, 400);
      assert.equal(again.body.error.code, 160);
    } finally {
      await env.close();
    }
  });
}

test("password attempts are counted per client address across every image and album: past PASSWORD_ATTEMPTS_PER_MINUTE the form answers 429 with Retry-After before any hashing, and a minute later it checks again", async () => {
  const env = await testEnv({ env: { PASSWORD_ATTEMPTS_PER_MINUTE: "3" } });
  try {
    const owner = await person(env);
    const ids: string[] = [];
    for (const width of [300, 301]) {
      const up = await upload(
        env,
        owner.key,
        formWith([{
          name: "p.png",
          bytes: await makeImage("png", { width, height: 30 }),
        }]),
      );
      ids.push(up.body.data.id);
      await apiCall(
        env,
        owner.key,
        "PATCH",
        `/api/1/images/${up.body.data.id}`,
        {
          privacy: "password",
          password: "right one",
        },
      );
    }
    const statuses: number[] = [];
    for (const id of [ids[0], ids[1], ids[0], ids[1]]) {
      const res = await postPassword(env, `/i/${id}`, "guess");
      statuses.push(res.status);
      if (res.status === 429) {
        assert.ok(Number(res.headers.get("retry-after")) > 0);
      }
      await res.body?.cancel();
    }
    assert.deepEqual(statuses, [403, 403, 403, 429]);
    // Even the right password waits out the minute.
    const blocked = await postPassword(env, `/i/${ids[0]}`, "right one");
    assert.equal(blocked.status, 429);
    await blocked.body?.cancel();
    env.clock.advance(61_000);
    const right = await postPassword(env, `/i/${ids[0]}`, "right one");
    assert.equal(right.status, 303);
  } finally {
    await env.close();
  }
});

test("the password API: privacy password needs a password, a password needs privacy password, the hash is never answered, and an album with a password asks for it on its page, then lists its public images", async () => {
  const env = await testEnv();
  try {
    const owner = await person(env);
    const noPassword = await apiCall(env, owner.key, "POST", "/api/1/albums", {
      title: "Locked",
      privacy: "password",
    });
    assert.equal(noPassword.status, 400);
    assert.equal(noPassword.body.error.code, 160);
    const stray = await apiCall(env, owner.key, "POST", "/api/1/albums", {
      title: "Open",
      password: "what for",
    });
    assert.equal(stray.status, 400);
    const short = await apiCall(env, owner.key, "POST", "/api/1/albums", {
      title: "Short",
      privacy: "password",
      password: "abc",
    });
    assert.equal(short.status, 400);
    const made = await apiCall(env, owner.key, "POST", "/api/1/albums", {
      title: "Locked album",
      privacy: "password",
      password: "album pass",
    });
    assert.equal(made.status, 200);
    assert.equal(made.body.data.privacy, "password");
    assert.ok(!JSON.stringify(made.body).includes("album pass"));
    assert.ok(!JSON.stringify(made.body).includes("scrypt"));
    const album = made.body.data.id;
    const form = formWith([{
      name: "inside.png",
      bytes: await makeImage("png", { width: 410, height: 30 }),
    }]);
    form.append("album_id", album);
    const up = await upload(env, owner.key, form);
    assert.equal(up.status, 200);

    const locked = await env.app.request(`/a/${album}`);
    const lockedHtml = await locked.text();
    assert.equal(locked.status, 200);
    assert.ok(!lockedHtml.includes("Locked album"), "no title before");
    assert.ok(!lockedHtml.includes(up.body.data.id), "no image before");
    const wrong = await postPassword(env, `/a/${album}`, "nope nope");
    assert.equal(wrong.status, 403);
    await wrong.body?.cancel();
    const right = await postPassword(env, `/a/${album}`, "album pass");
    assert.equal(right.status, 303);
    const cookie = unlockCookie(right);
    assert.match(cookie.set, new RegExp(`Path=/a/${album}(;|$)`));
    const open = await env.app.request(`/a/${album}`, {
      headers: { cookie: cookie.pair },
    });
    const html = await open.text();
    assert.equal(open.status, 200);
    assert.match(html, /Locked album/);
    assert.ok(html.includes(`/i/${up.body.data.id}"`), "its public image");
    assert.equal(open.headers.get("cache-control"), "private, no-store");
    // The album's password is not an image's: the image page stays as its own privacy.
    const imagePost = await postPassword(env, `/i/${up.body.data.id}`, "x1234");
    assert.equal(imagePost.status, 404);
    await imagePost.body?.cancel();
    // A new album password locks the page again; no privacy but password takes one.
    await apiCall(env, owner.key, "PATCH", `/api/1/albums/${album}`, {
      password: "new album pass",
    });
    const relocked = await (await env.app.request(`/a/${album}`, {
      headers: { cookie: cookie.pair },
    })).text();
    assert.ok(!relocked.includes("Locked album"));
    const toPublic = await apiCall(
      env,
      owner.key,
      "PATCH",
      `/api/1/albums/${album}`,
      {
        privacy: "public",
      },
    );
    assert.equal(toPublic.body.data.privacy, "public");
    assert.match(
      await (await env.app.request(`/a/${album}`)).text(),
      /Locked album/,
    );
  } finally {
    await env.close();
  }
});

test("each password token serves one kind, through HTTP as a stranger holds them: a page's unlock cookie is no file's access= token, and a file's access= token is no unlock cookie", async () => {
  const env = await testEnv();
  try {
    const owner = await person(env);
    const up = await upload(
      env,
      owner.key,
      formWith([{
        name: "kinds.png",
        bytes: await makeImage("png", { width: 90 }),
      }]),
    );
    const id = up.body.data.id;
    const set = await apiCall(env, owner.key, "PATCH", `/api/1/images/${id}`, {
      privacy: "password",
      password: "open sesame",
    });
    assert.equal(set.status, 200);
    const right = await postPassword(env, `/i/${id}`, "open sesame");
    assert.equal(right.status, 303);
    const { pair } = unlockCookie(right);
    const [name, unlockToken] = pair.split("=");
    const open = await env.app.request(`/i/${id}`, {
      headers: { cookie: pair },
    });
    const html = await open.text();
    assert.match(html, /kinds\.png/);
    const fileToken = signedPaths(html).find((p) =>
      p.startsWith(`/${id}.png?access=`)
    )!.split("access=")[1];
    // The file's own token opens the file; the page's cookie does not.
    const file = await env.app.request(`/${id}.png?access=${fileToken}`);
    assert.equal(file.status, 200);
    await file.body?.cancel();
    const asFile = await env.app.request(`/${id}.png?access=${unlockToken}`);
    assert.equal(asFile.status, 404);
    await asFile.body?.cancel();
    // The file's token as the page's cookie: the page stays locked.
    const asUnlock = await env.app.request(`/i/${id}`, {
      headers: { cookie: `${name}=${fileToken}` },
    });
    const locked = await asUnlock.text();
    assert.match(locked, /type="password"/);
    assert.doesNotMatch(locked, /kinds\.png/);
  } finally {
    await env.close();
  }
});
