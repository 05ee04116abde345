/**
 * A throwaway PostgreSQL server of the test's own on 127.0.0.1 (Debian's postgresql
 * package), which the test can stop and start to play an outage. Run as root, the server
 * runs as the postgres user, as Debian's tools require.
 */
export interface PgCluster {
  url: string;
  port: number;
  stop(mode?: "fast" | "immediate"): Promise<void>;
  start(): Promise<void>;
  /**
   * Freezes every process of the server (SIGSTOP to the postmaster and its children): a
   * stall, not an outage. Connections stay open and what was sent waits in their buffers.
   */
  pause(): Promise<void>;
  /** Thaws what pause() froze (SIGCONT). */
  resume(): Promise<void>;
  destroy(): Promise<void>;
}

/** The postmaster's pid (first line of postmaster.pid) and every process whose parent it is. */
async function serverPids(dataDir: string): Promise<number[]> {
  const text = await Deno.readTextFile(`${dataDir}/postmaster.pid`);
  const main = Number(text.split("\n")[0]);
  const pids = [main];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      // Field 4 (ppid) comes after the command name in parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === main) pids.push(Number(e.name));
    } catch { /* gone */ }
  }
  return pids;
}

function pgBin(): string {
  const dirs: string[] = [];
  try {
    for (const e of Deno.readDirSync("/usr/lib/postgresql")) {
      dirs.push(`/usr/lib/postgresql/${e.name}/bin`);
    }
  } catch { /* none */ }
  const bin = dirs.sort((a, b) =>
    a.localeCompare(b, undefined, { numeric: true })
  ).pop();
  if (!bin) {
    throw new Error(
      "PostgreSQL is not installed: apt-get install -y postgresql (.ci/run does)",
    );
  }
  return bin;
}

async function run(cmd: string, args: string[]): Promise<void> {
  const asPostgres = Deno.uid?.() === 0;
  const out = await new Deno.Command(asPostgres ? "setpriv" : cmd, {
    args: asPostgres
      ? [
        "--reuid=postgres",
        "--regid=postgres",
        "--init-groups",
        "--",
        cmd,
        ...args,
      ]
      : args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed: ${
        new TextDecoder().decode(out.stderr)
      }`,
    );
  }
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = l.addr as Deno.NetAddr;
  l.close();
  return port;
}

/** Creates and starts a cluster (fsync off: its data is thrown away). */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBin();
  const dir = await Deno.makeTempDir({ prefix: "imagehost-pgc-" });
  if (Deno.uid?.() === 0) {
    await new Deno.Command("chown", { args: ["postgres", dir] }).output();
  }
  const port = freePort();
  await run(`${bin}/initdb`, [
    "-D",
    `${dir}/data`,
    "-U",
    "postgres",
    "-A",
    "trust",
  ]);
  const start = () =>
    run(`${bin}/pg_ctl`, [
      "-D",
      `${dir}/data`,
      "-l",
      `${dir}/log`,
      "-w",
      "-o",
      `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off`,
      "start",
    ]);
  await start();
  let running = true;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode = "fast") {
      await run(`${bin}/pg_ctl`, ["-D", `${dir}/data`, "-m", mode, "stop"]);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async pause() {
      // The postmaster first, so it starts no new backend meanwhile.
      for (const pid of await serverPids(`${dir}/data`)) {
        Deno.kill(pid, "SIGSTOP");
      }
    },
    async resume() {
      for (const pid of await serverPids(`${dir}/data`)) {
        Deno.kill(pid, "SIGCONT");
      }
    },
    async destroy() {
      if (running) {
        await cluster.resume().catch(() => {});
        await cluster.stop("immediate").catch(() => {});
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
  return cluster;
}
