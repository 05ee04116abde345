import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  databaseKinds,
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";

async function list(env: TestEnv, key: string, query: string) {
  return await json(
    await env.app.request(`/api/1/images?${query}`, {
      headers: { authorization: `Bearer ${key}` },
    }),
  );
}

const titles = (r: { body: { data: { images: { title: string }[] } } }) =>
  r.body.data.images.map((i) => i.title);

for (const kind of databaseKinds()) {
  test(`[${kind}] the image list finds by title words (any case, % and _ taken literally), sorts by date, size or name either way, narrows by album, type and source, and pages each`, async () => {
    const env = await testEnv({ kind });
    try {
      const { key } = await userWithKey(env);
      const other = await userWithKey(env);
      const album = (await json(
        await env.app.request("/api/1/albums", {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ title: "Beach" }),
        }),
      )).body.data;
      // Title, type, width (a wider PNG is a larger file), in an album or not.
      const made: [string, "png" | "jpeg", number, boolean][] = [
        ["Beach sunset.png", "png", 300, true],
        ["beach_day.jpg", "jpeg", 80, true],
        ["Mountain 100% view.png", "png", 40, false],
        ["city night.jpg", "jpeg", 200, false],
        ["BEACHxDAY.png", "png", 120, false],
      ];
      const sizes: Record<string, number> = {};
      for (const [title, type, width, inAlbum] of made) {
        const form = formWith([{
          name: title,
          bytes: await makeImage(type, { width, height: width }),
        }]);
        if (inAlbum) form.append("album_id", album.id);
        const r = await upload(env, key, form);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        sizes[title] = r.body.data.size;
        env.clock.advance(1000);
      }
      // Someone else's beach is never in this list.
      await upload(
        env,
        other.key,
        formWith([{ name: "beach other.png", bytes: await makeImage("png") }]),
      );

      assert.deepEqual(titles(await list(env, key, "")), [
        "BEACHxDAY.png",
        "city night.jpg",
        "Mountain 100% view.png",
        "beach_day.jpg",
        "Beach sunset.png",
      ]);
      assert.deepEqual(titles(await list(env, key, "order=asc")), [
        "Beach sunset.png",
        "beach_day.jpg",
        "Mountain 100% view.png",
        "city night.jpg",
        "BEACHxDAY.png",
      ]);
      assert.deepEqual(titles(await list(env, key, "q=beach")), [
        "BEACHxDAY.png",
        "beach_day.jpg",
        "Beach sunset.png",
      ]);
      assert.deepEqual(titles(await list(env, key, "q=BEACH%20day")), [
        "BEACHxDAY.png",
        "beach_day.jpg",
      ]);
      // `_` and `%` are letters here, not LIKE's wildcards.
      assert.deepEqual(titles(await list(env, key, "q=h_d")), [
        "beach_day.jpg",
      ]);
      assert.deepEqual(titles(await list(env, key, "q=100%25")), [
        "Mountain 100% view.png",
      ]);
      assert.deepEqual(titles(await list(env, key, "q=%25")), [
        "Mountain 100% view.png",
      ]);
      const bySize = titles(await list(env, key, "sort=size"));
      assert.deepEqual(
        bySize,
        Object.keys(sizes).sort((a, b) => sizes[b] - sizes[a]),
      );
      assert.deepEqual(
        titles(await list(env, key, "sort=size&order=asc")),
        [...bySize].reverse(),
      );
      assert.deepEqual(titles(await list(env, key, "sort=name")), [
        "Beach sunset.png",
        "beach_day.jpg",
        "BEACHxDAY.png",
        "city night.jpg",
        "Mountain 100% view.png",
      ]);
      assert.deepEqual(titles(await list(env, key, `album=${album.id}`)), [
        "beach_day.jpg",
        "Beach sunset.png",
      ]);
      assert.deepEqual(titles(await list(env, key, "album=none&type=png")), [
        "BEACHxDAY.png",
        "Mountain 100% view.png",
      ]);
      assert.deepEqual(
        titles(await list(env, key, "type=jpg&sort=name&order=desc")),
        ["city night.jpg", "beach_day.jpg"],
      );
      const paged = await list(env, key, "q=beach&sort=name&per_page=2&page=2");
      assert.deepEqual(titles(paged), ["BEACHxDAY.png"]);
      assert.deepEqual([paged.body.data.total, paged.body.data.pages], [3, 2]);
      const past = await list(env, key, "q=beach&per_page=2&page=9");
      assert.deepEqual([titles(past), past.body.data.total], [[], 3]);
      assert.deepEqual(
        titles(await list(env, key, "source=screenshot&q=beach")),
        [],
      );
      for (
        const bad of [
          "sort=colour",
          "order=up",
          "type=svg",
          "album=../x",
          `q=${"x".repeat(201)}`,
        ]
      ) {
        const r = await list(env, key, bad);
        assert.deepEqual([r.status, r.body.error.code], [400, 160], bad);
      }
    } finally {
      await env.close();
    }
  });
}

test("a backslash in a search word is a letter: C:\\temp finds that title and not C:temp, and a word ending in a backslash finds its title", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const titlesOf = ["C:\\temp shot", "C:temp shot", "path\\"];
    for (const [i, title] of titlesOf.entries()) {
      const r = await upload(
        env,
        key,
        formWith([{
          name: "x.png",
          bytes: await makeImage("png", { width: 20 + i }),
        }]),
      );
      const set = await json(
        await env.app.request(`/api/1/images/${r.body.data.id}`, {
          method: "PATCH",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ title }),
        }),
      );
      assert.equal(set.status, 200, JSON.stringify(set.body));
    }
    assert.deepEqual(
      titles(await list(env, key, `q=${encodeURIComponent("C:\\temp")}`)),
      ["C:\\temp shot"],
    );
    assert.deepEqual(
      titles(await list(env, key, `q=${encodeURIComponent("path\\")}`)),
      ["path\\"],
    );
  } finally {
    await env.close();
  }
});
