/**
 * The rolling-restart step of the cluster test, alone and in a loop, to count how often it
 * fails and to see why (issue 39; figures in RELIABILITY.md "Chance failures"):
 *
 *   deno run -A tests/cluster/rolling_loop.ts [runs] [flags]
 *
 * PostgreSQL, s3rver, two instances and nginx (error log at info) on 127.0.0.1; each run
 * restarts one instance (A, then B, …) under upload load, as the cluster test does. Every
 * upload that got no HTTP answer is printed with the client's error, when it was sent
 * against the restart's steps, and nginx's notices of that run. Flags:
 *   --keepalive    kept-alive connections to the instances, as deploy/nginx.conf has them
 *   --reload-only  only the two nginx reloads, no instance restarted
 *   --debug        nginx's debug log: each failed upload's connection, line by line
 *   --curl         the load from curl instead of Deno's fetch (with --reload-only)
 *   --resend       the cluster test's client: resend an upload closed before any answer
 * Prints one JSON line a run and a summary.
 */
import { createApiKey } from "../../services/accounts/api_keys.ts";
import { createUser } from "../../services/accounts/accounts.ts";
import { openDatabase } from "../../services/db/database.ts";
import { makeImage } from "../fixtures.ts";
import { startNginx } from "../nginx.ts";
import { startPgCluster } from "../pg_cluster.ts";
import { startS3 } from "../s3_server.ts";
import { startService } from "../service_process.ts";
import {
  balancerConfig,
  rollingRestart,
  type Service,
  uploadsWhile,
} from "./rolling.ts";

const runs = Number(Deno.args.find((a) => /^\d+$/.test(a)) ?? 50);
const keepalive = Deno.args.includes("--keepalive");
// Only the two reloads, without restarting anything: is the balancer alone enough?
const reloadOnly = Deno.args.includes("--reload-only");
const debug = Deno.args.includes("--debug");
// The same load from curl (4 processes, each its uploads on one kept-alive connection)
// instead of Deno's fetch: does a client that resends on a dead reused connection see it?
const withCurl = Deno.args.includes("--curl");
// The cluster test's client: resend an upload whose reused connection closed unanswered.
const resend = Deno.args.includes("--resend");

/** Four curl processes, each sending `n` uploads in one run; their status codes counted. */
async function curlLoad(lbBase: string, keys: string[], n: number) {
  const png = await Deno.makeTempFile({ suffix: ".png" });
  await Deno.writeFile(png, await makeImage("png", { width: 40, height: 30 }));
  const counts: Record<string, number> = {};
  await Promise.all(keys.map(async (key) => {
    const one =
      `url = "${lbBase}/api/1/upload"\nheader = "Authorization: Bearer ${key}"\n` +
      `form = "images=@${png}"\noutput = "/dev/null"\nwrite-out = "%{http_code}\\n"\n`;
    const cfg = await Deno.makeTempFile();
    await Deno.writeTextFile(cfg, Array(n).fill(one).join("next\n"));
    const out = await new Deno.Command("curl", {
      args: ["-sS", "--config", cfg],
      stdout: "piped",
      stderr: "piped",
    }).output();
    for (const code of new TextDecoder().decode(out.stdout).split("\n")) {
      if (code) counts[code] = (counts[code] ?? 0) + 1;
    }
    const err = new TextDecoder().decode(out.stderr).trim();
    if (err) counts[`curl: ${err.slice(0, 200)}`] = 1;
    await Deno.remove(cfg);
  }));
  await Deno.remove(png);
  return counts;
}

