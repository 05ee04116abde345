import pg from "pg";
import {
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from "kysely";
import { unavailable } from "../../schemas/errors.ts";

/** Bounds on every PostgreSQL round trip, so an outage answers 503 instead of hanging. */
export interface PostgresTimeouts {
  /** Opening a connection, or waiting for a free one in the pool. */
  connectMs: number;
  /** One statement, enforced by the server and, in case the server is gone, by us. */
  statementMs: number;
  poolMax: number;
}

/** Default bounds: a few seconds each, as DESIGN.md's operations section asks. */
export const DEFAULT_PG_TIMEOUTS: PostgresTimeouts = {
  connectMs: 3000,
  statementMs: 5000,
  poolMax: 10,
};

// SQLSTATE classes that mean "the server is not serving us", not "the query is wrong":
// 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown,
// statement timeout), 58 system error.
const OUTAGE_SQLSTATE = /^(08|53|57|58)/;
const OUTAGE_NET =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ECONNABORTED)$/;
const OUTAGE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection ended|ECONNREFUSED|ECONNRESET|socket hang up|pool is draining|Cannot use a pool after calling end/i;

/**
 * True when an error from the driver means the database is unreachable or not answering in
 * time (as opposed to a constraint violation or a bad query, which stay what they are).
 */
export function isOutage(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === "string") {
    if (OUTAGE_NET.test(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return OUTAGE_SQLSTATE.test(code);
  }
  return OUTAGE_MESSAGE.test(e.message);
}

/** Turns an outage into the 250 envelope error; anything else is rethrown as it is. */
function translate(e: unknown): never {
  throw isOutage(e) ? unavailable("database", e) : e;
}

/** pg's client config for a URL with our bounds (and an optional search_path). */
export function clientConfig(
  url: string,
  t: PostgresTimeouts,
  searchPath?: string,
): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: t.connectMs,
    statement_timeout: t.statementMs,
    // The server may be gone without a word (a partition): our own clock ends the wait.
    query_timeout: t.statementMs + 1000,
    idle_in_transaction_session_timeout: t.statementMs * 4,
    keepAlive: true,
    ...(searchPath ? { options: `-c search_path=${searchPath}` } : {}),
  };
}

/** A connection pool's use at one moment. */
export interface PoolStats {
  inUse: number;
  waiting: number;
}

/**
 * A node-postgres pool shaped for Kysely's PostgresDialect, whose every failure to reach
 * the server becomes error 250. node-postgres was chosen over postgres.js after a restart
 * of PostgreSQL killed the process with an uncaught TypeError inside postgres.js and left
 * requests waiting for minutes (tests/outage_test.ts and tests/process_test.ts keep both
 * failures away).
 */
export function outageAwarePool(
  url: string,
  t: PostgresTimeouts,
  onError: (e: Error) => void,
  searchPath?: string,
): PostgresPool & { stats(): PoolStats } {
  const pool = new pg.Pool({
    ...clientConfig(url, t, searchPath),
    max: t.poolMax,
    idleTimeoutMillis: 30_000,
  });
  // An idle client whose server went away emits here; without a listener the process dies.
  pool.on("error", onError);
  // Kysely keys its connections by the client object: one wrapper per pg client, kept as
  // long as the client lives.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrapClient = (client: pg.PoolClient): PostgresPoolClient => {
    let broken = false;
    // pg-pool listens for errors only while a client is idle; one that dies while checked
    // out but between queries (a server restart) would emit with no listener, which kills
    // the process (seen in tests/process_test.ts). Its next query fails as an outage.
    client.on("error", (e) => {
      broken = true;
      onError(e);
    });
    return {
      async query<R>(
        sql: string,
        params: readonly unknown[],
      ): Promise<PostgresQueryResult<R>> {
        try {
          return await client.query(sql, params as unknown[]) as never;
        } catch (e) {
          // A connection that failed is not handed out again.
          if (isOutage(e)) broken = true;
          return translate(e);
        }
      },
      release(destroy?: boolean) {
        const drop = broken || destroy;
        broken = false;
        if (drop) wrappers.delete(client);
        client.release(drop ? true : undefined);
      },
    } as PostgresPoolClient;
  };
  return {
    options: pool.options,
    /** Connections handed out and requests waiting for one (the metrics read these). */
    stats: () => ({
      inUse: pool.totalCount - pool.idleCount,
      waiting: pool.waitingCount,
    }),
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect().catch(translate);
      let w = wrappers.get(client);
      if (!w) wrappers.set(client, w = wrapClient(client));
      return w;
    },
    async end() {
      await pool.end();
    },
  };
}

/**
 * LISTEN on one channel over a dedicated connection that reconnects by itself (backoff up
 * to 5 s). `onLink(true)` runs after every (re)connect, `onLink(false)` when the link is
 * lost: notices sent meanwhile are lost, so listeners must not trust what they cached while
 * it is down. `ready` resolves after the first try.
 */
export function listenWithReconnect(
  url: string,
  t: PostgresTimeouts,
  channel: string,
  onMessage: (payload: string) => void,
  onLink: (up: boolean) => void,
  log: (e: Record<string, unknown>) => void,
): { ready: Promise<void>; stop: () => Promise<void> } {
  let firstTry!: () => void;
  const ready = new Promise<void>((r) => firstTry = r);
  let client: pg.Client | undefined;
  let stopped = false;
  let delay = 250;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const schedule = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect();
    }, delay);
    delay = Math.min(delay * 2, 5000);
  };
  const connect = async () => {
    const c = new pg.Client(clientConfig(url, t));
    client = c;
    const lost = (e?: unknown) => {
      if (client !== c) return;
      client = undefined;
      onLink(false);
      c.end().catch(() => {});
      if (!stopped) {
        log({ msg: "notification link lost", error: String(e ?? "ended") });
      }
      schedule();
    };
    c.on("error", lost);
    c.on("end", () => lost());
    c.on("notification", (n) => {
      if (n.channel === channel) onMessage(n.payload ?? "");
    });
    try {
      await c.connect();
      await c.query(`listen "${channel}"`);
      if (stopped || client !== c) return void c.end().catch(() => {});
      delay = 250;
      onLink(true);
    } catch (e) {
      lost(e);
    } finally {
      firstTry();
    }
  };
  connect();
  return {
    ready,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
