/**
 * services/db/ — the database: embedded PGlite on a durable file system
 * (durable_node_fs.ts, pglite_dialect.ts) or PostgreSQL over node-postgres with its
 * bounds (postgres.ts), opened and migrated here (migrations/), typed by schema.ts.
 */
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect, sql } from "kysely";
import { PGliteDialect } from "./pglite_dialect.ts";
import {
  DurableNodeFS,
  PGLITE_START_PARAMS,
  stopOnSyncFailure,
} from "./durable_node_fs.ts";
import { WalFlusher } from "./wal_flusher.ts";
import { syncTree } from "../runtime/file_io.ts";
import type { DB } from "./schema.ts";
import { answersWithin } from "../runtime/timeout.ts";
// The PostgreSQL driver (pg and its dependencies) is loaded only when a URL is given: an
// embedded start does not pay for importing it.
import type { PostgresTimeouts } from "./postgres.ts";

/** An open database: the Kysely handle plus what start-up, readiness and shutdown need. */
export interface Database {
  db: Kysely<DB>;
  kind: "pglite" | "postgres";
  /** The embedded engine, when kind is pglite (tests dump it as a template). */
  pglite?: PGlite;
  /** Resolves when the database answers a trivial query within timeoutMs. */
  ping(timeoutMs?: number): Promise<boolean>;
  /** PostgreSQL's pool: connections in use and requests waiting (metrics). */
  poolStats?(): { inUse: number; waiting: number };
  /**
   * Subscribes to a NOTIFY channel (every instance on the database hears it). `onLink`
   * says whether notices are being heard: true once listening (again), false when the
   * link to PostgreSQL is lost and notices may be missed. Resolves, with the unsubscribe,
   * once the first attempt to listen has been made.
   */
  listen(
    channel: string,
    onMessage: (payload: string) => void,
    onLink?: (up: boolean) => void,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Where the database lives: a postgres:// URL, a PGlite directory, or a PGlite dump. */
export interface DatabaseOptions {
  url?: string;
  /** PGlite data directory; unset with no url means in memory. */
  dataDir?: string;
  /** Start PGlite from this dump (tests clone a migrated template this way). */
  loadDataDir?: Blob;
  /** PostgreSQL schema to use (tests isolate themselves in a schema each). */
  searchPath?: string;
  /** Connect/statement bounds for PostgreSQL (DB_CONNECT_TIMEOUT_MS, ...). */
  timeouts?: PostgresTimeouts;
  /** Where driver errors outside any request go (an idle connection dropped). */
  log?: (e: Record<string, unknown>) => void;
}

/** Whether a path exists (other errors, such as no permission, are thrown). */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

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
  const unlock = opts.dataDir ? await lockDataDir(opts.dataDir) : () => {};
  const fresh = opts.dataDir !== undefined &&
    !(await exists(`${opts.dataDir}/PG_VERSION`));
  // Group commit: WAL syncs off the engine's thread, each statement that committed
  // waiting for its own (wal_flusher.ts).
  const wal = opts.dataDir
    ? new WalFlusher(undefined, undefined, stopOnSyncFailure)
    : undefined;
  const pg = await PGlite.create({
    ...(opts.dataDir
      ? {
        dataDir: opts.dataDir,
        fs: new DurableNodeFS(opts.dataDir, undefined, undefined, wal),
      }
      : {}),
    ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
    startParams: [...PGLITE_START_PARAMS],
    // Trigram indexes: title search by words (migration 008), as on PostgreSQL.
    extensions: { pg_trgm },
  });
  // A new cluster's files are unpacked by PGlite, not written by PostgreSQL, so no
  // checkpoint would sync them: once, here, before anything is committed to them.
  if (fresh) await syncTree(opts.dataDir!);
  const db = new Kysely<DB>({ dialect: new PGliteDialect(pg, wal) });
  return wrap(db, "pglite", {
    async listen(channel, onMessage, onLink) {
      // One process, one engine: once subscribed, nothing can be missed.
      const stop = await pg.listen(channel, onMessage);
      onLink?.(true);
      return stop;
    },
    async close() {
      await db.destroy();
      await pg.close();
      unlock();
    },
  }, pg);
}

/**
 * PGlite is one process's database: a second process opening the same directory would
 * corrupt it. A pid lock file next to it makes the second one fail with a clear message.
 */
async function lockDataDir(dir: string): Promise<() => void> {
  await Deno.mkdir(dir, { recursive: true });
  const lock = `${dir}/.imagehost.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await Deno.writeTextFile(lock, String(Deno.pid), { createNew: true });
      return () => {
        try {
          Deno.removeSync(lock);
        } catch { /* already gone */ }
      };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      const pid = Number(await Deno.readTextFile(lock).catch(() => "0"));
      const alive = pid > 0 && pid !== Deno.pid &&
        await Deno.stat(`/proc/${pid}`).then(() => true, () => false);
      if (alive) {
        throw new Error(
          `the embedded database in ${dir} is in use by process ${pid}; stop it first ` +
            `(or set DATABASE_URL to share a PostgreSQL server between processes)`,
        );
      }
      await Deno.remove(lock).catch(() => {}); // stale lock of a dead process
    }
  }
  throw new Error(`cannot lock ${dir}`);
}

function wrap(
  db: Kysely<DB>,
  kind: Database["kind"],
  ops: Pick<Database, "listen" | "close" | "poolStats">,
  pg?: PGlite,
): Database {
  return {
    ...ops,
    db,
    kind,
    pglite: pg,
    ping(timeoutMs = 2000) {
      return answersWithin(
        () => sql`select 1`.execute(db).then(() => true),
        timeoutMs,
      );
    },
  };
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
