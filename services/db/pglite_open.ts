/**
 * The embedded database: PGlite on a durable file system, locked to one process. Loaded by
 * database.ts only when no DATABASE_URL is given, so a PostgreSQL start never imports it.
 */
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { PGliteDialect } from "./pglite_dialect.ts";
import {
  DurableNodeFS,
  PGLITE_START_PARAMS,
  stopOnSyncFailure,
} from "./durable_node_fs.ts";
import { WalFlusher } from "./wal_flusher.ts";
import { syncTree } from "../runtime/file_io.ts";
import type { DB } from "./schema.ts";
import {
  type Database,
  type DatabaseOptions,
  wrap,
} from "./database_handle.ts";

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

/** Opens embedded PGlite in `opts.dataDir` (in memory without one, or from a dump). */
export async function openPglite(opts: DatabaseOptions): Promise<Database> {
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
