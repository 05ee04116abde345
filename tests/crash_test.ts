import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import sharp from "sharp";
import { test } from "./helpers.ts";
import { formWith } from "./fixtures.ts";
import { keyBeforeStart, startService, Tally } from "./service_process.ts";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** A small PNG of its own colour, so every upload is new bytes. */
async function uniquePng(n: number): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp({
      create: {
        width: 48 + (n % 16),
        height: 32,
        channels: 3,
        background: { r: n & 255, g: (n >> 8) & 255, b: (n * 7) & 255 },
      },
    }).png().toBuffer(),
  );
}

test("kill -9 during uploads on the embedded default (PGlite + files), three rounds: every acknowledged upload is there byte for byte after restart, and no scratch file outlives its process", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-crash-" });
  // A user and key made before the first start (PGlite allows one process at a time).
  const key = await keyBeforeStart(
    { dataDir },
    "crash@example.com",
    "correct horse battery",
  );

  // No per-key limit: on a quiet machine several hundred uploads are acknowledged, and
  // reading each record back afterwards went past 600 calls a minute (429, counted lost).
  const env = { MALLOC_ARENA_MAX: "1", RATE_LIMIT_PER_MINUTE: "0" };
  let svc = await startService(env, { dataDir });
  const port = svc.port;
  const acked: { id: string; url: string; sha: string }[] = [];
  const tally = new Tally();
  let n = 0;
  try {
    for (let round = 0; round < 3; round++) {
      let stop = false;
      const clients = Array.from({ length: 4 }, async () => {
        while (!stop) {
          const bytes = await uniquePng(n++);
          const t = performance.now();
          try {
            const r = await fetch(`${svc.base}/api/1/upload`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}` },
              body: formWith([{ name: `c${n}.png`, bytes }]),
              signal: AbortSignal.timeout(10_000),
            });
            const body = await r.json().catch(() => ({}));
            tally.add(r.status, performance.now() - t);
            if (r.status === 200) {
              acked.push({
                id: body.data.id,
                url: body.data.url,
                sha: sha256(bytes),
              });
            }
          } catch (e) {
            tally.add(
              (e as Error).name === "TimeoutError" ? "hang" : "refused",
              performance.now() - t,
            );
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      });
      await new Promise((r) => setTimeout(r, 1500));
      await svc.kill();
      stop = true;
      await Promise.all(clients);
      svc = await startService(env, { dataDir, port });
    }
    console.log(
      `kill -9 during uploads: ${
        JSON.stringify({ ...tally.toJSON(), acknowledged: acked.length })
      }`,
    );
    assert.ok(acked.length > 20, `uploads went on: ${acked.length}`);
    assert.ok(tally.only("200", "refused"), JSON.stringify(tally.toJSON()));

    const lost: string[] = [];
    for (const a of acked) {
      const path = new URL(a.url).pathname;
      const r = await fetch(`${svc.base}${path}`);
      const bytes = new Uint8Array(await r.arrayBuffer());
      if (r.status !== 200 || sha256(bytes) !== a.sha) {
        lost.push(`${a.id} file ${r.status}`);
      }
      const rec = await fetch(`${svc.base}/api/1/images/${a.id}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await rec.body?.cancel();
      if (rec.status !== 200) lost.push(`${a.id} record ${rec.status}`);
    }
    assert.deepEqual(
      lost,
      [],
      `acknowledged uploads lost or altered (of ${acked.length})`,
    );

    // Only the live process's scratch folders remain, and they hold nothing.
    for (const dir of [join(dataDir, "tmp"), join(dataDir, "images", ".tmp")]) {
      const left: string[] = [];
      try {
        for (const e of Deno.readDirSync(dir)) {
          left.push(e.name);
          if (e.isDirectory) {
            for (const f of Deno.readDirSync(join(dir, e.name))) {
              left.push(`${e.name}/${f.name}`);
            }
          }
        }
      } catch { /* never created */ }
      assert.ok(left.length <= 1, `${dir}: ${left}`);
    }
  } finally {
    await svc.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
