import { join } from "node:path";
import { freePort } from "./pg_cluster.ts";
import { answersOk, waitUntilAsync } from "./helpers.ts";
import { migrate, openDatabase } from "../services/db/database.ts";
import { createUser } from "../services/accounts/accounts.ts";
import { createApiKey } from "../services/accounts/api_keys.ts";

/**
 * A user with an API key, made before the service process starts: on PostgreSQL (`url`),
 * or in the embedded database of `dataDir` (PGlite allows one process at a time, so this
 * closes it again before the service opens it).
 */
export async function keyBeforeStart(
  where: { url: string } | { dataDir: string },
  email: string,
  password: string,
): Promise<string> {
  const db = await openDatabase(
    "url" in where ? where : { dataDir: join(where.dataDir, "pgdata") },
  );
  try {
    await migrate(db.db);
    const user = await createUser(db.db, email, password);
    return (await createApiKey(db.db, user.id, email.split("@")[0])).key;
  } finally {
    await db.close();
  }
}

/**
 * main.ts as an operator runs it, in a process of its own, on loopback, with `env` on top
 * of quiet defaults. `dataDir` and `port` may be given to restart an instance in place;
 * `denoFlags` go after `-A` (e.g. `--deny-ffi`).
 */
export async function startService(
  env: Record<string, string>,
  opts: {
    dataDir?: string;
    port?: number;
    denoFlags?: string[];
    /** Instead of `-A`: the permission flags exactly (a sandbox's). */
    permissions?: string[];
  } = {},
) {
  const dataDir = opts.dataDir ??
    await Deno.makeTempDir({ prefix: "imagehost-proc-" });
  const port = opts.port ?? freePort();
  const proc = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(opts.permissions ?? ["-A"]),
      ...(opts.denoFlags ?? []),
      new URL("../main.ts", import.meta.url).pathname,
    ],
    env: {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      BASE_URL: `http://127.0.0.1:${port}`,
      SCREENSHOTS: "off",
      LOG_REQUESTS: "false",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  const collect = async (s: ReadableStream<Uint8Array<ArrayBuffer>>) => {
    for await (const t of s.pipeThrough(new TextDecoderStream())) log += t;
  };
  const drained = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  const base = `http://127.0.0.1:${port}`;
  await waitUntilAsync(() => answersOk(`${base}/healthz`), 60_000, 200);
  return {
    proc,
    base,
    port,
    dataDir,
    log: () => log,
    /** Exit code, or "running" if the process is still alive after ms. */
    async exitWithin(ms: number): Promise<number | "running"> {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const r = await Promise.race([
        proc.status.then((s) => s.code),
        new Promise<"running">((res) =>
          timer = setTimeout(() => res("running"), ms)
        ),
      ]);
      clearTimeout(timer);
      return r;
    },
    /** Kills the process (SIGKILL), keeping its data dir. */
    async kill() {
      try {
        proc.kill("SIGKILL");
      } catch { /* gone */ }
      await proc.status;
      await drained;
    },
    /** Kills the process and removes its data dir (a restarted instance's too). */
    async close() {
      await this.kill();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/** One request with a hang detector: "hang" when no answer comes within 10 s, "refused" when no connection. */
export async function probe(
  url: string,
  init?: RequestInit,
): Promise<number | "hang" | "refused"> {
  try {
    const r = await fetch(url, {
      ...init,
      signal: AbortSignal.timeout(10_000),
    });
    await r.body?.cancel();
    return r.status;
  } catch (e) {
    if ((e as Error).name === "TimeoutError") return "hang";
    return "refused";
  }
}

/** Counts of answers by status ("hang" and "refused" too), and the slowest one. */
export class Tally {
  counts = new Map<string, number>();
  maxMs = 0;
  add(status: number | string, ms: number) {
    const k = String(status);
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
    this.maxMs = Math.max(this.maxMs, ms);
  }
  get total() {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }
  /** True when every answer was one of these. */
  only(...allowed: string[]) {
    return [...this.counts.keys()].every((k) => allowed.includes(k));
  }
  toJSON() {
    return {
      tried: this.total,
      ...Object.fromEntries(this.counts),
      max_ms: Math.round(this.maxMs),
    };
  }
}
