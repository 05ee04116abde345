import assert from "node:assert/strict";
import sharp from "sharp";
import {
  json,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
  waitUntil,
} from "./helpers.ts";
import { type FixtureServer, startFixture } from "./fixture_server.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import { findChromium } from "../services/screenshots/chromium_launch.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { PRESETS } from "../schemas/presets.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { dataUriBytes, pixel, redPixels } from "./pixels.ts";

const CHROMIUM = findChromium(Deno.env.get("TEST_CHROMIUM_PATH"));
if (!CHROMIUM) {
  throw new Error(
    "Chromium is required for these tests: apt-get install -y chromium chromium-headless-shell",
  );
}

const REPORT =
  `<script>document.write('<img src="/report?w=' + innerWidth + '&h=' + innerHeight +
  '&dpr=' + devicePixelRatio + '&touch=' + navigator.maxTouchPoints + '&ua=' +
  encodeURIComponent(navigator.userAgent) + '&cookie=' + encodeURIComponent(document.cookie) + '">')</script>`;

const lazyPng = await sharp({
  create: { width: 100, height: 100, channels: 3, background: "#00ff00" },
}).png()
  .toBuffer();

let holdInFlight = 0;
let holdMax = 0;
function delay(ms: number, signal: AbortSignal) {
  return new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      r();
    });
  });
}

const denied = startFixture({ "/": "<h1>secret</h1>", "/x.png": "nope" });
const fixture: FixtureServer = startFixture({
  "/viewport":
    `<!doctype html><meta name="viewport" content="width=device-width"><body>${REPORT}</body>`,
  "/dark":
    `<!doctype html><style>html,body{margin:0;height:100%;background:#fff}
    @media (prefers-color-scheme: dark){html,body{background:#000}}</style><body></body>`,
  "/tall": `<!doctype html><style>body{margin:0}</style><body>
    <div style="height:2800px;background:#fff"></div>
    <img id="lazy" loading="lazy" src="/lazy.png" width="100" height="100" style="display:block">
    <div style="height:100px"></div></body>`,
  "/lazy.png": () =>
    new Response(lazyPng, { headers: { "content-type": "image/png" } }),
  "/ads": `<!doctype html><style>body{margin:0;background:#fff}</style><body>
    <div class="ad-banner" style="width:300px;height:250px;background:#f00"></div>
    <ins class="adsbygoogle" style="display:block;width:300px;height:100px;background:#f00"></ins>
    <p>Article text</p></body>`,
  "/cookie": `<!doctype html><style>body{margin:0;background:#fff}</style><body>
    <p>Content</p>
    <div id="onetrust-banner-sdk" style="position:fixed;bottom:0;left:0;right:0;height:120px;background:#f00">
      OneTrust <button id="onetrust-accept-btn-handler">Accept</button></div>
    <div class="notice-bar" style="position:fixed;top:0;left:0;right:0;height:80px;background:#00f;color:#fff">
      We use cookies to improve your experience. <button>Got it</button></div></body>`,
  "/redirect": () =>
    new Response(null, {
      status: 302,
      headers: { location: `${denied.origin}/` },
    }),
  "/sub":
    `<!doctype html><body><img src="${denied.origin}/x.png"><p>hi</p></body>`,
  // The ad tests name "localhost" as the ad host: same server, another host name.
  "/adrequest": () =>
    new Response(
      `<!doctype html><body><img src="http://localhost:${fixture.port}/adpixel.png">
      <img src="/ownpixel.png"></body>`,
      { headers: { "content-type": "text/html" } },
    ),
  "/tofile":
    `<!doctype html><style>html,body{margin:0;background:#fff}</style><body>
    <script>location.href = "file:///etc/passwd"</script></body>`,
  "/redirect-file": () =>
    new Response(null, {
      status: 302,
      headers: { location: "file:///etc/passwd" },
    }),
  "/setcookie": () =>
    new Response(`<body>${REPORT}</body>`, {
      headers: {
        "content-type": "text/html",
        "set-cookie": "session=leaky; Path=/; Max-Age=3600",
      },
    }),
  "/showcookie": `<body>${REPORT}</body>`,
  "/slow": async (req) => {
    await delay(8000, req.signal);
    return new Response("<body>late</body>", {
      headers: { "content-type": "text/html" },
    });
  },
  "/hold": async (req) => {
    holdInFlight++;
    holdMax = Math.max(holdMax, holdInFlight);
    await delay(700, req.signal);
    holdInFlight--;
    return new Response("<body>held</body>", {
      headers: { "content-type": "text/html" },
    });
  },
});
const deadPort = (() => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
})();
const ALLOW = `127.0.0.1:${fixture.port},127.0.0.1:${deadPort}`;

