/**
 * What the metrics cost (issue #47: at most 3 % on the 200 KB upload and the 304 paths):
 * two services in the same run, alike but for METRICS=on (with a token, and a scrape
 * during the run as Prometheus would make) and METRICS=off (nothing recorded), each
 * measured in alternating rounds so drift of the machine falls on both. Prints the
 * median of the rounds' ratios, on/off.
 *
 *   deno task bench:metrics [--quick]
 */
import {
  load,
  multipartBody,
  noiseJpeg,
  RawHttpClient,
  startService,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";

watchdog(10 * 60_000);
const quick = Deno.args.includes("--quick");
const rounds = quick ? 2 : 4;
const TOKEN = "bench-metrics-token-0123456789";

const on = await startService({
  METRICS: "on",
  METRICS_TOKEN: TOKEN,
  RATE_LIMIT_PER_MINUTE: "0",
});
const off = await startService({ METRICS: "off", RATE_LIMIT_PER_MINUTE: "0" });
const rows: Record<string, string | number>[] = [];
const ratios: Record<string, number[]> = { upload: [], "304": [] };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  const jpeg = await noiseJpeg(200_000);
  const services = { on, off };
  // One image each for the revalidations, and a warm-up of both paths.
  const etags: Record<string, { path: string; etag: string }> = {};
  for (const [name, svc] of Object.entries(services)) {
    const client = new RawHttpClient(Number(new URL(svc.url).port));
    const body = multipartBody(uniqueJpeg(jpeg), "w.jpg");
    const r = await client.post("/api/1/upload", {
      authorization: `Bearer ${svc.key}`,
      "content-type": body.contentType,
    }, body.body);
    const rec = JSON.parse(new TextDecoder().decode(r.body)).data;
    const path = `/${rec.image.filename}`;
    const first = await fetch(`${svc.url}${path}`);
    await first.arrayBuffer();
    etags[name] = { path, etag: first.headers.get("etag")! };
    for (let i = 0; i < 200; i++) {
      await client.get(path, { "if-none-match": etags[name].etag });
    }
    client.close();
  }

  const scrape = () =>
    fetch(`${on.url}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    }).then((r) => r.text());

  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so neither always meets a warmer machine.
    const order = round % 2 ? ["off", "on"] as const : ["on", "off"] as const;
    const got: Record<string, { upload: number; "304": number }> = {};
    for (const name of order) {
      const svc = services[name];
      const port = Number(new URL(svc.url).port);
      const n = quick ? 60 : 160;
      const bodies = Array.from(
        { length: n },
        () => multipartBody(uniqueJpeg(jpeg), "bench.jpg"),
      );
      const client = new RawHttpClient(port);
      const up = await load(n, 8, async (i) => {
        const r = await client.post("/api/1/upload", {
          authorization: `Bearer ${svc.key}`,
          "content-type": bodies[i].contentType,
        }, bodies[i].body);
        if (r.status !== 200) throw new Error(`upload ${r.status}`);
      });
      const { path, etag } = etags[name];
      const m = quick ? 8000 : 30000;
      const revalidate = await load(m, 8, async () => {
        const r = await client.get(path, { "if-none-match": etag });
        if (r.status !== 304) throw new Error(`revalidation ${r.status}`);
      });
      client.close();
      if (name === "on") await scrape();
      got[name] = { upload: up.rps, "304": revalidate.rps };
      rows.push({
        round,
        metrics: name,
        "upload req/s": up.rps,
        "upload p50 ms": up.p50,
        "304 req/s": revalidate.rps,
        "304 p50 ms": revalidate.p50,
      });
    }
    ratios.upload.push(got.on.upload / got.off.upload);
    ratios["304"].push(got.on["304"] / got.off["304"]);
  }
  const text = await scrape();
  const uploads = text.match(
    /^imagehost_uploads_total\{source="upload"\} (\d+)/m,
  )?.[1];
  console.log(`metrics-on service counted ${uploads} uploads`);
} finally {
  await on.stop();
  await off.stop();
}
table(rows);
for (const [what, list] of Object.entries(ratios)) {
  console.log(
    `ratio ${what === "upload" ? "upload 200KB c=8" : "304 c=8"}: metrics on ${
      median(list).toFixed(3)
    }x off (rounds ${
      list.map((x) => x.toFixed(3)).join(", ")
    }; target >= 0.97)`,
  );
}
