import assert from "node:assert/strict";
import { sql } from "kysely";
import { databaseKinds, test, testDatabase } from "./helpers.ts";
import {
  migrate,
  openDatabase,
  splitStatements,
} from "../services/db/database.ts";
import { PGlite } from "@electric-sql/pglite";
import { fsyncSync } from "node:fs";
import {
  DurableNodeFS,
  PGLITE_START_PARAMS,
} from "../services/db/durable_node_fs.ts";

for (const kind of databaseKinds()) {
  test(`[${kind}] migrations are recorded and running them again applies nothing`, async () => {
    const database = await testDatabase(kind);
    try {
      const rows = await database.db.selectFrom("schema_migrations").select(
        "name",
      ).execute();
      assert.deepEqual(rows.map((r) => r.name), [
        "001_init.sql",
        "002_rate_limits.sql",
        "003_login_attempts.sql",
        "004_screenshot_cache.sql",
        "005_image_variants.sql",
        "006_albums.sql",
        "007_image_list_indexes.sql",
        "008_title_search.sql",
        "009_privacy.sql",
        "010_passwords.sql",
        "011_guests.sql",
        "012_operator.sql",
        "013_screenshot_jobs.sql",
        "014_webhooks.sql",
        "015_screenshot_batches.sql",
        "016_screenshot_schedules.sql",
      ]);
      assert.deepEqual(await migrate(database.db), []);
      assert.deepEqual(
        await Promise.all([migrate(database.db), migrate(database.db)]),
        [[], []],
      );
      assert.equal(await database.ping(), true);
    } finally {
      await database.close();
    }
  });

  test(`[${kind}] rows round-trip with their types and a failed transaction leaves nothing`, async () => {
    const database = await testDatabase(kind);
    const db = database.db;
    try {
      await db.insertInto("users").values({
        id: "u1",
        email: "A@Example.com",
        password_hash: "x",
        disabled_at: null,
        deleted_at: null,
      }).execute();
      const u = await db.selectFrom("users").selectAll().where(
        sql`lower(email)`,
        "=",
        "a@example.com",
      )
        .executeTakeFirstOrThrow();
      assert.ok(u.created_at instanceof Date);
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await tx.insertInto("users").values({
            id: "u2",
            email: "b@example.com",
            password_hash: "x",
            disabled_at: null,
            deleted_at: null,
          }).execute();
          throw new Error("abort");
        }),
        /abort/,
      );
      const n = await db.selectFrom("users").select(
        sql<string>`count(*)`.as("n"),
      ).executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 1);
      // The unique live e-mail index refuses a second live account, case-insensitively.
      await assert.rejects(
        db.insertInto("users").values({
          id: "u3",
          email: "a@example.COM",
          password_hash: "x",
          disabled_at: null,
          deleted_at: null,
        }).execute(),
      );
      // Queries in parallel share the one PGlite connection safely.
      const many = await Promise.all(
        Array.from(
          { length: 20 },
          () => db.selectFrom("users").select("id").execute(),
        ),
      );
      assert.ok(many.every((r) => r.length === 1));
    } finally {
      await database.close();
    }
  });
}

test("embedded PGlite opens with 16 MB of shared buffers (initdb's 128 MB were zeroed at every open: ~0.4 s of start-up and ~125 MB of idle RSS), fsync on and its WAL synced with fsync()", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-pgsettings-" });
  try {
    const database = await openDatabase({ dataDir: dir });
    try {
      const { rows } = await sql<
        { shared_buffers: string; fsync: string; wal_sync_method: string }
      >`select current_setting('shared_buffers') as shared_buffers,
          current_setting('fsync') as fsync,
          current_setting('wal_sync_method') as wal_sync_method`
        .execute(database.db);
      assert.deepEqual(rows[0], {
        shared_buffers: "16MB",
        fsync: "on",
        wal_sync_method: "fsync",
      });
      // The filesystem that carries fsync to the disk (the next test shows it does).
      assert.ok(database.pglite?.fs instanceof DurableNodeFS);
    } finally {
      await database.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("embedded PGlite's commits reach the disk: each committed write fsyncs the WAL file before it returns, a read syncs nothing (PGlite alone starts with fsync off and cannot fsync at all)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-pgsync-" });
  const synced: string[] = [];
  const pg = await PGlite.create({
    dataDir: dir,
    fs: new DurableNodeFS(dir, (fd, path) => {
      fsyncSync(fd);
      synced.push(path);
    }),
    startParams: [...PGLITE_START_PARAMS],
  });
  try {
    await pg.exec("create table t (n int)");
    const wal = () => synced.filter((p) => p.includes("/pg_wal/")).length;
    for (let i = 1; i <= 3; i++) {
      const before = wal();
      await pg.query("insert into t values ($1)", [i]);
      assert.equal(wal() - before, 1, `insert ${i}`);
    }
    const before = synced.length;
    assert.equal(
      (await pg.query("select count(*)::int as n from t")).rows.length,
      1,
    );
    assert.equal(synced.length, before, "a read");
    // PGlite on its own starts PostgreSQL with fsync off.
    await pg.close();
    const plain = await PGlite.create({
      dataDir: dir,
      startParams: PGlite.defaultStartParams,
    });
    try {
      const { rows } = await plain.query<{ fsync: string }>(
        "select current_setting('fsync') as fsync",
      );
      assert.equal(rows[0].fsync, "off");
    } finally {
      await plain.close();
    }
  } finally {
    if (!pg.closed) await pg.close();
    await Deno.remove(dir, { recursive: true });
  }
});

test("a failed fsync of the embedded database stops the process with a line saying why, instead of leaving PGlite spinning on the next statement", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-pgeio-" });
  try {
    const fs =
      new URL("../services/db/durable_node_fs.ts", import.meta.url).href;
    const code = `
      import { PGlite } from "@electric-sql/pglite";
      import { DurableNodeFS, PGLITE_START_PARAMS } from ${JSON.stringify(fs)};
      const dir = ${JSON.stringify(dir)};
      let fail = false;
      const pg = await PGlite.create({
        dataDir: dir,
        fs: new DurableNodeFS(dir, () => {
          if (fail) throw new Error("EIO: i/o error, fsync");
        }),
        startParams: [...PGLITE_START_PARAMS],
      });
      await pg.exec("create table t (n int)");
      fail = true;
      await pg.query("insert into t values (1)").catch(() => {});
      await pg.query("select 1");
      console.log("still running");
    `;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", code],
      cwd: new URL("..", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
      // Without the stop, the next statement spins for good: this turns that into a failure.
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 70, stderr);
    assert.match(stderr, /could not sync a file; stopping/);
    assert.match(stderr, /pg_wal/);
    assert.doesNotMatch(new TextDecoder().decode(out.stdout), /still running/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("a migration splits into statements where a line ends in a semicolon, except inside a $$-quoted function body", () => {
  assert.deepEqual(
    splitStatements(`create table a (x int);
create function f() returns trigger language plpgsql as $$
begin
  if true then
    raise exception 'no';
  end if;
  return new;
end $$;
create index b on a (x);`),
    [
      "create table a (x int)",
      `create function f() returns trigger language plpgsql as $$
begin
  if true then
    raise exception 'no';
  end if;
  return new;
end $$`,
      "create index b on a (x)",
    ],
  );
});
