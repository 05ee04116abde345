import assert from "node:assert/strict";
import { fsyncSync } from "node:fs";
import { Kysely, sql } from "kysely";
import { PGlite } from "@electric-sql/pglite";
import { test } from "./helpers.ts";
import { WalFlusher } from "../services/db/wal_flusher.ts";
import {
  DurableNodeFS,
  PGLITE_START_PARAMS,
} from "../services/db/durable_node_fs.ts";
import { PGliteDialect } from "../services/db/pglite_dialect.ts";

/** A sync done later whose end the test decides: each call waits for `release()`. */
function heldSyncs() {
  const calls: number[] = [];
  const waiting: (() => void)[] = [];
  return {
    calls,
    later: (fd: number) =>
      new Promise<void>((resolve) => {
        calls.push(fd);
        waiting.push(resolve);
      }),
    release() {
      for (const r of waiting.splice(0)) r();
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

test("a WAL flush resolves only once the files deferred before it are synced; callers meanwhile share one sync, and a file deferred during a sync gets the next", async () => {
  const held = heldSyncs();
  const now: number[] = [];
  const wal = new WalFlusher(held.later, (fd) => now.push(fd));
  assert.equal(await Promise.race([wal.flush(), "pending"]), undefined);

  wal.defer(7, "/d/pg_wal/1");
  let first = false;
  const a = wal.flush().then(() => first = true);
  const b = wal.flush();
  await tick();
  assert.deepEqual(held.calls, [7], "one sync for both callers");
  assert.equal(first, false, "not before the sync ends");
  // Deferred again while that sync runs: the next flush waits for a sync of its own.
  wal.defer(7, "/d/pg_wal/1");
  let second = false;
  const c = wal.flush().then(() => second = true);
  held.release();
  await Promise.all([a, b]);
  assert.equal(first, true);
  await tick();
  assert.deepEqual(held.calls, [7, 7]);
  assert.equal(second, false);
  held.release();
  await c;
  assert.equal(second, true);
  assert.equal(wal.owed, 0);
  assert.deepEqual(now, [], "the engine's thread never waited");
});

test("a flush asked while a sync runs, with nothing new deferred, waits for that sync: no statement is acknowledged before its WAL is on disk", async () => {
  const held = heldSyncs();
  const wal = new WalFlusher(held.later, () => {});
  wal.defer(3, "/d/pg_wal/2");
  const first = wal.flush();
  await tick();
  assert.deepEqual(
    held.calls,
    [3],
    "the sync is running, nothing is owed anew",
  );
  let done = false;
  const late = wal.flush().then(() => done = true);
  await tick();
  await tick();
  assert.equal(done, false, "not before the running sync ends");
  held.release();
  await Promise.all([first, late]);
  assert.equal(done, true);
  assert.deepEqual(held.calls, [3], "it shared that sync");
});

test("before a data file is written, or a WAL file closed, the engine's thread syncs every WAL file owed, those being synced in the background included", async () => {
  const held = heldSyncs();
  const now: number[] = [];
  const wal = new WalFlusher(held.later, (fd) => now.push(fd));
  wal.defer(3, "/d/pg_wal/a");
  const running = wal.flush();
  await tick();
  wal.defer(4, "/d/pg_wal/b");
  assert.equal(wal.owed, 2);
  wal.syncNow("write");
  assert.deepEqual(now.sort(), [3, 4]);
  assert.equal(wal.owed, 0);
  assert.deepEqual(wal.syncedNow, { write: 1, close: 0 });
  wal.syncNow("close"); // nothing owed: nothing synced
  assert.deepEqual(now.length, 2);
  held.release();
  await running;
  // A sync that fails is told to onFailure (the service stops: durable_node_fs.ts).
  const failures: string[] = [];
  const failing = new WalFlusher(
    () => Promise.reject(new Error("EIO")),
    () => {
      throw new Error("EIO");
    },
    (_e, path) => failures.push(path),
  );
  failing.defer(5, "/d/pg_wal/c");
  await assert.rejects(failing.flush(), /EIO/);
  failing.defer(5, "/d/pg_wal/c");
  assert.throws(() => failing.syncNow("close"), /EIO/);
  assert.deepEqual(failures, ["/d/pg_wal/c", "/d/pg_wal/c"]);
});

test("embedded PGlite with group commit: each committed statement returns only once its WAL is synced, concurrent commits share syncs, and a checkpoint syncs the WAL on the engine's thread before any data file is written, and a WAL segment is synced before it is closed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-walflush-" });
  const events: string[] = [];
  let slow = false;
  const wal = new WalFlusher(
    async (fd) => {
      // Slow syncs: commits that come meanwhile must queue for the next one.
      if (slow) await new Promise((r) => setTimeout(r, 30));
      fsyncSync(fd);
      events.push("wal synced later");
    },
    (fd) => {
      fsyncSync(fd);
      events.push("wal synced now");
    },
  );
  const pg = await PGlite.create({
    dataDir: dir,
    fs: new DurableNodeFS(
      dir,
      (fd, path) => {
        fsyncSync(fd);
        if (!path.includes("/pg_wal/")) {
          events.push(`data synced, ${wal.owed} wal owed`);
        }
      },
      undefined,
      wal,
    ),
    startParams: [...PGLITE_START_PARAMS],
  });
  // deno-lint-ignore no-explicit-any
  const db = new Kysely<any>({ dialect: new PGliteDialect(pg, wal) });
  try {
    await sql`create table t (n int)`.execute(db);
    for (let i = 1; i <= 3; i++) {
      events.length = 0;
      await db.insertInto("t").values({ n: i }).execute();
      assert.ok(events.includes("wal synced later"), `insert ${i}: ${events}`);
      assert.equal(wal.owed, 0, `insert ${i} returned with its WAL on disk`);
    }
    // A read defers nothing and waits for nothing.
    const before = wal.deferred;
    await db.selectFrom("t").selectAll().execute();
    assert.equal(wal.deferred, before);

    // Eight commits at once, syncs slow: far fewer syncs than commits, all durable.
    slow = true;
    events.length = 0;
    await Promise.all(
      Array.from(
        { length: 8 },
        (_, i) => db.insertInto("t").values({ n: 100 + i }).execute(),
      ),
    );
    const syncs = events.filter((e) => e === "wal synced later").length;
    assert.ok(syncs >= 1 && syncs < 8, `${syncs} syncs for 8 commits`);
    assert.equal(wal.owed, 0);
    slow = false;

    // A transaction's commit waits for the sync; a rollback leaves nothing.
    await db.transaction().execute(async (tx) => {
      await tx.insertInto("t").values({ n: 200 }).execute();
      await tx.insertInto("t").values({ n: 201 }).execute();
    });
    assert.equal(wal.owed, 0);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from t`
      .execute(db);
    assert.equal(rows[0].n, 3 + 8 + 2);

    // WAL before data: dirty pages written by a checkpoint while WAL is owed.
    events.length = 0;
    const syncedNow = { ...wal.syncedNow };
    await pg.query("insert into t select generate_series(1, 2000)");
    // The insert's own WAL: owed until its flush, which this direct query never waits
    // for (only the dialect does), so the checkpoint finds it owed.
    assert.ok(wal.owed > 0, "WAL owed");
    await pg.query("checkpoint");
    assert.ok(
      wal.syncedNow.write > syncedNow.write,
      "synced before a data file was written",
    );
    // (A data file's own sync may find WAL owed: what it carries to the disk was
    // written, and the WAL before it synced, earlier.)
    const data = events.filter((e) => e.startsWith("data synced"));
    assert.ok(data.length > 0, "the checkpoint synced data files");
    assert.ok(events.includes("wal synced now"), events.join("; "));

    // Past a 16 MB segment PostgreSQL closes the old WAL file, whose sync is owed.
    const closes = wal.syncedNow.close;
    await pg.query("insert into t select generate_series(1, 400000)");
    assert.ok(wal.syncedNow.close > closes, "synced before it was closed");
  } finally {
    await db.destroy();
    await pg.close();
    await Deno.remove(dir, { recursive: true });
  }
});