function shooter(
  over: Partial<ConstructorParameters<typeof ChromiumScreenshotter>[0]> = {},
) {
  return new ChromiumScreenshotter({
    executablePath: CHROMIUM,
    concurrency: 2,
    queueMax: 8,
    recycleAfter: 1000,
    timeoutMs: 15_000,
    allowRules: parseAllowList(ALLOW),
    log: memoryLogger(),
    ...over,
  });
}

// One browser for most tests, as in production.
const shared = shooter();
let env: TestEnv;
let key: string;

async function shot(body: Record<string, unknown>, e = env, k = key) {
  return await json(
    await e.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${k}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    }),
  );
}

function decodeDataUri(uri: string) {
  const m = uri.match(/^data:image\/(png|jpeg);base64,/)!;
  return { format: m[1], bytes: dataUriBytes(uri) };
}

test("setup: an app with the shared browser", async () => {
  env = await testEnv({
    screenshotter: shared,
    env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW },
  });
  key = (await userWithKey(env)).key;
  await shared.start();
  assert.ok(shared.pid);
});

test("every preset's viewport, pixel ratio, touch and user agent are what the page sees", async () => {
  for (const p of PRESETS) {
    fixture.reports.length = 0;
    const r = await shot({
      url: `${fixture.origin}/viewport`,
      preset: p.id,
      share: false,
    });
    assert.equal(r.status, 200, `${p.id}: ${JSON.stringify(r.body)}`);
    const seen = fixture.reports.at(-1)!;
    assert.equal(Number(seen.w), p.width, p.id);
    assert.equal(Number(seen.h), p.height, p.id);
    assert.equal(Number(seen.dpr), p.deviceScaleFactor, p.id);
    assert.equal(Number(seen.touch) > 0, p.hasTouch, p.id);
    assert.equal(seen.ua, p.userAgent, p.id);
    const { bytes } = decodeDataUri(r.body.data.display_url);
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [
      Math.round(p.width * p.deviceScaleFactor),
      Math.round(p.height * p.deviceScaleFactor),
    ], p.id);
  }
  const presets = await json(
    await env.app.request("/api/1/screenshot/presets", {
      headers: { authorization: `Bearer ${key}` },
    }),
  );
  assert.equal(presets.body.data.length, 15);
  assert.equal(
    presets.body.data.find((p: { default: boolean }) => p.default).id,
    "desktop-1080p",
  );
});

test("dark colour scheme changes the pixels, light keeps them white", async () => {
  const dark = await shot({
    url: `${fixture.origin}/dark`,
    colorScheme: "dark",
    share: false,
    preset: "laptop",
  });
  const light = await shot({
    url: `${fixture.origin}/dark`,
    colorScheme: "light",
    share: false,
    preset: "laptop",
  });
  assert.deepEqual(
    await pixel(decodeDataUri(dark.body.data.display_url).bytes, 10, 10),
    [0, 0, 0],
  );
  assert.deepEqual(
    await pixel(decodeDataUri(light.body.data.display_url).bytes, 10, 10),
    [255, 255, 255],
  );
});

test("zoom 2 halves innerWidth and keeps the preset's pixel size", async () => {
  fixture.reports.length = 0;
  const r = await shot({
    url: `${fixture.origin}/viewport`,
    zoom: 2,
    share: false,
  });
  assert.equal(Number(fixture.reports.at(-1)!.w), 960);
  const meta = await sharp(decodeDataUri(r.body.data.display_url).bytes)
    .metadata();
  assert.deepEqual([meta.width, meta.height], [1920, 1080]);
  fixture.reports.length = 0;
  await shot({
    url: `${fixture.origin}/viewport`,
    zoom: 0.5,
    share: false,
    preset: "desktop-720p",
  });
  assert.equal(Number(fixture.reports.at(-1)!.w), 2560);
});

test("fullPage captures the whole height and the lazy-loaded image is in it", async () => {
  const before = fixture.requests.filter((r) => r.path === "/lazy.png").length;
  const r = await shot({
    url: `${fixture.origin}/tall`,
    fullPage: true,
    share: false,
    preset: "desktop-720p",
  });
  assert.equal(r.status, 200);
  const { bytes } = decodeDataUri(r.body.data.display_url);
  const meta = await sharp(bytes).metadata();
  assert.equal(meta.height, 3000);
  assert.ok(
    fixture.requests.filter((x) => x.path === "/lazy.png").length > before,
  );
  assert.deepEqual(await pixel(bytes, 50, 2850), [0, 255, 0]);
  // Without fullPage only the viewport is captured.
  const vp = await shot({
    url: `${fixture.origin}/tall`,
    share: false,
    preset: "desktop-720p",
  });
  assert.equal(
    (await sharp(decodeDataUri(vp.body.data.display_url).bytes).metadata())
      .height,
    720,
  );
});

