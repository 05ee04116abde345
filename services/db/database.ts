/**
 * services/db/ — the database: embedded PGlite on a durable file system
 * (pglite_open.ts, durable_node_fs.ts, pglite_dialect.ts) or PostgreSQL over node-postgres
 * with its bounds (postgres.ts), opened and migrated here (migrations/), typed by
 * schema.ts; what either is to the service is database_handle.ts.
 */
import { Kysely, PostgresDialect, sql } from "kysely";
import type { DB } from "./schema.ts";
import {
  type Database,
  type DatabaseOptions,
  wrap,
} from "./database_handle.ts";

export type { Database, DatabaseOptions };

/** Opens PostgreSQL (url) or embedded PGlite; does not migrate. */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url) {
    const { DEFAULT_PG_TIMEOUTS, listenWithReconnect, outageAwarePool } =
      await import("./postgres.ts");
    const url = opts.url;
    const t = opts.timeouts ?? DEFAULT_PG_TIMEOUTS;
    const log = opts.log ?? (() => {});
    const pool = outageAwarePool(
      url,
      t,
      (e) => log({ msg: "database connection lost", error: String(e) }),
      opts.searchPath,
    );
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
    const unlisteners = new Set<() => Promise<void>>();
    return wrap(db, "postgres", {
      poolStats: () => pool.stats(),
      async listen(channel, onMessage, onLink) {
        const { ready, stop } = listenWithReconnect(
          url,
          t,
          channel,
          onMessage,
          onLink ?? (() => {}),
          log,
        );
        unlisteners.add(stop);
        await ready;
        return async () => {
          unlisteners.delete(stop);
          await stop();
        };
      },
      async close() {
        await Promise.all([...unlisteners].map((u) => u()));
        // Bounded: a pool whose server is gone must not hold up shutdown.
        await Promise.race([
          db.destroy().catch(() => {}),
          new Promise((r) => setTimeout(r, t.connectMs)),
        ]);
      },
    });
  }
  // PGlite (~50 ms of imports, and its WebAssembly) is loaded only when no URL is given.
  const { openPglite } = await import("./pglite_open.ts");
  return await openPglite(opts);
}

const MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);

/** Migration files in order, with their SQL split into single statements. */
export async function readMigrations(): Promise<
  { name: string; statements: string[] }[]
> {
  const names: string[] = [];
  for await (const e of Deno.readDir(MIGRATIONS_DIR)) {
    if (e.isFile && e.name.endsWith(".sql")) names.push(e.name);
  }
  names.sort();
  return await Promise.all(names.map(async (name) => {
    const text = await Deno.readTextFile(new URL(name, MIGRATIONS_DIR));
    return { name, statements: splitStatements(text) };
  }));
}

/**
 * A migration's statements: split where a line ends in `;`, except inside a `$$`-quoted
 * body (a function's, whose own statements end lines in `;` too).
 */
export function splitStatements(text: string): string[] {
  const out: string[] = [];
  let current = "";
  text.split("$$").forEach((part, i) => {
    if (i % 2 === 1) {
      current += `$$${part}$$`;
      return;
    }
    const pieces = part.split(/;\s*$/m);
    current += pieces[0];
    for (const piece of pieces.slice(1)) {
      out.push(current);
      current = piece;
    }
  });
  out.push(current);
  return out.map((s) => s.trim()).filter(Boolean);
}

/**
 * Applies migration files not yet recorded, in one transaction under an advisory lock so
 * two instances starting together on one database don't race. Safe to run at every start.
 */
export async function migrate(db: Kysely<DB>): Promise<string[]> {
  const migrations = await readMigrations();
  return await db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(727001)`.execute(tx);
    await sql`create table if not exists schema_migrations (
      name text primary key, applied_at timestamptz not null default now())`
      .execute(tx);
    const done = new Set(
      (await tx.selectFrom("schema_migrations").select("name").execute()).map((
        r,
      ) => r.name),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      for (const s of m.statements) await sql.raw(s).execute(tx);
      await tx.insertInto("schema_migrations").values({ name: m.name })
        .execute();
      applied.push(m.name);
    }
    return applied;
  });
}
