import assert from "node:assert/strict";
import sharp from "sharp";
import { json, test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { countingListener, startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { requestHash } from "../services/screenshots/shot_cache.ts";
import { wantsBytes } from "../routes/screenshot.ts";
import { dataUriBytes, pixel } from "./pixels.ts";

/**
 * The request options ScreenshotOne users expect, each checked by the captured pixels or by
 * what the fixture server saw. One browser and one app serve every test in this file.
 */
const page = (body: string, head = "") =>
  `<!doctype html><html><head><title>Fixture page</title>${head}<style>html,body{margin:0;background:#fff}</style></head><body>${body}</body></html>`;

const slowPng = await sharp({
  create: { width: 200, height: 200, channels: 3, background: "#00ff00" },
}).png().toBuffer();

/** A second origin: third-party requests go here. */
const other = startFixture({
  "/pixel.png": () =>
    new Response(slowPng, { headers: { "content-type": "image/png" } }),
});
const fixture = startFixture({
  "/box": page(
    `<div style="height:50px"></div><div id="box" style="margin-left:30px;width:120px;height:80px;background:#f00"></div><div id="gone" style="display:none">x</div>`,
  ),
  "/quads": page(
    `<div style="display:grid;grid-template-columns:100px 100px;width:200px">
      <div style="height:100px;background:#f00"></div><div style="height:100px;background:#0f0"></div>
      <div style="height:100px;background:#00f"></div><div style="height:100px;background:#000"></div></div>`,
  ),
  "/later": page(
    `<script>setTimeout(() => document.documentElement.style.background = "#00f", 700)</script>`,
  ),
  "/appear": page(
    `<script>setTimeout(() => { const d = document.createElement("div"); d.id = "late";
      d.style.cssText = "width:90px;height:60px;background:#0f0"; document.body.append(d) }, 500)</script>`,
  ),
  "/fetch-then": page(
    `<script>addEventListener("load", () => fetch("/slow-data").then(r => r.text())
      .then(() => document.documentElement.style.background = "#0f0"))</script>`,
  ),
  "/slow-data": async () => {
    await new Promise((r) => setTimeout(r, 700));
    return new Response("ok");
  },
  "/slow-image": page(`<img src="/slow.png" width="200" height="200">`),
  "/slow.png": async () => {
    await new Promise((r) => setTimeout(r, 1500));
    return new Response(slowPng, { headers: { "content-type": "image/png" } });
  },
  "/motion": page(
    "",
    `<style>@media (prefers-reduced-motion: reduce){html,body{background:#0f0 !important}}</style>`,
  ),
  "/decoys": page(
    `<div id="ad-hoc-results" style="height:100px;background:#f00"></div><div class="chat" style="height:100px;background:#00f"></div>`,
  ),
  "/third-party": () =>
    // Another host (cookies ignore ports): localhost, served by the other fixture.
    new Response(page(`<img src="http://localhost:${other.port}/pixel.png">`), {
      headers: { "content-type": "text/html" },
    }),
  "/tracked": () =>
    new Response(
      page(
        `<img src="http://localhost:${fixture.port}/track.gif"><img src="/own.png">`,
      ),
      { headers: { "content-type": "text/html" } },
    ),
  "/hop": () =>
    new Response(null, { status: 302, headers: { location: "/box" } }),
  "/missing": () =>
    new Response(page("<h1>gone</h1>"), {
      status: 404,
      headers: { "content-type": "text/html" },
    }),
  "/glyphs": (req) =>
    new Response(
      page(
        `<span id="g" style="font-size:64px;line-height:1;color:#000">${
          new URL(req.url).searchParams.get("t")
        }</span>`,
      ),
      { headers: { "content-type": "text/html; charset=utf-8" } },
    ),
  // Two million CSS pixels tall: some 1,800 A4 pages.
  "/tall": page(
    `<div style="height:2000000px;background:repeating-linear-gradient(#fff 0 40px,#000 40px 80px)"></div>`,
  ),
  "/noisy": page(
    `<div style="width:1200px;height:700px;background:linear-gradient(45deg,#f00,#0f0,#00f,#ff0)"></div>`,
  ),
});
const ALLOW =
  `127.0.0.1:${fixture.port},localhost:${other.port},localhost:${fixture.port}`;
const shooter = testScreenshotter(ALLOW, { trackerHosts: ["localhost"] });
let env: TestEnv;
let key: string;

test("setup", async () => {
  env = await testEnv({
    screenshotter: shooter,
    env: { FETCH_ALLOW_PRIVATE: ALLOW, SCREENSHOT_TIMEOUT_MS: "15000" },
  });
  key = (await userWithKey(env)).key;
});

// deno-lint-ignore no-explicit-any
async function shot(body: Record<string, unknown>, headers = {}): Promise<any> {
  return await json(
    await env.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        ...headers,
      },
      body: JSON.stringify({ share: false, ...body }),
    }),
  );
}