test("noAds removes the red ad boxes from the pixels", async () => {
  const plain = await shot({
    url: `${fixture.origin}/ads`,
    share: false,
    preset: "laptop",
  });
  const clean = await shot({
    url: `${fixture.origin}/ads`,
    share: false,
    preset: "laptop",
    noAds: true,
  });
  assert.ok(
    await redPixels(decodeDataUri(plain.body.data.display_url).bytes) >
      300 * 250 * 0.9,
  );
  assert.equal(
    await redPixels(decodeDataUri(clean.body.data.display_url).bytes),
    0,
  );
});

test("noCookie removes the OneTrust banner and a generic fixed cookie bar with its Got it button", async () => {
  const plain = await shot({
    url: `${fixture.origin}/cookie`,
    share: false,
    preset: "laptop",
  });
  const clean = await shot({
    url: `${fixture.origin}/cookie`,
    share: false,
    preset: "laptop",
    noCookie: true,
  });
  const a = decodeDataUri(plain.body.data.display_url).bytes;
  const b = decodeDataUri(clean.body.data.display_url).bytes;
  assert.ok(await redPixels(a) > 1000);
  assert.deepEqual(await pixel(a, 1300, 40), [0, 0, 255]);
  assert.equal(await redPixels(b), 0);
  assert.deepEqual(await pixel(b, 1300, 40), [255, 255, 255]);
});

test("share true stores an image record and serves it; share false returns a data URI and stores nothing", async () => {
  const rows = () =>
    env.deps.database.db.selectFrom("images").selectAll().execute();
  const n0 = (await rows()).length;
  const inline = await shot({
    url: `${fixture.origin}/dark`,
    share: false,
    format: "jpeg",
    preset: "iphone-se",
  });
  assert.equal(inline.body.data.shared, false);
  assert.equal(inline.body.data.id, undefined);
  const d = decodeDataUri(inline.body.data.display_url);
  assert.equal(d.format, "jpeg");
  assert.equal((await sharp(d.bytes).metadata()).format, "jpeg");
  assert.equal((await rows()).length, n0);

  const shared = await shot({
    url: `${fixture.origin}/dark`,
    preset: "iphone-se",
    colorScheme: "dark",
  });
  const s = shared.body.data;
  assert.equal(s.shared, true);
  assert.match(s.url, new RegExp(`^http://localhost:8080/${s.id}\\.png$`));
  assert.equal(s.url_viewer, `http://localhost:8080/i/${s.id}`);
  assert.equal(s.display_url, s.url);
  const served = await env.app.request(new URL(s.url).pathname);
  assert.equal(served.status, 200);
  const png = new Uint8Array(await served.arrayBuffer());
  assert.deepEqual([
    (await sharp(png).metadata()).width,
    (await sharp(png).metadata()).height,
  ], [750, 1334]);
  assert.equal((await rows()).length, n0 + 1);
});

test("URLs that are not absolute http(s) get 200", async () => {
  for (
    const url of [
      "ftp://example.com/",
      "not a url",
      "javascript:alert(1)",
      "file:///etc/passwd",
      "data:text/html,hi",
      "chrome://settings",
    ]
  ) {
    const r = await shot({ url });
    assert.deepEqual([r.status, r.body.error.code], [400, 200], url);
  }
});

test("a loopback port not on the allow list gets 210 and its server sees no request", async () => {
  const r = await shot({ url: `${denied.origin}/` });
  assert.deepEqual([r.status, r.body.error.code], [403, 210]);
  const l = await shot({ url: `http://localhost:${denied.port}/` });
  assert.equal(l.body.error.code, 210);
  assert.equal(denied.requests.length, 0);
});

test("a redirect from an allowed page to a denied port is blocked and the denied server saw zero requests", async () => {
  const r = await shot({ url: `${fixture.origin}/redirect` });
  assert.deepEqual([r.status, r.body.error.code], [403, 210]);
  // A subresource pointing at the denied port is dropped; the page itself still renders.
  const sub = await shot({ url: `${fixture.origin}/sub`, share: false });
  assert.equal(sub.status, 200);
  assert.equal(denied.requests.length, 0);
});

