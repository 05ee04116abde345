import assert from "node:assert/strict";
import { createApiKey } from "../services/api_keys.ts";
import { createUser } from "../services/accounts.ts";
import { migrate, openDatabase } from "../services/db/database.ts";
import { test } from "./helpers.ts";
import { startPgCluster } from "./pg_cluster.ts";
import { probe, startService } from "./service_process.ts";

test("a service process rides out PostgreSQL restarts (only 404s and 503s, no hang, no crash) and SIGTERM during an outage exits 0 within the grace period", async () => {
  const pgc = await startPgCluster();
  const db = await openDatabase({ url: pgc.url });
  await migrate(db.db);
  const user = await createUser(
    db.db,
    "ops@example.com",
    "correct horse battery",
  );
  const { key } = await createApiKey(db.db, user.id, "ops");
  await db.close();
  const svc = await startService({
    DATABASE_URL: pgc.url,
    DB_CONNECT_TIMEOUT_MS: "1000",
    DB_STATEMENT_TIMEOUT_MS: "2000",
    SHUTDOWN_GRACE_MS: "3000",
  });
  try {
    const seen = new Map<string, number>();
    let stop = false;
    // Four clients asking for a record (a database read each) until told to stop.
    const clients = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 2000 && !stop; i++) {
        const s = String(
          await probe(`${svc.base}/api/1/images/abcdefgh`, {
            headers: { authorization: `Bearer ${key}` },
          }),
        );
        seen.set(s, (seen.get(s) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    for (let round = 0; round < 2; round++) {
      await new Promise((r) => setTimeout(r, 500));
      await pgc.stop(round ? "immediate" : "fast");
      await new Promise((r) => setTimeout(r, 3000));
      const alive = await probe(`${svc.base}/healthz`);
      assert.equal(alive, 200, `alive while down: ${svc.log().slice(-3000)}`);
      assert.equal(await probe(`${svc.base}/readyz`), 503);
      await pgc.start();
      const back = Date.now() + 15_000;
      while (await probe(`${svc.base}/readyz`) !== 200 && Date.now() < back) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(await probe(`${svc.base}/readyz`), 200, "recovered");
    }
    stop = true;
    await Promise.all(clients);
    const statuses = [...seen.keys()].sort();
    assert.ok(
      statuses.every((s) => s === "404" || s === "503"),
      `only 404 and 503: ${JSON.stringify(Object.fromEntries(seen))}`,
    );
    assert.ok((seen.get("503") ?? 0) > 0, "the outage was seen");
    assert.equal(
      await svc.exitWithin(0),
      "running",
      `the process survived: ${svc.log().slice(-2000)}`,
    );

    // Down again, requests in flight, then SIGTERM: it drains and exits 0 in time.
    await pgc.stop("fast");
    const inFlight = Array.from(
      { length: 4 },
      () =>
        probe(`${svc.base}/api/1/images/abcdefgh`, {
          headers: { authorization: `Bearer ${key}` },
        }).catch(() => "refused"),
    );
    await new Promise((r) => setTimeout(r, 100));
    svc.proc.kill("SIGTERM");
    assert.equal(await svc.exitWithin(3000 + 5000), 0, svc.log().slice(-2000));
    for (const s of await Promise.all(inFlight)) {
      assert.ok(s === 503 || s === "refused", String(s));
    }
    assert.match(svc.log(), /"msg":"stopped"/);
  } finally {
    await svc.close();
    await pgc.destroy();
  }
});