const pgc = await startPgCluster();
const s3 = await startS3();
const env = {
  DATABASE_URL: pgc.url,
  ...s3.env,
  SHUTDOWN_GRACE_MS: "3000",
  RATE_LIMIT_PER_MINUTE: "100000",
};
const services: Service[] = [];
let lb: Awaited<ReturnType<typeof startNginx>> | undefined;
const summary = {
  runs: 0,
  failed_runs: 0,
  uploads: 0,
  no_answer: 0,
  other: 0,
  lost: 0,
  resent: 0,
  errors: {} as Record<string, number>,
  /** What the first try of each resent upload got. */
  resent_after: {} as Record<string, number>,
};
try {
  services.push(await startService(env), await startService(env));
  const ports = services.map((s) => s.port);
  lb = await startNginx(balancerConfig(ports, [], { keepalive }), {
    errorLevel: debug ? "debug" : "info",
  });
  const db = await openDatabase({ url: pgc.url });
  const user = await createUser(db.db, "loop@example.com", "correct horse 1");
  const keys = await Promise.all(
    [0, 1, 2, 3].map(async (i) =>
      (await createApiKey(db.db, user.id, `k${i}`)).key
    ),
  );
  await db.close();
  const seed = { next: 100 };
  for (let run = 0; run < runs; run++) {
    const logBefore = (await lb.errorLog()).length;
    let restart: Awaited<ReturnType<typeof rollingRestart>> | undefined;
    const t0 = performance.now();
    if (withCurl) {
      const load = curlLoad(lb.base, keys, 400).then((counts) => ({
        counts,
        ms: Math.round(performance.now() - t0),
      }));
      await new Promise((res) => setTimeout(res, 1000));
      await lb.reload(
        balancerConfig(ports, [services[run % 2].port], { keepalive }),
      );
      await new Promise((res) => setTimeout(res, 2000));
      await lb.reload(balancerConfig(ports, [], { keepalive }));
      // The load must outlast both reloads (the second at ~3000 ms) to say anything.
      const { counts, ms } = await load;
      console.log(JSON.stringify({ run, curl: counts, load_ms: ms }));
      summary.runs++;
      for (const [k, v] of Object.entries(counts)) {
        summary.uploads += v;
        if (k !== "200") {
          summary.failed_runs++;
          summary.errors[k] = (summary.errors[k] ?? 0) + v;
        }
      }
      continue;
    }
    const r = await uploadsWhile(lb.base, keys, async () => {
      await new Promise((res) => setTimeout(res, 1000));
      if (reloadOnly) {
        const down = [services[run % 2].port];
        await lb!.reload(balancerConfig(ports, down, { keepalive }));
        await new Promise((res) => setTimeout(res, 2000));
        await lb!.reload(balancerConfig(ports, [], { keepalive }));
      } else {
        restart = await rollingRestart(lb!, services, run % 2, env, {
          keepalive,
        });
      }
      await new Promise((res) => setTimeout(res, 1000));
    }, { seed, resend });
    summary.runs++;
    summary.uploads += r.tally.total;
    summary.lost += r.lost;
    summary.resent += r.resent.length;
    for (const f of r.resent) {
      // Ports differ from one upload to the next; the kind of error is what counts.
      const key = (f.firstError ?? "").replace(/127\.0\.0\.1:\d+/g, "…");
      summary.resent_after[key] = (summary.resent_after[key] ?? 0) + 1;
    }
    const bad = r.failures;
    const line = {
      run,
      instance: run % 2 ? "B" : "A",
      exit: restart?.exit,
      ...r.tally.toJSON(),
      lost: r.lost,
      resent: r.resent.length,
    };
    console.log(JSON.stringify(line));
    if (bad.length || r.lost || (restart && restart.exit !== 0)) {
      summary.failed_runs++;
      const steps = Object.fromEntries(
        Object.entries(restart?.steps ?? {}).map((
          [k, v],
        ) => [k, Math.round(v - t0)]),
      );
      for (const f of bad) {
        if (f.status === 0) summary.no_answer++;
        else summary.other++;
        const key = f.error ?? String(f.status);
        summary.errors[key] = (summary.errors[key] ?? 0) + 1;
        console.log(
          `  upload sent at ${
            Math.round(f.sentAt - t0)
          } ms: status ${f.status} ${f.error ?? ""}`,
        );
      }
      console.log(
        `  steps (ms from the run's start): ${JSON.stringify(steps)}`,
      );
      const all = (await lb.errorLog()).split("\n");
      const ofRun = (await lb.errorLog()).slice(logBefore).split("\n");
      console.log(
        `  nginx's notices of this run:\n    ${
          ofRun.filter((l) => /\[(notice|info|warn|error)\]/.test(l)).join(
            "\n    ",
          )
        }`,
      );
      // With --debug: every line of the connection each failed upload went out on,
      // found by the client's own port in nginx's "accept:" line.
      for (const f of bad) {
        const port = f.error?.match(/from 127\.0\.0\.1:(\d+)/)?.[1];
        const accept = all.find((l) =>
          l.includes(`accept: 127.0.0.1:${port} `)
        );
        const conn = accept?.match(/\*(\d+) accept/)?.[1];
        const pid = accept?.match(/ (\d+)#\d+: /)?.[1];
        if (!conn || !pid) continue;
        const lines = all.filter((l) =>
          l.includes(` ${pid}#`) &&
          (l.includes(`*${conn} `) ||
            /exiting|exit$|close idle|gracefully/.test(l))
        );
        // And what that worker did next (its shutdown closes the kept-alive connection).
        const last = all.lastIndexOf(lines[lines.length - 1]);
        const after = all.slice(last + 1).filter((l) => l.includes(` ${pid}#`))
          .slice(0, 40);
        console.log(
          `  nginx connection *${conn} (worker ${pid}) of the upload from :${port}:\n    ${
            lines.slice(-12).join("\n    ")
          }\n  then worker ${pid}:\n    ${after.join("\n    ")}`,
        );
      }
    }
  }
} finally {
  console.log(`summary: ${JSON.stringify(summary)}`);
  await lb?.close();
  for (const s of services) await s.close();
  await s3.close();
  await pgc.destroy();
}