/** The decoded image of an inline result. */
function image(r: { body: { data: { display_url: string } } }): Uint8Array {
  return dataUriBytes(r.body.data.display_url);
}

test("viewport: a size and pixel ratio of the caller's own give an image of exactly that many device pixels; preset and viewport together are 160", async () => {
  const r = await shot({
    url: `${fixture.origin}/box`,
    viewport: { width: 500, height: 300, deviceScaleFactor: 2 },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await sharp(image(r)).metadata();
  assert.deepEqual([meta.width, meta.height], [1000, 600]);
  // The box sits at (30, 50) CSS px: at twice the pixels, red from (60, 100).
  assert.deepEqual(await pixel(image(r), 70, 110), [255, 0, 0]);
  assert.deepEqual(await pixel(image(r), 50, 110), [255, 255, 255]);
  const both = await shot({
    url: `${fixture.origin}/box`,
    preset: "iphone-14",
    viewport: { width: 500, height: 300 },
  });
  assert.deepEqual([both.status, both.body.error.code], [400, 160]);
  for (
    const bad of [{ width: 50, height: 300 }, {
      width: 500,
      height: 300,
      deviceScaleFactor: 4,
    }]
  ) {
    const r2 = await shot({ url: `${fixture.origin}/box`, viewport: bad });
    assert.deepEqual([r2.status, r2.body.error.code], [400, 160]);
  }
});

test("selector captures exactly that element; none matching is 222 (404), a hidden one 222, a malformed selector 160", async () => {
  const r = await shot({ url: `${fixture.origin}/box`, selector: "#box" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await sharp(image(r)).metadata();
  assert.deepEqual([meta.width, meta.height], [120, 80]);
  assert.deepEqual(await pixel(image(r), 60, 40), [255, 0, 0]);
  const none = await shot({ url: `${fixture.origin}/box`, selector: "#nope" });
  assert.deepEqual(
    [none.status, none.body.error.code, none.body.error.details[0].path],
    [404, 222, "selector"],
  );
  const hidden = await shot({
    url: `${fixture.origin}/box`,
    selector: "#gone",
  });
  assert.deepEqual([hidden.status, hidden.body.error.code], [404, 222]);
  const bad = await shot({ url: `${fixture.origin}/box`, selector: "##(" });
  assert.deepEqual([bad.status, bad.body.error.code], [400, 160]);
  const both = await shot({
    url: `${fixture.origin}/box`,
    selector: "#box",
    clip: { x: 0, y: 0, width: 10, height: 10 },
  });
  assert.deepEqual([both.status, both.body.error.code], [400, 160]);
});

test("a malformed waitForSelector or hideSelectors entry is 160 naming it before the page is loaded (it waited the whole timeout for 222, or hid nothing)", async () => {
  for (
    const [path, body] of [
      ["waitForSelector", { waitForSelector: "div[" }],
      ["hideSelectors", { hideSelectors: ["#box", "p:::x"] }],
      ["selector", { selector: "##(" }],
    ] as const
  ) {
    const before = fixture.requests.length;
    const r = await shot({ url: `${fixture.origin}/box`, ...body });
    assert.deepEqual(
      [r.status, r.body.error.code, r.body.error.details[0].path],
      [400, 160, path],
      JSON.stringify(r.body),
    );
    assert.match(r.body.error.details[0].message, /not a valid CSS selector/);
    assert.equal(fixture.requests.length, before, `${path}: nothing loaded`);
  }
  // Valid ones still work: the box is hidden, the page captured.
  const ok = await shot({
    url: `${fixture.origin}/box`,
    hideSelectors: ["#box", "p:not(.x) > span"],
  });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
});

test("css whose @import names a denied address: the import is dropped (the denied server sees nothing) and the rest of the css applies", async () => {
  // A port on no allow list.
  const denied = startFixture({ "/evil.css": "html { background: #f00 }" });
  try {
    const r = await shot({
      url: `${fixture.origin}/box`,
      css: `@import url("${denied.origin}/evil.css");
html, body { background: #00f !important }`,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(await pixel(image(r), 5, 5), [0, 0, 255]);
    assert.deepEqual(denied.requests, []);
  } finally {
    await denied.close();
  }
});

test("a capture over SCREENSHOT_MAX_PIXELS device pixels is 160 before anything is launched (it timed out holding a slot); a full page is cut to the budget", async () => {
  const before = fixture.requests.length;
  const huge = await shot({
    url: `${fixture.origin}/box`,
    viewport: { width: 3840, height: 10_000, deviceScaleFactor: 3 },
  });
  assert.deepEqual(
    [huge.status, huge.body.error.code, huge.body.error.details[0].path],
    [400, 160, "viewport"],
  );
  assert.match(huge.body.error.details[0].message, /SCREENSHOT_MAX_PIXELS/);
  const clip = await shot({
    url: `${fixture.origin}/box`,
    viewport: { width: 1000, height: 800, deviceScaleFactor: 3 },
    clip: { x: 0, y: 0, width: 3000, height: 5000 },
  });
  assert.deepEqual(
    [clip.status, clip.body.error.code, clip.body.error.details[0].path],
    [400, 160, "clip"],
  );
  assert.equal(fixture.requests.length, before, "nothing was loaded");
  // Just under the budget: 3840 × 10000 at ratio 1 (38.4 M) is captured.
  const big = await shot({
    url: `${fixture.origin}/box`,
    viewport: { width: 3840, height: 10_000, deviceScaleFactor: 1 },
    format: "jpeg",
  });
  assert.equal(big.status, 200, JSON.stringify(big.body));
});

test("clip captures that rectangle of the page", async () => {
  const r = await shot({
    url: `${fixture.origin}/quads`,
    clip: { x: 100, y: 100, width: 100, height: 100 },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await sharp(image(r)).metadata();
  assert.deepEqual([meta.width, meta.height], [100, 100]);
  assert.deepEqual(await pixel(image(r), 50, 50), [0, 0, 0]); // the black quadrant
  const green = await shot({
    url: `${fixture.origin}/quads`,
    clip: { x: 110, y: 10, width: 20, height: 20 },
  });
  assert.deepEqual(await pixel(image(green), 10, 10), [0, 255, 0]);
});

test("delay waits after load: a change the page makes at 700 ms is in the picture", async () => {
  const r = await shot({ url: `${fixture.origin}/later`, delay: 1500 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(await pixel(image(r), 10, 10), [0, 0, 255]);
  const tooLong = await shot({ url: `${fixture.origin}/later`, delay: 60_000 });
  assert.deepEqual([tooLong.status, tooLong.body.error.code], [400, 160]);
});

test("waitForSelector waits for an element the page adds later; one that never comes is 222 within the request's timeout", async () => {
  const r = await shot({
    url: `${fixture.origin}/appear`,
    waitForSelector: "#late",
    selector: "#late",
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await sharp(image(r)).metadata();
  assert.deepEqual([meta.width, meta.height], [90, 60]);
  const t0 = Date.now();
  const never = await shot({
    url: `${fixture.origin}/box`,
    waitForSelector: "#never",
    timeout: 2000,
  });
  assert.deepEqual(
    [never.status, never.body.error.code, never.body.error.details[0].path],
    [404, 222, "waitForSelector"],
  );
  assert.ok(Date.now() - t0 < 8000, `${Date.now() - t0} ms`);
});

test("waitUntil: networkidle0 waits for the page's own late requests; domcontentloaded does not wait for a slow image that load waits for", async () => {
  const idle = await shot({
    url: `${fixture.origin}/fetch-then`,
    waitUntil: "networkidle0",
  });
  assert.equal(idle.status, 200, JSON.stringify(idle.body));
  assert.deepEqual(await pixel(image(idle), 300, 300), [0, 255, 0]);
  const load = await shot({ url: `${fixture.origin}/slow-image` });
  assert.deepEqual(await pixel(image(load), 100, 100), [0, 255, 0]);
  const dcl = await shot({
    url: `${fixture.origin}/slow-image`,
    waitUntil: "domcontentloaded",
  });
  assert.equal(dcl.status, 200, JSON.stringify(dcl.body));
  assert.notDeepEqual(await pixel(image(dcl), 100, 100), [0, 255, 0]);
});

test("timeout: a request may shorten its deadline, not pass the server's (160)", async () => {
  const over = await shot({ url: `${fixture.origin}/box`, timeout: 20_000 });
  assert.deepEqual(
    [over.status, over.body.error.code, over.body.error.details[0].path],
    [400, 160, "timeout"],
  );
  const t0 = Date.now();
  const short = await shot({
    url: `${fixture.origin}/fetch-then`,
    waitUntil: "networkidle0",
    delay: 5000,
    timeout: 1500,
  });
  assert.deepEqual([short.status, short.body.error.code], [504, 230]);
  assert.ok(Date.now() - t0 < 6000, `${Date.now() - t0} ms`);
});

test("reducedMotion, hideSelectors, css and js change the page before the capture; a script that throws is 160", async () => {
  const motion = await shot({
    url: `${fixture.origin}/motion`,
    reducedMotion: true,
  });
  assert.deepEqual(await pixel(image(motion), 5, 5), [0, 255, 0]);
  const plain = await shot({ url: `${fixture.origin}/motion` });
  assert.deepEqual(await pixel(image(plain), 5, 5), [255, 255, 255]);
  const hidden = await shot({
    url: `${fixture.origin}/decoys`,
    hideSelectors: [".chat"],
  });
  assert.deepEqual(await pixel(image(hidden), 5, 50), [255, 0, 0]);
  assert.deepEqual(await pixel(image(hidden), 5, 150), [255, 255, 255]);
  const styled = await shot({
    url: `${fixture.origin}/box`,
    css: "html, body { background: #00f !important }",
  });
  assert.deepEqual(await pixel(image(styled), 5, 5), [0, 0, 255]);
  const scripted = await shot({
    url: `${fixture.origin}/box`,
    js:
      "await new Promise(r => setTimeout(r, 50)); document.documentElement.style.background = '#0f0';",
  });
  assert.equal(scripted.status, 200, JSON.stringify(scripted.body));
  // Below the body's own (white) box, where the root's background shows.
  assert.deepEqual(await pixel(image(scripted), 5, 500), [0, 255, 0]);
  const js2 = await shot({
    url: `${fixture.origin}/box`,
    js: "document.documentElement.style.background = '#0f0'",
  });
  assert.deepEqual(await pixel(image(js2), 5, 500), [0, 255, 0]);
  const thrown = await shot({
    url: `${fixture.origin}/box`,
    js: "throw new Error('nope')",
  });
  assert.deepEqual(
    [thrown.status, thrown.body.error.code, thrown.body.error.details[0].path],
    [400, 160, "js"],
  );
});

test("a js that navigates within the guard's rules is followed and the new page captured; one that navigates to a denied address is 210 and it sees no connection", async () => {
  for (
    const js of [
      `location.href = "/quads"`,
      `document.body.insertAdjacentHTML("beforeend", '<a id="go" href="/quads">go</a>'); document.getElementById("go").click()`,
      `setTimeout(() => location.assign("/quads"), 20)`,
    ]
  ) {
    const r = await shot({ url: `${fixture.origin}/box`, js });
    assert.equal(r.status, 200, `${js}: ${JSON.stringify(r.body)}`);
    assert.deepEqual(await pixel(image(r), 50, 50), [255, 0, 0], js);
    assert.deepEqual(await pixel(image(r), 150, 150), [0, 0, 0], js);
  }
  const denied = countingListener();
  try {
    const r = await shot({
      url: `${fixture.origin}/box`,
      js: `location.href = "http://127.0.0.1:${denied.port}/"`,
    });
    assert.equal(r.body.error?.code, 210, JSON.stringify(r.body));
    assert.equal(denied.accepted, 0);
  } finally {
    await denied.close();
  }
});

test("a userAgent with a line break or another control character is 160 naming it, and no page is loaded (it was a 502 quoting Chromium's protocol error)", async () => {
  for (
    const userAgent of [
      "Bot/1.0\r\nX-Evil: 1",
      "Bot\n",
      "Bot\u0000",
      "Bot\u007f",
    ]
  ) {
    const before = fixture.requests.length;
    const r = await shot({ url: `${fixture.origin}/box`, userAgent });
    assert.deepEqual(
      [r.status, r.body.error.code, r.body.error.details[0].path],
      [400, 160, "userAgent"],
      JSON.stringify(r.body),
    );
    assert.equal(fixture.requests.length, before);
  }
});

test("userAgent, headers and cookies reach the target's origin; headers and cookies never reach a third party", async () => {
  const mark0 = fixture.requests.length;
  await shot({
    url: `${fixture.origin}/third-party`,
    cookies: [{ name: "only", value: "cookie" }],
  });
  const c0 = fixture.requests.slice(mark0).find((q) =>
    q.path === "/third-party"
  )!;
  assert.match(c0.headers["cookie"] ?? "", /only=cookie/, "cookies alone");
  const before = fixture.requests.length;
  const beforeOther = other.requests.length;
  const r = await shot({
    url: `${fixture.origin}/third-party`,
    userAgent: "ScreenshotTester/1.0",
    headers: { "X-Custom": "secret-1", "Accept-Language": "de-DE" },
    cookies: [{ name: "session", value: "abc123" }],
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const own = fixture.requests.slice(before).find((q) =>
    q.path === "/third-party"
  )!;
  assert.equal(own.headers["user-agent"], "ScreenshotTester/1.0");
  assert.equal(own.headers["x-custom"], "secret-1");
  assert.equal(own.headers["accept-language"], "de-DE");
  assert.match(own.headers["cookie"] ?? "", /session=abc123/);
  const third = other.requests.slice(beforeOther).find((q) =>
    q.path === "/pixel.png"
  )!;
  assert.ok(third, "the third-party image was loaded");
  assert.equal(third.headers["x-custom"], undefined);
  assert.equal(third.headers["cookie"], undefined);
  for (
    const headers of [{ Host: "evil" }, { Cookie: "a=b" }, {
      "Proxy-Authorization": "x",
    }, { "X-Bad": "a\r\nb" }]
  ) {
    const bad = await shot({ url: `${fixture.origin}/box`, headers });
    assert.deepEqual([bad.status, bad.body.error.code], [400, 160]);
  }
});

test("formats: jpeg quality changes the size, webp is a WebP, pdf comes back inline as a PDF (share true is 160), quality on png is 160", async () => {
  const q = async (quality: number) =>
    image(
      await shot({ url: `${fixture.origin}/noisy`, format: "jpeg", quality }),
    ).length;
  const low = await q(10), high = await q(95);
  assert.ok(low * 2 < high, `q10 ${low} B, q95 ${high} B`);
  const webp = await shot({ url: `${fixture.origin}/box`, format: "webp" });
  assert.equal(webp.status, 200, JSON.stringify(webp.body));
  assert.match(webp.body.data.display_url, /^data:image\/webp;base64,/);
  assert.equal((await sharp(image(webp)).metadata()).format, "webp");
  const pdf = await shot({ url: `${fixture.origin}/box`, format: "pdf" });
  assert.equal(pdf.status, 200, JSON.stringify(pdf.body));
  assert.match(pdf.body.data.display_url, /^data:application\/pdf;base64,/);
  assert.equal(new TextDecoder().decode(image(pdf).slice(0, 5)), "%PDF-");
  assert.deepEqual([pdf.body.data.width, pdf.body.data.height], [794, 1123]);
  const sharedPdf = await shot({
    url: `${fixture.origin}/box`,
    format: "pdf",
    share: true,
  });
  assert.deepEqual([sharedPdf.status, sharedPdf.body.error.code], [400, 160]);
  const pngQ = await shot({ url: `${fixture.origin}/box`, quality: 50 });
  assert.deepEqual([pngQ.status, pngQ.body.error.code], [400, 160]);
  // A shared webp is stored and served like any image.
  const stored = await shot({
    url: `${fixture.origin}/box`,
    format: "webp",
    share: true,
  });
  assert.equal(stored.status, 200, JSON.stringify(stored.body));
  const served = await env.app.request(new URL(stored.body.data.url).pathname);
  assert.equal(served.headers.get("content-type"), "image/webp");
  await served.body?.cancel();
});

test("a full-page PDF prints at most 50 pages (SCREENSHOT_PDF_MAX_PAGES): a page two million pixels tall does not hold its slot for all of them", async () => {
  const r = await shot({
    url: `${fixture.origin}/tall`,
    format: "pdf",
    fullPage: true,
    share: false,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const text = new TextDecoder("latin1").decode(image(r));
  const pages = text.match(/\/Type\s*\/Page(?![s\w])/g)?.length;
  assert.equal(pages, 50);
  // Without fullPage, one page as before.
  const one = await shot({ url: `${fixture.origin}/tall`, format: "pdf" });
  const oneText = new TextDecoder("latin1").decode(image(one));
  assert.equal(oneText.match(/\/Type\s*\/Page(?![s\w])/g)?.length, 1);
});

test("share false with response binary, or Accept image/* or application/pdf, answers the raw bytes; errors stay JSON", async () => {
  const raw = await env.app.request("/api/1/screenshot", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({
      url: `${fixture.origin}/box`,
      share: false,
      response: "binary",
    }),
  });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get("content-type"), "image/png");
  assert.equal(raw.headers.get("x-screenshot-width"), "1920");
  const bytes = new Uint8Array(await raw.arrayBuffer());
  assert.equal((await sharp(bytes).metadata()).width, 1920);
  const byAccept = await env.app.request("/api/1/screenshot", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      accept: "application/pdf",
    },
    body: JSON.stringify({
      url: `${fixture.origin}/box`,
      share: false,
      format: "pdf",
    }),
  });
  assert.equal(byAccept.headers.get("content-type"), "application/pdf");
  assert.equal(
    new TextDecoder().decode(
      new Uint8Array(await byAccept.arrayBuffer()).slice(0, 5),
    ),
    "%PDF-",
  );
  const err = await env.app.request("/api/1/screenshot", {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      accept: "image/*",
    },
    body: JSON.stringify({ url: "http://127.0.0.1:1/", share: false }),
  });
  assert.equal(err.status, 403);
  assert.equal((await err.json()).error.code, 210);
  assert.equal(wantsBytes("image/png, application/json"), true);
  assert.equal(wantsBytes("application/json, image/*"), false);
  assert.equal(wantsBytes(undefined), false);
});

test("metadata: the page's title, final URL after redirects, HTTP status and the image's size in bytes", async () => {
  const r = await shot({ url: `${fixture.origin}/hop` });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.data.metadata, {
    title: "Fixture page",
    url: `${fixture.origin}/box`,
    status: 200,
    width: 1920,
    height: 1080,
    bytes: image(r).length,
  });
  assert.equal(r.body.data.cached, false);
  const missing = await shot({ url: `${fixture.origin}/missing` });
  assert.equal(missing.body.data.metadata.status, 404);
});

test("blockTrackers drops requests to tracker hosts and nothing else", async () => {
  const before = fixture.requests.length;
  const r = await shot({
    url: `${fixture.origin}/tracked`,
    blockTrackers: true,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const seen = fixture.requests.slice(before).map((q) => q.path);
  assert.ok(seen.includes("/own.png"), seen.join());
  assert.ok(!seen.includes("/track.gif"), seen.join());
  const mark = fixture.requests.length;
  await shot({ url: `${fixture.origin}/tracked` });
  assert.ok(
    fixture.requests.slice(mark).some((q) => q.path === "/track.gif"),
    "without the flag the tracker loads",
  );
});

test("cache: the same request by the same user within its TTL reuses the result without a capture (inline and shared), other options or users or an expired TTL capture again", async () => {
  const count = () =>
    fixture.requests.filter((q) => q.path === "/quads").length;
  const req = { url: `${fixture.origin}/quads`, cache: 60 };
  const n0 = count();
  const first = await shot(req);
  assert.equal(first.body.data.cached, false);
  const again = await shot({ cache: 60, url: `${fixture.origin}/quads` });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.data.cached, true);
  assert.deepEqual(image(again), image(first));
  assert.equal(count(), n0 + 1, "one capture for two answers");
  await shot({ ...req, colorScheme: "dark" });
  assert.equal(count(), n0 + 2, "another option is another capture");
  const other = await userWithKey(env);
  await json(
    await env.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${other.key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ ...req, share: false }),
    }),
  );
  assert.equal(count(), n0 + 3, "another user is another capture");
  env.clock.advance(61_000);
  const stale = await shot(req);
  assert.equal(stale.body.data.cached, false);
  assert.equal(count(), n0 + 4);
  // Shared: the same image comes back while it lives; once deleted, a new capture.
  const s1 = await shot({ ...req, share: true });
  const s2 = await shot({ ...req, share: true });
  assert.deepEqual([s2.body.data.cached, s2.body.data.id], [
    true,
    s1.body.data.id,
  ]);
  await env.app.request(`/api/1/images/${s1.body.data.id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${key}` },
  });
  const s3 = await shot({ ...req, share: true });
  assert.equal(s3.body.data.cached, false);
  assert.equal(
    requestHash({ b: 1, a: [1, { d: 2, c: 3 }], cache: 5 }),
    requestHash({
      a: [1, { c: 3, d: 2 }],
      b: 1,
      cache: 99,
      response: "binary",
    }),
  );
});

test("fonts: CJK renders as real glyphs (not the boxes of a missing font) and emoji in colour", async () => {
  const glyphs = async (text: string) => {
    const r = await shot({
      url: `${fixture.origin}/glyphs?t=${encodeURIComponent(text)}`,
      selector: "#g",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return await sharp(image(r)).removeAlpha().raw().toBuffer({
      resolveWithObject: true,
    });
  };
  // Unassigned code points: whatever the fonts, these draw the missing-glyph box.
  const boxes = await glyphs("\u0378\u0379\u0378\u0379");
  for (const text of ["漢字検索", "ひらがな", "한국어글"]) {
    const cjk = await glyphs(text);
    const sameSize = cjk.info.width === boxes.info.width &&
      cjk.info.height === boxes.info.height;
    let differ = 0;
    if (sameSize) {
      for (let i = 0; i < cjk.data.length; i++) {
        if (Math.abs(cjk.data[i] - boxes.data[i]) > 64) differ++;
      }
    }
    assert.ok(
      !sameSize || differ > cjk.data.length * 0.05,
      `${text} renders like missing-glyph boxes (${differ} bytes differ)`,
    );
    let ink = 0;
    for (let i = 0; i < cjk.data.length; i += 3) if (cjk.data[i] < 128) ink++;
    assert.ok(ink > 300, `${text}: ${ink} dark pixels`);
  }
  const emoji = await glyphs("😀");
  let yellow = 0;
  for (let i = 0; i < emoji.data.length; i += 3) {
    const [r, g, b] = [emoji.data[i], emoji.data[i + 1], emoji.data[i + 2]];
    if (r > 200 && g > 150 && b < 120) yellow++;
  }
  assert.ok(yellow > 500, `😀 has ${yellow} yellow pixels`);
});

test("teardown", async () => {
  await env.close();
  await shooter.close();
  await fixture.close();
  await other.close();
});
