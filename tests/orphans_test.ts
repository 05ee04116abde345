import assert from "node:assert/strict";
import { sweepOrphans } from "../services/images/orphans.ts";
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
      const gone = await upload(
        env,
        key,
        formWith([{
          name: "g.png",
          bytes: await makeImage("png", { width: 7 }),
        }]),
      );
      const liveKeys = await keysIn(store);
      assert.equal(liveKeys.length, 3 + 2, "original, medium, thumb + two");
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
        `${gone.body.data.id}.th.png`,
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
