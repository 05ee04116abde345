/**
 * The service as Deno Deploy runs it: no native code, no subprocess, no disk writes
 * (`deno task start:sandbox`), on PostgreSQL, an S3 bucket (s3rver) and a browser service
 * with its own guard on "another host" (a network namespace this test makes). The whole
 * product, walked through once.
 */
import assert from "node:assert/strict";
import { centrePixel, redPixels } from "./pixels.ts";
import sharp from "sharp";
import { test, waitUntilAsync } from "./helpers.ts";
import { startPgCluster } from "./pg_cluster.ts";
import { startS3 } from "./s3_server.ts";
import { startService } from "./service_process.ts";
import { SANDBOX_ENV, taskFlags } from "./start_task.ts";
import { startBrowserService } from "./browser_service.ts";
import { linkedNamespace } from "./netns.ts";
import { countingListener, startFixture } from "./fixture_server.ts";
import { formWith, makeImage } from "./fixtures.ts";

const TOKEN = `sandbox-${crypto.randomUUID()}`;
const GREEN =
  `<!doctype html><style>html,body{margin:0;height:100%;background:#00ff00}</style><body></body>`;

/** The flags of `deno task start:sandbox`, read from deno.json so the two cannot differ. */
function sandboxFlags(): string[] {
  const flags = taskFlags("start:sandbox");
  for (
    const f of ["--deny-ffi", "--deny-run", "--deny-write", "--allow-net"]
  ) assert.ok(flags.includes(f), f);
  assert.ok(!flags.some((f) => /^--allow-(all|ffi|run|write)|^-A$/.test(f)));
  return flags;
}

/** Green within a lossy encoder's rounding. */
function assertGreen(px: number[]) {
  assert.ok(px[0] < 8 && px[1] > 247 && px[2] < 8, `not green: ${px}`);
}

/** Ports the process listens on (ss), by its pid. */
async function listeningPorts(pid: number): Promise<number[]> {
  const out = await new Deno.Command("ss", {
    args: ["-Hltnp"],
    stdout: "piped",
  })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n")
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => Number(l.split(/\s+/)[3].split(":").pop()));
}

const METRICS_TOKEN = "sandbox-metrics-token-0123";

