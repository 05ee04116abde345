import type { PGlite } from "@electric-sql/pglite";
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from "kysely";
import type { WalFlusher } from "./wal_flusher.ts";

/**
 * A Kysely dialect over embedded PGlite. PGlite is one connection, so a lock hands it to
 * one query or one transaction at a time; the published dialect pins an older PGlite.
 * With a {@link WalFlusher} (group commit), a statement that committed returns only once
 * its WAL is on disk, and it hands the engine on before waiting, so the next statements
 * run meanwhile and concurrent commits share one sync.
 */
export class PGliteDialect implements Dialect {
  constructor(
    private readonly pg: PGlite,
    private readonly wal?: WalFlusher,
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pg, this.wal);
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}

class PGliteDriver implements Driver {
  #tail: Promise<void> = Promise.resolve();
  constructor(
    private readonly pg: PGlite,
    private readonly wal?: WalFlusher,
  ) {}
  async init() {}
  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const next = new Promise<void>((r) => release = r);
    const prev = this.#tail;
    this.#tail = prev.then(() => next);
    await prev;
    // One object per hold of the lock: an early release (see executeQuery) can only ever
    // release its own hold.
    return new PGliteConnection(this.pg, release, this.wal);
  }
  async beginTransaction(c: DatabaseConnection) {
    await c.executeQuery({ sql: "begin", parameters: [] } as never);
    (c as PGliteConnection).inTransaction = true;
  }
  async commitTransaction(c: DatabaseConnection) {
    (c as PGliteConnection).inTransaction = false;
    await c.executeQuery({ sql: "commit", parameters: [] } as never);
  }
  async rollbackTransaction(c: DatabaseConnection) {
    (c as PGliteConnection).inTransaction = false;
    await c.executeQuery({ sql: "rollback", parameters: [] } as never);
  }
  releaseConnection(c: DatabaseConnection): Promise<void> {
    (c as PGliteConnection).release();
    return Promise.resolve();
  }
  async destroy() {}
}

class PGliteConnection implements DatabaseConnection {
  inTransaction = false;
  #released = false;
  constructor(
    private readonly pg: PGlite,
    private readonly releaseLock: () => void,
    private readonly wal?: WalFlusher,
  ) {}
  /** Hands the engine to the next holder (once; later calls do nothing). */
  release() {
    if (this.#released) return;
    this.#released = true;
    this.releaseLock();
  }
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const deferred = this.wal?.deferred;
    const r = isScript(q)
      ? lastResult<R>(await this.pg.exec(q.sql))
      : await this.pg.query<R>(q.sql, q.parameters as unknown[]);
    const result = {
      rows: r.rows,
      ...(r.affectedRows !== undefined &&
          /^\s*(insert|update|delete|merge)/i.test(q.sql)
        ? { numAffectedRows: BigInt(r.affectedRows) }
        : {}),
    };
    if (this.wal && this.wal.deferred !== deferred) {
      // It committed (or wrote WAL that must be synced). Outside a transaction the
      // statement is this hold's last: the engine goes on to the next holder while this
      // one waits for its sync, so commits in a row share one. Inside a transaction the
      // hold stays (its commit will wait for this sync and its own).
      if (!this.inTransaction) this.release();
      await this.wal.flush();
    }
    return result;
  }
  // deno-lint-ignore require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming is not supported on PGlite");
  }
}

/**
 * A parameterless text of several statements (the job queue's `BEGIN; …; COMMIT;`
 * maintenance): PGlite's `query` takes one statement (the extended protocol), `exec` a
 * script, run whole while this connection holds the engine.
 */
function isScript(q: CompiledQuery): boolean {
  return q.parameters.length === 0 && /;\s*\S/.test(q.sql);
}

/** A script's answer as one statement's: its last result. */
function lastResult<R>(
  results: { rows: unknown[]; affectedRows?: number }[],
): { rows: R[]; affectedRows?: number } {
  const last = results[results.length - 1];
  return { rows: (last?.rows ?? []) as R[], affectedRows: last?.affectedRows };
}
