import assert from "node:assert/strict";
import { sql } from "kysely";
import { databaseKinds, test, testDatabase } from "./helpers.ts";
import { migrate, openDatabase } from "../services/db/database.ts";

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

test("embedded PGlite opens with 16 MB of shared buffers (initdb's 128 MB were zeroed at every open: ~0.4 s of start-up and ~125 MB of idle RSS)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-pgsettings-" });
  try {
    const database = await openDatabase({ dataDir: dir });
    try {
      const { rows } = await sql<
        { shared_buffers: string }
      >`show shared_buffers`
        .execute(database.db);
      assert.equal(rows[0].shared_buffers, "16MB");
    } finally {
      await database.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
