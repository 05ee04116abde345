/**
 * The cluster test (`deno task test:cluster`; scripts/test.sh runs it after the suite):
 * PostgreSQL, s3rver, two browser services, two instances of main.ts and nginx balancing
 * them, all on 127.0.0.1, as compose.yaml deploys them. It plays the outages of the
 * operations issue and prints the figures RELIABILITY.md records. Every loop is bounded.
 */
import assert from "node:assert/strict";
import { createApiKey } from "../../services/accounts/api_keys.ts";
import { leaseSize } from "../../services/accounts/rate_limit.ts";
import { createUser } from "../../services/accounts/accounts.ts";
import { openDatabase } from "../../services/db/database.ts";
import { startFixture } from "../fixture_server.ts";
import { startDevtoolsBrowser } from "../browser_service.ts";
import { test, waitUntilAsync } from "../helpers.ts";
import { startNginx } from "../nginx.ts";
import { freePort, startPgCluster } from "../pg_cluster.ts";
import { startS3 } from "../s3_server.ts";
import { probe, startService, Tally } from "../service_process.ts";
import {
  balancerConfig,
  rollingRestart,
  type Service,
  uploadsWhile,
  uploadTo,
} from "./rolling.ts";

/** nginx in front of the instances, as deploy/nginx.conf (without TLS) on loopback. */
function startBalancer(ports: number[]) {
  return startNginx(balancerConfig(ports, [], { keepalive: KEEPALIVE }));
}

/** Whether the balancer keeps connections to the instances alive, as deploy/nginx.conf does. */
const KEEPALIVE = true;

async function timed(url: string, init?: RequestInit) {
  const t0 = performance.now();
  const status = await probe(url, init);
  return { status, ms: performance.now() - t0 };
}

/** Plays an outage: load through the balancer while `down` holds, then until ready again. */
async function outage(
  lb: string,
  auth: Record<string, string>,
  ids: string[],
  down: () => Promise<void>,
  up: () => Promise<void>,
) {
  const during = new Tally();
  const after = new Tally();
  let phase: "down" | "up" = "down";
  let stop = false;
  const clients = Array.from({ length: 3 }, async (_, c) => {
    for (let i = 0; i < 400 && !stop; i++) {
      const id = ids[(i + c) % ids.length];
      // Counted by when it was sent: a request sent before recovery may still get a 503.
      const sentIn = phase;
      const r = await timed(`${lb}/api/1/images/${id}`, { headers: auth });
      (sentIn === "down" ? during : after).add(r.status, r.ms);
      await new Promise((res) => setTimeout(res, 50));
    }
  });
  await down();
  await new Promise((r) => setTimeout(r, 4000));
  const t0 = performance.now();
  await up();
  // Recovered once both instances say ready: three 200s in a row through the balancer,
  // which alternates between them. Only requests sent after that count as "after".
  let streak = 0;
  await waitUntilAsync(
    async () => {
      streak = (await probe(`${lb}/readyz`)) === 200 ? streak + 1 : 0;
      return streak >= 3;
    },
    30_000,
    100,
  );
  phase = "up";
  const recoverySeconds = (performance.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, 1000));
  stop = true;
  await Promise.all(clients);
  return { during, after, recoverySeconds };
}

