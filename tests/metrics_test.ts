/**
 * Metrics (issue #47): Prometheus text from prom-client at /metrics behind METRICS_TOKEN
 * and on METRICS_LISTEN, never public by default, labelled by route template; a real
 * Prometheus (Debian's package) scrapes a running service and its query API returns the
 * number of uploads made; promtool accepts the exposition.
 */
import assert from "node:assert/strict";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
import {
  test,
  testEnv,
  upload,
  userWithKey,
  waitUntilAsync,
} from "./helpers.ts";
import { keyBeforeStart, startService } from "./service_process.ts";
import { freePort } from "./pg_cluster.ts";
import { listenAddress } from "../routes/metrics_route.ts";

const TOKEN = "metrics-token-0123456789";

/** The value of one sample line of an exposition (undefined when absent). */
function sample(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((l) =>
    l.startsWith(`${name}${labels ? `{${labels}` : ""}`) &&
    (labels || l.startsWith(`${name} `))
  );
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

test("/metrics is 404 without METRICS_TOKEN, 401 with a wrong token, and with the right one counts requests by route template (never the raw path), uploads and their bytes, variants made and hit, and reads the gauges", async () => {
  const off = await testEnv();
  try {
    const res = await off.app.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(res.status, 404);
    await res.body?.cancel();
  } finally {
    await off.close();
  }
  const env = await testEnv({ env: { METRICS_TOKEN: TOKEN } });
  try {
    const asked: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong-token-000000000" },
    ];
    for (const h of asked) {
      const r = await env.app.request("/metrics", { headers: h });
      assert.equal(r.status, 401);
      assert.match(r.headers.get("www-authenticate")!, /Bearer/);
      await r.body?.cancel();
    }
    const { key } = await userWithKey(env);
    let bytes = 0;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await upload(
        env,
        key,
        formWith([{ name: "a.jpg", bytes: await makeNoiseJpeg(60 + i, 50) }]),
      );
      assert.equal(r.status, 200);
      bytes += r.body.data.size;
      ids.push(r.body.data.image.filename);
    }
    for (const path of [`/${ids[0]}?w=160`, `/${ids[0]}?w=160`]) {
      const r = await env.app.request(path);
      assert.equal(r.status, 200);
      await r.arrayBuffer();
    }
    for (const id of ids) {
      await (await env.app.request(`/api/1/images/${id.split(".")[0]}`, {
        headers: { authorization: `Bearer ${key}` },
      })).arrayBuffer();
    }
    const r = await env.app.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(r.status, 200);
    assert.match(
      r.headers.get("content-type")!,
      /^text\/plain; version=0\.0\.4/,
    );
    const text = await r.text();
    assert.equal(sample(text, "imagehost_uploads_total", 'source="upload"'), 3);
    assert.equal(
      sample(text, "imagehost_upload_bytes_total", 'source="upload"'),
      bytes,
    );
    assert.equal(sample(text, "imagehost_variants_total", 'result="made"'), 1);
    assert.equal(sample(text, "imagehost_variants_total", 'result="hit"'), 1);
    assert.equal(
      sample(
        text,
        "imagehost_http_requests_total",
        'route="/api/1/images/:id",method="GET",status="200"',
      ),
      3,
    );
    assert.equal(
      sample(
        text,
        "imagehost_http_requests_total",
        'route="/api/1/upload",method="POST",status="200"',
      ),
      3,
    );
    for (const id of ids) assert.ok(!text.includes(id), "no raw path");
    assert.ok(sample(text, "process_resident_memory_bytes")! > 10_000_000);
    for (
      const g of [
        "imagehost_db_pool_in_use",
        "imagehost_db_pool_waiting",
        "imagehost_capture_queue_length",
        "imagehost_keyless_held_bytes",
        "imagehost_event_loop_lag_seconds",
      ]
    ) {
      assert.equal(typeof sample(text, g), "number", g);
    }
    assert.match(
      text,
      /imagehost_http_request_duration_seconds_bucket\{le="0\.005",route="\/api\/1\/upload",method="POST"\}/,
    );
    // An unknown path is one label, whatever it was.
    await (await env.app.request("/no/such/thing/1")).arrayBuffer();
    await (await env.app.request("/no/such/thing/2")).arrayBuffer();
    const after = await (await env.app.request("/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).text();
    assert.equal(
      sample(
        after,
        "imagehost_http_requests_total",
        'route="unmatched",method="GET",status="404"',
      ),
      2,
    );
  } finally {
    await env.close();
  }
});

test("METRICS_LISTEN's host:port is read as Deno.serve takes it, IPv6 too", () => {
  assert.deepEqual(listenAddress("127.0.0.1:9464"), {
    hostname: "127.0.0.1",
    port: 9464,
  });
  assert.deepEqual(listenAddress("[::1]:9100"), {
    hostname: "::1",
    port: 9100,
  });
});

test("Debian's Prometheus scrapes a running service (METRICS_LISTEN and the token on the main port), its query API returns the number of uploads the test made, and promtool accepts the exposition", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-metrics-" });
  const key = await keyBeforeStart(
    { dataDir },
    "metrics@example.com",
    "correct horse battery",
  );
  const metricsPort = freePort();
  const svc = await startService({
    METRICS_TOKEN: TOKEN,
    METRICS_LISTEN: `127.0.0.1:${metricsPort}`,
  }, { dataDir });
  const promDir = await Deno.makeTempDir({ prefix: "imagehost-prom-" });
  const promPort = freePort();
  let prom: Deno.ChildProcess | undefined;
  try {
    const made = 5;
    for (let i = 0; i < made; i++) {
      const res = await fetch(`${svc.base}/api/1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{
          name: `p${i}.png`,
          bytes: await makeImage("png", { color: `#${i}0${i}0${i}0` }),
        }]),
      });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    // The same text on both: the token on the main port, none on METRICS_LISTEN.
    const own = await fetch(`${svc.base}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(own.status, 200);
    const text = await own.text();
    assert.equal(
      sample(text, "imagehost_uploads_total", 'source="upload"'),
      made,
    );
    const side = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(side.status, 200);
    assert.match(
      await side.text(),
      /imagehost_uploads_total\{source="upload"\} 5/,
    );
    const other = await fetch(`http://127.0.0.1:${metricsPort}/api/1/images`);
    assert.equal(other.status, 404);
    await other.body?.cancel();

    const check = new Deno.Command("promtool", {
      args: ["check", "metrics"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const w = check.stdin.getWriter();
    await w.write(new TextEncoder().encode(text));
    await w.close();
    const checked = await check.output();
    const said = new TextDecoder().decode(checked.stderr) +
      new TextDecoder().decode(checked.stdout);
    assert.equal(checked.code, 0, said);

    await Deno.writeTextFile(`${promDir}/token`, TOKEN);
    await Deno.writeTextFile(
      `${promDir}/prometheus.yml`,
      `global:
  scrape_interval: 1s
scrape_configs:
  - job_name: imagehost
    authorization:
      credentials_file: ${promDir}/token
    static_configs:
      - targets: ["127.0.0.1:${svc.port}"]
  - job_name: imagehost-side
    static_configs:
      - targets: ["127.0.0.1:${metricsPort}"]
`,
    );
    prom = new Deno.Command("prometheus", {
      args: [
        `--config.file=${promDir}/prometheus.yml`,
        `--storage.tsdb.path=${promDir}/data`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const query = async (q: string) => {
      const r = await fetch(
        `http://127.0.0.1:${promPort}/api/v1/query?query=${
          encodeURIComponent(q)
        }`,
      ).catch(() => undefined);
      if (!r?.ok) {
        await r?.body?.cancel();
        return undefined;
      }
      const body = await r.json();
      return body.data?.result as
        | { metric: Record<string, string>; value: [number, string] }[]
        | undefined;
    };
    let seen: { metric: Record<string, string>; value: [number, string] }[] =
      [];
    await waitUntilAsync(
      async () => {
        seen = await query('imagehost_uploads_total{source="upload"}') ?? [];
        return seen.length === 2;
      },
      30_000,
      250,
    );
    assert.equal(seen.length, 2, "both jobs scraped");
    for (const s of seen) assert.equal(Number(s.value[1]), made, s.metric.job);
    const up = await query("up");
    assert.deepEqual(up?.map((s) => s.value[1]), ["1", "1"]);
  } finally {
    try {
      prom?.kill("SIGTERM");
      await prom?.status;
    } catch { /* gone */ }
    await svc.close();
    await Deno.remove(promDir, { recursive: true }).catch(() => {});
  }
});
