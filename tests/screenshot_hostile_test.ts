import assert from "node:assert/strict";
import sharp from "sharp";
import { json, test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { countingListener, startFixture } from "./fixture_server.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import { findChromium } from "../services/screenshots/chromium_launch.ts";
import { fullPageClip } from "../services/screenshots/full_page.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { startBrowserService } from "./browser_service.ts";
import { freePort } from "./pg_cluster.ts";

const CHROMIUM = findChromium(Deno.env.get("TEST_CHROMIUM_PATH"));
if (!CHROMIUM) {
  throw new Error(
    "Chromium is required for these tests: apt-get install -y chromium chromium-headless-shell",
  );
}

/** A loopback server the guard denies: it must see no request at all. */
const denied = startFixture({ "/": "<h1>secret</h1>" });
const page = (body: string) =>
  `<!doctype html><html><body style="margin:0;background:#fff">${body}</body></html>`;
const fixture = startFixture({
  "/plain": page(`<h1 style="color:#000">plain</h1>`),
  "/refresh":
    `<!doctype html><meta http-equiv="refresh" content="0;url=/plain"><body>wait</body>`,
  "/refresh-late":
    `<!doctype html><meta http-equiv="refresh" content="1;url=/plain"><body>wait</body>`,
  "/refresh-denied":
    `<!doctype html><meta http-equiv="refresh" content="0;url=http://127.0.0.1:${denied.port}/"><body>wait</body>`,
  "/refresh-denied-late":
    `<!doctype html><meta http-equiv="refresh" content="1;url=http://127.0.0.1:${denied.port}/"><body>wait</body>`,
  "/alert": page(`<script>alert("hi")</script><p>after alert</p>`),
  "/confirm": page(
    `<script>confirm("ok?"); prompt("name?"); alert(1)</script><p>after</p>`,
  ),
  "/onload-alert": page(
    `<script>addEventListener("load", () => alert("loaded"))</script><p>x</p>`,
  ),
  "/beforeunload": page(
    `<script>addEventListener("beforeunload", (e) => { e.preventDefault(); e.returnValue = "stay"; })</script><p>x</p>`,
  ),
  "/popup": page(
    `<script>window.open("/never"); window.open("/plain", "_blank")</script><p>popup</p>`,
  ),
  "/wide": page(
    `<div style="width:200000px;height:300px;background:#08f"></div>`,
  ),
  "/huge": page(
    `<div style="width:20000px;height:20000px;background:linear-gradient(#f00,#00f)"></div>`,
  ),
  "/redirect": (req) =>
    new Response(null, {
      status: 302,
      headers: { location: new URL(req.url).searchParams.get("to")! },
    }),
  "/subresources": (req) => {
    const forms: string[] = JSON.parse(new URL(req.url).searchParams.get("f")!);
    const tags = forms.map((u) =>
      `<img src="${u}x.png"><iframe src="${u}"></iframe><link rel="stylesheet" href="${u}s.css">` +
      `<script src="${u}s.js"></script>`
    ).join("");
    const js = `for (const u of ${JSON.stringify(forms)}) {
      fetch(u).catch(() => {});
      try { new WebSocket(u.replace(/^http/i, "ws")); } catch {}
      navigator.sendBeacon?.(u, "x");
    }`;
    return new Response(page(`${tags}<script>${js}</script>`), {
      headers: { "content-type": "text/html" },
    });
  },
  "/sockets": (req) => {
    const port = new URL(req.url).searchParams.get("port");
    const js = `
      for (const u of ["ws://127.0.0.1:${port}/", "wss://127.0.0.1:${port}/"]) {
        try { new WebSocket(u); } catch {}
      }
      fetch("https://127.0.0.1:${port}/").catch(() => {});
      fetch("http://127.0.0.1:${port}/").catch(() => {});
      new EventSource("http://127.0.0.1:${port}/events");`;
    return new Response(
      page(
        `<img src="https://127.0.0.1:${port}/a.png"><iframe src="https://127.0.0.1:${port}/"></iframe><script>${js}</script>`,
      ),
      { headers: { "content-type": "text/html" } },
    );
  },
  "/never": (req) =>
    new Promise<Response>((resolve) =>
      req.signal.addEventListener("abort", () => resolve(new Response("gone")))
    ),
});
const ALLOW = `127.0.0.1:${fixture.port}`;

const TIMEOUT_MS = 4000;
/**
 * With TEST_BROWSER_SERVICE=1 the captures run on a browser service with its own guard
 * (`deno task browser`), as from Deno Deploy: the same corpus must hold against the guard
 * on the browser's side. CI runs this file both ways.
 */
const viaService = Deno.env.get("TEST_BROWSER_SERVICE") === "1";
const TOKEN = `hostile-${crypto.randomUUID()}`;
const service = viaService
  ? await startBrowserService({
    address: "127.0.0.1",
    port: freePort(),
    token: TOKEN,
    allow: `127.0.0.1:${fixture.port}`,
  })
  : undefined;
const shooter = new ChromiumScreenshotter({
  ...(service
    ? { wsEndpoint: service.endpoint, browserToken: TOKEN }
    : { executablePath: CHROMIUM }),
  concurrency: 2,
  queueMax: 16,
  recycleAfter: 1000,
  timeoutMs: TIMEOUT_MS,
  // As MAX_IMAGE_PIXELS would set it (lower than the default, to keep encoding quick).
  maxPixels: 20_000_000,
  allowRules: parseAllowList(ALLOW),
  log: memoryLogger(),
});
let env: TestEnv;
let key: string;

async function shot(body: Record<string, unknown>) {
  const t = performance.now();
  const r = await json(
    await env.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ share: false, ...body }),
    }),
  );
  return { ...r, ms: performance.now() - t };
}

