import assert from "node:assert/strict";
import { makeImage } from "./fixtures.ts";
import { test } from "./helpers.ts";
import { startPgCluster } from "./pg_cluster.ts";
import { startS3 } from "./s3_server.ts";
import { keyBeforeStart, startService } from "./service_process.ts";

/** One upload through the service process: status, record and the bytes it sent. */
async function send(base: string, key: string, png: Uint8Array, name: string) {
  const fd = new FormData();
  fd.append("images", new Blob([png as BlobPart]), name);
  const r = await fetch(`${base}/api/1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: fd,
    signal: AbortSignal.timeout(30_000),
  });
  const body = await r.json();
  return { status: r.status, body };
}

/** Every record the service lists for the key. */
async function listAll(base: string, key: string) {
  const listed: { id: string; size: number; image: { url: string } }[] = [];
  for (let page = 1;; page++) {
    const r = await fetch(
      `${base}/api/1/images?per_page=100&page=${page}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    const body = await r.json();
    assert.equal(r.status, 200, JSON.stringify(body));
    listed.push(...body.data.images);
    if (body.data.images.length < 100) break;
  }
  return listed;
}

/** The listed records whose file does not answer whole. */
async function recordsWithoutBytes(base: string, key: string) {
  const missing: string[] = [];
  for (const rec of await listAll(base, key)) {
    const file = await fetch(rec.image.url);
    const bytes = new Uint8Array(await file.arrayBuffer());
    if (file.status !== 200 || bytes.length !== rec.size) {
      missing.push(`${rec.id}: ${file.status}, ${bytes.length} of ${rec.size}`);
    }
  }
  return missing;
}

test("uploads refused while PostgreSQL is frozen (SIGSTOP) leave no record without its bytes: each one sent again is stored or answered as the same image, and every record's file is there", async () => {
  const pgc = await startPgCluster();
  const s3 = await startS3();
  let svc: Awaited<ReturnType<typeof startService>> | undefined;
  try {
    const key = await keyBeforeStart(
      { url: pgc.url },
      "stall@example.com",
      "correct horse battery",
    );
    svc = await startService({
      DATABASE_URL: pgc.url,
      ...s3.env,
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_STATEMENT_TIMEOUT_MS: "1000",
      RATE_LIMIT_PER_MINUTE: "0",
    });
    const base = svc.base;
    const refused: { png: Uint8Array; name: string }[] = [];
    const acked = new Map<string, number>(); // id → size
    let seed = 0;
    const counts: Record<string, number> = {};
    for (let round = 0; round < 3; round++) {
      const batch = await Promise.all(
        Array.from({ length: 12 }, async () => {
          const n = seed++;
          return {
            png: await makeImage("png", {
              width: 30 + n,
              height: 20 + (n % 17),
            }),
            name: `s${n}.png`,
          };
        }),
      );
      // Uploads going out while the database freezes and thaws.
      const sent = batch.map(async (f, i) => {
        await new Promise((r) => setTimeout(r, i * 40));
        const r = await send(base, key, f.png, f.name);
        counts[r.status] = (counts[r.status] ?? 0) + 1;
        if (r.status === 200) acked.set(r.body.data.id, r.body.data.size);
        else {
          assert.deepEqual(
            [r.status, r.body.error.code],
            [503, 250],
            JSON.stringify(r.body),
          );
          refused.push(f);
        }
      });
      await new Promise((r) => setTimeout(r, 150));
      await pgc.pause();
      await new Promise((r) => setTimeout(r, 2500));
      await pgc.resume();
      await Promise.all(sent);
    }
    assert.ok(
      refused.length > 0,
      `the stall was seen: ${JSON.stringify(counts)}`,
    );
    // Before anything is sent again: the records the thaw committed have their bytes.
    // (Checked here, not only at the end, since sending the same bytes again now repairs a
    // record without them, which would hide a write side that deleted them.)
    assert.deepEqual(
      await recordsWithoutBytes(base, key),
      [],
      `records without their bytes after the thaw (${JSON.stringify(counts)})`,
    );
    // Each refused upload sent again once the database answers: stored now, or the same
    // image if its first row was committed after all. Either way its bytes must be there.
    for (const f of refused) {
      let r = await send(base, key, f.png, f.name);
      for (let i = 0; r.status === 503 && i < 20; i++) {
        await new Promise((res) => setTimeout(res, 250));
        r = await send(base, key, f.png, f.name);
      }
      assert.equal(r.status, 200, JSON.stringify(r.body));
      acked.set(r.body.data.id, r.body.data.size);
    }
    // Every record the service lists has its file, and every acknowledged one is listed.
    const listed = await listAll(base, key);
    assert.deepEqual(
      await recordsWithoutBytes(base, key),
      [],
      `records without their bytes (${JSON.stringify(counts)})`,
    );
    for (const id of acked.keys()) {
      assert.ok(
        listed.some((r) => r.id === id),
        `acknowledged ${id} is listed`,
      );
    }
  } finally {
    await svc?.close();
    await s3.close();
    await pgc.destroy();
  }
});