test("under Deno Deploy's limits (no FFI, no subprocess, no disk writes) the service does its whole job on PostgreSQL, S3 and a browser service: accounts, every upload body, variants, viewer, list, delete, expiry, screenshots, the site, and the operator's quota, takedown and metrics", async () => {
  const flags = sandboxFlags();
  const pg = await startPgCluster();
  const s3 = await startS3();
  const net = await linkedNamespace();
  // Pages for the browser, on this side of the link; the browser service may reach them
  // (its own FETCH_ALLOW_PRIVATE), nothing else may. A second port it must never reach.
  const pages = startFixture({
    "/": GREEN,
    // What noAds and noCookie must take out of the pixels: red ad boxes, a red consent bar.
    "/ads":
      `<!doctype html><style>html,body{margin:0;background:#00ff00}</style><body>
      <div class="ad-banner" style="width:300px;height:250px;background:#f00"></div>
      <ins class="adsbygoogle" style="display:block;width:300px;height:100px;background:#f00"></ins>
      <p id="late">Article</p></body>`,
    "/cookie":
      `<!doctype html><style>html,body{margin:0;background:#00ff00}</style><body>
      <p>Content</p>
      <div id="onetrust-banner-sdk" style="position:fixed;bottom:0;left:0;right:0;height:120px;background:#f00">
        OneTrust <button id="onetrust-accept-btn-handler">Accept</button></div></body>`,
  }, net.hostIp);
  const denied = countingListener(net.hostIp);
  // An image for URL imports, on loopback: the instance fetches it itself.
  const png = await makeImage("png", { width: 200, height: 100 });
  const remote = await makeImage("png", { width: 300, height: 100 });
  const imports = startFixture({
    "/a.png": () =>
      new Response(new Uint8Array(remote), {
        headers: { "content-type": "image/png" },
      }),
  });
  let browser: Awaited<ReturnType<typeof startBrowserService>> | undefined;
  let svc: Awaited<ReturnType<typeof startService>> | undefined;
  try {
    browser = await startBrowserService({
      address: net.nsIp,
      port: 9222,
      token: TOKEN,
      allow: `${net.hostIp}:${pages.port}`,
      netns: net.ns,
    });
    svc = await startService({
      ...SANDBOX_ENV,
      DATABASE_URL: pg.url,
      ...s3.env,
      SCREENSHOTS: "on",
      BROWSER_WS_ENDPOINT: browser.endpoint,
      BROWSER_TOKEN: TOKEN,
      METRICS_TOKEN,
      // The instance checks a target before asking the browser; the browser service's
      // guard checks every request the page makes. `denied` passes the first check here
      // so that the second is the one that refuses it.
      FETCH_ALLOW_PRIVATE:
        `127.0.0.1:${imports.port},${net.hostIp}:${pages.port},${net.hostIp}:${denied.port}`,
      // A DATA_DIR it could not write anyway: nothing may be put there.
      DATA_DIR: "/nonexistent-imagehost-data",
    }, { permissions: flags });
    const base = svc.base;
    const form = (data: Record<string, string>, cookie = "") => ({
      method: "POST",
      redirect: "manual" as const,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: base,
        ...(cookie ? { cookie } : {}),
      },
      body: new URLSearchParams(data).toString(),
    });

    // Sign-up, then a key from the account page.
    const signup = await fetch(
      `${base}/signup`,
      form({ email: "deploy@example.com", password: "a long enough password" }),
    );
    await signup.body?.cancel();
    assert.equal(signup.status, 303);
    const cookie = signup.headers.get("set-cookie")!.split(";")[0];
    const account = await (await fetch(`${base}/account`, {
      headers: { cookie },
    })).text();
    const csrf = account.match(/name="_csrf" value="([^"]+)"/)![1];
    const made = await fetch(
      `${base}/account/keys`,
      form({ _csrf: csrf, label: "deploy" }, cookie),
    );
    await made.body?.cancel();
    const carried = made.headers.get("set-cookie")!.split(";")[0];
    const shown = await (await fetch(`${base}/account`, {
      headers: { cookie: `${cookie}; ${carried}` },
    })).text();
    const key = shown.match(/value="(ihk_[A-Za-z0-9_-]{43})"/)![1];
    const auth = { authorization: `Bearer ${key}` };
    const api = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${base}${path}`, {
        ...init,
        headers: { ...auth, ...init.headers },
      });
      return { status: res.status, body: await res.json() };
    };

    // An image that expires in a minute, first, so its end comes during the walk.
    const expiringAt = Date.now() + 60_000;
    const fdExp = formWith([{ name: "e.gif", bytes: await makeImage("gif") }]);
    const expiring = await api("/api/1/upload?expiration=60", {
      method: "POST",
      body: fdExp,
    });
    assert.equal(expiring.status, 200, JSON.stringify(expiring.body));
    assert.equal(expiring.body.data.expiration, 60);

    // Every body type: multipart, urlencoded base64, JSON data URI, a URL import.
    const jpeg = await makeImage("jpeg", { width: 1500, height: 900 });
    const fd = formWith([{ name: "big.jpg", bytes: jpeg }]);
    const multipart = await api("/api/1/upload", { method: "POST", body: fd });
    assert.equal(multipart.status, 200, JSON.stringify(multipart.body));
    const b64 = btoa(String.fromCharCode(...png));
    const urlencoded = await api("/api/1/upload", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ image: b64, name: "enc" }).toString(),
    });
    assert.equal(urlencoded.status, 200, JSON.stringify(urlencoded.body));
    const json = await api("/api/1/upload", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        images: [
          `data:image/webp;base64,${
            btoa(String.fromCharCode(...await makeImage("webp")))
          }`,
        ],
      }),
    });
    assert.equal(json.status, 200, JSON.stringify(json.body));
    const imported = await api(
      `/api/1/upload?source=${encodeURIComponent(`${imports.origin}/a.png`)}`,
      { method: "POST" },
    );
    assert.equal(imported.status, 200, JSON.stringify(imported.body));
    assert.deepEqual(imports.requests.map((r) => r.path), ["/a.png"]);

    // Originals and variants, from the bucket through the service.
    const rec = multipart.body.data;
    for (
      const [url, width] of [
        [rec.url, 1500],
        [rec.medium.url, 1024],
        [rec.thumb.url, 320],
      ] as const
    ) {
      const got = await fetch(url);
      assert.equal(got.status, 200, url);
      const meta = await sharp(new Uint8Array(await got.arrayBuffer()))
        .metadata();
      assert.equal(meta.width, width, url);
    }
    const same = await fetch(urlencoded.body.data.url);
    assert.deepEqual(new Uint8Array(await same.arrayBuffer()), png);
    // A transform URL, made by the WebAssembly engine and kept in the bucket.
    const variant = await fetch(`${rec.url}?w=640&format=auto`, {
      headers: { accept: "image/webp,*/*" },
    });
    assert.equal(variant.status, 200);
    assert.equal(variant.headers.get("content-type"), "image/webp");
    assert.equal(variant.headers.get("vary"), "Accept");
    const variantMeta = await sharp(
      new Uint8Array(await variant.arrayBuffer()),
    ).metadata();
    assert.deepEqual([variantMeta.format, variantMeta.width], ["webp", 640]);
    // Stored after the answer (VariantMaker): in the bucket within moments.
    const inBucket: string[] = [];
    const expected = [
      `${rec.id}.v640x0iq75.webp`,
      // The thumbnail and medium, made at their first request above, kept there too.
      ...[rec.url, rec.medium.url, rec.thumb.url].map((v) =>
        new URL(v).pathname.slice(1)
      ),
    ];
    await waitUntilAsync(async () => {
      inBucket.length = 0;
      for await (const o of s3.store.list()) inBucket.push(o.key);
      return expected.every((k) => inBucket.includes(k));
    }, 10_000);
    for (const key of expected) {
      assert.ok(inBucket.includes(key), `${key} in ${inBucket.join(", ")}`);
    }

    // Viewer and list.
    const viewer = await fetch(rec.url_viewer);
    const viewerHtml = await viewer.text();
    assert.equal(viewer.status, 200);
    assert.ok(viewerHtml.includes(rec.url), "the viewer shows the image");
    const list = await api("/api/1/images");
    assert.equal(list.status, 200);
    assert.equal(list.body.data.images.length, 5);

    // Screenshots through the browser service: shared, inline, and one it must refuse.
    const shared = await api("/api/1/screenshot", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `${pages.origin}/` }),
    });
    assert.equal(shared.status, 200, JSON.stringify(shared.body));
    const sharedBytes = new Uint8Array(
      await (await fetch(shared.body.data.url)).arrayBuffer(),
    );
    assertGreen(await centrePixel(sharedBytes));
    // Asynchronous (issue #50): the job queue runs on the same PostgreSQL under these
    // flags, and its capture is the same green page.
    const queued = await api("/api/1/screenshot", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        url: `${pages.origin}/`,
        viewport: { width: 640, height: 400 },
        async: true,
      }),
    });
    assert.equal(queued.status, 202, JSON.stringify(queued.body));
    let job = queued.body.data.job;
    const jobEnd = Date.now() + 60_000;
    while (job.status === "queued" || job.status === "running") {
      assert.ok(Date.now() < jobEnd, JSON.stringify(job));
      await new Promise((r) => setTimeout(r, 200));
      job = (await api(`/api/1/screenshot/jobs/${job.id}`)).body.data;
    }
    assert.equal(job.status, "done", JSON.stringify(job));
    assertGreen(
      await centrePixel(
        new Uint8Array(await (await fetch(job.result.url)).arrayBuffer()),
      ),
    );
    const inline = await fetch(`${base}/api/1/screenshot`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        url: `${pages.origin}/`,
        share: false,
        format: "webp",
        response: "binary",
      }),
    });
    assert.equal(inline.status, 200);
    assert.equal(inline.headers.get("content-type"), "image/webp");
    assertGreen(await centrePixel(new Uint8Array(await inline.arrayBuffer())));
    const refused = await api("/api/1/screenshot", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `http://${net.hostIp}:${denied.port}/` }),
    });
    assert.equal(refused.body.error?.code, 210, JSON.stringify(refused.body));
    assert.equal(denied.accepted, 0);

    // Every blocking option through the browser service (issue #49: under the WebAssembly
    // engine the filter builds hung, and noAds got no answer at all). Each takes out what
    // it names, and one capture asks for every option at once.
    const capture = async (body: Record<string, unknown>) => {
      const res = await fetch(`${base}/api/1/screenshot`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ share: false, response: "binary", ...body }),
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.equal(res.status, 200, new TextDecoder().decode(bytes));
      return bytes;
    };
    for (const [option, path] of [["noAds", "/ads"], ["noCookie", "/cookie"]]) {
      const url = `${pages.origin}${path}`;
      assert.ok(await redPixels(await capture({ url })) > 10_000, path);
      assert.equal(
        await redPixels(await capture({ url, [option]: true })),
        0,
        option,
      );
    }
    const everything = await capture({
      url: `${pages.origin}/ads`,
      noAds: true,
      noCookie: true,
      blockTrackers: true,
      fullPage: true,
      format: "jpeg",
      quality: 80,
      waitUntil: "networkidle2",
      waitForSelector: "#late",
      delay: 100,
      hideSelectors: ["#late"],
      css: "body { margin: 0 }",
      js: "document.body.dataset.seen = '1'",
      colorScheme: "dark",
      reducedMotion: true,
      viewport: { width: 800, height: 600, deviceScaleFactor: 1 },
    });
    assert.deepEqual(
      [
        (await sharp(everything).metadata()).format,
        await redPixels(everything),
      ],
      ["jpeg", 0],
    );

    // Delete: the record and its files are gone at once.
    const del = await api(`/api/1/images/${json.body.data.id}`, {
      method: "DELETE",
    });
    assert.equal(del.status, 200);
    const gone = await fetch(json.body.data.url);
    await gone.body?.cancel();
    assert.equal(gone.status, 404);

    // The operator (issue #47) under the same limits. The first account is the admin.
    const stats = await api("/api/1/admin/stats");
    assert.equal(stats.status, 200, JSON.stringify(stats.body));
    // A quota on its own account: the next upload is refused before anything is stored.
    const me = await api("/api/1/account");
    const capped = await api(`/api/1/admin/users/${me.body.data.id}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ quota_images: me.body.data.usage.images }),
    });
    assert.equal(capped.status, 200, JSON.stringify(capped.body));
    const over = await api("/api/1/upload", {
      method: "POST",
      body: formWith([{
        name: "over.png",
        bytes: await makeImage("png", { color: "#abcdef" }),
      }]),
    });
    assert.equal(over.body.error?.code, 180, JSON.stringify(over.body));
    await api(`/api/1/admin/users/${me.body.data.id}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ quota_images: null }),
    });
    // A takedown: 451 at every URL form, its objects gone from the bucket, its bytes
    // refused when sent again.
    const down = await api(`/api/1/admin/images/${rec.id}/takedown`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "sandbox walk" }),
    });
    assert.equal(down.status, 200, JSON.stringify(down.body));
    for (
      const url of [
        rec.url,
        rec.thumb.url,
        rec.medium.url,
        `${rec.url}?w=640`,
        rec.url_viewer,
      ]
    ) {
      const r = await fetch(url);
      await r.body?.cancel();
      assert.equal(r.status, 451, url);
    }
    const left: string[] = [];
    for await (const o of s3.store.list()) {
      if (o.key.startsWith(rec.id)) left.push(o.key);
    }
    assert.deepEqual(left, []);
    const again = await api("/api/1/upload", {
      method: "POST",
      body: formWith([{ name: "again.jpg", bytes: jpeg }]),
    });
    assert.equal(again.body.error?.code, 182, JSON.stringify(again.body));
    // Metrics behind their token: the captures and uploads of this walk.
    const metrics = await (await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })).text();
    // Shared, asynchronous, inline, four with noAds or noCookie and without, and the one
    // with everything.
    assert.match(metrics, /^imagehost_captures_total\{result="ok"\} 8$/m);
    assert.match(metrics, /^imagehost_uploads_total\{source="upload"\} 5$/m);
    assert.match(
      metrics,
      /^imagehost_uploads_total\{source="screenshot"\} 2$/m,
    );

    // The site's pages.
    for (
      const path of ["/", "/docs", "/login", "/images", "/account", "/admin"]
    ) {
      const page = await fetch(`${base}${path}`, { headers: { cookie } });
      await page.body?.cancel();
      assert.equal(page.status, 200, path);
    }

    // The minute is over: the expiring image answers 404, its viewer too.
    await new Promise((r) =>
      setTimeout(r, Math.max(0, expiringAt + 1500 - Date.now()))
    );
    for (const url of [expiring.body.data.url, expiring.body.data.url_viewer]) {
      const r = await fetch(url);
      await r.body?.cancel();
      assert.equal(r.status, 404, url);
    }

    // It ran as the sandbox lets it: the WebAssembly engine, uploads in memory, no port
    // but its own (the guards are the browser service's), no refused write or spawn.
    const log = svc.log();
    assert.match(log, /"msg":"image engine","engine":"wasm"/);
    assert.deepEqual(await listeningPorts(svc.proc.pid), [svc.port]);
    assert.doesNotMatch(
      log,
      /NotCapable|PermissionDenied|Requires (write|run)/,
    );
    assert.ok(
      (await browser.health()).guards >= 1,
      "the captures' guards were the service's",
    );
  } finally {
    await svc?.close();
    await browser?.stop();
    await pages.close();
    await denied.close();
    await imports.close();
    await net.destroy();
    await s3.close();
    await pg.destroy();
  }
});
