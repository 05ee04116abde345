import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  databaseKinds,
  fetchBytes,
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { listAlbums, viewOf } from "../services/albums/albums.ts";

async function uploadPng(
  env: TestEnv,
  key: string,
  width: number,
  fields: Record<string, string> = {},
) {
  const form = formWith([{
    name: `p${width}.png`,
    bytes: await makeImage("png", { width }),
  }]);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return await upload(env, key, form);
}

for (const kind of databaseKinds()) {
  test(`[${kind}] albums: created, listed by position then newest, read, changed field by field, and someone else's are 404 everywhere`, async () => {
    const env = await testEnv({ kind });
    try {
      const { key } = await userWithKey(env);
      const other = await userWithKey(env);
      const a = await apiCall(env, key, "POST", "/api/1/albums", {
        title: "Holiday",
        description: "By the sea",
      });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const album = a.body.data;
      assert.deepEqual(
        [
          album.kind,
          album.title,
          album.description,
          album.privacy,
          album.image_count,
          album.cover_url,
        ],
        ["album", "Holiday", "By the sea", "public", 0, null],
      );
      assert.equal(album.url_viewer, `http://localhost:8080/a/${album.id}`);
      const b = (await apiCall(env, key, "POST", "/api/1/albums", {
        title: "Work",
        privacy: "unlisted",
        position: -1,
      })).body.data;
      const c = (await apiCall(env, key, "POST", "/api/1/albums", {
        title: "Later",
      })).body.data;
      const list = await apiCall(env, key, "GET", "/api/1/albums");
      assert.deepEqual(
        list.body.data.albums.map((x: { id: string }) => x.id),
        [b.id, c.id, album.id],
        "position first (Work at -1), then newest first",
      );
      const changed = await apiCall(
        env,
        key,
        "PATCH",
        `/api/1/albums/${album.id}`,
        {
          title: "Holiday 2026",
          privacy: "unlisted",
        },
      );
      assert.equal(changed.status, 200);
      assert.deepEqual(
        [
          changed.body.data.title,
          changed.body.data.description,
          changed.body.data.privacy,
        ],
        ["Holiday 2026", "By the sea", "unlisted"],
      );
      assert.equal(
        (await apiCall(env, key, "GET", `/api/1/albums/${album.id}`)).body.data
          .title,
        "Holiday 2026",
      );
      // Someone else's album: 404 whatever the operation, and nothing changes.
      for (
        const [method, path, body] of [
          ["GET", `/api/1/albums/${album.id}`],
          ["PATCH", `/api/1/albums/${album.id}`, { title: "Mine" }],
          ["DELETE", `/api/1/albums/${album.id}`],
          ["GET", `/api/1/albums/${album.id}/images`],
        ] as const
      ) {
        const r = await apiCall(env, other.key, method, path, body);
        assert.deepEqual([r.status, r.body.error.code], [404, 404], path);
      }
      assert.deepEqual(
        (await apiCall(env, other.key, "GET", "/api/1/albums")).body.data
          .albums,
        [],
      );
      assert.equal(
        (await apiCall(env, key, "GET", `/api/1/albums/${album.id}`)).body.data
          .title,
        "Holiday 2026",
      );
    } finally {
      await env.close();
    }
  });
}

test("album bodies are checked: no title, an unknown field, an unknown privacy, a cover not in the album are 160; no key is 100", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    for (
      const body of [
        {},
        { title: "  " },
        { title: "x".repeat(256) },
        { title: "ok", colour: "red" },
        { title: "ok", privacy: "secret" },
      ]
    ) {
      const r = await apiCall(env, key, "POST", "/api/1/albums", body);
      assert.deepEqual(
        [r.status, r.body.error.code],
        [400, 160],
        JSON.stringify(body),
      );
    }
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "A",
    })).body.data;
    const loose = await uploadPng(env, key, 30);
    const cover = await apiCall(
      env,
      key,
      "PATCH",
      `/api/1/albums/${album.id}`,
      {
        cover_image_id: loose.body.data.id,
      },
    );
    assert.deepEqual([cover.status, cover.body.error.code], [400, 160]);
    assert.equal(cover.body.error.details[0].path, "cover_image_id");
    const keyless = await json(
      await env.app.request("/api/1/albums", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ title: "x" }),
      }),
    );
    assert.deepEqual([keyless.status, keyless.body.error.code], [401, 100]);
  } finally {
    await env.close();
  }
});

