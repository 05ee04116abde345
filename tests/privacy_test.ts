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

/** A user with a key and a signed-in browser's cookie. */
async function person(env: TestEnv) {
  const { user, key } = await userWithKey(env);
  const sid = await createSession(env.deps.database.db, user.id, env.clock);
  return { key, cookie: `sid=${sid}` };
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
  test(`[${serve}] privacy × who × route: public and unlisted images open to anyone with the link, private ones to their owner alone (session or key) and 404 to everyone else on files, variants, pages, records, lists and albums, with no cache or 304 telling`, async () => {
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
        const [i, privacy] of (["public", "unlisted", "private"] as const)
          .entries()
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
          { privacy },
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
            // The viewer page is for browsers: a key alone is not a session there.
            if (path.startsWith("/i/") && whoName === "owner's key") continue;
            const want = privacy === "private" && !isOwner ? 404 : 200;
            const got = await statusOf(env, path, who);
            assert.equal(got.status, want, `${privacy} ${path} by ${whoName}`);
            if (privacy === "private" && got.status === 200) {
              assert.equal(got.cacheControl, "private, no-store", path);
            }
          }
        }
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
          privacy === "private" ? 404 : 304,
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
      assert.equal(listed.body.data.total, 3);
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
      ]);
      assert.deepEqual(seen(await page(other)), ["public"]);
      const publicView = await page(nobody);
      assert.deepEqual(seen(publicView), ["public"]);
      assert.ok(
        !publicView.includes(ids.private),
        "no trace of the private one",
      );
      assert.match(publicView, /1 image/);
      // A private album: its owner's alone.
      await apiCall(env, owner.key, "PATCH", `/api/1/albums/${album.id}`, {
        privacy: "private",
      });
      const closed = await env.app.request(`/a/${album.id}`);
      assert.equal(closed.status, 404);
      await closed.body?.cancel();
      assert.deepEqual(seen(await page(owner)).length, 3);
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
