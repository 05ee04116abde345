import assert from "node:assert/strict";
import { test } from "../helpers.ts";
import { probe, startService, Tally } from "../service_process.ts";
import { START_ENV, START_V8_FLAGS } from "../start_task.ts";

/** Resident memory of a process, from /proc (bytes). */
async function rssOf(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Runs `clients` loops of `once` for `ms`; each result is tallied. */
async function flood(
  clients: number,
  ms: number,
  once: (i: number) => Promise<number | string>,
): Promise<Tally> {
  const tally = new Tally();
  const end = Date.now() + ms;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; Date.now() < end; i++) {
      const t = performance.now();
      tally.add(await once(c * 100_000 + i), performance.now() - t);
    }
  }));
  return tally;
}

test("a login flood (20 clients × 8 s, random e-mails, one address) is throttled: RSS grows < 100 MB, only 401/429 answers, and other pages keep answering meanwhile", async () => {
  // As `deno task start` runs it (one malloc arena, the V8 heap flags; see README).
  const svc = await startService({
    ...START_ENV,
    DENO_V8_FLAGS: START_V8_FLAGS,
  });
  try {
    const base = svc.base;
    const login = (i: number) =>
      probe(`${base}/login`, {
        method: "POST",
        headers: {
          origin: base,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: `email=flood${i}%40example.com&password=wrong-password-${i}`,
        redirect: "manual",
      });
    // Warm up (code paths loaded, pools filled) before the baseline is read.
    for (let i = 0; i < 3; i++) await login(-i - 1);
    const rss0 = await rssOf(svc.proc.pid);
    let peak = rss0;
    const sampler = setInterval(async () => {
      peak = Math.max(peak, await rssOf(svc.proc.pid).catch(() => 0));
    }, 100);
    const others = new Tally();
    const side = (async () => {
      const end = Date.now() + 8000;
      while (Date.now() < end) {
        const t = performance.now();
        others.add(await probe(`${base}/login`), performance.now() - t);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const logins = await flood(20, 8000, login);
    await side;
    clearInterval(sampler);
    const grown = peak - rss0;
    console.log(
      `login flood: ${
        JSON.stringify({
          logins: logins.toJSON(),
          other_pages: others.toJSON(),
          rss_start_mb: rss0 >> 20,
          rss_peak_growth_mb: grown >> 20,
        })
      }`,
    );
    assert.deepEqual(
      [...logins.counts.keys()].filter((k) => k !== "401" && k !== "429"),
      [],
      JSON.stringify(logins.toJSON()),
    );
    assert.ok((logins.counts.get("429") ?? 0) > 0, "the flood was throttled");
    assert.deepEqual(
      [...others.counts.keys()],
      ["200"],
      JSON.stringify(others.toJSON()),
    );
    assert.ok(grown < 100 * 1024 * 1024, `RSS grew ${grown >> 20} MB`);
  } finally {
    await svc.close();
  }
});

test("a flood of wrong API keys from one address is cut to API_KEY_FAILURES_PER_MINUTE lookups, then answered 429 without touching the database", async () => {
  const svc = await startService({ API_KEY_FAILURES_PER_MINUTE: "30" });
  try {
    const tally = await flood(
      10,
      4000,
      (i) =>
        probe(`${svc.base}/api/1/images/abcdefgh`, {
          headers: { authorization: `Bearer ihk_guess${i}` },
        }),
    );
    console.log(`bad-key flood: ${JSON.stringify(tally.toJSON())}`);
    assert.deepEqual(
      [...tally.counts.keys()].sort(),
      ["401", "429"],
      JSON.stringify(tally.toJSON()),
    );
    // At most the limit per one-minute window, and the flood may span two windows.
    assert.ok(tally.counts.get("401")! <= 60, JSON.stringify(tally.toJSON()));
    // Requests without any key are not counted as failures: a page without a key is 401.
    assert.equal(await probe(`${svc.base}/api/1/images/abcdefgh`), 401);
  } finally {
    await svc.close();
  }
});