function bytesOf(uri: string): Uint8Array {
  return Uint8Array.from(atob(uri.split(",")[1]), (c) => c.charCodeAt(0));
}

test("setup: an app with its own browser", async () => {
  env = await testEnv({
    screenshotter: shooter,
    env: { SCREENSHOT_ALLOW_PRIVATE: ALLOW },
  });
  key = (await userWithKey(env)).key;
  await shooter.start();
});

test("a meta refresh, soon or late, to an allowed page is followed and captured, not waited out", async () => {
  for (const path of ["/refresh", "/refresh-late"]) {
    const r = await shot({ url: `${fixture.origin}${path}` });
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    // The page it led to is what was captured, not the "wait" page.
    assert.equal(
      r.body.data.metadata.url,
      `${fixture.origin}/plain`,
      `${path}: ${JSON.stringify(r.body.data.metadata)}`,
    );
  }
});

test("a meta refresh to a denied address gets 210 or a capture of the page before it, never a 5xx, and the denied server sees nothing", async () => {
  for (const path of ["/refresh-denied", "/refresh-denied-late"]) {
    const r = await shot({ url: `${fixture.origin}${path}` });
    assert.ok(
      r.status === 200 || r.body.error?.code === 210,
      `${path}: ${r.status} ${JSON.stringify(r.body)}`,
    );
  }
  assert.equal(denied.requests.length, 0);
});

test("alert, confirm, prompt, an alert on load and beforeunload are dismissed: each page is captured", async () => {
  for (const path of ["/alert", "/confirm", "/onload-alert", "/beforeunload"]) {
    const r = await shot({ url: `${fixture.origin}${path}` });
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  }
});

test("popups (one of them never loading) do not hold up the capture of their opener", async () => {
  const r = await shot({ url: `${fixture.origin}/popup` });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // Well within the capture's own bound: a popup that never loads is not waited for.
  assert.ok(r.ms < TIMEOUT_MS, `${Math.round(r.ms)} ms`);
});

test("fullPage of a 200,000 px wide page is capped in width as in height: a 200 within the documented caps, never a 5xx", async () => {
  const r = await shot({ url: `${fixture.origin}/wide`, fullPage: true });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await sharp(bytesOf(r.body.data.display_url)).metadata();
  assert.ok(meta.width! <= 16_384, `width ${meta.width}`);
  // A page over the pixel budget in both directions is cut to the budget too.
  const h = await shot({
    url: `${fixture.origin}/huge`,
    fullPage: true,
    preset: "iphone-14-pro",
  });
  assert.equal(h.status, 200, JSON.stringify(h.body));
  const hm = await sharp(bytesOf(h.body.data.display_url)).metadata();
  assert.ok(hm.width! * hm.height! <= 20_000_000, `${hm.width}×${hm.height}`);
  assert.ok(hm.width! <= 16_384, `${hm.width}`);
});

test("the total time of a capture, queue wait included, stays within SCREENSHOT_TIMEOUT_MS and a small margin: six never-loading pages on two slots", async () => {
  const results = await Promise.all(
    Array.from({ length: 6 }, () => shot({ url: `${fixture.origin}/never` })),
  );
  for (const r of results) {
    assert.ok(
      r.body.error?.code === 230 || r.body.error?.code === 240,
      JSON.stringify(r.body),
    );
    // A bound, not a speed goal: without it, the sixth waited three timeouts in line.
    assert.ok(
      r.ms < TIMEOUT_MS + 1500,
      `answered after ${Math.round(r.ms)} ms`,
    );
  }
  // And the browser is still good for a normal capture.
  const ok = await shot({ url: `${fixture.origin}/plain` });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
});

