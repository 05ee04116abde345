/**
 * One account's flood of heavy captures against another account's light ones (issue
 * #50). Account B takes light captures (800×600 of a small page) one after another; its
 * p95 is measured alone, then while account A floods the largest full-page PNGs it may
 * (a tall page of colour noise, cut to SCREENSHOT_MAX_PIXELS) from 3 clients: once with
 * one browser for all (as before), once with a heavy lane (LaneScreenshotter: heavy
 * captures in a browser of their own). Target: B's p95 under the flood ≤ 2× alone.
 */
import { pct, table, watchdog } from "./lib.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import { LaneScreenshotter } from "../services/screenshots/lanes.ts";
import type { Screenshotter } from "../services/screenshots/screenshotter.ts";
import { benchChromium } from "./screenshot_lib.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { startFixture } from "../tests/fixture_server.ts";
import { testEnv, userWithKey } from "../tests/helpers.ts";

watchdog(10 * 60_000);
const N = Deno.args.includes("--quick") ? 10 : 30;
const chromium = benchChromium();
// A tall page whose pixels do not compress: the PNG encode is real work.
const heavyPage =
  `<!doctype html><style>body{margin:0}canvas{display:block}</style>
<body><canvas id=c width=1920 height=12000></canvas><script>
const c=document.getElementById('c').getContext('2d');const d=c.createImageData(1920,12000);
for(let i=0;i<d.data.length;i+=4){d.data[i]=Math.random()*255;d.data[i+1]=Math.random()*255;
d.data[i+2]=Math.random()*255;d.data[i+3]=255}c.putImageData(d,0,0);</script></body>`;
const fixture = startFixture({
  "/light":
    `<!doctype html><style>body{margin:0;font:16px sans-serif;background:#eef}</style><body><h1>Light page</h1><p>A few words.</p></body>`,
  "/heavy": heavyPage,
});
const allow = `127.0.0.1:${fixture.port}`;
const pool = (concurrency: number) =>
  new ChromiumScreenshotter({
    executablePath: chromium,
    concurrency,
    perOwner: concurrency > 1 ? concurrency - 1 : 1,
    queueMax: 64,
    recycleAfter: 100_000,
    timeoutMs: 60_000,
    maxPixels: 40_000_000,
    allowRules: parseAllowList(allow),
    log: memoryLogger(),
  });

/** B's light captures' latencies (ms), with A flooding meanwhile when `flood`. */
async function run(shooter: Screenshotter, flood: boolean) {
  const env = await testEnv({
    screenshotter: shooter,
    env: {
      FETCH_ALLOW_PRIVATE: allow,
      SCREENSHOT_TIMEOUT_MS: "60000",
      SCREENSHOT_CONCURRENCY: "4",
      SCREENSHOT_PER_KEY: "3",
    },
  });
  const a = await userWithKey(env);
  const b = await userWithKey(env);
  const shoot = async (key: string, body: Record<string, unknown>) => {
    const r = await env.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ share: false, ...body }),
    });
    const j = await r.json();
    if (!j.success) throw new Error(JSON.stringify(j));
  };
  const light = {
    url: `${fixture.origin}/light`,
    viewport: { width: 800, height: 600 },
  };
  await shoot(b.key, light); // warm
  let flooding = flood;
  const heavies: Promise<void>[] = [];
  let heavyDone = 0;
  if (flood) {
    for (let c = 0; c < 3; c++) {
      heavies.push((async () => {
        while (flooding) {
          await shoot(a.key, {
            url: `${fixture.origin}/heavy`,
            viewport: { width: 1920, height: 1080 },
            fullPage: true,
            format: "png",
          });
          heavyDone++;
        }
      })());
    }
    // Let the flood take hold.
    await new Promise((r) => setTimeout(r, 3_000));
  }
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await shoot(b.key, light);
    times.push(performance.now() - t);
  }
  flooding = false;
  await Promise.all(heavies);
  await env.close();
  return { times, heavyDone };
}

const rows: Record<string, string | number>[] = [];
const one = pool(4);
const alone = await run(one, false);
const shared = await run(one, true);
await one.close();
const laned = new LaneScreenshotter(pool(3), pool(1), 4_000_000);
const lanes = await run(laned, true);
await laned.close();
await fixture.close();
for (
  const [name, r] of [
    ["B alone, one browser", alone],
    ["B under A's flood, one browser", shared],
    ["B under A's flood, heavy lane", lanes],
  ] as const
) {
  rows.push({
    case: name,
    "B p50 ms": pct(r.times, 50).toFixed(0),
    "B p95 ms": pct(r.times, 95).toFixed(0),
    "A's heavy captures": r.heavyDone,
  });
}
table(rows);
const base = pct(alone.times, 95);
console.log(
  `ratio B p95 under the flood / alone: one browser ${
    (pct(shared.times, 95) / base).toFixed(1)
  }×, heavy lane ${(pct(lanes.times, 95) / base).toFixed(1)}× (target ≤ 2×)`,
);
