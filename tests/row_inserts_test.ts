import assert from "node:assert/strict";
import type { Kysely } from "kysely";
import type { DB } from "../services/db/schema.ts";
import { ImageRowInserts } from "../services/images/row_inserts.ts";
import { createUser } from "../services/accounts/accounts.ts";
import { test, testDatabase } from "./helpers.ts";

/** A row of `user` for bytes named `sha`. */
function row(user: string, sha: string) {
  return {
    id: crypto.randomUUID().slice(0, 12),
    user_id: user,
    title: sha,
    ext: "png",
    mime: "image/png",
    size: 1,
    width: 1,
    height: 1,
    sha256: sha,
    delete_token: "t",
  };
}

/** The database, with a count of the insert statements made through it. */
function counting(db: Kysely<DB>) {
  const counted = { inserts: 0 };
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === "insertInto") counted.inserts++;
      // Kysely keeps private fields: its methods run on it, not on the proxy.
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: proxy, counted };
}

test("rows that queue up behind an insert on the embedded database go in together, one statement for many; a live duplicate among them is reported, not inserted", async () => {
  const database = await testDatabase("pglite");
  try {
    const user = await createUser(
      database.db,
      "rows@example.com",
      "password 12345",
    );
    const { db, counted } = counting(database.db);
    const inserts = new ImageRowInserts(db, true);
    const rows = Array.from({ length: 12 }, (_, i) => row(user.id, `sha-${i}`));
    // The same bytes twice in one burst: one of the two is inserted.
    rows.push(row(user.id, "sha-3"));
    const done = await Promise.all(rows.map((r) => inserts.insert(r)));
    assert.deepEqual(done.filter((d) => !d).length, 1);
    assert.equal(done[3] !== done[12], true, "one of the two sha-3 rows");
    // The first went alone; the other twelve queued behind it and went together.
    assert.equal(counted.inserts, 2);
    const stored = await database.db.selectFrom("images").select("sha256")
      .execute();
    assert.equal(stored.length, 12);
    assert.equal(new Set(stored.map((s) => s.sha256)).size, 12);
  } finally {
    await database.close();
  }
});

test("a shared statement that fails is tried row by row: one row's fault (a user gone) fails only that row's insert", async () => {
  const database = await testDatabase("pglite");
  try {
    const user = await createUser(
      database.db,
      "rows2@example.com",
      "password 12345",
    );
    const inserts = new ImageRowInserts(database.db, true);
    const first = inserts.insert(row(user.id, "a"));
    const rest = [
      inserts.insert(row(user.id, "b")),
      inserts.insert(row("no-such-user", "c")),
      inserts.insert(row(user.id, "d")),
    ].map((p) => p.then((v) => ({ ok: v }), (e) => ({ error: String(e) })));
    assert.equal(await first, true);
    const [b, c, d] = await Promise.all(rest);
    assert.deepEqual([b, d], [{ ok: true }, { ok: true }]);
    assert.match((c as { error: string }).error, /foreign key/);
    const stored = await database.db.selectFrom("images").select("sha256")
      .orderBy("sha256").execute();
    assert.deepEqual(stored.map((s) => s.sha256), ["a", "b", "d"]);
  } finally {
    await database.close();
  }
});

test("without batching (PostgreSQL) every row is its own statement", async () => {
  const database = await testDatabase("pglite");
  try {
    const user = await createUser(
      database.db,
      "rows3@example.com",
      "password 12345",
    );
    const { db, counted } = counting(database.db);
    const inserts = new ImageRowInserts(db, false);
    await Promise.all(
      Array.from(
        { length: 5 },
        (_, i) => inserts.insert(row(user.id, `s${i}`)),
      ),
    );
    assert.equal(counted.inserts, 5);
  } finally {
    await database.close();
  }
});
