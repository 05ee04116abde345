/**
 * Upload throughput: POST /api/1/upload of 200 KB and 5 MB JPEGs with 1 and 8 concurrent
 * clients, against a bare Deno.serve that streams the same multipart body to disk, both in
 * their own processes on loopback. Every file is unique so the duplicate shortcut never
 * applies. Target: service ≥ 0.8× baseline requests/s. BENCH_DATABASE_URL runs the service on
 * PostgreSQL instead of its embedded PGlite.
 */
import {
  freePort,
  load,
  noiseJpeg,
  spawnDeno,
  startService,
  table,
  uniqueJpeg,
  waitUp,
  watchdog,
} from "./lib.ts";

watchdog(10 * 60_000);

const quick = Deno.args.includes("--quick");
const sizes = [
  {
    label: "200KB",
    bytes: 200_000,
    n: { 1: quick ? 20 : 60, 8: quick ? 40 : 160 },
  },
  {
    label: "5MB",
    bytes: 5_000_000,
    n: { 1: quick ? 6 : 16, 8: quick ? 16 : 40 },
  },
];

const svc = await startService(
  Deno.env.get("BENCH_DATABASE_URL")
    ? { DATABASE_URL: Deno.env.get("BENCH_DATABASE_URL")! }
    : {},
);
const basePort = freePort();
const base = spawnDeno("bench/baseline_upload_server.ts", {
  PORT: String(basePort),
});
await waitUp(`http://127.0.0.1:${basePort}/`);
const rows: Record<string, string | number>[] = [];
const ratios: string[] = [];
try {
  for (const size of sizes) {
    const jpeg = await noiseJpeg(size.bytes);
    for (const c of [1, 8] as const) {
      const n = size.n[c];
      const bodies = Array.from({ length: n }, () => {
        const fd = new FormData();
        fd.append(
          "images",
          new File([uniqueJpeg(jpeg) as Uint8Array<ArrayBuffer>], "bench.jpg", {
            type: "image/jpeg",
          }),
        );
        return fd;
      });
      const post =
        (url: string, headers: Record<string, string>) => async (i: number) => {
          const r = await fetch(url, {
            method: "POST",
            headers,
            body: bodies[i],
          });
          const j = await r.json();
          if (!j.success) throw new Error(JSON.stringify(j));
        };
      // Warm both once (JIT, first sharp call, first DB insert), then measure.
      const warm = new FormData();
      warm.append(
        "images",
        new File([uniqueJpeg(jpeg) as Uint8Array<ArrayBuffer>], "w.jpg"),
      );
      await (await fetch(`${svc.url}/api/1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${svc.key}` },
        body: warm,
      })).body?.cancel();
      const b = await load(n, c, post(`http://127.0.0.1:${basePort}/`, {}));
      const s = await load(
        n,
        c,
        post(`${svc.url}/api/1/upload`, { authorization: `Bearer ${svc.key}` }),
      );
      rows.push({
        file: `${size.label} (${(jpeg.length / 1e6).toFixed(2)} MB)`,
        clients: c,
        n,
        who: "baseline",
        "req/s": b.rps,
        "p50 ms": b.p50,
        "p99 ms": b.p99,
      });
      rows.push({
        file: `${size.label} (${(jpeg.length / 1e6).toFixed(2)} MB)`,
        clients: c,
        n,
        who: "service",
        "req/s": s.rps,
        "p50 ms": s.p50,
        "p99 ms": s.p99,
      });
      ratios.push(
        `ratio upload ${size.label} c=${c}: ${
          (s.rps / b.rps).toFixed(2)
        }x baseline req/s (target >= 0.80)`,
      );
    }
  }
} finally {
  await base.stop();
  await svc.stop();
}
table(rows);
for (const r of ratios) console.log(r);