test("uploads go into an album by album_id (multipart field, JSON `album`, or the query), the album lists them newest first a page at a time with its count and cover, and someone else's album is 160 with nothing stored", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const other = await userWithKey(env);
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Trip",
    })).body.data;
    const one = await uploadPng(env, key, 31, { album_id: album.id });
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.data.album_id, album.id);
    env.clock.advance(1000);
    const png = await makeImage("png", { width: 32 });
    const two = await apiCall(env, key, "POST", "/api/1/upload", {
      image: btoa(String.fromCharCode(...png)),
      album: album.id,
    });
    assert.equal(two.body.data.album_id, album.id);
    env.clock.advance(1000);
    const three = await upload(
      env,
      key,
      formWith([{
        name: "q.png",
        bytes: await makeImage("png", { width: 33 }),
      }]),
      `?album_id=${album.id}`,
    );
    assert.equal(three.body.data.album_id, album.id);
    const loose = await uploadPng(env, key, 34);
    assert.equal(loose.body.data.album_id, null);

    const page1 = await apiCall(
      env,
      key,
      "GET",
      `/api/1/albums/${album.id}/images?per_page=2`,
    );
    assert.equal(page1.status, 200);
    assert.deepEqual(
      page1.body.data.images.map((i: { id: string }) => i.id),
      [three.body.data.id, two.body.data.id],
    );
    assert.deepEqual(
      [page1.body.data.total, page1.body.data.pages],
      [3, 2],
    );
    const page2 = await apiCall(
      env,
      key,
      "GET",
      `/api/1/albums/${album.id}/images?per_page=2&page=2`,
    );
    assert.deepEqual(
      page2.body.data.images.map((i: { id: string }) => i.id),
      [one.body.data.id],
    );
    const got =
      (await apiCall(env, key, "GET", `/api/1/albums/${album.id}`)).body
        .data;
    assert.equal(got.image_count, 3);
    assert.equal(got.cover_url, three.body.data.thumb.url, "the newest");
    const covered = await apiCall(
      env,
      key,
      "PATCH",
      `/api/1/albums/${album.id}`,
      {
        cover_image_id: one.body.data.id,
      },
    );
    assert.equal(covered.body.data.cover_url, one.body.data.thumb.url);

    const theirs = await uploadPng(env, other.key, 35, {
      album_id: album.id,
    });
    assert.deepEqual([theirs.status, theirs.body.error.code], [400, 160]);
    assert.equal(theirs.body.error.details[0].path, "album_id");
    const mine = await apiCall(env, other.key, "GET", "/api/1/images");
    assert.equal(mine.body.data.total, 0, "nothing stored for the refusal");
  } finally {
    await env.close();
  }
});

test("PATCH /api/1/images/{id} changes title, description, album and expiration (0 keeps it for good); the viewer shows the change at once; someone else's image is 404 and someone else's album 160", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const other = await userWithKey(env);
    const up = (await uploadPng(env, key, 40)).body.data;
    // The viewer reads the row through the cache first.
    const before = await env.app.request(`/i/${up.id}`);
    assert.match(await before.text(), /p40\.png/);
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Moved",
    })).body.data;
    const r = await apiCall(env, key, "PATCH", `/api/1/images/${up.id}`, {
      title: "Sunset",
      description: "From the pier",
      album_id: album.id,
      expiration: 3600,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rec = r.body.data;
    assert.deepEqual(
      [rec.title, rec.description, rec.album_id, rec.url],
      ["Sunset", "From the pier", album.id, up.url],
    );
    assert.ok(Math.abs(rec.expiration - 3600) <= 2, String(rec.expiration));
    assert.match(await (await env.app.request(`/i/${up.id}`)).text(), /Sunset/);
    const kept = await apiCall(env, key, "PATCH", `/api/1/images/${up.id}`, {
      expiration: 0,
      album_id: null,
    });
    assert.deepEqual(
      [kept.body.data.expiration, kept.body.data.album_id],
      [0, null],
    );
    assert.equal(
      (await apiCall(env, key, "GET", `/api/1/albums/${album.id}`)).body.data
        .image_count,
      0,
    );
    const theirs = await apiCall(
      env,
      other.key,
      "PATCH",
      `/api/1/images/${up.id}`,
      {
        title: "Mine now",
      },
    );
    assert.deepEqual([theirs.status, theirs.body.error.code], [404, 404]);
    const otherAlbum = (await apiCall(env, other.key, "POST", "/api/1/albums", {
      title: "Theirs",
    })).body.data;
    const into = await apiCall(env, key, "PATCH", `/api/1/images/${up.id}`, {
      album_id: otherAlbum.id,
    });
    assert.deepEqual([into.status, into.body.error.code], [400, 160]);
    for (const body of [{ expiration: 5 }, { title: "" }, { owner: "x" }]) {
      const bad = await apiCall(
        env,
        key,
        "PATCH",
        `/api/1/images/${up.id}`,
        body,
      );
      assert.deepEqual([bad.status, bad.body.error.code], [400, 160]);
    }
    const now = (await apiCall(env, key, "GET", `/api/1/images/${up.id}`)).body
      .data;
    assert.deepEqual([now.title, now.album_id], ["Sunset", null]);
  } finally {
    await env.close();
  }
});

