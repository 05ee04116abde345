import assert from "node:assert/strict";
import { sql } from "kysely";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { serve, tusUpload } from "./tus_clients.ts";

/**
 * Makes the database note the privacy each image row is inserted with (a trigger), so a
 * test can tell an image stored private from one stored public and made private after.
 */
async function noteInsertedPrivacy(env: TestEnv) {
  const { db } = env.deps.database;
  await sql`create table inserted_privacy (id text, privacy text)`.execute(db);
  await sql`create function note_privacy() returns trigger language plpgsql as $$
    begin insert into inserted_privacy values (new.id, new.privacy); return new; end $$`
    .execute(db);
  await sql`create trigger note_privacy after insert on images
    for each row execute function note_privacy()`.execute(db);
  return async (id: string) =>
    (await sql<{ privacy: string }>`select privacy from inserted_privacy
      where id = ${id}`.execute(db)).rows.map((r) => r.privacy);
}

/** POST /api/1/upload of `bytes` with form fields, and a query string. */
async function uploadWith(
  env: TestEnv,
  key: string,
  bytes: Uint8Array,
  fields: Record<string, string>,
  query = "",
) {
  const res = await env.app.request(`/api/1/upload${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: formWith([{ name: "a.png", bytes }], fields),
  });
  return { status: res.status, body: await res.json() };
}

/** The status a stranger gets for a path (no key, no cookie). */
async function strangerSees(env: TestEnv, url: string) {
  const res = await env.app.request(new URL(url).pathname);
  await res.body?.cancel();
  return res.status;
}

test("an upload's privacy (field or ?privacy=, password in the body) is the one its row is inserted with: private, unlisted and password images are never public, not even for a moment; bad values are 160 naming the field and store nothing", async () => {
  const env = await testEnv();
  try {
    const inserted = await noteInsertedPrivacy(env);
    const { key } = await userWithKey(env);
    const img = (n: number) => makeImage("png", { width: 40 + n, height: 30 });

    const priv = await uploadWith(env, key, await img(1), {
      privacy: "private",
    });
    assert.equal(priv.status, 200, JSON.stringify(priv.body));
    assert.equal(priv.body.data.privacy, "private");
    assert.deepEqual(await inserted(priv.body.data.id), ["private"]);
    assert.equal(await strangerSees(env, priv.body.data.url), 404);

    const unlisted = await uploadWith(
      env,
      key,
      await img(2),
      {},
      "?privacy=unlisted",
    );
    assert.equal(unlisted.body.data.privacy, "unlisted");
    assert.deepEqual(await inserted(unlisted.body.data.id), ["unlisted"]);
    assert.equal(await strangerSees(env, unlisted.body.data.url), 200);

    const locked = await uploadWith(env, key, await img(3), {
      privacy: "password",
      password: "open sesame",
    });
    assert.equal(locked.body.data.privacy, "password");
    assert.deepEqual(await inserted(locked.body.data.id), ["password"]);
    assert.equal(await strangerSees(env, locked.body.data.url), 404);
    const page = await env.app.request(
      new URL(locked.body.data.url_viewer).pathname,
    );
    assert.match(await page.text(), /type="password"/);

    // Without a field it is public, as before.
    const plain = await uploadWith(env, key, await img(4), {});
    assert.deepEqual(await inserted(plain.body.data.id), ["public"]);

    const before = (await env.deps.database.db.selectFrom("images")
      .select("id").execute()).length;
    for (
      const [fields, query, path] of [
        [{ privacy: "secret" }, "", "privacy"],
        [{}, "?privacy=hidden", "privacy"],
        [{ privacy: "password" }, "", "password"],
        [{ privacy: "password", password: "abc" }, "", "password"],
        [{ password: "open sesame" }, "", "password"],
        [{ privacy: "private", password: "open sesame" }, "", "password"],
        // A password in the query string (it ends up in logs) is not read.
        [{}, "?privacy=password&password=open%20sesame", "password"],
      ] as [Record<string, string>, string, string][]
    ) {
      const bad = await uploadWith(env, key, await img(9), fields, query);
      assert.deepEqual(
        [bad.status, bad.body.error.code],
        [400, 160],
        JSON.stringify([fields, query]),
      );
      assert.equal(bad.body.error.details[0].path, path);
    }
    assert.equal(
      (await env.deps.database.db.selectFrom("images").select("id").execute())
        .length,
      before,
    );
  } finally {
    await env.close();
  }
});

test("the same bytes sent again with a privacy and an album put the stored image in that album (a duplicate was left out of the album it was sent to) and hide it as asked, never less than it was", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const bytes = await makeImage("png", { width: 50, height: 50 });
    const first = await uploadWith(env, key, bytes, {});
    assert.equal(first.body.data.privacy, "public");
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Later",
    })).body.data;
    const again = await uploadWith(env, key, bytes, {
      privacy: "private",
      album_id: album.id,
    });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.data.duplicate, true);
    assert.equal(again.body.data.id, first.body.data.id);
    assert.equal(again.body.data.privacy, "private");
    assert.equal(again.body.data.album_id, album.id);
    assert.equal(await strangerSees(env, first.body.data.url), 404);
    const listed = await apiCall(
      env,
      key,
      "GET",
      `/api/1/images?album=${album.id}`,
    );
    assert.deepEqual(
      listed.body.data.images.map((i: { id: string }) => i.id),
      [first.body.data.id],
    );
    // Sent once more with neither, it keeps both; asking public or unlisted (the site's
    // uploader sends public by default) never shows it more: PATCH does that.
    const third = await uploadWith(env, key, bytes, {});
    assert.equal(third.body.data.privacy, "private");
    assert.equal(third.body.data.album_id, album.id);
    for (const privacy of ["public", "unlisted", "password"]) {
      const looser = await uploadWith(env, key, bytes, {
        privacy,
        ...(privacy === "password" ? { password: "open sesame" } : {}),
      });
      assert.equal(looser.body.data.privacy, "private", privacy);
    }
    assert.equal(await strangerSees(env, first.body.data.url), 404);
    // A public one sent again as unlisted is hidden that much.
    const other = await makeImage("png", { width: 51, height: 50 });
    await uploadWith(env, key, other, {});
    const hidden = await uploadWith(env, key, other, { privacy: "unlisted" });
    assert.equal(hidden.body.data.privacy, "unlisted");
  } finally {
    await env.close();
  }
});

test("a resumable upload's privacy metadata (unlisted too) is the one its row is inserted with, not public first and edited after", async () => {
  const env = await testEnv();
  const http = serve(env);
  try {
    const inserted = await noteInsertedPrivacy(env);
    const { key } = await userWithKey(env);
    for (const [i, privacy] of ["private", "unlisted"].entries()) {
      const bytes = await makeImage("png", { width: 64 + i, height: 48 });
      const { body } = await tusUpload(
        `${http.origin}/api/1/tus/`,
        key,
        bytes,
        { filename: "r.png", privacy },
      );
      const record = JSON.parse(body).data;
      assert.equal(record.privacy, privacy);
      assert.deepEqual(await inserted(record.id), [privacy]);
    }
  } finally {
    await http.close();
    await env.close();
  }
});