/** Every way of writing the denied loopback server's address that a URL parser accepts. */
function deniedForms(port: number): string[] {
  return [
    `http://127.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://127.0.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0x7f000001:${port}/`,
    `http://0x7f.0.0.1:${port}/`,
    `http://0177.0.0.1:${port}/`,
    `http://017700000001:${port}/`,
    `http://127.0.0.1.:${port}/`,
    `http://%31%32%37.0.0.1:${port}/`,
    `http://①②⑦.0.0.1:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[::ffff:7f00:1]:${port}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${port}/`,
    `http://[::1]:${port}/`,
    `http://0.0.0.0:${port}/`,
    `http://0:${port}/`,
    `http://[::]:${port}/`,
    `http://user:pass@127.0.0.1:${port}/`,
    `http://127.0.0.1:${fixture.port}@127.0.0.1:${port}/`,
    `http://127.0.0.1:${port}#@127.0.0.1:${fixture.port}/`,
    `HTTP://127.0.0.1:${port}/`,
  ];
}

test("SSRF corpus: 22 spellings of a denied loopback address, asked directly, through a redirect and as subresources, never reach it", async () => {
  const forms = deniedForms(denied.port);
  const tally: Record<string, number> = {};
  for (const target of forms) {
    const direct = await shot({ url: target });
    tally[direct.status] = (tally[direct.status] ?? 0) + 1;
    assert.ok(
      direct.body.error?.code === 210 || direct.body.error?.code === 200,
      `${target}: ${JSON.stringify(direct.body)}`,
    );
  }
  // The same spellings from inside an allowed page: a redirect, and subresources of all kinds.
  const encoded = encodeURIComponent(JSON.stringify(forms));
  const r = await shot({ url: `${fixture.origin}/subresources?f=${encoded}` });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  for (const target of forms.slice(0, 6)) {
    const red = await shot({
      url: `${fixture.origin}/redirect?to=${encodeURIComponent(target)}`,
    });
    assert.ok(
      red.body.error?.code === 210 || red.body.error?.code === 220,
      `${target}: ${JSON.stringify(red.body)}`,
    );
  }
  console.log(
    `ssrf corpus: ${JSON.stringify({ forms: forms.length, direct: tally })}`,
  );
  assert.equal(denied.requests.length, 0, JSON.stringify(denied.requests));
});

test("a captured page's WebSockets, HTTPS (CONNECT) and plain requests to a denied port open no TCP connection to it at all", async () => {
  // A bare listener that counts accepted connections: nothing may even connect.
  const listener = countingListener();
  const port = listener.port;
  try {
    const r = await shot({ url: `${fixture.origin}/sockets?port=${port}` });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const direct = await shot({ url: `https://127.0.0.1:${port}/` });
    assert.equal(direct.body.error?.code, 210, JSON.stringify(direct.body));
    assert.equal(
      listener.accepted,
      0,
      "connections the denied port accepted",
    );
  } finally {
    await listener.close();
  }
});

test("teardown", async () => {
  await shooter.close();
  await service?.stop();
  await env.close();
  await fixture.close();
  await denied.close();
});

test("full-page clips: within the caps the whole page, else cut to 16384 CSS px each way, 16384 device px wide and the pixel budget", () => {
  const caps = { maxWidth: 16_384, maxHeight: 16_384, maxPixels: 100_000_000 };
  assert.equal(
    fullPageClip({ width: 1280, height: 5000 }, { width: 1280 }, caps),
    undefined,
  );
  assert.deepEqual(
    fullPageClip({ width: 1280, height: 50_000 }, { width: 1280 }, caps),
    { x: 0, y: 0, width: 1280, height: 16_384 },
  );
  assert.deepEqual(
    fullPageClip({ width: 200_000, height: 300 }, { width: 1280 }, caps),
    { x: 0, y: 0, width: 16_384, height: 300 },
  );
  const big = fullPageClip(
    { width: 20_000, height: 20_000 },
    { width: 393, deviceScaleFactor: 3 },
    caps,
  )!;
  assert.equal(big.width, 5461);
  assert.ok(big.width * 3 * big.height * 3 <= caps.maxPixels);
  assert.ok((big.width * 3) * (big.height + 1) * 3 > caps.maxPixels);
});