test("deleting an album leaves its images, in no album; with with_images=true its images go too, their files 404 at once", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const keep = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Keep",
    })).body.data;
    const a = (await uploadPng(env, key, 50, { album_id: keep.id })).body.data;
    const del = await apiCall(env, key, "DELETE", `/api/1/albums/${keep.id}`);
    assert.deepEqual(del.body.data, { id: keep.id, deleted: true });
    const still = await apiCall(env, key, "GET", `/api/1/images/${a.id}`);
    assert.deepEqual([still.status, still.body.data.album_id], [200, null]);
    assert.equal(
      (await apiCall(env, key, "GET", `/api/1/albums/${keep.id}`)).status,
      404,
    );

    const drop = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Drop",
    })).body.data;
    const b = (await uploadPng(env, key, 51, { album_id: drop.id })).body.data;
    const c = (await uploadPng(env, key, 52, { album_id: drop.id })).body.data;
    const path = new URL(b.url).pathname;
    assert.equal((await fetchBytes(env, path)).res.status, 200);
    const gone = await apiCall(
      env,
      key,
      "DELETE",
      `/api/1/albums/${drop.id}?with_images=true`,
    );
    assert.equal(gone.status, 200);
    for (const img of [b, c]) {
      assert.equal(
        (await apiCall(env, key, "GET", `/api/1/images/${img.id}`)).status,
        404,
      );
      assert.equal(
        (await fetchBytes(env, new URL(img.url).pathname)).res.status,
        404,
      );
    }
    assert.equal(
      (await apiCall(env, key, "GET", `/api/1/images/${a.id}`)).status,
      200,
      "an image of another album is untouched",
    );
  } finally {
    await env.close();
  }
});

test("the album page /a/<id> shows its title, description and images to anyone with the link, OpenGraph tags with its cover, and every link in one box per code type; unlisted is noindex; titles cannot break out of the page", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: `Trip </script><script>alert(1)</script>`,
      description: "Two weeks",
    })).body.data;
    const ids: string[] = [];
    const urls: string[] = [];
    for (const w of [60, 61, 62]) {
      const r = await uploadPng(env, key, w, { album_id: album.id });
      ids.push(r.body.data.id);
      urls.push(r.body.data.url);
      env.clock.advance(1000);
    }
    // Someone without a session, as a shared link is opened.
    const res = await env.app.request(`/a/${album.id}`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.ok(!html.includes("<script>alert(1)"), "the title is escaped");
    assert.match(html, /<h1>Trip &lt;\/script&gt;/);
    assert.match(html, /Two weeks/);
    assert.match(html, /3 images/);
    assert.match(html, /<meta property="og:title"/);
    const og = html.match(/<meta property="og:image" content="([^"]+)"/);
    assert.ok(og, "og:image");
    assert.ok(og[1].includes(ids[2]), "the cover is the newest image");
    assert.ok(!html.includes('name="robots"'));
    // Newest first in the grid, each to its viewer page (a path: issue #52).
    const viewers = [...html.matchAll(/<a href="\/i\/([^"]+)"/g)]
      .map((m) => m[1]);
    assert.deepEqual(viewers, [...ids].reverse());
    // The codes: one JSON map of type → every image's code, newest first.
    const data = html.match(
      /<script type="application\/json" id="album-codes-data">([^<]*)<\/script>/,
    );
    assert.ok(data, "codes data");
    const codes = JSON.parse(data[1]) as Record<string, [string, string][]>;
    assert.deepEqual(
      codes["Direct link"],
      [...ids].reverse().map((id, i) => [id, [...urls].reverse()[i]]),
    );
    assert.equal(codes["BBCode"].length, 3);
    for (const [, code] of Object.values(codes).flat()) {
      assert.ok(!code.includes("<script>alert(1)"));
    }
    // The box shows the first type without scripts.
    assert.match(
      html,
      new RegExp(
        `<textarea id="album-codes"[^>]*>${urls[2].replace(/[.]/g, "\\.")}`,
      ),
    );
    await apiCall(env, key, "PATCH", `/api/1/albums/${album.id}`, {
      privacy: "unlisted",
    });
    const unlisted = await (await env.app.request(`/a/${album.id}`)).text();
    assert.match(unlisted, /<meta name="robots" content="noindex"/);
    assert.equal((await env.app.request("/a/nosuchalbum1")).status, 404);
  } finally {
    await env.close();
  }
});

