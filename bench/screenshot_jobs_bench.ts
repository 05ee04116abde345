/**
 * Asynchronous captures against synchronous ones (issue #50). Two instances of the
 * service (one PostgreSQL, one bucket, a browser service each, SCREENSHOT_CONCURRENCY 2) take
 * 200 captures of small local pages twice: once as synchronous POST /api/1/screenshot
 * calls from 4 clients (the instances' 4 browser slots, two clients on each), once as one
 * batch of 200 jobs posted to one instance and run by both. Reported: captures per second
 * of each and their ratio (target ≥ 0.9), and the queue's own latency, enqueue to start
 * of each job (p50, p95).
 */
import { pct, table, watchdog } from "./lib.ts";
import { startPgCluster } from "../tests/pg_cluster.ts";
import { startS3 } from "../tests/s3_server.ts";
import { startFixture } from "../tests/fixture_server.ts";
import { keyBeforeStart, startService } from "../tests/service_process.ts";
import { benchChromium } from "./screenshot_lib.ts";
import { startDevtoolsBrowser } from "../tests/browser_service.ts";
import { freePort } from "../tests/pg_cluster.ts";

watchdog(10 * 60_000);
const N = Deno.args.includes("--quick") ? 40 : 200;
const fixture = startFixture({
  "/p": (req) => {
    const n = Number(new URL(req.url).searchParams.get("n"));
    const colour = `#${
      (n * 2654435761 % 0xffffff).toString(16).padStart(6, "0")
    }`;
    return new Response(
      `<!doctype html><style>html,body{margin:0;height:100%;background:${colour}}</style><body><h1>Page ${n}</h1><p>Some text to lay out.</p></body>`,
      { headers: { "content-type": "text/html" } },
    );
  },
});
const pg = await startPgCluster();
const s3 = await startS3();
const key = await keyBeforeStart(
  { url: pg.url },
  "bench@example.com",
  "a long enough password",
);
// Two browser services as deployments run them (scripts/browser.sh), one an instance.
const browsers = await Promise.all(
  [freePort(), freePort()].map((p) =>
    startDevtoolsBrowser("127.0.0.1", p, undefined, benchChromium())
  ),
);
const env = {
  DATABASE_URL: pg.url,
  ...s3.env,
  SCREENSHOTS: "on",
  FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}`,
  SCREENSHOT_CONCURRENCY: "2",
  SCREENSHOT_PER_KEY: "2",
  SCREENSHOT_BATCH_MAX: String(N),
};
const a = await startService({
  ...env,
  BROWSER_WS_ENDPOINT: browsers[0].endpoint,
});
const b = await startService({
  ...env,
  BROWSER_WS_ENDPOINT: browsers[1].endpoint,
});
const auth = { authorization: `Bearer ${key}` };
const request = (n: number) => ({
  url: `${fixture.origin}/p?n=${n}`,
  viewport: { width: 800, height: 600 },
});

try {
  // Warm both instances' browsers and pools.
  await Promise.all([a, b, a, b].map(async (s, i) => {
    const r = await fetch(`${s.base}/api/1/screenshot`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(request(100_000 + i)),
    });
    await r.body?.cancel();
  }));

  // Synchronous: 4 clients, two on each instance, N captures in all.
  let next = 0;
  const t0 = performance.now();
  await Promise.all([a, b, a, b].map(async (s) => {
    for (let n = next++; n < N; n = next++) {
      const r = await fetch(`${s.base}/api/1/screenshot`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(request(n)),
      });
      if (r.status !== 200) throw new Error(`sync: ${await r.text()}`);
      await r.body?.cancel();
    }
  }));
  const syncSecs = (performance.now() - t0) / 1000;

  // Asynchronous: one batch of N (other pages: no cache, no duplicates) to one instance.
  // The instances stamp the jobs by the same wall clock as this.
  const postedAt = Date.now();
  const queued = await fetch(`${a.base}/api/1/screenshot/batch`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({
      requests: Array.from({ length: N }, (_, n) => request(N + n)),
    }),
  });
  if (queued.status !== 202) throw new Error(await queued.text());
  const id = (await queued.json()).data.batch.id;
  // deno-lint-ignore no-explicit-any
  let batch: any;
  for (;;) {
    batch = (await (await fetch(`${a.base}/api/1/screenshot/batches/${id}`, {
      headers: auth,
    })).json()).data.batch;
    if (batch.counts.done + batch.counts.failed === N) break;
    // Seldom: following 200 jobs costs the instance CPU the captures need.
    await new Promise((r) => setTimeout(r, 1_000));
  }
  // From the POST to the last job's end, by the jobs' own times (not the poll's).
  const lastEnd = Math.max(
    ...batch.jobs.map((j: { finished_at: string }) =>
      Date.parse(j.finished_at)
    ),
  );
  const asyncSecs = (lastEnd - postedAt) / 1000;
  if (batch.counts.failed) throw new Error(JSON.stringify(batch.counts));
  const waits = batch.jobs.map((
    j: { created_at: string; started_at: string },
  ) => Date.parse(j.started_at) - Date.parse(j.created_at));
  // The first wait of each slot is the queue's own latency; later ones include
  // waiting for a slot. The jobs that started before any slot was free again:
  const firstFour = [...waits].sort((x, y) => x - y).slice(0, 4);
  const runs = batch.jobs.map((
    j: { started_at: string; finished_at: string },
  ) => Date.parse(j.finished_at) - Date.parse(j.started_at));
  const busy = runs.reduce((x: number, y: number) => x + y, 0) / 1000;
  console.log(
    `a job's run (started to finished): p50 ${pct(runs, 50)} ms, p95 ${
      pct(runs, 95)
    } ms; the 4 slots busy ${
      (busy / 4 / asyncSecs * 100).toFixed(0)
    } % of the time`,
  );
  const syncRate = N / syncSecs;
  const asyncRate = N / asyncSecs;
  table([
    {
      path: "synchronous, 4 clients",
      captures: N,
      seconds: syncSecs.toFixed(1),
      "per second": syncRate.toFixed(2),
    },
    {
      path: "asynchronous, one batch",
      captures: N,
      seconds: asyncSecs.toFixed(1),
      "per second": asyncRate.toFixed(2),
    },
  ]);
  console.log(
    `ratio asynchronous/synchronous throughput: ${
      (asyncRate / syncRate).toFixed(2)
    }× (target ≥ 0.9)`,
  );
  console.log(
    `queue latency, enqueue to start, of the first jobs (free slots): p50 ${
      pct(firstFour, 50).toFixed(0)
    } ms; of all ${N} (a slot's wait included): p50 ${
      pct(waits, 50).toFixed(0)
    } ms, p95 ${pct(waits, 95).toFixed(0)} ms`,
  );
} finally {
  await a.close();
  await b.close();
  await Promise.all(browsers.map((x) => x.kill()));
  await s3.close();
  await pg.destroy();
  await fixture.close();
}