test("websockets, frames and fetches to a denied port never reach it", async () => {
  const r = await shot({ url: `${fixture.origin}/ws`, share: false });
  assert.equal(r.status, 200);
  await new Promise((res) => setTimeout(res, 200));
  assert.equal(denied.requests.length, 0);
});

test("noAds blocks requests to ad hosts inside the browser: the ad server sees none", async () => {
  const s = shooter({ adHosts: ["localhost"] });
  const e = await testEnv({
    screenshotter: s,
    env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW },
  });
  try {
    const k = (await userWithKey(e)).key;
    const adHits = () =>
      fixture.requests.filter((r) => r.path === "/adpixel.png").length;
    const ownHits = () =>
      fixture.requests.filter((r) => r.path === "/ownpixel.png").length;
    const before = [adHits(), ownHits()];
    const plain = await shot(
      { url: `${fixture.origin}/adrequest`, share: false },
      e,
      k,
    );
    assert.equal(plain.status, 200);
    assert.deepEqual([adHits(), ownHits()], [before[0] + 1, before[1] + 1]);
    const clean = await shot(
      { url: `${fixture.origin}/adrequest`, share: false, noAds: true },
      e,
      k,
    );
    assert.equal(clean.status, 200);
    // The page's own image still loads; the ad host's never left the browser.
    assert.deepEqual([adHits(), ownHits()], [before[0] + 1, before[1] + 2]);
  } finally {
    await e.close();
    await s.close();
  }
});

test("a page that redirects or scripts its way to a file: URL never shows the file", async () => {
  const r = await shot({ url: `${fixture.origin}/redirect-file` });
  assert.deepEqual([r.status, r.body.error.code], [502, 220]);
  const scripted = await shot({
    url: `${fixture.origin}/tofile`,
    share: false,
    preset: "laptop",
  });
  assert.equal(scripted.status, 200);
  // Still the blank white page: /etc/passwd's text would leave dark pixels.
  const { data } = await sharp(
    decodeDataUri(scripted.body.data.display_url).bytes,
  ).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  assert.ok(data.every((v) => v > 240));
});

test("each capture's browser context is closed after it answers; the one spare left has never loaded anything", async () => {
  const browser = await shared.browser();
  const r = await shot({ url: `${fixture.origin}/dark`, share: false });
  assert.equal(r.status, 200);
  // Chromium's default context and the spare made for the next capture.
  await waitUntil(() => browser.browserContexts().length === 2);
  const [, spare] = browser.browserContexts();
  const urls = (await spare.pages()).map((p) => p.url());
  assert.deepEqual(urls, ["about:blank"]);
  // The next capture takes it: still one spare afterwards, a new one.
  assert.equal(
    (await shot({ url: `${fixture.origin}/dark`, share: false })).status,
    200,
  );
  await waitUntil(() => browser.browserContexts().length === 2);
  assert.ok(!browser.browserContexts().includes(spare), "a spare serves once");
});

test("the browser is recycled after SCREENSHOT_RECYCLE_AFTER captures", async () => {
  const s = shooter({ recycleAfter: 2 });
  try {
    const opts = {
      url: `${fixture.origin}/dark`,
      viewport: {
        width: 200,
        height: 100,
        deviceScaleFactor: 1,
        isMobile: false,
        hasTouch: false,
      },
      format: "png" as const,
      fullPage: false,
      noAds: false,
      noCookie: false,
      colorScheme: "default" as const,
      zoom: 1,
    };
    // A failure names its cause (the navigation's error), not only its code: one run in
    // a loaded full suite (session 23) failed the capture after the recycle with 220.
    const capture = () =>
      s.capture(opts).catch((e) => {
        throw new Error(`${e.message}: ${JSON.stringify(e.details ?? [])}`);
      });
    await capture();
    const first = s.pid;
    await capture();
    await capture();
    assert.ok(first && s.pid && s.pid !== first);
  } finally {
    await s.close();
  }
});

test("a refused connection gets 220", async () => {
  const r = await shot({ url: `http://127.0.0.1:${deadPort}/` });
  assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
    502,
    220,
    "Page could not be loaded",
  ]);
});

test("cookies set in one capture are not seen by the next (fresh context each time)", async () => {
  fixture.reports.length = 0;
  await shot({ url: `${fixture.origin}/setcookie`, share: false });
  await shot({ url: `${fixture.origin}/showcookie`, share: false });
  assert.equal(fixture.reports.at(-1)!.cookie, "");
});

