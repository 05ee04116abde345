/**
 * Screenshot latency and throughput on a local fixture page: the service's capture path
 * (fresh isolated context + guard proxy per capture, through createApp) against a bare
 * puppeteer capture of the same page in the same browser (new page, viewport, goto, shot).
 * Reports the cold first capture, warm p50/p95 at concurrency 1, and throughput at
 * concurrency 1 and 2. Targets: warm p50 ≤ 1.15× bare; concurrency 2 ≥ 1.6× sequential.
 */
import { load, machineBusyMs, table, watchdog } from "./lib.ts";

watchdog(10 * 60_000);
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import {
  bareCapture,
  benchChromium,
  SCREENSHOT_PAGE,
} from "./screenshot_lib.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { startFixture } from "../tests/fixture_server.ts";
import { testEnv, userWithKey } from "../tests/helpers.ts";

const N = Deno.args.includes("--quick") ? 10 : 30;
const chromium = benchChromium();
const fixture = startFixture({ "/": SCREENSHOT_PAGE });
const allow = `127.0.0.1:${fixture.port}`;
const shooter = new ChromiumScreenshotter({
  executablePath: chromium,
  concurrency: 2,
  queueMax: 64,
  recycleAfter: 100_000,
  timeoutMs: 30_000,
  allowRules: parseAllowList(allow),
  log: memoryLogger(),
});
const env = await testEnv({
  screenshotter: shooter,
  env: { SCREENSHOT_ALLOW_PRIVATE: allow },
});
const { key } = await userWithKey(env);
const body = JSON.stringify({
  url: `${fixture.origin}/`,
  preset: "desktop-720p",
  share: false,
});
/** noAds: AdGuard Base through the filter engine, in the page and on every request. */
const adsBody = JSON.stringify({ ...JSON.parse(body), noAds: true });
const shoot = (payload: string) => async () => {
  const r = await env.app.request("/api/1/screenshot", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: payload,
  });
  const j = await r.json();
  if (!j.success) throw new Error(JSON.stringify(j));
};
const ours = shoot(body);
const oursNoAds = shoot(adsBody);
try {
  const t0 = performance.now();
  await shooter.start();
  await ours();
  const cold = performance.now() - t0;
  const browser = await shooter.browser();
  const bare = () => bareCapture(browser, `${fixture.origin}/`);
  await bare();
  await oursNoAds(); // the engine built (or read) before it is measured
  // Interleave rounds so drift (thermal, GC) hits all alike.
  const b1: number[] = [], s1: number[] = [], a1: number[] = [];
  for (let round = 0; round < 3; round++) {
    b1.push(...(await load(Math.ceil(N / 3), 1, bare)).lat);
    s1.push(...(await load(Math.ceil(N / 3), 1, ours)).lat);
    a1.push(...(await load(Math.ceil(N / 3), 1, oursNoAds)).lat);
  }
  const { pct } = await import("./lib.ts");
  // Machine CPU per capture, measured over the sequential runs: with C cores no client
  // can exceed C / (CPU per capture) captures per second, which bounds the concurrency
  // ratio whatever the code does.
  const cpuPer = async (fn: () => Promise<void>) => {
    const c0 = machineBusyMs();
    const r = await load(N, 1, fn);
    return { ...r, cpuMs: (machineBusyMs() - c0) / N };
  };
  const seqB = await cpuPer(bare), seqS = await cpuPer(ours);
  const cores = navigator.hardwareConcurrency;
  const ceiling = (r: { rps: number; cpuMs: number }) =>
    cores * 1000 / r.cpuMs / r.rps;
  const parB = await load(N, 2, bare), parS = await load(N, 2, ours);
  table([
    {
      what: "cold first capture ms (browser start + capture)",
      who: "service",
      value: cold,
    },
    { what: "warm p50 ms, concurrency 1", who: "bare", value: pct(b1, 50) },
    { what: "warm p50 ms, concurrency 1", who: "service", value: pct(s1, 50) },
    {
      what: "warm p50 ms, concurrency 1",
      who: "service, noAds",
      value: pct(a1, 50),
    },
    { what: "warm p95 ms, concurrency 1", who: "bare", value: pct(b1, 95) },
    { what: "warm p95 ms, concurrency 1", who: "service", value: pct(s1, 95) },
    { what: "captures/s, concurrency 1", who: "bare", value: seqB.rps },
    { what: "captures/s, concurrency 1", who: "service", value: seqS.rps },
    { what: "captures/s, concurrency 2", who: "bare", value: parB.rps },
    { what: "captures/s, concurrency 2", who: "service", value: parS.rps },
    {
      what: "machine CPU ms per capture (all processes), concurrency 1",
      who: "bare",
      value: seqB.cpuMs,
    },
    {
      what: "machine CPU ms per capture (all processes), concurrency 1",
      who: "service",
      value: seqS.cpuMs,
    },
  ]);
  console.log(
    `ratio screenshot warm p50: ${
      (pct(s1, 50) / pct(b1, 50)).toFixed(2)
    }x bare (target <= 1.15)`,
  );
  console.log(
    `ratio screenshot warm p50 with noAds: ${
      (pct(a1, 50) / pct(s1, 50)).toFixed(2)
    }x without`,
  );
  console.log(
    `ratio screenshot warm p95: ${
      (pct(s1, 95) / pct(b1, 95)).toFixed(2)
    }x bare`,
  );
  console.log(
    `ratio screenshot concurrency 2 vs 1 (service): ${
      (parS.rps / seqS.rps).toFixed(2)
    }x (target >= 1.6)`,
  );
  console.log(
    `ratio screenshot concurrency 2 vs 1 (bare): ${
      (parB.rps / seqB.rps).toFixed(2)
    }x`,
  );
  console.log(
    `reference CPU ceiling on ${cores} cores (cores / CPU per capture vs sequential rate): service ${
      ceiling(seqS).toFixed(2)
    }x, bare ${ceiling(seqB).toFixed(2)}x`,
  );
} finally {
  await shooter.close();
  await env.close();
  await fixture.close();
}
