/**
 * "Export my data" under memory (issue #52: RSS flat for a 1 GB account). One account
 * of 256 originals × 4 MiB (1 GiB, written straight into the service's store and
 * database) is exported through GET /api/1/account/export while the service's RSS is
 * sampled every 25 ms; the reference run in the same script exports an account of 4 of
 * them (16 MiB). Flat means the 1 GiB export's growth is no larger than the small one's
 * plus noise: reported as both growths and their difference (target ≤ 32 MiB), and the
 * growth as a share of the bytes sent (target < 5 %). PostgreSQL from
 * BENCH_DATABASE_URL or TEST_DATABASE_URL (a throwaway database, dropped after).
 */
import {
  rss,
  startService,
  table,
  throwawayDatabase,
  watchdog,
} from "./lib.ts";
import { openDatabase } from "../services/db/database.ts";

watchdog(10 * 60_000);
const FILE = 4 * 1024 * 1024;
const database = await throwawayDatabase("export");
const url = database.url;
const svc = await startService({ DATABASE_URL: url });
const db = await openDatabase({ url });

/** Gives the bench user `n` images of FILE random bytes each, ids prefixed `prefix`. */
async function fill(userId: string, prefix: string, n: number) {
  const bytes = new Uint8Array(FILE);
  for (let i = 0; i < n; i++) {
    // Random bytes, a fresh start each file (no two files alike).
    for (let o = 0; o < FILE; o += 65536) {
      crypto.getRandomValues(bytes.subarray(o, o + 65536));
    }
    const id = `${prefix}${String(i).padStart(6, "0")}`;
    // Where the fs store keeps a key: under its first two characters.
    const dir = `${svc.dataDir}/images/${id.slice(0, 2)}`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeFile(`${dir}/${id}.jpg`, bytes);
    await db.db.insertInto("images").values({
      id,
      user_id: userId,
      title: `${id}.jpg`,
      ext: "jpg",
      mime: "image/jpeg",
      size: FILE,
      width: 2000,
      height: 1500,
      sha256: id.padEnd(64, "0"),
      thumb_ext: null,
      medium_ext: null,
      delete_token: `t${id}`,
      expires_at: null,
      deleted_at: null,
    }).execute();
  }
}

/** Exports with `key` while sampling RSS; bytes sent, seconds, RSS before and peak (KiB). */
async function exportOnce(key: string) {
  const before = (await rss(svc.pid)).rss;
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, (await rss(svc.pid)).rss);
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  const t0 = performance.now();
  const res = await fetch(`${svc.url}/api/1/account/export`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (res.status !== 200) throw new Error(`export: ${res.status}`);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += chunk.length;
  const secs = (performance.now() - t0) / 1000;
  sampling = false;
  await sampler;
  return { bytes, secs, before, peak };
}

try {
  const account = await (await fetch(`${svc.url}/api/1/account`, {
    headers: { authorization: `Bearer ${svc.key}` },
  })).json();
  const userId = account.data.id as string;
  // A second account for the reference: 4 images (16 MiB).
  const small = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "scripts/user_create.ts",
      `small-${crypto.randomUUID().slice(0, 8)}@example.com`,
      "bench password 123",
    ],
    env: { DATABASE_URL: url },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const smallKey = JSON.parse(new TextDecoder().decode(small.stdout))
    .api_key as string;
  const smallUser = await (await fetch(`${svc.url}/api/1/account`, {
    headers: { authorization: `Bearer ${smallKey}` },
  })).json();
  await fill(smallUser.data.id, "small", 4);
  await fill(userId, "large", 256);

  // Warm: the zip library and the routes loaded, the allocator's arenas settled.
  for (let i = 0; i < 3; i++) await exportOnce(smallKey);
  const ref = await exportOnce(smallKey);
  const big = await exportOnce(svc.key);
  const mib = (kib: number) => (kib / 1024).toFixed(1);
  const growth = (r: typeof ref) => r.peak - r.before;
  table([
    {
      run: "reference: 16 MiB account",
      "zip MiB": (ref.bytes / 2 ** 20).toFixed(1),
      "MiB/s": (ref.bytes / 2 ** 20 / ref.secs).toFixed(0),
      "RSS before MiB": mib(ref.before),
      "peak MiB": mib(ref.peak),
      "growth MiB": mib(growth(ref)),
    },
    {
      run: "1 GiB account",
      "zip MiB": (big.bytes / 2 ** 20).toFixed(1),
      "MiB/s": (big.bytes / 2 ** 20 / big.secs).toFixed(0),
      "RSS before MiB": mib(big.before),
      "peak MiB": mib(big.peak),
      "growth MiB": mib(growth(big)),
    },
  ]);
  const extra = (growth(big) - growth(ref)) / 1024;
  const share = growth(big) * 1024 / big.bytes;
  console.log(
    `1 GiB export grows RSS ${extra.toFixed(1)} MiB more than the 16 MiB one ` +
      `(target ≤ 32): ${extra <= 32 ? "met" : "NOT met"}; growth is ` +
      `${(share * 100).toFixed(2)} % of the bytes sent (target < 5 %): ` +
      `${share < 0.05 ? "met" : "NOT met"}`,
  );
  if (big.bytes < 256 * FILE) throw new Error("the zip is short");
} finally {
  await svc.stop();
  await db.close();
  await database.drop();
}
