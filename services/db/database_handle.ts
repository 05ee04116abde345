/**
 * What an open database is to the rest of the service (the Kysely handle, its kind, ping,
 * NOTIFY and close), whichever engine is under it: database.ts opens PostgreSQL,
 * pglite_open.ts the embedded engine.
 */
import type { PGlite } from "@electric-sql/pglite";
import { type Kysely, sql } from "kysely";
import type { DB } from "./schema.ts";
import { answersWithin } from "../runtime/timeout.ts";
// Types only: the PostgreSQL driver (pg and its dependencies) is loaded only when a URL
// is given, by database.ts.
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

/** The Database around a Kysely handle: its kind, ping, and the engine's own operations. */
export function wrap(
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
