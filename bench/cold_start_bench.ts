/**
 * Cold start under Deno Deploy's limits (issue 33): the time from spawning the process to
 * the first answered upload, with `deno task start:sandbox`'s flags (no FFI, no subprocess,
 * no disk writes) and environment on PostgreSQL and an S3 bucket (s3rver), against a bare `Deno.serve`
 * started with the same flags that connects to the same PostgreSQL (`SELECT 1`) before it
 * answers; and against the same with sharp's WebAssembly engine, which answers the upload
 * with the image's size once sharp has read it: what any image service on this engine
 * pays before its first answer (issue #49 measured it at ~4× the bare one alone).
 * Screenshots off (a browser service is another host's start), unless `--screenshots`: then
 * the service is configured as on Deploy with a browser service (`deno task browser`,
 * started once here on loopback), which a start connects to and whose job queue it runs.
 * `deno run -A bench/cold_start_bench.ts [--runs N] [--cpu-prof DIR] [--screenshots]`: with
 * `--cpu-prof` the service's runs write V8 CPU profiles into DIR (stopped by SIGINT, so the
 * profile is written).
 */
import { startPgCluster } from "../tests/pg_cluster.ts";
import { startS3 } from "../tests/s3_server.ts";
import { keyBeforeStart } from "../tests/service_process.ts";
import { makeImage } from "../tests/fixtures.ts";
import { SANDBOX_ENV, taskFlags } from "../tests/start_task.ts";
import { startDevtoolsBrowser } from "../tests/browser_service.ts";
import { freePort, pct, ROOT, table, watchdog } from "./lib.ts";

watchdog(10 * 60_000);
const runsArg = Deno.args.indexOf("--runs");
const RUNS = runsArg >= 0 ? Number(Deno.args[runsArg + 1]) : 5;

const FLAGS = taskFlags("start:sandbox");
const profArg = Deno.args.indexOf("--cpu-prof");
/** Where the service's CPU profiles go, when asked for. */
const PROF_DIR = profArg >= 0 ? Deno.args[profArg + 1] : undefined;

/** The reference: Deno.serve that has one PostgreSQL answer before it listens. */
const BARE = `import pg from "pg";
const client = new pg.Client({ connectionString: Deno.env.get("DATABASE_URL") });
await client.connect();
await client.query("SELECT 1");
Deno.serve({ port: Number(Deno.env.get("PORT")), hostname: "127.0.0.1", onListen() {} },
  async () => {
    await client.query("SELECT 1");
    return Response.json({ success: true });
  });
`;

/** The bare one, and sharp (WebAssembly under the flags) reading the uploaded image. */
const BARE_SHARP = `import pg from "pg";
import sharp from "sharp";
const client = new pg.Client({ connectionString: Deno.env.get("DATABASE_URL") });
await client.connect();
await client.query("SELECT 1");
Deno.serve({ port: Number(Deno.env.get("PORT")), hostname: "127.0.0.1", onListen() {} },
  async (req) => {
    const file = (await req.formData()).get("image") as File;
    const meta = await sharp(new Uint8Array(await file.arrayBuffer())).metadata();
    await client.query("SELECT 1");
    return Response.json({ success: true, width: meta.width });
  });
`;

/**
 * Spawns `script` with the sandbox flags; ms until `ask` is first answered 200, and the
 * process's own uptime at each step it logged (`uptime_ms`: database ready, listening).
 */
async function firstAnswer(
  script: string,
  env: Record<string, string>,
  ask: (base: string) => Promise<Response>,
  extraFlags: string[] = [],
): Promise<{ ms: number; steps: Record<string, number> }> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--config",
      `${ROOT}deno.json`,
      ...FLAGS,
      ...extraFlags,
      script,
    ],
    cwd: ROOT,
    env: { ...env, PORT: String(port), HOST: "127.0.0.1", BASE_URL: base },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let out = "";
  const reading = (async () => {
    for await (const t of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += t;
    }
  })();
  try {
    for (;;) {
      try {
        const res = await ask(base);
        await res.body?.cancel();
        if (res.status === 200) {
          const ms = performance.now() - t0;
          child.kill(extraFlags.length ? "SIGINT" : "SIGKILL");
          await child.status;
          await reading.catch(() => {});
          const steps: Record<string, number> = {};
          for (const line of out.split("\n")) {
            const m = line.match(/"msg":"([^"]+)".*"uptime_ms":(\d+)/);
            if (m) steps[m[1]] = Number(m[2]);
          }
          return { ms, steps };
        }
      } catch { /* not listening yet */ }
      if (performance.now() - t0 > 120_000) throw new Error("never answered");
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already */ }
    await child.status;
    await reading.catch(() => {});
  }
}

