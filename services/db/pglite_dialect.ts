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

/**
 * A Kysely dialect over embedded PGlite. PGlite is one connection, so a lock hands it to
 * one query or one transaction at a time; the published dialect pins an older PGlite.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pg: PGlite) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pg);
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
  #conn: PGliteConnection;
  constructor(pg: PGlite) {
    this.#conn = new PGliteConnection(pg);
  }
  async init() {}
  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const next = new Promise<void>((r) => release = r);
    const prev = this.#tail;
    this.#tail = prev.then(() => next);
    await prev;
    this.#conn.release = release;
    return this.#conn;
  }
  async beginTransaction(c: DatabaseConnection) {
    await c.executeQuery({ sql: "begin", parameters: [] } as never);
  }
  async commitTransaction(c: DatabaseConnection) {
    await c.executeQuery({ sql: "commit", parameters: [] } as never);
  }
  async rollbackTransaction(c: DatabaseConnection) {
    await c.executeQuery({ sql: "rollback", parameters: [] } as never);
  }
  releaseConnection(c: DatabaseConnection): Promise<void> {
    (c as PGliteConnection).release?.();
    return Promise.resolve();
  }
  async destroy() {}
}

class PGliteConnection implements DatabaseConnection {
  release?: () => void;
  constructor(private readonly pg: PGlite) {}
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const r = await this.pg.query<R>(q.sql, q.parameters as unknown[]);
    return {
      rows: r.rows,
      ...(r.affectedRows !== undefined &&
          /^\s*(insert|update|delete|merge)/i.test(q.sql)
        ? { numAffectedRows: BigInt(r.affectedRows) }
        : {}),
    };
  }
  // deno-lint-ignore require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming is not supported on PGlite");
  }
}
