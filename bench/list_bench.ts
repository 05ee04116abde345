/**
 * Finding images in a large account (issue #37): 100,000 images of one user on
 * PostgreSQL, listed through the service's API a page at a time, searched by title words,
 * sorted by size and by name, narrowed by album and type. Each query is asked 30 times in
 * turn; p50 and p95 are reported against the target (p50 ≤ 20 ms). PostgreSQL comes from
 * BENCH_DATABASE_URL or TEST_DATABASE_URL (a throwaway database is made on it and dropped).
 */
import { sql } from "kysely";
import {
  pct,
  startService,
  table,
  throwawayDatabase,
  watchdog,
} from "./lib.ts";
import { openDatabase } from "../services/db/database.ts";

watchdog(10 * 60_000);
const N = Deno.args.includes("--quick") ? 20_000 : 100_000;
const database = await throwawayDatabase("list");
const url = database.url;
const svc = await startService({ DATABASE_URL: url });
const db = await openDatabase({ url });
try {
  const { id: userId } = await db.db.selectFrom("users").select("id")
    .executeTakeFirstOrThrow();
  const album = "BenchAlbum1";
  await db.db.insertInto("albums").values({
    id: album,
    user_id: userId,
    title: "Bench",
  }).execute();
  // Titles from a small vocabulary (two words and a number), sizes and types spread,
  // one image in twenty in the album, a year of upload times.
  const t0 = performance.now();
  await sql`
    insert into images (id, user_id, title, ext, mime, size, width, height, sha256,
      thumb_ext, medium_ext, source, delete_token, created_at, album_id)
    select 'img' || lpad(g::text, 9, '0'), ${userId},
      (array['beach','city','mountain','forest','river','night','sunset','party'])[1 + g % 8]
        || ' ' || (array['day','trip','walk','view','photo','shot'])[1 + (g / 8) % 6]
        || ' ' || g || '.jpg',
      (array['jpg','png','webp','gif'])[1 + g % 4], 'image/jpeg',
      1000 + (g * 7919) % 5000000, 800, 600, md5(g::text), 'jpg', null, 'upload',
      md5('t' || g), now() - (g || ' minutes')::interval,
      case when g % 20 = 0 then ${album} else null end
    from generate_series(1, ${N}) g`.execute(db.db);
  await sql`analyze images`.execute(db.db);
  console.log(
    `${N} images inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const queries: [string, string][] = [
    ["newest first, page 1", "per_page=30"],
    ["newest first, page 100", "per_page=30&page=100"],
    ["search one word", "q=sunset&per_page=30"],
    ["search two words", "q=beach%20walk&per_page=30"],
    ["search, no match", "q=zebra&per_page=30"],
    ["by size, page 1", "sort=size&per_page=30"],
    ["by name, page 1", "sort=name&per_page=30"],
    ["by name, page 100", "sort=name&per_page=30&page=100"],
    ["album", `album=${album}&per_page=30`],
    ["type png, by size", "type=png&sort=size&per_page=30"],
  ];
  const rows: Record<string, string | number>[] = [];
  const p50s: number[] = [];
  for (const [label, query] of queries) {
    const lat: number[] = [];
    for (let i = 0; i < 33; i++) {
      const t = performance.now();
      const r = await fetch(`${svc.url}/api/1/images?${query}`, {
        headers: { authorization: `Bearer ${svc.key}` },
      });
      const body = await r.json();
      if (!body.success) throw new Error(JSON.stringify(body));
      if (i >= 3) lat.push(performance.now() - t); // three to warm
    }
    p50s.push(pct(lat, 50));
    rows.push({
      query: label,
      "p50 ms": pct(lat, 50).toFixed(1),
      "p95 ms": pct(lat, 95).toFixed(1),
    });
  }
  table(rows);
  console.log(
    `ratio list ${N} images: worst p50 ${
      Math.max(...p50s).toFixed(1)
    } ms (target <= 20)`,
  );
} finally {
  await db.close();
  await svc.stop();
  await database.drop();
}