const pg = await startPgCluster();
const s3 = await startS3();
const browser = Deno.args.includes("--screenshots")
  ? await startDevtoolsBrowser("127.0.0.1", freePort())
  : undefined;
const bare = await Deno.makeTempFile({ dir: `${ROOT}bench`, suffix: ".ts" });
const bareSharp = await Deno.makeTempFile({
  dir: `${ROOT}bench`,
  suffix: ".ts",
});
try {
  await Deno.writeTextFile(bare, BARE);
  await Deno.writeTextFile(bareSharp, BARE_SHARP);
  const key = await keyBeforeStart(
    { url: pg.url },
    "cold@example.com",
    "cold start password",
  );
  const png = await makeImage("png", { width: 400, height: 300 });
  // The task's environment for all three, as `deno task start:sandbox` would give it.
  const env = {
    ...SANDBOX_ENV,
    DATABASE_URL: pg.url,
    ...s3.env,
    ...(browser
      ? { SCREENSHOTS: "on", BROWSER_WS_ENDPOINT: browser.endpoint }
      : { SCREENSHOTS: "off" }),
    LOG_REQUESTS: "false",
    DATA_DIR: "/nonexistent-imagehost-data",
  };
  const service: number[] = [];
  const reference: number[] = [];
  const withSharp: number[] = [];
  const ready: number[] = [];
  const listening: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    reference.push(
      (await firstAnswer(bare, env, (b) => fetch(`${b}/`))).ms,
    );
    // The same bytes each run: after the first, a duplicate, which still makes the whole
    // pipeline's work (decode, variants, strip) before the row's insert finds it.
    const send = (b: string) => {
      const fd = new FormData();
      fd.append("image", new File([png as BlobPart], `cold${i}.png`));
      return fetch(`${b}/api/1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: fd,
      });
    };
    withSharp.push((await firstAnswer(bareSharp, env, send)).ms);
    const run = await firstAnswer(
      `${ROOT}main.ts`,
      env,
      send,
      PROF_DIR ? ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`] : [],
    );
    service.push(run.ms);
    ready.push(run.steps["database ready"] ?? NaN);
    listening.push(run.steps["listening"] ?? NaN);
  }
  const row = (what: string, ms: number[]) => ({
    what,
    "p50 ms": Math.round(pct(ms, 50)),
    "min ms": Math.round(Math.min(...ms)),
    "max ms": Math.round(Math.max(...ms)),
  });
  table([
    row("bare Deno.serve + PostgreSQL (first 200)", reference),
    row("the same + sharp (wasm) reading the upload", withSharp),
    row("service: database ready (its uptime)", ready),
    row("service: listening (its uptime)", listening),
    row("service, first upload answered", service),
  ]);
  console.log(
    `service ÷ bare (p50): ${
      (pct(service, 50) / pct(reference, 50)).toFixed(2)
    }×; service ÷ bare with sharp: ${
      (pct(service, 50) / pct(withSharp, 50)).toFixed(2)
    }×; bare with sharp ÷ bare: ${
      (pct(withSharp, 50) / pct(reference, 50)).toFixed(2)
    }×; runs: ${RUNS}; flags: ${FLAGS.join(" ")}; screenshots ${
      browser ? "on (a browser service)" : "off"
    }`,
  );
} finally {
  await Deno.remove(bare).catch(() => {});
  await Deno.remove(bareSharp).catch(() => {});
  await browser?.kill();
  await s3.close();
  await pg.destroy();
}