test("two captures run at once with SCREENSHOT_CONCURRENCY 2", async () => {
  holdMax = 0;
  const [a, b] = await Promise.all([
    shot({ url: `${fixture.origin}/hold`, share: false }),
    shot({ url: `${fixture.origin}/hold?2`, share: false }),
  ]);
  assert.equal(a.status, 200);
  assert.equal(b.status, 200);
  assert.equal(holdMax, 2);
});

test("after the browser is killed the next capture starts a new one and works", async () => {
  const pid = shared.pid!;
  Deno.kill(pid, "SIGKILL");
  await waitUntil(() => shared.pid !== pid, 2500);
  const r = await shot({
    url: `${fixture.origin}/dark`,
    share: false,
    preset: "laptop",
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.ok(shared.pid && shared.pid !== pid);
});

test("a page slower than SCREENSHOT_TIMEOUT_MS gets 230", async () => {
  const s = shooter({ timeoutMs: 1500 });
  const e = await testEnv({
    screenshotter: s,
    env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW },
  });
  try {
    const k = (await userWithKey(e)).key;
    const r = await shot({ url: `${fixture.origin}/slow`, share: false }, e, k);
    assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
      504,
      230,
      "Screenshot timed out",
    ]);
  } finally {
    await s.close();
    await e.close();
  }
});

test("a full queue gets 240 with Retry-After, and so does a server without a browser", async () => {
  const s = shooter({ concurrency: 1, queueMax: 0, timeoutMs: 3000 });
  const e = await testEnv({
    screenshotter: s,
    env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW },
  });
  try {
    const k = (await userWithKey(e)).key;
    const held = fixture.requests.filter((r) => r.path === "/hold").length;
    const slow = shot({ url: `${fixture.origin}/hold`, share: false }, e, k);
    // The only slot is taken once its page is being fetched.
    await waitUntil(
      () => fixture.requests.filter((r) => r.path === "/hold").length > held,
      10_000,
    );
    const res = await e.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${k}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ url: `${fixture.origin}/dark`, share: false }),
    });
    assert.equal(res.status, 503);
    assert.ok(Number(res.headers.get("retry-after")) > 0);
    assert.equal((await res.json()).error.code, 240);
    assert.equal((await slow).status, 200);
    // Right after an answer its slot may still be closing the context; a caller who comes
    // at once waits those milliseconds instead of getting 240.
    const next = await shot(
      { url: `${fixture.origin}/dark`, share: false },
      e,
      k,
    );
    assert.equal(next.status, 200);
  } finally {
    await s.close();
    await e.close();
  }
  const none = await testEnv({ env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW } });
  try {
    const k = (await userWithKey(none)).key;
    const res = await none.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${k}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ url: `${fixture.origin}/dark` }),
    });
    assert.equal(res.status, 503);
    assert.ok(res.headers.get("retry-after"));
    assert.equal((await res.json()).error.code, 240);
  } finally {
    await none.close();
  }
});

test("BROWSER_WS_ENDPOINT: captures through a remote Chromium over its DevTools WebSocket", async () => {
  const dir = await Deno.makeTempDir();
  const proc = new Deno.Command(CHROMIUM!, {
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0",
      `--user-data-dir=${dir}`,
      "about:blank",
    ],
    stderr: "piped",
    stdout: "null",
  }).spawn();
  try {
    const reader = proc.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    let ws = "";
    while (!ws) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      ws = text.match(/DevTools listening on (ws:\/\/\S+)/)?.[1] ?? "";
    }
    reader.releaseLock();
    proc.stderr.cancel().catch(() => {});
    assert.ok(ws, "remote Chromium printed its endpoint");
    const remote = shooter({ executablePath: undefined, wsEndpoint: ws });
    try {
      const r = await remote.capture({
        url: `${fixture.origin}/dark`,
        viewport: {
          width: 400,
          height: 300,
          deviceScaleFactor: 1,
          isMobile: false,
          hasTouch: false,
        },
        format: "png",
        fullPage: false,
        noAds: false,
        noCookie: false,
        colorScheme: "dark",
        zoom: 1,
      });
      assert.deepEqual([r.width, r.height], [400, 300]);
      assert.deepEqual(await pixel(r.bytes, 5, 5), [0, 0, 0]);
    } finally {
      await remote.close();
    }
  } finally {
    proc.kill("SIGKILL");
    await proc.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

test("teardown: closing the pool leaves no Chromium process behind", async () => {
  const pid = shared.pid!;
  await shared.close();
  await env.close();
  await fixture.close();
  await denied.close();
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
  // Gone, or at worst a zombie already reaped by the time we look again.
  assert.ok(stat === "" || !/\) Z /.test(stat), stat);
});
