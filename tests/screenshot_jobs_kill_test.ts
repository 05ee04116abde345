import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import { startPgCluster } from "./pg_cluster.ts";
import { startS3 } from "./s3_server.ts";
import { startFixture } from "./fixture_server.ts";
import { keyBeforeStart, startService } from "./service_process.ts";
import { startDevtoolsBrowser } from "./browser_service.ts";
import { freePort } from "./pg_cluster.ts";

/**
 * Issue #50's durability: 100 asynchronous captures over two instances (one PostgreSQL,
 * one bucket, a browser service each) while one instance is killed -9 mid-run. Every job must
 * end done exactly once: one stored image each, none lost, none doubled. A page's bytes
 * are its own (its number in colour and text), so a capture run again after the kill
 * stores the same bytes, which the account already has: the same image.
 */

// deno-lint-ignore no-explicit-any
type Any = any;

const fixture = startFixture({
  "/p": async (req) => {
    const n = Number(new URL(req.url).searchParams.get("n"));
    // Long enough that the kill finds captures under way.
    await new Promise((r) => setTimeout(r, 300));
    const colour = `#${
      (n * 2654435761 % 0xffffff).toString(16).padStart(6, "0")
    }`;
    return new Response(
      `<!doctype html><style>html,body{margin:0;height:100%;background:${colour}}</style><body><h1>${n}</h1></body>`,
      { headers: { "content-type": "text/html" } },
    );
  },
});

test("100 jobs over two instances, one killed -9 mid-run: every job ends done exactly once, one stored image each, none lost, none doubled", async () => {
  const pg = await startPgCluster();
  const s3 = await startS3();
  const key = await keyBeforeStart(
    { url: pg.url },
    "jobs@example.com",
    "a long enough password",
  );
  // Two browser services as deployments run them (scripts/browser.sh), one each.
  const browsers = await Promise.all(
    [freePort(), freePort()].map((p) => startDevtoolsBrowser("127.0.0.1", p)),
  );
  const env = {
    DATABASE_URL: pg.url,
    ...s3.env,
    SCREENSHOTS: "on",
    FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}`,
    SCREENSHOT_CONCURRENCY: "2",
    SCREENSHOT_PER_KEY: "2",
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
  try {
    const queued = await fetch(`${a.base}/api/1/screenshot/batch`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        requests: Array.from({ length: 100 }, (_, n) => ({
          url: `${fixture.origin}/p?n=${n}`,
          viewport: { width: 320, height: 200 },
        })),
      }),
    });
    assert.equal(queued.status, 202, await queued.clone().text());
    const batch = (await queued.json()).data.batch;
    const status = async (base: string): Promise<Any> =>
      (await (await fetch(`${base}/api/1/screenshot/batches/${batch.id}`, {
        headers: auth,
      })).json()).data.batch;
    // Kill A once both instances are at work and A has captures under way.
    const start = Date.now();
    for (;;) {
      const s = await status(b.base);
      if (s.counts.done >= 10 && s.counts.running >= 2) break;
      assert.ok(Date.now() - start < 120_000, JSON.stringify(s.counts));
      await new Promise((r) => setTimeout(r, 100));
    }
    await a.kill();
    const killedAt = Date.now();
    let last: Any;
    for (;;) {
      last = await status(b.base);
      if (last.counts.done + last.counts.failed === 100) break;
      assert.ok(
        Date.now() - killedAt < 180_000,
        `after the kill: ${JSON.stringify(last.counts)}`,
      );
      await new Promise((r) => setTimeout(r, 250));
    }
    const recovery = (Date.now() - killedAt) / 1000;
    assert.deepEqual(last.counts, {
      queued: 0,
      running: 0,
      done: 100,
      failed: 0,
      cancelled: 0,
    });
    // Some were under way on A when it died, and were run again.
    const again = last.jobs.filter((j: Any) => j.attempts > 1);
    assert.ok(again.length >= 1, "a job was taken over after the kill");
    // One image each, all different; the account holds exactly those.
    const ids = new Set(last.jobs.map((j: Any) => j.result.id));
    assert.equal(ids.size, 100);
    const images = await (await fetch(`${b.base}/api/1/images?per_page=1`, {
      headers: auth,
    })).json();
    assert.equal(images.data.total, 100);
    console.log(
      `kill test: ${again.length} job(s) run again after the kill; ` +
        `all 100 done ${recovery.toFixed(1)} s after it`,
    );
  } finally {
    await a.close();
    await b.close();
    await Promise.all(browsers.map((x) => x.kill()));
    await s3.close();
    await pg.destroy();
  }
});

test("teardown", async () => {
  await fixture.close();
});