test("SIGTERM while PostgreSQL is frozen exits 0 within SHUTDOWN_DRAIN_MS + SHUTDOWN_GRACE_MS, and requests meanwhile get 503 within the connect bound", async () => {
  const pgc = await startPgCluster();
  try {
    const key = await keyBeforeStart(
      { url: pgc.url },
      "term@example.com",
      "correct horse battery",
    );
    const svc = await startService({
      DATABASE_URL: pgc.url,
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_STATEMENT_TIMEOUT_MS: "1000",
      SHUTDOWN_DRAIN_MS: "500",
      SHUTDOWN_GRACE_MS: "2000",
    });
    try {
      const list = () =>
        fetch(`${svc.base}/api/1/images`, {
          headers: { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(20_000),
        });
      const up = await list();
      await up.body?.cancel();
      assert.equal(up.status, 200);
      await pgc.pause();
      // A database that answers nothing: 503 (250) once the bounds run out, not a hang.
      const r = await list();
      const body = await r.json();
      assert.deepEqual([r.status, body.error.code], [503, 250]);
      const t0 = performance.now();
      svc.proc.kill("SIGTERM");
      const code = await svc.exitWithin(15_000);
      const ms = performance.now() - t0;
      assert.equal(code, 0);
      // 500 + 2000 documented, plus what a loaded machine adds; it was 22 s (the backstop).
      assert.ok(ms < 2500 + 2000, `exited after ${Math.round(ms)} ms`);
    } finally {
      await pgc.resume();
      await svc.close();
    }
  } finally {
    await pgc.destroy();
  }
});

test("with PostgreSQL frozen, 80 requests at once each get their 503 within DB_CONNECT_TIMEOUT_MS + DB_STATEMENT_TIMEOUT_MS, and once it thaws none fails", async () => {
  const pgc = await startPgCluster();
  try {
    const key = await keyBeforeStart(
      { url: pgc.url },
      "bound@example.com",
      "correct horse battery",
    );
    const svc = await startService({
      DATABASE_URL: pgc.url,
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_STATEMENT_TIMEOUT_MS: "1000",
      RATE_LIMIT_PER_MINUTE: "0",
    });
    const png = await makeImage("png", { width: 31 });
    const kinds = [
      () =>
        fetch(`${svc.base}/api/1/images`, {
          headers: { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(20_000),
        }),
      () => {
        const fd = new FormData();
        fd.append("image", new Blob([png as BlobPart]), "b.png");
        return fetch(`${svc.base}/api/1/upload`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: fd,
          signal: AbortSignal.timeout(20_000),
        });
      },
    ];
    try {
      for (const k of kinds) {
        const r = await k();
        await r.body?.cancel();
        assert.equal(r.status, 200);
      }
      await pgc.pause();
      const frozen = await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          const t = performance.now();
          const r = await kinds[i % 2]();
          const body = await r.json();
          return {
            status: r.status,
            code: body.error?.code,
            ms: performance.now() - t,
          };
        }),
      );
      await pgc.resume();
      const worst = Math.max(...frozen.map((f) => f.ms));
      assert.ok(
        frozen.every((f) => f.status === 503 && f.code === 250),
        JSON.stringify(frozen.filter((f) => f.status !== 503)),
      );
      // 1000 + 1000 documented, plus what a loaded machine adds.
      assert.ok(
        worst < 2000 + 1500,
        `slowest 503 after ${Math.round(worst)} ms`,
      );
      console.log(`frozen: 80 × 503, slowest ${Math.round(worst)} ms`);
      // Thawed: the same load again, and nothing fails.
      const after = await Promise.all(
        Array.from({ length: 40 }, async () => {
          const r = await kinds[0]();
          await r.body?.cancel();
          return r.status;
        }),
      );
      assert.deepEqual([...new Set(after)], [200]);
    } finally {
      await pgc.resume();
      await svc.close();
    }
  } finally {
    await pgc.destroy();
  }
});
