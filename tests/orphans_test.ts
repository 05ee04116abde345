import assert from "node:assert/strict";
import { sweepMissing, sweepOrphans } from "../services/images/orphans.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { test, testEnv, upload, userWithKey } from "./helpers.ts";
import { startS3 } from "./s3_server.ts";

const later = (ms: number) => ({ now: () => new Date(Date.now() + ms) });

async function keysIn(store: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list()) keys.push(o.key);
  return keys.sort();
}

for (const kind of ["fs", "s3"] as const) {
  test(`[${kind}] the sweeper removes bytes no live row claims once they are past the grace period, and never a live image's`, async () => {
    const s3 = kind === "s3" ? await startS3() : undefined;
    const env = await testEnv({ store: s3?.store });
    try {
      const store = env.deps.store;
      const { key } = await userWithKey(env);
      const kept = await upload(
        env,
        key,
        formWith([{
          name: "k.png",
          bytes: await makeImage("png", { width: 1200, height: 90 }),
        }]),
      );
      assert.equal(kept.status, 200);
      // The thumbnail and the medium are made at their first request; asked for, they
      // are the image's own.
      for (const v of ["thumb", "medium"]) {
        const made = await env.app.request(
          new URL(kept.body.data[v].url).pathname,
        );
        assert.equal(made.status, 200);
        await made.arrayBuffer();
      }
      const gone = await upload(
        env,
        key,
        formWith([{
          name: "g.png",
          bytes: await makeImage("png", { width: 7 }),
        }]),
      );
      const liveKeys = await keysIn(store);
      assert.equal(liveKeys.length, 3 + 1, "original, medium, thumb + one");
      // A crash between the bytes and the row, and a deletion whose byte removal failed.
      const bytes = await makeImage("png", { width: 5 });
      const meta = { contentType: "image/png", size: bytes.length };
      await store.put("crashLeftover1.png", bytes, meta);
      await store.put("crashLeftover1.th.png", bytes, meta);
      await env.deps.database.db.updateTable("images")
        .set({ deleted_at: new Date() }).where("id", "=", gone.body.data.id)
        .execute();

      const grace = 3600;
      // Within the grace period an upload may still be writing its row: nothing goes.
      assert.deepEqual(
        await sweepOrphans(env.deps.database.db, store, later(0), grace),
        [],
      );
      const removed = await sweepOrphans(
        env.deps.database.db,
        store,
        later(grace * 1000 + 60_000),
        grace,
      );
      const goneKeys = [
        "crashLeftover1.png",
        "crashLeftover1.th.png",
        `${gone.body.data.id}.png`,
      ].sort();
      assert.deepEqual(removed.sort(), goneKeys);
      assert.deepEqual(
        await keysIn(store),
        liveKeys.filter((k) => !k.startsWith(gone.body.data.id)),
      );
      assert.equal(
        (await env.app.request(new URL(kept.body.data.url).pathname)).status,
        200,
      );
    } finally {
      await env.close();
      await s3?.close();
    }
  });
}

test("a record whose bytes are gone is repaired: the same bytes sent again are stored anew (not a duplicate pointing at nothing), and the sweep removes such rows of the last two hours so they answer 404", async () => {
  const env = await testEnv();
  try {
    const store = env.deps.store;
    const db = env.deps.database.db;
    const { key } = await userWithKey(env);
    const bytes = await makeImage("png", { width: 41 });
    const first = await upload(env, key, formWith([{ name: "a.png", bytes }]));
    assert.equal(first.status, 200);
    const id = first.body.data.id;
    // What a refused upload whose insert committed later leaves: a row, no bytes.
    for await (const o of store.list()) {
      if (o.key.startsWith(id)) await store.delete(o.key);
    }
    const again = await upload(env, key, formWith([{ name: "a.png", bytes }]));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.notEqual(again.body.data.id, id);
    assert.equal(again.body.data.duplicate, undefined);
    const served = await env.app.request(new URL(again.body.data.url).pathname);
    assert.equal(served.status, 200);
    assert.deepEqual(new Uint8Array(await served.arrayBuffer()), bytes);
    const old = await env.app.request(`/api/1/images/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await old.body?.cancel();
    assert.equal(old.status, 404);

    // The sweep: two more rows lose their bytes; one of them is older than its window.
    const lost = await upload(
      env,
      key,
      formWith([{
        name: "b.png",
        bytes: await makeImage("png", { width: 42 }),
      }]),
    );
    const old2 = await upload(
      env,
      key,
      formWith([{
        name: "c.png",
        bytes: await makeImage("png", { width: 43 }),
      }]),
    );
    await db.updateTable("images")
      .set({ created_at: new Date(env.clock.now().getTime() - 3 * 3600_000) })
      .where("id", "=", old2.body.data.id).execute();
    for await (const o of store.list()) {
      if (
        o.key.startsWith(lost.body.data.id) ||
        o.key.startsWith(old2.body.data.id)
      ) await store.delete(o.key);
    }
    const opts = { windowS: 7200, graceS: 60 };
    // The app's clock wrote created_at: the sweep reads the same one.
    const at = (ms: number) => ({
      now: () => new Date(env.clock.now().getTime() + ms),
    });
    // Within the grace period (an upload may still be in flight): nothing yet.
    assert.deepEqual(await sweepMissing(db, store, at(0), opts), []);
    assert.deepEqual(
      await sweepMissing(db, store, at(120_000), opts),
      [lost.body.data.id],
    );
    const listed = await env.app.request("/api/1/images", {
      headers: { authorization: `Bearer ${key}` },
    });
    const ids = (await listed.json()).data.images.map((i: { id: string }) =>
      i.id
    );
    assert.ok(!ids.includes(lost.body.data.id));
    assert.ok(ids.includes(again.body.data.id), "an intact image stays");
    const viewer = await env.app.request(
      new URL(lost.body.data.url_viewer).pathname,
    );
    await viewer.body?.cancel();
    assert.equal(viewer.status, 404);
  } finally {
    await env.close();
  }
});