test("cluster: two instances behind nginx over one PostgreSQL, one S3 store and two browser services act as one service and ride out outages, kill -9, SIGTERM and the loss of a browser service", async () => {
  const figures: Record<string, unknown> = {};
  const pgc = await startPgCluster();
  const s3 = await startS3();
  // Two browser services: captures are spread over both (BROWSER_WS_ENDPOINT lists them).
  const browserPorts = [freePort(), freePort()];
  const browsers = await Promise.all(
    browserPorts.map((p) => startDevtoolsBrowser("127.0.0.1", p)),
  );
  const page = startFixture({
    "/": `<!doctype html><body style="background:#0f0"></body>`,
  });
  const env = {
    DATABASE_URL: pgc.url,
    ...s3.env,
    S3_TIMEOUT_MS: "2000",
    DB_CONNECT_TIMEOUT_MS: "1000",
    DB_STATEMENT_TIMEOUT_MS: "2000",
    SHUTDOWN_GRACE_MS: "3000",
    SCREENSHOTS: "on",
    BROWSER_WS_ENDPOINT: browserPorts.map((p) => `http://127.0.0.1:${p}`)
      .join(","),
    SCREENSHOT_ALLOW_PRIVATE: `127.0.0.1:${page.port}`,
    RATE_LIMIT_PER_MINUTE: "1000",
    IMAGE_CACHE_MB: "8",
  };
  const services: Service[] = [];
  let lb: Awaited<ReturnType<typeof startNginx>> | undefined;
  try {
    const a = await startService(env);
    const b = await startService(env);
    services.push(a, b);
    lb = await startBalancer([a.port, b.port]);
    const db = await openDatabase({ url: pgc.url });
    const user = await createUser(
      db.db,
      "ops@example.com",
      "correct horse battery",
    );
    const keys = await Promise.all(
      Array.from(
        { length: 6 },
        (_, i) => createApiKey(db.db, user.id, `k${i}`),
      ),
    );
    await db.close();
    const auth = (i = 0) => ({ authorization: `Bearer ${keys[i].key}` });
    const upload = (base: string, seed: number, key = 0) =>
      uploadTo(base, seed, keys[key].key);

    // 1. Cross-instance reads: stored through A, read through B.
    const one = await upload(a.base, 1);
    assert.equal(one.status, 200);
    assert.equal(
      await probe(`${b.base}/api/1/images/${one.id}`, { headers: auth() }),
      200,
    );
    assert.equal(await probe(`${b.base}/${one.id}.png`), 200);

    // 2. A deletion through B reaches A (which holds the image in memory) within 1 s.
    assert.equal(await probe(`${a.base}/${one.id}.png`), 200);
    const del = await fetch(`${b.base}/api/1/images/${one.id}`, {
      method: "DELETE",
      headers: auth(),
    });
    await del.body?.cancel();
    assert.equal(del.status, 200);
    const t0 = performance.now();
    await waitUntilAsync(
      async () => (await probe(`${a.base}/${one.id}.png`)) === 404,
      1000,
      10,
    );
    assert.equal(await probe(`${a.base}/${one.id}.png`), 404);
    figures.delete_seen_by_other_instance_ms = Math.round(
      performance.now() - t0,
    );

    // 3. One rate limit over both instances: a key limited to 1000 a minute, used through
    // both alternately. The instances reserve calls in leases (1000/min: 16 a write), so
    // the shared counter covers every admitted call and exceeds them by at most each
    // instance's unspent lease.
    const limited = Array.from(
      { length: 30 },
      (_, i) =>
        probe(`${(i % 2 ? a : b).base}/api/1/images/nonexist1`, {
          headers: auth(5),
        }),
    );
    const got = await Promise.all(limited);
    assert.ok(got.every((s) => s === 404), String(got));
    const ra = await fetch(`${a.base}/api/1/images/nonexist1`, {
      headers: auth(5),
    });
    const rb = await fetch(`${b.base}/api/1/images/nonexist1`, {
      headers: auth(5),
    });
    await ra.body?.cancel();
    await rb.body?.cancel();
    const used = 32;
    const lease = leaseSize(1000);
    const shared = await openDatabase({ url: pgc.url });
    const counted = (await shared.db.selectFrom("rate_limits").select("count")
      .where("key_id", "=", keys[5].info.id).execute())
      .reduce((sum, r) => sum + r.count, 0);
    await shared.close();
    assert.ok(
      counted >= used && counted <= used + 2 * (lease - 1),
      `shared counter ${counted} for ${used} calls`,
    );
    // Each instance's Remaining is never below what the shared counter leaves, and never
    // above the limit less the 16 calls that instance itself admitted.
    for (const r of [ra, rb]) {
      const remaining = Number(r.headers.get("x-ratelimit-remaining"));
      assert.ok(
        remaining >= 1000 - counted && remaining <= 1000 - used / 2,
        `remaining ${remaining} with the counter at ${counted}`,
      );
    }

    // Four clients uploading through the balancer while something disrupts the cluster
    // (tests/cluster/rolling.ts); afterwards every acknowledged upload is read back.
    const seed = { next: 100 };
    const loadKeys = keys.slice(1, 5).map((k) => k.key);
    const uploadsDuring = (disrupt: () => Promise<void>) =>
      uploadsWhile(lb!.base, loadKeys, disrupt, { seed });

    // 4. kill -9 of B under upload load: nothing acknowledged is lost.
    const killed = await uploadsDuring(async () => {
      await new Promise((r) => setTimeout(r, 1500));
      await services[1].kill();
      await new Promise((r) => setTimeout(r, 1500));
      services[1] = await startService(env, {
        dataDir: b.dataDir,
        port: b.port,
      });
      await new Promise((r) => setTimeout(r, 1000));
    });
    const acked = killed.acked;
    figures.kill9_uploads = {
      ...killed.tally.toJSON(),
      acknowledged: acked.length,
      lost: killed.lost,
    };
    assert.equal(killed.lost, 0);
    assert.ok(acked.length > 20, `uploads went on: ${acked.length}`);
    assert.ok(
      killed.tally.only("200", "502"),
      JSON.stringify({
        tally: killed.tally,
        failures: killed.failures.map((f) => f.error ?? f.status),
      }),
    );

    // 4b. A rolling restart of A as the README's Deploy section says to do it behind
    // nginx's open-source build (which has no active health checks): A is taken out of
    // rotation (reload), sent SIGTERM, restarted, and put back, under upload load from
    // before the first reload to after the last. A finishes what it holds and exits 0,
    // and no upload fails. (SIGTERM without taking A out first left one upload in 240
    // answered 502 in about one run in five: one that reached A as its listener closed,
    // already sent, so nginx could not retry it.)
    //
    // The client resends an upload whose kept-alive connection to nginx closed before
    // any answer, as browsers and curl do (rolling.ts uploadTo): each nginx reload closes
    // the idle connections of its old workers as they exit, and one a client reused in
    // that instant died under it (issue 39: 1 run in 30 of this step, and 8 in 40 of the
    // reloads alone with no instance touched; RELIABILITY.md "Chance failures").
    let steps: Record<string, number> = {};
    const rolled = await uploadsDuring(async () => {
      await new Promise((r) => setTimeout(r, 1000));
      const restart = await rollingRestart(lb!, services, 0, env, {
        keepalive: KEEPALIVE,
      });
      assert.equal(restart.exit, 0);
      steps = restart.steps;
      await new Promise((r) => setTimeout(r, 1000));
    });
    figures.rolling_restart_uploads = {
      ...rolled.tally.toJSON(),
      acknowledged: rolled.acked.length,
      resent_after_reload_close: rolled.resent.length,
      lost: rolled.lost,
    };
    assert.equal(rolled.lost, 0);
    // Every upload succeeds: A drains (Connection: close, /readyz 503) and stops accepting
    // only when no upload body is arriving (Deno's shutdown() cuts bodies in flight).
    assert.ok(
      rolled.tally.only("200"),
      JSON.stringify({
        tally: rolled.tally,
        failures: rolled.failures.map((f) => f.error ?? f.status),
      }),
    );
    // The load covered the whole restart, not just its first second: uploads answered
    // 200 were sent before A left the rotation and after it came back.
    assert.ok(
      rolled.span.first < steps.out && rolled.span.last > steps.back,
      JSON.stringify({ span: rolled.span, steps }),
    );

    const ids = acked.slice(0, 10);
    // 5. PostgreSQL stopped for 4 s under load: only 200s and 503s, no hang; recovery.
    const pgOut = await outage(
      lb.base,
      auth(),
      ids,
      () => pgc.stop("fast"),
      () => pgc.start(),
    );
    figures.postgres_outage = {
      during: pgOut.during,
      after: pgOut.after,
      recovery_s: Math.round(pgOut.recoverySeconds * 10) / 10,
    };
    assert.ok(pgOut.during.only("200", "503"), JSON.stringify(pgOut.during));
    assert.ok((pgOut.during.counts.get("503") ?? 0) > 0, "the outage was seen");
    assert.ok(pgOut.after.only("200"), JSON.stringify(pgOut.after));

    // 6. The S3 store stopped: image bytes not in memory answer 503; then all recovers.
    const s3During = new Tally();
    await s3.stop();
    for (let i = 0; i < 20; i++) {
      const r = await timed(`${lb.base}/${acked[acked.length - 1 - i]}.th.png`);
      s3During.add(r.status, r.ms);
      const u = await upload(lb.base, 9000 + i);
      s3During.add(u.status, 0);
    }
    const s3t0 = performance.now();
    await s3.start();
    await waitUntilAsync(
      async () => (await probe(`${lb!.base}/readyz`)) === 200,
      30_000,
      100,
    );
    figures.s3_outage = {
      during: s3During,
      recovery_s: Math.round((performance.now() - s3t0) / 100) / 10,
    };
    assert.ok(s3During.only("200", "503"), JSON.stringify(s3During));
    assert.equal((await upload(lb.base, 9999)).status, 200);

    // 7. One of the two browser services dies under capture load: only the captures in
    // flight on it fail (503/240 or 502/220), every later one is taken by the other. Then
    // the other dies too (all 503), and both restart with new DevTools URLs: captures
    // come back by themselves.
    const shootFor = async () => {
      const r = await fetch(`${lb!.base}/api/1/screenshot`, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ url: `${page.origin}/`, share: false }),
        signal: AbortSignal.timeout(30_000),
      }).catch(() => undefined);
      if (!r) return { status: 0, code: 0 };
      const body = await r.json().catch(() => ({}));
      return {
        status: r.status,
        code: body?.error?.code as number | undefined,
      };
    };
    const shoot = async () => (await shootFor()).status;
    assert.equal(await shoot(), 200);
    const shotsOneDown = new Tally();
    const shotsAfterKill = new Tally();
    const wrongCodes: string[] = [];
    let killedAt = Infinity;
    let shooting = true;
    const shooters = Array.from({ length: 3 }, async () => {
      while (shooting) {
        const sent = performance.now();
        const t = performance.now();
        const r = await shootFor();
        // Counted as "after" only if sent a second after the kill: then nothing of it
        // was in flight on the dead one, and every instance has seen its connection go.
        (sent > killedAt + 1000 ? shotsAfterKill : shotsOneDown).add(
          r.status,
          performance.now() - t,
        );
        if (
          r.status !== 200 &&
          !(r.status === 503 && r.code === 240) &&
          !(r.status === 502 && r.code === 220)
        ) wrongCodes.push(`${r.status}/${r.code}`);
      }
    });
    await new Promise((r) => setTimeout(r, 1500));
    await browsers[0].kill();
    killedAt = performance.now();
    await new Promise((r) => setTimeout(r, 4000));
    shooting = false;
    await Promise.all(shooters);
    figures.browser_one_of_two_killed = {
      until_killed: shotsOneDown,
      sent_after: shotsAfterKill,
    };
    assert.deepEqual(wrongCodes, []);
    // At most the captures in flight (three clients) failed; none sent after the kill.
    const failedInFlight = shotsOneDown.total -
      (shotsOneDown.counts.get("200") ?? 0);
    assert.ok(failedInFlight <= 3, JSON.stringify(shotsOneDown));
    assert.ok(shotsAfterKill.only("200"), JSON.stringify(shotsAfterKill));
    assert.ok(shotsAfterKill.total >= 3, JSON.stringify(shotsAfterKill));

    await browsers[1].kill();
    const shotsDown = new Tally();
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      shotsDown.add(await shoot(), performance.now() - t);
    }
    browsers[0] = await startDevtoolsBrowser("127.0.0.1", browserPorts[0]);
    browsers[1] = await startDevtoolsBrowser("127.0.0.1", browserPorts[1]);
    const bt0 = performance.now();
    await waitUntilAsync(async () => (await shoot()) === 200, 30_000, 500);
    figures.browser_restart = {
      during: shotsDown,
      recovery_s: Math.round((performance.now() - bt0) / 100) / 10,
    };
    assert.ok(shotsDown.only("503"), JSON.stringify(shotsDown));
    assert.equal(await shoot(), 200);

    // 8. SIGTERM after an outage began: A drains and exits 0 within its grace period.
    await pgc.stop("fast");
    await new Promise((r) => setTimeout(r, 500));
    const st0 = performance.now();
    services[0].proc.kill("SIGTERM");
    const code = await services[0].exitWithin(3000 + 5000);
    figures.sigterm_during_outage = {
      exit: code,
      seconds: Math.round((performance.now() - st0) / 100) / 10,
    };
    assert.equal(code, 0);
    await pgc.start();

    console.log(`cluster figures: ${JSON.stringify(figures)}`);
  } catch (e) {
    // What the instances said is the first thing to read when this fails.
    for (const [i, s] of services.entries()) {
      console.error(`--- instance ${i} log (tail):\n${s.log().slice(-4000)}`);
    }
    throw e;
  } finally {
    await lb?.close();
    for (const s of services) await s.close();
    for (const b of browsers) await b.kill();
    await page.close();
    await s3.close();
    await pgc.destroy();
  }
});