for (const kind of databaseKinds()) {
  test(`[${kind}] the album list gives each album the count and cover its own page gives (a set cover, its newest when the set one is gone, none when empty; deleted and expired images not counted)`, async () => {
    const env = await testEnv({ kind });
    try {
      const { user, key } = await userWithKey(env);
      const make = async (title: string) =>
        (await apiCall(env, key, "POST", "/api/1/albums", { title })).body
          .data.id as string;
      const [withCover, coverGone, newest, empty] = await Promise.all(
        ["Set", "Gone", "Newest", "Empty"].map(make),
      );
      const put = async (album: string, width: number, expiration?: string) => {
        env.clock.advance(1000);
        return (await uploadPng(env, key, width, {
          album_id: album,
          ...(expiration ? { expiration } : {}),
        })).body.data.id as string;
      };
      const a1 = await put(withCover, 301);
      await put(withCover, 302);
      await apiCall(env, key, "PATCH", `/api/1/albums/${withCover}`, {
        cover_image_id: a1,
      });
      const g1 = await put(coverGone, 303);
      const g2 = await put(coverGone, 304);
      await apiCall(env, key, "PATCH", `/api/1/albums/${coverGone}`, {
        cover_image_id: g2,
      });
      await apiCall(env, key, "DELETE", `/api/1/images/${g2}`);
      await put(newest, 305);
      const n2 = await put(newest, 306);
      await put(newest, 307, "60"); // expires below
      env.clock.advance(120_000);

      const { db } = env.deps.database;
      const views = await listAlbums(db, user.id, env.clock);
      const byId = new Map(views.map((v) => [v.row.id, v]));
      assert.deepEqual(
        [withCover, coverGone, newest, empty].map((id) => [
          byId.get(id)!.count,
          byId.get(id)!.cover?.id ?? null,
        ]),
        [[2, a1], [1, g1], [2, n2], [0, null]],
      );
      // The same as each album's own view (its page and GET /api/1/albums/{id}).
      for (const v of views) {
        const own = await viewOf(db, v.row, env.clock);
        assert.deepEqual(
          [v.count, v.cover?.id],
          [own.count, own.cover?.id],
          v.row.title,
        );
      }
      const listed = await apiCall(env, key, "GET", "/api/1/albums");
      assert.deepEqual(
        listed.body.data.albums.map((a: { image_count: number }) =>
          a.image_count
        ).sort(),
        [0, 1, 2, 2],
      );
    } finally {
      await env.close();
    }
  });
}

