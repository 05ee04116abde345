/**
 * Memory in the sandbox profile (issue #49): main.ts as `deno task start:sandbox` runs it
 * (its flags: no FFI, so sharp's WebAssembly engine; no disk, so uploads are received in
 * memory; and its environment: glibc's allocator told to map buffers of 256 KB or more on
 * their own) on PostgreSQL, an S3 bucket (s3rver) and a browser service (`deno task
 * browser`, on loopback), without the V8 flags Deploy cannot set. `--no-task-env` drops the
 * task's environment, as a platform that starts the process without it would (Deno Deploy
 * may: it is not visible from here). Peak RSS (polled every 20 ms) under: 8 concurrent 5 MB
 * uploads, 4 concurrent requests of 8 such files, 4 concurrent first AVIF variants of large
 * images, 4 concurrent full-page captures, then after 10 s of quiet. Target: every peak ≤
 * 400 MB (Deploy's limit is 512 MB), with excess work answered 503/250 and Retry-After,
 * never a kill. `--rounds N` runs the load N times, each with new bytes, to show whether
 * what stays after the quiet grows.
 * `deno run -A bench/sandbox_memory_bench.ts [--rounds N] [--no-task-env] [--env KEY=VALUE …]`.
 */
import { Buffer } from "node:buffer";
import * as tus from "tus-js-client";
import { loadConfig } from "../schemas/config.ts";
import { startPgCluster } from "../tests/pg_cluster.ts";
import { startS3 } from "../tests/s3_server.ts";
import { keyBeforeStart, startService } from "../tests/service_process.ts";
import { startBrowserService } from "../tests/browser_service.ts";
import { startFixture } from "../tests/fixture_server.ts";
import { SANDBOX_ENV, taskFlags } from "../tests/start_task.ts";
import {
  freePort,
  multipartBody,
  noiseJpeg,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";

watchdog(15 * 60_000);
const extra: Record<string, string> = {};
let ROUNDS = 1;
let taskEnvOn = true;
for (let i = 0; i < Deno.args.length; i++) {
  if (Deno.args[i] === "--env") {
    const [k, ...v] = Deno.args[++i].split("=");
    extra[k] = v.join("=");
  } else if (Deno.args[i] === "--rounds") ROUNDS = Number(Deno.args[++i]);
  else if (Deno.args[i] === "--no-task-env") taskEnvOn = false;
}

const FLAGS = taskFlags("start:sandbox");
const TASK_ENV = taskEnvOn ? SANDBOX_ENV : {};
console.log(
  `the service's environment from the task: ${JSON.stringify(TASK_ENV)}`,
);

const pg = await startPgCluster();
const s3 = await startS3();
const key = await keyBeforeStart(
  { url: pg.url },
  "memory@example.com",
  "a long enough password",
);
// A long page with pictures, for full-page captures of ~1280 × 4000 px.
const pages = startFixture({
  "/": `<!doctype html><body style="margin:0">${
    Array.from(
      { length: 40 },
      (_, i) =>
        `<div style="height:100px;background:linear-gradient(90deg,hsl(${
          i * 9
        },80%,50%),hsl(${i * 9 + 120},80%,50%))">Row ${i}</div>`,
    ).join("")
  }</body>`,
});
const TOKEN = "bench-browser-token-1234567890";
const browser = await startBrowserService({
  address: "127.0.0.1",
  port: freePort(),
  token: TOKEN,
  allow: `127.0.0.1:${pages.port}`,
});
const svc = await startService({
  ...TASK_ENV,
  DATABASE_URL: pg.url,
  ...s3.env,
  SCREENSHOTS: "on",
  BROWSER_WS_ENDPOINT: browser.endpoint,
  BROWSER_TOKEN: TOKEN,
  FETCH_ALLOW_PRIVATE: `127.0.0.1:${pages.port}`,
  DATA_DIR: "/nonexistent-imagehost-data",
  METRICS_TOKEN: "bench-metrics-token-1234",
  ...extra,
}, { permissions: FLAGS });
const pid = svc.proc.pid;

/** VmRSS of the service, MB. */
async function rssMb(): Promise<number> {
  const s = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(s.match(/VmRSS:\s+(\d+)/)![1]) / 1024;
}

/** Runs `work`, polling RSS meanwhile: its answers' statuses and the peak MB. */
async function phase(
  name: string,
  work: () => Promise<number[]>,
): Promise<Record<string, string | number>> {
  let peak = await rssMb();
  const before = peak;
  let done = false;
  const poll = (async () => {
    while (!done) {
      peak = Math.max(peak, await rssMb());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const t = performance.now();
  const statuses = await work();
  done = true;
  await poll;
  const m = await (await fetch(`${svc.base}/metrics`, {
    headers: { authorization: "Bearer bench-metrics-token-1234" },
  })).text();
  const gauge = (name: string) =>
    Number(m.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? 0) / 2 ** 20;
  const counts: Record<number, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  return {
    phase: name,
    "before MB": before.toFixed(0),
    "peak MB": peak.toFixed(0),
    "after: V8 heap MB": gauge("process_heap_total_bytes").toFixed(0),
    "external MB": gauge("process_external_memory_bytes").toFixed(0),
    answers: JSON.stringify(counts),
    seconds: ((performance.now() - t) / 1000).toFixed(1),
  };
}

const auth = { authorization: `Bearer ${key}` };
const five = await noiseJpeg(5 * 1024 * 1024);
/** One upload request of `n` distinct 5 MB JPEGs: its status. */
async function uploadFiles(n: number): Promise<number> {
  const fd = new FormData();
  for (let i = 0; i < n; i++) {
    fd.append(
      "images",
      new Blob([uniqueJpeg(five) as Uint8Array<ArrayBuffer>]),
      `f${i}.jpg`,
    );
  }
  const r = await fetch(`${svc.base}/api/1/upload`, {
    method: "POST",
    headers: auth,
    body: fd,
  });
  await r.body?.cancel();
  return r.status;
}

/** A resumable upload of `bytes` by tus-js-client in 8 MB chunks: the last answer's status. */
function tusUpload(bytes: Uint8Array): Promise<number> {
  return new Promise((resolve) => {
    let status = 0;
    new tus.Upload(Buffer.from(bytes), {
      endpoint: `${svc.base}/api/1/tus/`,
      headers: auth,
      chunkSize: 8 * 1024 * 1024,
      metadata: { filename: "large.jpg" },
      retryDelays: [],
      onAfterResponse: (_req, res) => {
        status = res.getStatus();
      },
      onSuccess: () => resolve(status),
      onError: () => resolve(status),
    }).start();
  });
}

/**
 * With SMAPS set, prints where the service's resident memory is after `when`: glibc's
 * main heap ("[heap]"), other anonymous mappings (the WebAssembly engine's memory is one
 * of them, which grows to its high-water mark and stays there; thread arenas; V8's heap)
 * and files (the deno binary's code).
 */
async function printMappings(when: string): Promise<void> {
  if (!Deno.env.get("SMAPS")) return;
  const smaps = await Deno.readTextFile(`/proc/${pid}/smaps`);
  const maps: { name: string; size: number; rss: number }[] = [];
  let cur = "";
  let size = 0;
  for (const line of smaps.split("\n")) {
    const range = line.match(/^([0-9a-f]+)-([0-9a-f]+) /);
    if (range) {
      cur = line;
      size = (parseInt(range[2], 16) - parseInt(range[1], 16)) / 2 ** 20;
    }
    const m = line.match(/^Rss:\s+(\d+) kB/);
    if (m) maps.push({ name: cur, size, rss: Number(m[1]) / 1024 });
  }
  maps.sort((a, b) => b.rss - a.rss);
  const sum = (f: (m: typeof maps[0]) => boolean) =>
    maps.filter(f).reduce((t, m) => t + m.rss, 0).toFixed(0);
  const anon = (m: typeof maps[0]) => / 0 *$/.test(m.name);
  console.log(
    `resident by kind, ${when}: [heap] ${
      sum((m) => m.name.endsWith("[heap]"))
    } MB, other anonymous ${sum(anon)} MB, files ${
      sum((m) => !anon(m) && !m.name.endsWith("[heap]"))
    } MB`,
  );
  console.log(`largest mappings, ${when}:`);
  for (const m of maps.slice(0, 6)) {
    console.log(
      `  ${m.rss.toFixed(0)} MB resident of ${m.size.toFixed(0)} MB  ${m.name}`,
    );
  }
}

const rows: Record<string, string | number>[] = [];
await uploadFiles(1); // the engine's start, the first connections
await new Promise((r) => setTimeout(r, 2000));
rows.push(
  await phase("idle", async () => {
    await new Promise((r) => setTimeout(r, 1000));
    return [];
  }),
);
const requestMb = Number(
  extra.MEMORY_REQUEST_MB ?? loadConfig({}).MEMORY_REQUEST_MB,
);
const resumableMb = requestMb - 4;
const largeJpeg = await noiseJpeg(resumableMb * 1024 * 1024);
/**
 * One round of the load: every phase, then 10 s of quiet. Later rounds send new bytes
 * (new originals, so their variants are first ones again) and name their phases "(round n)".
 */
async function round(n: number): Promise<void> {
  const name = (phase: string) => ROUNDS > 1 ? `${phase} (round ${n})` : phase;
  // A resumable upload as large as the sandbox takes (MEMORY_REQUEST_MB less 4 MB: a
  // finished upload is read into the request's memory), in 8 MB chunks; and a 200 MB one,
  // refused at its creation.
  const large = uniqueJpeg(largeJpeg);
  rows.push(
    await phase(
      name(`a ${(large.length / 2 ** 20).toFixed(0)} MB resumable upload`),
      async () => [await tusUpload(large)],
    ),
  );
  const refused = await fetch(`${svc.base}/api/1/tus/`, {
    method: "POST",
    headers: {
      ...auth,
      "tus-resumable": "1.0.0",
      "upload-length": String(200 * 1024 * 1024),
    },
  });
  await refused.body?.cancel();
  console.log(`a 200 MB resumable upload's creation: ${refused.status}`);
  rows.push(
    await phase(
      name("8 concurrent 5 MB uploads"),
      () => Promise.all(Array.from({ length: 8 }, () => uploadFiles(1))),
    ),
  );
  rows.push(
    await phase(
      name("4 concurrent requests of 8 x 5 MB"),
      () => Promise.all(Array.from({ length: 4 }, () => uploadFiles(8))),
    ),
  );
  // Bodies longer than MEMORY_REQUEST_MB of images could come to (as base64): 413 unread
  // (with 24 MB, the 8 × 5 MB ones above too).
  rows.push(
    await phase(
      name("4 concurrent requests of 12 x 5 MB"),
      () => Promise.all(Array.from({ length: 4 }, () => uploadFiles(12))),
    ),
  );
  // Four large originals, then their first AVIF at full size at once.
  const big: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { body, contentType } = multipartBody(uniqueJpeg(five), "big.jpg");
    const r = await fetch(`${svc.base}/api/1/upload`, {
      method: "POST",
      headers: { ...auth, "content-type": contentType },
      body,
    });
    big.push(new URL((await r.json()).data.url).pathname);
  }
  /** Four first variants at once, one of each large original: their statuses. */
  const firsts = (query: string, headers: Record<string, string> = {}) => () =>
    Promise.all(big.map(async (p) => {
      const r = await fetch(`${svc.base}${p}?${query}`, { headers });
      await r.body?.cancel();
      return r.status;
    }));
  rows.push(
    await phase(
      name("4 concurrent first AVIFs (1024 px)"),
      firsts("w=1024&format=avif"),
    ),
  );
  // As a browser asks for a large one: AVIF where its encode fits IMAGE_ENCODE_MB (64 MB
  // in wasm, about 1.1 MP), WebP past it (a 2048 px AVIF grew the wasm heap by 135 MB).
  rows.push(
    await phase(
      name("4 concurrent format=auto (2048 px)"),
      firsts("w=2048&format=auto", { accept: "image/avif,image/webp,*/*" }),
    ),
  );
  rows.push(
    await phase(
      name("4 concurrent full-page captures"),
      () =>
        Promise.all(Array.from({ length: 4 }, async (_, i) => {
          const r = await fetch(`${svc.base}/api/1/screenshot`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify({
              url: `${pages.origin}/?n=${i}&round=${n}`,
              fullPage: true,
            }),
          });
          await r.body?.cancel();
          return r.status;
        })),
    ),
  );
  await new Promise((r) => setTimeout(r, 10_000));
  rows.push(
    await phase(name("after 10 s quiet"), async () => {
      await new Promise((r) => setTimeout(r, 1000));
      return [];
    }),
  );
}

await printMappings("idle");
for (let n = 1; n <= ROUNDS; n++) {
  await round(n);
  await printMappings(`the quiet after round ${n}`);
}
table(rows);
const worst = Math.max(...rows.map((r) => Number(r["peak MB"])));
if (ROUNDS > 1) {
  // Whether a warmed instance keeps more: each round's worst peak and what stayed.
  const of = (n: number) =>
    rows.filter((r) => String(r.phase).endsWith(`(round ${n})`));
  const rounds = Array.from({ length: ROUNDS }, (_, i) => of(i + 1));
  console.log(
    `peak by round: ${
      rounds.map((r) => Math.max(...r.map((x) => Number(x["peak MB"]))))
        .join(", ")
    } MB; after each quiet: ${
      rounds.map((r) => r[r.length - 1]["peak MB"]).join(", ")
    } MB`,
  );
}
console.log(`peak RSS ${worst.toFixed(0)} MB (target <= 400)`);
console.log(`process alive: ${(await svc.exitWithin(10)) === "running"}`);
await svc.close();
await browser.stop();
await pages.close();
await s3.close();
await pg.stop();
Deno.exit(0);