test("a stranger never sees a private or unlisted image as a public album's cover (set or newest) nor in its count, and an account's album pickers list only its own albums, through HTTP", async () => {
  const env = await testEnv();
  try {
    const owner = await userWithKey(env);
    const other = await userWithKey(env);
    const album = await apiCall(env, owner.key, "POST", "/api/1/albums", {
      title: "Mixed",
    });
    const albumId = album.body.data.id;
    const ids: Record<string, string> = {};
    // Oldest first: the public one, then the hidden ones (newest: the default cover).
    for (
      const [name, width] of [["public", 41], ["unlisted", 42], [
        "private",
        43,
      ]] as const
    ) {
      const r = await upload(
        env,
        owner.key,
        formWith([{
          name: `${name}.png`,
          bytes: await makeImage("png", { width }),
        }], {
          album_id: albumId,
        }),
      );
      assert.equal(r.status, 200);
      ids[name] = r.body.data.id;
      if (name !== "public") {
        const set = await apiCall(
          env,
          owner.key,
          "PATCH",
          `/api/1/images/${r.body.data.id}`,
          {
            privacy: name,
          },
        );
        assert.equal(set.status, 200);
      }
      env.clock.advance(1000);
    }
    const strangerSees = async () => {
      const html = await (await env.app.request(`/a/${albumId}`)).text();
      return {
        html,
        cover: html.match(
          /property="og:image" content="[^"]*\/([A-Za-z0-9_-]+)\.(?:md\.)?[a-z]+"/,
        )?.[1],
      };
    };
    for (const cover of [null, ids.private, ids.unlisted]) {
      if (cover) {
        const set = await apiCall(
          env,
          owner.key,
          "PATCH",
          `/api/1/albums/${albumId}`,
          {
            cover_image_id: cover,
          },
        );
        assert.equal(set.status, 200);
      }
      const seen = await strangerSees();
      assert.equal(seen.cover, ids.public, `cover set to ${cover}`);
      assert.match(seen.html, />1 image</);
      assert.ok(!seen.html.includes(ids.private), "the private image nowhere");
      assert.ok(
        !seen.html.includes(ids.unlisted),
        "the unlisted image nowhere",
      );
    }
    // The owner's own view counts and shows all three.
    const mine = await apiCall(
      env,
      owner.key,
      "GET",
      `/api/1/albums/${albumId}`,
    );
    assert.equal(mine.body.data.image_count, 3);

    // Album pickers: the other account's album never appears in this one's forms.
    await apiCall(env, other.key, "POST", "/api/1/albums", {
      title: "Not yours",
    });
    const { createSession } = await import("../services/accounts/accounts.ts");
    const sid = await createSession(
      env.deps.database.db,
      owner.user.id,
      env.clock,
    );
    for (const path of ["/images", `/i/${ids.public}`]) {
      const page = await (await env.app.request(path, {
        headers: { cookie: `sid=${sid}` },
      })).text();
      assert.match(page, />Mixed</, path);
      assert.doesNotMatch(page, /Not yours/, path);
    }
  } finally {
    await env.close();
  }
});

test("createAlbum, updateAlbum and updateImage declare the 415 and 413 they answer: a body that is not JSON, and one past BODY_MAX_KB", async () => {
  const env = await testEnv({ env: { BODY_MAX_KB: "16" } });
  try {
    const { key } = await userWithKey(env);
    const album = await apiCall(env, key, "POST", "/api/1/albums", {
      title: "A",
    });
    const png = await makeImage("png");
    const up = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{ name: "a.png", bytes: png }]),
      }),
    );
    const spec = await (await env.app.request("/openapi.json")).json();
    const ops: [string, string, string, string][] = [
      ["createAlbum", "POST", "/api/1/albums", "/api/1/albums"],
      [
        "updateAlbum",
        "PATCH",
        "/api/1/albums/{id}",
        `/api/1/albums/${album.body.data.id}`,
      ],
      [
        "updateImage",
        "PATCH",
        "/api/1/images/{id}",
        `/api/1/images/${up.body.data.id}`,
      ],
    ];
    for (const [op, method, template, path] of ops) {
      const declared = Object.keys(
        spec.paths[template][method.toLowerCase()].responses,
      );
      const send = (type: string, body: string) =>
        env.app.request(path, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": type },
          body,
        });
      const wrongType = await json(await send("text/plain", "title=B"));
      assert.deepEqual(
        [wrongType.status, wrongType.body.error?.code],
        [415, 415],
        op,
      );
      const tooLarge = await json(
        await send(
          "application/json",
          JSON.stringify({ title: "B", description: "x".repeat(20_000) }),
        ),
      );
      assert.equal(tooLarge.status, 413, op);
      for (const s of ["415", "413"]) {
        assert.ok(declared.includes(s), `${op} does not declare ${s}`);
      }
    }
  } finally {
    await env.close();
  }
});
