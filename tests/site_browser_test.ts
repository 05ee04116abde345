/**
 * The website in a real browser, as people use it: sign up, keys, the home uploader, the
 * screenshot page, My images, the viewer, the docs; then every page checked by axe-core
 * (signed in and out, desktop and phone, light and dark), for width at 390 and 320 px,
 * and for CSP violations. PNGs of every page go to a folder (docs/site/ with
 * UPDATE_SITE_SHOTS=1, the copies the README links; a temp folder otherwise).
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import sharp from "sharp";
import { test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { requireChromium, testScreenshotter } from "./browser_service.ts";
import { CHROMIUM_FLAGS } from "../services/screenshots/chromium_launch.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { createSession } from "../services/accounts/accounts.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const AXE = await Deno.readTextFile(
  join(
    dirname(createRequire(import.meta.url).resolve("axe-core/package.json")),
    "axe.min.js",
  ),
);
const SHOTS = Deno.env.get("UPDATE_SITE_SHOTS") === "1"
  ? new URL("../docs/site/", import.meta.url).pathname
  : await Deno.makeTempDir({ prefix: "imagehost-site-shots-" });
await Deno.mkdir(SHOTS, { recursive: true });

// A page to capture and an image to import, both on loopback, allowed for this test only.
const pngBytes = await makeImage("png", {
  width: 300,
  height: 200,
  color: "#c0392b",
});
const fixture = startFixture({
  "/page":
    `<!doctype html><html><head><title>Fixture page</title></head><body style="margin:0;background:#2e86de"><h1 style="color:#fff">Hello from the fixture</h1></body></html>`,
  // A name with a space: the import box takes one address per line, spaces and all.
  "/my%20photo.png": () =>
    new Response(pngBytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": "image/png" },
    }),
  "/photo.png": () =>
    new Response(pngBytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": "image/png" },
    }),
});
const ALLOW = `127.0.0.1:${fixture.port}`;
const shooter = testScreenshotter(ALLOW);

/** The methods of the resumable uploads' requests, as they come. */
const tusSeen: string[] = [];
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  (req) => {
    if (new URL(req.url).pathname.startsWith("/api/1/tus")) {
      tusSeen.push(req.method);
    }
    return env.app.fetch(req);
  },
);
const base = `http://127.0.0.1:${server.addr.port}`;
const env: TestEnv = await testEnv({
  screenshotter: shooter,
  env: {
    BASE_URL: base,
    FETCH_ALLOW_PRIVATE: ALLOW,
    SCREENSHOT_TIMEOUT_MS: "15000",
    // The signed-out home page is the guest uploader (its flow and the axe pass).
    GUEST_UPLOADS: "on",
    // Files over 1 MB go resumable from the home page (the test's photo is ~1.5 MB).
    RESUMABLE_FROM_MB: "1",
  },
});

/**
 * The same server under a name that is not BASE_URL's, as a newcomer reaches it on a LAN:
 * plain http on a name Chromium maps to 127.0.0.1 itself (no DNS is asked).
 */
const ALIAS_HOST = "images-lan.test";
const alias = `http://${ALIAS_HOST}:${server.addr.port}`;

const browser: Browser = await puppeteer.launch({
  executablePath: requireChromium(),
  headless: true,
  args: [
    ...CHROMIUM_FLAGS,
    "--no-sandbox",
    `--host-resolver-rules=MAP ${ALIAS_HOST} 127.0.0.1`,
  ],
});
/** CSP violations and page errors seen by any page, by URL. */
const problems: string[] = [];
/** Requests any page made to anywhere but our server (the docs must make none). */
const outside: string[] = [];

/** A fresh browser context (its own cookies) with a page watched for problems. */
async function newPage(
  opts: { width?: number; height?: number; dark?: boolean } = {},
): Promise<Page> {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({
    width: opts.width ?? 1366,
    height: opts.height ?? 900,
  });
  await page.emulateMediaFeatures([{
    name: "prefers-color-scheme",
    value: opts.dark ? "dark" : "light",
  }]);
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) {
      problems.push(`${page.url()}: ${m.text()}`);
    }
  });
  page.on("pageerror", (e) => problems.push(`${page.url()}: ${e}`));
  await page.setRequestInterception(true);
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (
      u.origin === base || u.origin === fixture.origin || u.origin === alias ||
      u.protocol === "data:" || u.protocol === "blob:"
    ) {
      return r.continue();
    }
    outside.push(r.url());
    return r.abort();
  });
  return page;
}

/** Fills and sends the sign-up or log-in form at `url`; resolves once it has answered. */
async function sendAuthForm(page: Page, url: string, email: string) {
  await page.goto(url);
  await page.type("#email", email);
  await page.type("#password", "a long enough password");
  await Promise.all([
    page.waitForNavigation(),
    page.click("button[type=submit]"),
  ]);
}

/** Signs up through the form; the page is then on /account. */
async function signUp(page: Page, email: string) {
  await sendAuthForm(page, `${base}/signup`, email);
  // Sign-up lands on the uploader; the key flows go on from the account page.
  assert.equal(new URL(page.url()).pathname, "/");
  assert.ok(await page.$("[data-image-uploader]"), "the uploader is shown");
  await page.goto(`${base}/account`);
}

/** The signed-in user's images through the API as the page sees them (session). */
async function listed(page: Page, q = ""): Promise<Any> {
  return await page.evaluate(async (q: string) => {
    const token = document.querySelector<HTMLMetaElement>(
      'meta[name="csrf-token"]',
    )!.content;
    const r = await fetch(`/api/1/images${q}`, {
      headers: { "X-CSRF-Token": token },
    });
    return (await r.json()).data;
  }, q);
}

/** Drops files on the element (in the widget's shadow root when `shadow`). */
async function dropFiles(
  page: Page,
  files: { name: string; type: string; b64: string }[],
) {
  await page.evaluate((files) => {
    const host = document.querySelector("[data-image-uploader]")!;
    const drop = host.shadowRoot!.querySelector(".drop")!;
    const dt = new DataTransfer();
    for (const f of files) {
      const bytes = Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], f.name, { type: f.type }));
    }
    drop.dispatchEvent(
      new DragEvent("drop", {
        dataTransfer: dt,
        bubbles: true,
        cancelable: true,
      }),
    );
  }, files);
}

const b64 = (b: Uint8Array) =>
  btoa(Array.from(b, (c) => String.fromCharCode(c)).join(""));

/** Pages the accessibility pass visits, found by the flows below. */
const visits: { name: string; path: string; signedIn: boolean }[] = [];
let owner: Page;

test("over plain http on a host name that is not BASE_URL's, the sign-up, log-out and log-in forms work (they were a bare 403: no-referrer made Chromium post Origin: null)", async () => {
  const page = await newPage();
  try {
    const answers: number[] = [];
    page.on("response", (r) => {
      if (r.request().method() === "POST") answers.push(r.status());
    });
    await sendAuthForm(page, `${alias}/signup`, "lan@example.com");
    assert.equal(page.url(), `${alias}/`, `answers: ${answers}`);
    assert.ok(await page.$('form[action="/logout"]'), "signed in");
    await Promise.all([
      page.waitForNavigation(),
      page.click('form[action="/logout"] button'),
    ]);
    await sendAuthForm(page, `${alias}/login`, "lan@example.com");
    assert.equal(page.url(), `${alias}/`, `answers: ${answers}`);
    assert.ok(answers.every((s) => s === 303), `answers: ${answers}`);
  } finally {
    await page.browserContext().close();
  }
});

test("a reload of the key page never creates another key, and revoking asks first", async () => {
  owner = await newPage();
  await signUp(owner, "site-owner@example.com");
  await owner.type("#label", "laptop");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("form[action='/account/keys'] button"),
  ]);
  const key = await owner.$eval(
    "#new-key",
    (e) => (e as HTMLInputElement).value,
  );
  assert.match(key, /^ihk_/);
  await owner.reload();
  await owner.reload();
  const rows = await owner.$$eval("tbody tr", (r) => r.length);
  assert.equal(rows, 1);
  assert.equal(await owner.$("#new-key"), null, "shown once");
  const count = await env.deps.database.db.selectFrom("api_keys")
    .select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  assert.equal(Number(count.n), 1);

  // Dismissing the question keeps the key; accepting it revokes.
  owner.once("dialog", (d) => d.dismiss());
  await owner.click("form[action$='/revoke'] button");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(
    await owner.$$eval("form[action$='/revoke']", (f) => f.length),
    1,
  );
  owner.once("dialog", (d) => {
    assert.match(d.message(), /Revoke the key “laptop”/);
    d.accept();
  });
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("form[action$='/revoke'] button"),
  ]);
  assert.match(await owner.$eval("tbody", (t) => t.textContent!), /revoked/);
  visits.push({ name: "account", path: "/account", signedIn: true });
});

test("the home page uploads a dropped file and an imported address with the session, with the expiration picked, and shows links and embed codes", async () => {
  await owner.goto(`${base}/`);
  await owner.waitForSelector("[data-image-uploader]");
  // One hour, from the widget's own picker.
  await owner.evaluate(() => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    const sel = root.querySelector("select")!;
    sel.value = "3600";
    sel.dispatchEvent(new Event("change"));
  });
  const jpeg = await makeImage("jpeg", { width: 640, height: 400 });
  await dropFiles(owner, [
    { name: "dropped.jpg", type: "image/jpeg", b64: b64(jpeg) },
    {
      name: "second.png",
      type: "image/png",
      b64: b64(await makeImage("png", { width: 90, height: 60 })),
    },
  ]);
  await owner.waitForFunction(() =>
    /Uploaded 2 of 2/.test(
      document.querySelector("[data-image-uploader]")!.shadowRoot!
        .querySelector(".status")!.textContent!,
    ), { timeout: 15_000 });
  const shown = await owner.evaluate(() => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    return {
      links: [...root.querySelectorAll(".ok a")].map((a) => a.textContent),
      copies: [...root.querySelectorAll("button.copy")].map((b) =>
        b.textContent
      ),
    };
  });
  assert.equal(shown.links.length, 2);
  assert.ok(shown.copies.includes("Copy HTML"));
  assert.ok(shown.copies.includes("Copy BBCode"));
  const afterDrop = await listed(owner);
  assert.equal(afterDrop.total, 2);
  const titles = afterDrop.images.map((i: Any) => i.title).sort();
  assert.deepEqual(titles, ["dropped.jpg", "second.png"]);
  for (const img of afterDrop.images) assert.equal(img.expiration, 3600);
  const link = shown.links[0]!;
  const file = await fetch(link);
  assert.equal(file.status, 200);
  await file.body?.cancel();

  // An address, imported by the service through its guard (the fixture is allowed).
  // (The test clock stands still unless moved: each step a second later keeps "newest
  // first" defined.)
  env.clock.advance(1000);
  await owner.evaluate((url: string) => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    const area = root.querySelector("textarea")!;
    area.value = url;
    root.querySelector<HTMLFormElement>("form.urls")!.requestSubmit();
  }, `\n  ${fixture.origin}/my photo.png  \n\n`);
  await owner.waitForFunction(() =>
    /Imported 1 of 1/.test(
      document.querySelector("[data-image-uploader]")!.shadowRoot!
        .querySelector(".status")!.textContent!,
    ), { timeout: 15_000 });
  assert.ok(fixture.requests.some((r) => r.path === "/my%20photo.png"));
  const afterImport = await listed(owner);
  assert.equal(afterImport.total, 3);
  assert.equal(afterImport.images[0].title, "my photo.png");
  const dropped = afterImport.images.find((i: Any) =>
    i.title === "dropped.jpg"
  );
  visits.push({ name: "home", path: "/", signedIn: true });
  visits.push({
    name: "viewer",
    path: new URL(dropped.url_viewer).pathname,
    signedIn: true,
  });
  env.clock.advance(1000);
});

test("the home page sends a file over RESUMABLE_FROM_MB resumable (tus) with the session, with a Pause button on its row, and it lands in the account", async () => {
  await owner.goto(`${base}/`);
  await owner.waitForSelector("[data-image-uploader]");
  const side = 1400;
  const noise = new Uint8Array(side * side * 3);
  for (let i = 0; i < noise.length; i += 65536) {
    crypto.getRandomValues(
      noise.subarray(i, Math.min(i + 65536, noise.length)),
    );
  }
  const photo = new Uint8Array(
    await sharp(noise, { raw: { width: side, height: side, channels: 3 } })
      .jpeg({ quality: 90 }).toBuffer(),
  );
  assert.ok(photo.length > 1024 * 1024, `${photo.length} bytes`);
  tusSeen.length = 0;
  await dropFiles(owner, [
    { name: "big-home.jpg", type: "image/jpeg", b64: b64(photo) },
  ]);
  const paused = await owner.waitForFunction(() => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    return root.querySelector("button.pause")?.textContent ??
      (/Uploaded/.test(root.querySelector(".status")!.textContent!) && "done");
  }, { timeout: 15_000 });
  assert.ok(await paused.jsonValue(), "a Pause button, or already done");
  await owner.waitForFunction(() =>
    /Uploaded 1 of 1/.test(
      document.querySelector("[data-image-uploader]")!.shadowRoot!
        .querySelector(".status")!.textContent!,
    ), { timeout: 30_000 });
  assert.ok(
    tusSeen.includes("POST") && tusSeen.includes("PATCH"),
    String(tusSeen),
  );
  const mine = await listed(owner, "?q=big-home");
  assert.deepEqual(mine.images.map((i: Any) => i.title), ["big-home.jpg"]);
  // Gone again: the flows below count the account's images.
  const gone = await owner.evaluate(async (id: string) => {
    const token = document.querySelector<HTMLMetaElement>(
      'meta[name="csrf-token"]',
    )!.content;
    return (await fetch(`/api/1/images/${id}`, {
      method: "DELETE",
      headers: { "X-CSRF-Token": token },
    })).status;
  }, mine.images[0].id);
  assert.equal(gone, 200);
  env.clock.advance(1000);
});

test("the viewer's picture has Chromium fetch an AVIF at the width its layout needs (a 320 px phone: 320 w), not the original", async () => {
  const viewer = visits.find((v) => v.name === "viewer")!.path;
  const page = await newPage({ width: 320, height: 700 });
  try {
    await page.goto(`${base}${viewer}`);
    await page.waitForFunction(() =>
      document.querySelector<HTMLImageElement>(".viewer-figure img")!.complete
    );
    const shown = await page.$eval(".viewer-figure img", (i) => ({
      src: (i as HTMLImageElement).currentSrc,
      natural: (i as HTMLImageElement).naturalWidth,
    }));
    assert.match(shown.src, /\?w=320&format=avif$/, shown.src);
    // Drawn at the layout's width (sizes: 100vw − 2rem = 288 px), from a 320 px AVIF.
    assert.equal(shown.natural, 288);
    const file = await fetch(shown.src);
    assert.equal(file.headers.get("content-type"), "image/avif");
    const meta = await sharp(new Uint8Array(await file.arrayBuffer()))
      .metadata();
    assert.equal(meta.width, 320);
  } finally {
    await page.browserContext().close();
  }
});

test("the screenshot page captures a page with the chosen options, stores it when asked, and shows the API's own error message", async () => {
  await owner.goto(`${base}/screenshot`);
  // The device list is the API's: GET /api/1/screenshot/presets, plus "custom".
  await owner.waitForSelector("#f-preset[data-source=api]");
  const devices = await owner.$$eval(
    "#f-preset option",
    (o) => o.map((x) => (x as HTMLOptionElement).value),
  );
  assert.equal(devices.length, 16);
  assert.equal(devices[0], "desktop-1080p");
  assert.equal(devices.at(-1), "custom");
  await owner.type("#f-url", `${fixture.origin}/page`);
  const shown = () =>
    owner.$eval("#viewport", (e) => getComputedStyle(e).display !== "none");
  assert.equal(await shown(), false, "a preset hides the custom viewport");
  await owner.select("#f-preset", "custom");
  assert.equal(await shown(), true);
  assert.equal(
    await owner.$eval("#viewport", (e) => (e as HTMLElement).hidden),
    false,
  );
  await owner.$eval(
    "#f-viewport\\.width",
    (e) => (e as HTMLInputElement).value = "",
  );
  await owner.type("#f-viewport\\.width", "800");
  await owner.$eval(
    "#f-viewport\\.height",
    (e) => (e as HTMLInputElement).value = "",
  );
  await owner.type("#f-viewport\\.height", "500");
  await owner.select("#f-format", "jpeg");
  await owner.click("#shot-form button[type=submit]");
  await owner.waitForSelector("#shot-result:not([hidden]) img", {
    timeout: 20_000,
  });
  const result = await owner.evaluate(() => ({
    status: document.getElementById("shot-status")!.textContent,
    url: (document.getElementById("shot-url") as HTMLInputElement).value,
    viewer: (document.getElementById("shot-viewer") as HTMLInputElement).value,
    text: document.getElementById("shot-result")!.textContent,
  }));
  assert.equal(result.status, "Done.");
  assert.match(result.text!, /Fixture page/);
  assert.match(result.url, /\.jpg$/);
  const bytes = new Uint8Array(await (await fetch(result.url)).arrayBuffer());
  const meta = await sharp(bytes).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height], ["jpeg", 800, 500]);
  // A pixel from the page: its blue background.
  const { data } = await sharp(bytes).extract({
    left: 700,
    top: 400,
    width: 1,
    height: 1,
  }).raw().toBuffer({ resolveWithObject: true });
  assert.ok(data[2] > 180 && data[0] < 90, `blue, got ${[...data]}`);
  const shots = await listed(owner, "?source=screenshot");
  assert.equal(shots.total, 1);

  // A refused address: the API's message, shown as it is.
  await owner.$eval("#f-url", (e) => (e as HTMLInputElement).value = "");
  await owner.type("#f-url", "file:///etc/passwd");
  await owner.click("#shot-form button[type=submit]");
  await owner.waitForFunction(() =>
    document.getElementById("shot-status")!.className === "error"
  );
  const err = await owner.$eval("#shot-status", (e) => e.textContent);
  assert.match(err!, /^(Invalid URL|URL not allowed)/);
  visits.push({ name: "screenshot", path: "/screenshot", signedIn: true });
});

test("the screenshot form shows Quality only for jpeg and webp, and Paper only for pdf", async () => {
  await owner.goto(`${base}/screenshot`);
  const shown = () =>
    owner.evaluate(() => {
      const f = document.getElementById("shot-form") as HTMLFormElement;
      const visible = (name: string) =>
        !(f.elements.namedItem(name) as HTMLElement).closest("[hidden]");
      return [visible("quality"), visible("pdfPaper")];
    });
  const seen: Record<string, boolean[]> = {};
  for (const format of ["png", "jpeg", "webp", "pdf"]) {
    await owner.select("#f-format", format);
    seen[format] = await shown();
  }
  assert.deepEqual(seen, {
    png: [false, false],
    jpeg: [true, false],
    webp: [true, false],
    pdf: [false, true],
  });
});

test("the screenshot form refuses a cookie line without '=' (and a header line without ':') before sending: the message names the line, the box is opened, marked invalid and focused", async () => {
  await owner.goto(`${base}/screenshot`);
  const sent: string[] = [];
  // The capture itself (the page's own GET of the presets is no capture).
  const listen = (r: { url(): string; method(): string }) => {
    if (r.method() === "POST" && r.url().includes("/api/1/screenshot")) {
      sent.push(r.url());
    }
  };
  owner.on("request", listen);
  try {
    await owner.type("#f-url", "http://127.0.0.1:9/page");
    await owner.$eval("#f-cookies", (t) => {
      (t as HTMLTextAreaElement).value = "consent=yes\nabc";
    });
    await owner.click("#shot-form button[type=submit]");
    await owner.waitForFunction(() =>
      document.getElementById("shot-status")!.className === "error"
    );
    const shown = await owner.evaluate(() => ({
      status: document.getElementById("shot-status")!.textContent,
      invalid: document.getElementById("f-cookies")!.getAttribute(
        "aria-invalid",
      ),
      focused: document.activeElement?.id,
      open: document.getElementById("f-cookies")!.closest("details")!.open,
    }));
    assert.deepEqual(shown, {
      status: "Cookies: line 2 (“abc”) is not name=value.",
      invalid: "true",
      focused: "f-cookies",
      open: true,
    });
    assert.deepEqual(sent, [], "nothing was sent");
  } finally {
    owner.off("request", listen);
  }
});

test("My images pages through 30 images and deletes two chosen ones after asking", async () => {
  // 26 more through the API with the session, so there are two pages of 24.
  const colours = Array.from({ length: 26 }, (_, i) => i);
  for (const i of colours) {
    env.clock.advance(1000);
    const bytes = await makeImage("png", { width: 30 + i, height: 20 });
    await owner.evaluate(
      async (b: string, name: string) => {
        const token = document.querySelector<HTMLMetaElement>(
          'meta[name="csrf-token"]',
        )!.content;
        const form = new FormData();
        form.append(
          "images",
          new File([Uint8Array.from(atob(b), (c) => c.charCodeAt(0))], name, {
            type: "image/png",
          }),
        );
        const r = await fetch("/api/1/upload", {
          method: "POST",
          headers: { "X-CSRF-Token": token },
          body: form,
        });
        if (!r.ok) throw new Error(await r.text());
      },
      b64(bytes),
      `bulk-${i}.png`,
    );
  }
  await owner.goto(`${base}/images`);
  assert.match(
    await owner.$eval(".toolbar", (e) => e.textContent!),
    /30 images/,
  );
  assert.equal(await owner.$$eval(".card", (c) => c.length), 24);
  await Promise.all([owner.waitForNavigation(), owner.click("a[rel=next]")]);
  assert.match(
    await owner.$eval(".pager", (e) => e.textContent!),
    /Page 2 of 2/,
  );
  assert.equal(await owner.$$eval(".card", (c) => c.length), 6);
  const chosen = await owner.$$eval(
    "input[name=id][form=bulk]",
    (boxes) => boxes.slice(0, 2).map((b) => (b as HTMLInputElement).value),
  );
  for (const id of chosen) await owner.click(`input[value="${id}"][form=bulk]`);
  owner.once("dialog", (d) => {
    assert.match(d.message(), /Delete 2 images for good/);
    d.accept();
  });
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("#bulk button[type=submit]"),
  ]);
  assert.match(
    await owner.$eval(".notice", (e) => e.textContent!),
    /Deleted 2 images/,
  );
  assert.match(
    await owner.$eval(".toolbar", (e) => e.textContent!),
    /28 images/,
  );
  const after = await listed(owner, "?per_page=100");
  assert.equal(after.total, 28);
  for (const id of chosen) {
    assert.ok(after.images.every((i: Any) => i.id !== id));
  }
  visits.push({ name: "my-images", path: "/images", signedIn: true });
  visits.push({
    name: "my-images-page-2",
    path: "/images?page=2",
    signedIn: true,
  });
});

test("the docs work offline under their CSP: Swagger UI comes from us, nothing is fetched elsewhere, and Try it out starts with no key and no expiration", async () => {
  const page = await newPage();
  const before = outside.length;
  await page.goto(`${base}/docs`);
  await page.waitForSelector(".swagger-ui .info .title", { timeout: 15_000 });
  await page.click("#operations-Images-postUpload .opblock-summary-control");
  assert.match(
    await page.$eval(".swagger-ui .info .title", (e) => e.textContent!),
    /Image hosting and screenshot API/,
  );
  await page.waitForSelector("#operations-Images-postUpload .try-out__btn");
  await page.click("#operations-Images-postUpload .try-out__btn");
  await page.waitForSelector("#operations-Images-postUpload input[type=file]");
  const fields = await page.$$eval(
    "#operations-Images-postUpload input[type=text]",
    (inputs) =>
      inputs.map((i) => ({
        name: i.closest("tr")?.querySelector(".parameter__name")?.textContent ??
          "",
        value: (i as HTMLInputElement).value,
      })),
  );
  const byName = (n: string) =>
    fields.filter((f) => f.name.replace(/\W.*$/s, "") === n);
  assert.ok(byName("key").length > 0, JSON.stringify(fields));
  assert.ok(byName("expiration").length > 0, JSON.stringify(fields));
  // Nothing is filled in: no key "string", no 60 s expiration, no address to import.
  for (const f of fields) assert.equal(f.value, "", `${f.name} is empty`);
  assert.equal(outside.length, before, outside.join(", "));
  await page.browserContext().close();
  visits.push({ name: "docs", path: "/docs", signedIn: false });
});

test("My images' codes box holds the links of the ticked images only (all of the page when none is ticked), in the picked code type; an image without the picked version (a medium) gives its full image's code instead of dropping out", async () => {
  // A wide photo has a medium; the small ones before it have none.
  await owner.goto(`${base}/`);
  await owner.waitForSelector("[data-image-uploader]");
  await dropFiles(owner, [{
    name: "wide.jpg",
    type: "image/jpeg",
    b64: b64(await makeImage("jpeg", { width: 3000, height: 500 })),
  }]);
  await owner.waitForFunction(() =>
    /Uploaded 1 of 1/.test(
      document.querySelector("[data-image-uploader]")!.shadowRoot!
        .querySelector(".status")!.textContent!,
    ), { timeout: 15_000 });
  await owner.goto(`${base}/images`);
  const ids = await owner.$$eval(
    "input[name=id][form=bulk]",
    (boxes) => boxes.map((b) => (b as HTMLInputElement).value),
  );
  assert.ok(ids.length >= 3, `${ids.length} images on the page`);
  const box = () =>
    owner.$eval("#page-codes", (t) => (t as HTMLTextAreaElement).value);
  assert.equal((await box()).split("\n").length, ids.length);
  await owner.click(`input[name=id][value="${ids[0]}"]`);
  await owner.click(`input[name=id][value="${ids[2]}"]`);
  const lines = (await box()).split("\n");
  assert.equal(lines.length, 2);
  assert.ok(lines[0].includes(`/${ids[0]}.`), lines[0]);
  assert.ok(lines[1].includes(`/${ids[2]}.`), lines[1]);
  await owner.select("#page-codes-type", "Markdown");
  const markdown = (await box()).split("\n");
  assert.equal(markdown.length, 2);
  for (const line of markdown) assert.ok(line.startsWith("[!["), line);
  await owner.select("#page-codes-type", "Markdown (medium, linked)");
  const medium = (await box()).split("\n");
  assert.equal(medium.length, 2, medium.join("\n"));
  for (const line of medium) assert.ok(line.startsWith("[!["), line);
  await owner.click(`input[name=id][value="${ids[0]}"]`);
  await owner.click(`input[name=id][value="${ids[2]}"]`);
  const all = (await box()).split("\n");
  assert.equal(all.length, ids.length, all.join("\n"));
  for (const line of all) assert.ok(line.startsWith("[!["), line);
  assert.equal(all.filter((l) => l.includes(".md.")).length, 1, "one medium");
  await owner.click(`input[name=id][value="${ids[0]}"]`);
  await owner.click(`input[name=id][value="${ids[2]}"]`);
  await owner.click(`input[name=id][value="${ids[0]}"]`);
  await owner.click(`input[name=id][value="${ids[2]}"]`);
  assert.equal((await box()).split("\n").length, ids.length);
  // Ticking all through "Select all" is all of them too.
  await owner.click("input[data-select-all=bulk]");
  assert.equal((await box()).split("\n").length, ids.length);
  await owner.click("input[data-select-all=bulk]");
});

test("Albums makes an album from its form, and My images' Move puts the ticked image into it without the delete's question", async () => {
  await owner.goto(`${base}/albums`);
  await owner.type("#album-title", "Browser album");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("form[action='/albums/new'] button[type=submit]"),
  ]);
  assert.match(await owner.content(), /Browser album/);
  visits.push({ name: "albums", path: "/albums", signedIn: true });
  await owner.goto(`${base}/images`);
  let asked = false;
  owner.once("dialog", async (d) => {
    asked = true;
    await d.dismiss();
  });
  const first = await owner.$eval(
    "input[name=id][form=bulk]",
    (b) => (b as HTMLInputElement).value,
  );
  await owner.click(`input[name=id][value="${first}"]`);
  const albumId = await owner.$$eval(
    "#move-album option",
    (opts) =>
      (opts as HTMLOptionElement[]).find((o) => o.text === "Browser album")!
        .value,
  );
  await owner.select("#move-album", albumId);
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("button[formaction='/images/move']"),
  ]);
  assert.equal(asked, false, "moving asks nothing");
  assert.match(await owner.content(), /Moved 1 image\./);
  const rec = await (await env.app.request(`/i/${first}`)).text();
  assert.match(rec, /In the album <a href="\/a\/[^"]+">Browser album<\/a>/);
});

test("the home uploader offers your albums and who can see an upload: the album picked takes the dropped image, stored private from the start", async () => {
  await owner.goto(`${base}/`);
  await owner.waitForSelector("[data-image-uploader]");
  const picked = await owner.evaluate(() => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    const sel = root.querySelector("#iu-album") as HTMLSelectElement;
    const option = [...sel.options].find((o) => o.text === "Browser album")!;
    sel.value = option.value;
    sel.dispatchEvent(new Event("change"));
    const who = root.querySelector("#iu-privacy") as HTMLSelectElement;
    const choices = [...who.options].map((o) => o.value);
    const label = root.querySelector("label[for=iu-privacy]")?.textContent;
    who.value = "private";
    return { id: option.value, first: sel.options[0].text, choices, label };
  });
  assert.equal(picked.first, "No album");
  assert.deepEqual(picked.choices, ["public", "unlisted", "private"]);
  assert.equal(picked.label, "Who can see it");
  await dropFiles(owner, [{
    name: "into-album.png",
    type: "image/png",
    b64: b64(await makeImage("png", { width: 77, height: 33 })),
  }]);
  await uploaderStatus(owner, /Uploaded 1 of 1/);
  const row = await env.deps.database.db.selectFrom("images")
    .select(["album_id", "privacy"]).where("title", "=", "into-album.png")
    .executeTakeFirstOrThrow();
  assert.equal(row.album_id, picked.id);
  assert.equal(row.privacy, "private");
});

test("Albums orders albums with ↑ and ↓, and an album's page makes one of its images the cover", async () => {
  await owner.goto(`${base}/albums`);
  await owner.type("#album-title", "Later album");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("form[action='/albums/new'] button[type=submit]"),
  ]);
  const titles = () =>
    owner.$$eval(".grid .card a.title", (as) => as.map((a) => a.textContent));
  const before = await titles();
  assert.deepEqual(before.slice(0, 2), ["Later album", "Browser album"]);
  await Promise.all([
    owner.waitForNavigation(),
    owner.click('button[aria-label="Move Browser album up"]'),
  ]);
  assert.deepEqual((await titles()).slice(0, 2), [
    "Browser album",
    "Later album",
  ]);

  await Promise.all([
    owner.waitForNavigation(),
    owner.click('.grid .card a.title[href*="/a/"]'),
  ]);
  const make = await owner.$$eval(
    'form[action="/albums/cover"] input[name=image]',
    (inputs) => inputs.map((i) => (i as HTMLInputElement).value),
  );
  assert.ok(make.length >= 1, "an image that is not the cover");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click('form[action="/albums/cover"] button'),
  ]);
  const marked = await owner.$$eval(
    ".grid .card",
    (cards) =>
      cards.filter((c) => /The album's cover/.test(c.textContent!)).map((
        c,
      ) => c.querySelector("form input[name=image]") === null),
  );
  assert.deepEqual(marked, [true], "one card marked, without its button");
  assert.ok(
    !(await owner.$$eval(
      'form[action="/albums/cover"] input[name=image]',
      (inputs) => inputs.map((i) => (i as HTMLInputElement).value),
    )).includes(make[0]),
    "the new cover has no Make cover",
  );
});

test("a form that breaks a rule comes back as its page with the message beside the field, the field marked invalid and focused: a 3-letter password for the ticked images, an emptied title in a card's inline edit (opened again)", async () => {
  await owner.goto(`${base}/images`);
  const id = await owner.$eval(
    "input[name=id][form=bulk]",
    (b) => (b as HTMLInputElement).value,
  );
  await owner.click(`input[name=id][value="${id}"]`);
  await owner.select("#set-privacy", "password");
  await owner.type("#set-password", "abc");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("button[formaction='/images/privacy']"),
  ]);
  const placed = () =>
    owner.evaluate(() => {
      const n = document.getElementById("form-error")!;
      const field = n.previousElementSibling as HTMLElement;
      return {
        text: n.textContent,
        field: field.id,
        invalid: field.getAttribute("aria-invalid"),
        focused: document.activeElement === field,
      };
    });
  assert.deepEqual(await placed(), {
    text: "Password: at least 4 characters",
    field: "set-password",
    invalid: "true",
    focused: true,
  });
  assert.doesNotMatch(await owner.content(), /"success":false/);

  const title = `#edit-${id}-title`;
  await owner.click(`details.edit summary[aria-label^="Edit"]`);
  await owner.$eval(title, (t) => (t as HTMLInputElement).value = " ");
  await owner.$eval(title, (t) => (t as HTMLInputElement).required = false);
  await Promise.all([
    owner.waitForNavigation(),
    owner.$eval(title, (t) => (t as HTMLInputElement).form!.requestSubmit()),
  ]);
  assert.deepEqual(await placed(), {
    text: "Title: give a title",
    field: `edit-${id}-title`,
    invalid: "true",
    focused: true,
  });
  assert.equal(
    await owner.$eval(title, (t) => t.closest("details")!.open),
    true,
  );
});

test("on a phone, a long title keeps its card's checkbox whole, and a card's opened Edit fits its card (no clipped choices) without moving the next card's buttons", async () => {
  const cookies = await owner.browserContext().cookies();
  // A large phone: two cards a row, each narrower than the privacy choice's text.
  const phone = await newPage({ width: 414, height: 896, dark: true });
  try {
    await phone.browserContext().setCookie(...cookies);
    await phone.goto(`${base}/images`);
    assert.equal(
      await phone.$$eval(
        ".grid > li",
        (cards) =>
          new Set(cards.slice(0, 2).map((c) => c.getBoundingClientRect().top))
            .size,
      ),
      1,
      "two cards in the first row",
    );
    const ids = await phone.$$eval(
      "input[name=id][form=bulk]",
      (boxes) => boxes.map((b) => (b as HTMLInputElement).value),
    );
    // A 200-character title on the first card, through the API with the session.
    await phone.evaluate(async (id: string) => {
      const token = document.querySelector<HTMLMetaElement>(
        'meta[name="csrf-token"]',
      )!.content;
      await fetch(`/api/1/images/${id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json", "x-csrf-token": token },
        body: JSON.stringify({ title: "a long title ".repeat(16).trim() }),
      });
    }, ids[0]);
    await phone.reload();
    const measure = () =>
      phone.evaluate((ids: string[]) => {
        const box = (id: string) =>
          document.querySelector(`input[name=id][value="${id}"]`)!;
        const card = (id: string) => box(id).closest(".card")!;
        const select = card(ids[0]).querySelector<HTMLSelectElement>(
          "details select",
        )!;
        // The chosen option's text against the room the select gives it.
        const style = getComputedStyle(select);
        const ctx = document.createElement("canvas").getContext("2d")!;
        ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const text = ctx.measureText(select.selectedOptions[0].text).width;
        const room = select.clientWidth - parseFloat(style.paddingLeft) -
          parseFloat(style.paddingRight) - 16; // the arrow
        return {
          long: box(ids[0]).getBoundingClientRect().width,
          short: box(ids[1]).getBoundingClientRect().width,
          selectRight: select.getBoundingClientRect().right,
          textFits: text <= room,
          cardRight: card(ids[0]).getBoundingClientRect().right,
          // In the page, not the viewport: opening scrolls the card into view.
          nextOpenTop: card(ids[1]).querySelector(".actions")!
            .getBoundingClientRect().top + scrollY,
        };
      }, ids);
    const before = await measure();
    assert.ok(
      before.long > 0 && before.long === before.short,
      JSON.stringify(before),
    );
    await phone.click(`details.edit summary[aria-label^="Edit a long title"]`);
    const opened = await measure();
    assert.ok(
      opened.selectRight <= opened.cardRight,
      `the privacy choice ends at ${opened.selectRight}, its card at ${opened.cardRight}`,
    );
    assert.equal(opened.textFits, true, "the chosen privacy reads whole");
    assert.equal(
      opened.nextOpenTop,
      before.nextOpenTop,
      "the next card's buttons stay",
    );
  } finally {
    await phone.browserContext().close();
  }
});

test("My images' Delete after sets when the ticked image is deleted, and Move with nothing ticked says to tick the images first", async () => {
  await owner.goto(`${base}/images`);
  const id = await owner.$eval(
    "input[name=id][form=bulk]",
    (b) => (b as HTMLInputElement).value,
  );
  await owner.click(`input[name=id][value="${id}"]`);
  await owner.select("#set-expiration", "86400");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("button[formaction='/images/expiry']"),
  ]);
  assert.match(
    await owner.$eval("[role=status]", (e) => e.textContent!),
    /Set when 1 image is deleted\./,
  );
  const card = await owner.$eval(
    `input[name=id][value="${id}"]`,
    (b) => b.closest(".card")!.textContent!,
  );
  assert.match(card, /expires in (23 hours|1 day)/);
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("button[formaction='/images/move']"),
  ]);
  assert.match(
    await owner.$eval("[role=alert]", (e) => e.textContent!),
    /tick the images first/,
  );
});

test("My images edits one image inline, on a desktop in light mode and on a phone in dark mode: Edit opens its form in the card, Save brings the same page back saying so, with the new title, album and privacy", async () => {
  const cookies = await owner.browserContext().cookies();
  for (
    const [i, view] of [
      { width: 1366, height: 900 },
      { width: 390, height: 844, dark: true },
    ].entries()
  ) {
    const phone = await newPage(view);
    try {
      await phone.browserContext().setCookie(...cookies);
      await phone.goto(`${base}/images`);
      const id = await phone.$$eval(
        "input[name=id][form=bulk]",
        (b, i) => (b as HTMLInputElement[])[i as number].value,
        i,
      );
      await phone.click(
        `details.edit summary[aria-label="Edit ${await phone.$eval(
          `#edit-${id}-title`,
          (e) => (e as HTMLInputElement).value,
        )}"]`,
      );
      // The form fits the card: no wider than the screen.
      const width = await phone.$eval(
        `#edit-${id}-title`,
        (e) => e.getBoundingClientRect().right,
      );
      assert.ok(width <= view.width, `the title field ends at ${width} px`);
      await phone.$eval(
        `#edit-${id}-title`,
        (e) => (e as HTMLInputElement).value = "",
      );
      await phone.type(`#edit-${id}-title`, `Renamed inline ${i}`);
      await phone.select(`#edit-${id}-privacy`, "unlisted");
      const album = await phone.$$eval(
        `#edit-${id}-album option`,
        (opts) =>
          (opts as HTMLOptionElement[]).find((o) => o.value !== "")?.value ??
            "",
      );
      if (album) await phone.select(`#edit-${id}-album`, album);
      await Promise.all([
        phone.waitForNavigation(),
        phone.click(`#edit-${id}-title ~ button[type=submit]`),
      ]);
      assert.equal(new URL(phone.url()).pathname, "/images");
      assert.match(await phone.content(), /Saved\./);
      assert.match(await phone.content(), new RegExp(`Renamed inline ${i}`));
      const row = await env.deps.database.db.selectFrom("images")
        .select(["title", "privacy", "album_id"]).where("id", "=", id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, {
        title: `Renamed inline ${i}`,
        privacy: "unlisted",
        album_id: album || null,
      });
    } finally {
      await phone.browserContext().close();
    }
  }
});

test("on a phone in dark mode too, Albums makes an album, My images' Move puts a ticked image into it and Set makes it private", async () => {
  const cookies = await owner.browserContext().cookies();
  const phone = await newPage({ width: 390, height: 844, dark: true });
  try {
    await phone.browserContext().setCookie(...cookies);
    await phone.goto(`${base}/albums`);
    await phone.type("#album-title", "Phone album");
    await Promise.all([
      phone.waitForNavigation(),
      phone.click("form[action='/albums/new'] button[type=submit]"),
    ]);
    assert.match(await phone.content(), /Phone album/);
    await phone.goto(`${base}/images`);
    const ids = await phone.$$eval(
      "input[name=id][form=bulk]",
      (b) => (b as HTMLInputElement[]).map((i) => i.value),
    );
    const last = ids[ids.length - 1];
    await phone.click(`input[name=id][value="${last}"]`);
    const albumId = await phone.$$eval(
      "#move-album option",
      (opts) =>
        (opts as HTMLOptionElement[]).find((o) => o.text === "Phone album")!
          .value,
    );
    await phone.select("#move-album", albumId);
    await Promise.all([
      phone.waitForNavigation(),
      phone.click("button[formaction='/images/move']"),
    ]);
    assert.match(await phone.content(), /Moved 1 image\./);
    const row = await env.deps.database.db.selectFrom("images")
      .select("album_id").where("id", "=", last).executeTakeFirstOrThrow();
    assert.equal(row.album_id, albumId);
    // Who sees it, for the ticked ones at once.
    await phone.click(`input[name=id][value="${last}"]`);
    await phone.select("#set-privacy", "private");
    await Promise.all([
      phone.waitForNavigation(),
      phone.click("button[formaction='/images/privacy']"),
    ]);
    assert.match(await phone.content(), /Changed who sees 1\s+image\./);
    const after = await env.deps.database.db.selectFrom("images")
      .select("privacy").where("id", "=", last).executeTakeFirstOrThrow();
    assert.equal(after.privacy, "private");
  } finally {
    await phone.browserContext().close();
  }
});

test("an album page's code-type picker puts every image's code of that type in the box, and Copy all copies it, on a desktop and on a phone", async () => {
  const { key } = await userWithKey(env);
  const call = async (path: string, init: RequestInit) =>
    await (await env.app.request(path, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...init.headers },
    })).json();
  const album = (await call("/api/1/albums", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ title: "Weekend", description: "Two days" }),
  })).data;
  const ids: string[] = [];
  for (const width of [90, 91]) {
    const form = formWith([{
      name: `w${width}.png`,
      bytes: await makeImage("png", { width, height: 60 }),
    }]);
    form.append("album_id", album.id);
    ids.push(
      (await call("/api/1/upload", { method: "POST", body: form })).data.id,
    );
    env.clock.advance(1000);
  }
  const path = `/a/${album.id}`;
  visits.push({ name: "album", path, signedIn: false });
  // On a desktop in light and on a phone in dark, as people open a shared album.
  for (const view of [{}, { width: 390, height: 800, dark: true }]) {
    const page = await newPage(view);
    try {
      await page.goto(`${base}${path}`);
      assert.equal(
        await page.$eval(
          "#album-codes",
          (t) => (t as HTMLTextAreaElement).value,
        ),
        ids.map((id) => `${base}/${id}.png`).reverse().join("\n"),
      );
      await page.select("#album-codes-type", "Markdown");
      const markdown = await page.$eval(
        "#album-codes",
        (t) => (t as HTMLTextAreaElement).value,
      );
      const lines = markdown.split("\n");
      assert.equal(lines.length, 2);
      for (const [i, id] of [...ids].reverse().entries()) {
        assert.ok(lines[i].includes(`${base}/${id}.png`), lines[i]);
        assert.ok(lines[i].startsWith("[!["), lines[i]);
      }
      await page.click("button[data-copy=album-codes]");
      await page.waitForFunction(() =>
        document.querySelector("button[data-copy=album-codes]")!.textContent ===
          "Copied"
      );
    } finally {
      await page.browserContext().close();
    }
  }
});

test("a password image: its owner picks Password and types one in the viewer's edit form on a phone; a visitor on a desktop and on a phone in dark mode sees only the form, is told a wrong password, and with the right one sees the picture, loaded from signed URLs", async () => {
  const { user, key } = await userWithKey(env);
  const sid = await createSession(env.deps.database.db, user.id, env.clock);
  const form = formWith([{
    name: "locked-photo.png",
    bytes: await makeImage("png", { width: 640, height: 120 }),
  }]);
  const up = await (await env.app.request("/api/1/upload", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
  })).json();
  const id = up.data.id;
  const mine = await newPage({ width: 390, height: 844 });
  try {
    await mine.browserContext().setCookie({
      name: "sid",
      value: sid,
      domain: new URL(base).hostname,
      path: "/",
    });
    await mine.goto(`${base}/i/${id}`);
    await mine.click("details.edit summary");
    await mine.select("#edit-privacy", "password");
    await mine.type("#edit-privacy-password", "browser secret");
    await Promise.all([
      mine.waitForNavigation(),
      mine.click("form[action='/images/edit'] button[type=submit]"),
    ]);
    assert.equal(mine.url(), `${base}/i/${id}`);
  } finally {
    await mine.browserContext().close();
  }
  const row = await env.deps.database.db.selectFrom("images")
    .select(["privacy", "password_hash"]).where("id", "=", id)
    .executeTakeFirstOrThrow();
  assert.equal(row.privacy, "password");
  assert.match(row.password_hash ?? "", /^scrypt\$/);
  visits.push({ name: "password-form", path: `/i/${id}`, signedIn: false });

  for (
    const view of [
      { width: 1366, height: 900 },
      { width: 390, height: 844, dark: true },
    ]
  ) {
    const visitor = await newPage(view);
    try {
      await visitor.goto(`${base}/i/${id}`);
      assert.equal(await visitor.$("figure img"), null, "no picture before");
      assert.ok(!(await visitor.content()).includes("locked-photo"));
      await visitor.type("#unlock-password", "wrong guess");
      await Promise.all([
        visitor.waitForNavigation(),
        visitor.click("form button[type=submit]"),
      ]);
      assert.match(
        await visitor.$eval("[role=alert]", (e) => e.textContent!),
        /not right/,
      );
      await visitor.type("#unlock-password", "browser secret");
      await Promise.all([
        visitor.waitForNavigation(),
        visitor.click("form button[type=submit]"),
      ]);
      assert.equal(visitor.url(), `${base}/i/${id}`);
      await visitor.waitForFunction(() => {
        const img = document.querySelector("figure img") as HTMLImageElement;
        return img && img.complete && img.naturalWidth > 0;
      });
      const src = await visitor.$eval(
        "figure img",
        (i) => (i as HTMLImageElement).currentSrc,
      );
      assert.match(src, new RegExp(`/${id}\\.png\\?access=`));
      // The same URL without its signature is nothing to this browser.
      const bare = await visitor.evaluate(
        async (u) => (await fetch(u)).status,
        `${base}/${id}.png`,
      );
      assert.equal(bare, 404);
    } finally {
      await visitor.browserContext().close();
    }
  }
});

test("a guest, on a desktop and on a phone in dark mode, drops an image on the signed-out home page, sees its delete link and gets every delete link from the codes box; signing up in that browser puts the image in the account", async () => {
  for (
    const [i, view] of [
      { width: 1366, height: 900 },
      { width: 390, height: 844, dark: true },
    ].entries()
  ) {
    const page = await newPage(view);
    try {
      await page.goto(`${base}/`);
      await page.waitForSelector("[data-image-uploader]");
      assert.match(await page.content(), /uploading as a guest/);
      // The picker offers no "Never", and starts at the longest a guest gets.
      const choices = await page.evaluate(() => {
        const root = document.querySelector("[data-image-uploader]")!
          .shadowRoot!;
        const sel = root.querySelector("#iu-exp") as HTMLSelectElement;
        return {
          values: [...sel.options].map((o) => o.value),
          value: sel.value,
          privacyPicker: root.querySelector("#iu-privacy") !== null,
        };
      });
      assert.ok(!choices.values.includes("0"), choices.values.join());
      // A guest picks no privacy: its uploads are public, found only by their links.
      assert.equal(choices.privacyPicker, false);
      assert.equal(choices.value, String(env.config.GUEST_EXPIRATION));
      const bytes = await makeImage("png", { width: 222 + i, height: 61 });
      await dropFiles(page, [{
        name: "guest.png",
        type: "image/png",
        b64: b64(bytes),
      }]);
      await page.waitForFunction(() => {
        const root = document.querySelector("[data-image-uploader]")!
          .shadowRoot!;
        return [...root.querySelectorAll(".ok a")].some((a) =>
          a.textContent === "Delete link"
        );
      });
      const found = await page.evaluate(() => {
        const root = document.querySelector("[data-image-uploader]")!
          .shadowRoot!;
        const del = [...root.querySelectorAll(".ok a")].find((a) =>
          a.textContent === "Delete link"
        ) as HTMLAnchorElement;
        const sel = root.querySelector("#iu-code-type") as HTMLSelectElement;
        sel.value = "Delete link";
        sel.dispatchEvent(new Event("change"));
        return {
          href: del.href,
          codes: (root.querySelector("#iu-codes") as HTMLTextAreaElement).value,
          label: sel.selectedOptions[0].textContent,
        };
      });
      assert.match(found.href, /\/delete\/[^/]+\/[^/]+$/);
      assert.equal(found.codes, found.href);
      assert.equal(found.label, "Delete links");
      const id = found.href.split("/delete/")[1].split("/")[0];
      const row = await env.deps.database.db.selectFrom("images")
        .select(["user_id", "expires_at"]).where("id", "=", id)
        .executeTakeFirstOrThrow();
      assert.ok(row.expires_at, "a guest's upload expires");

      await sendAuthForm(
        page,
        `${base}/signup`,
        `guest-then-user${i}@example.com`,
      );
      const claimed = await env.deps.database.db.selectFrom("images")
        .innerJoin("users", "users.id", "images.user_id")
        .select("users.email").where("images.id", "=", id)
        .executeTakeFirstOrThrow();
      assert.equal(claimed.email, `guest-then-user${i}@example.com`);
      await page.goto(`${base}/images`);
      assert.ok(
        await page.$(`input[name=id][value="${id}"]`),
        "in My images",
      );
      // Kept, as the notice promised: no expiry left on it, nor on its card.
      const kept = await env.deps.database.db.selectFrom("images")
        .select("expires_at").where("id", "=", id).executeTakeFirstOrThrow();
      assert.equal(kept.expires_at, null);
      const card = await page.$eval(
        `input[name=id][value="${id}"]`,
        (box) => (box.closest("li, article, tr, .card") ?? box).textContent,
      );
      assert.doesNotMatch(card ?? "", /expires/i);
    } finally {
      await page.browserContext().close();
    }
  }
});

test("the instance's first account is its admin; an admin's console shows the figures, a visitor's report from a viewer's Report link reaches the queue, and an invitation made in the console is shown once and audited", async () => {
  const { db } = env.deps.database;
  const roles = await db.selectFrom("users").select(["email", "role"])
    .where("email", "not like", "%@guest.invalid").orderBy("created_at")
    .execute();
  // lan@example.com signed up first (the alias test), the owner after.
  assert.deepEqual(roles.slice(0, 2), [
    { email: "lan@example.com", role: "admin" },
    { email: "site-owner@example.com", role: "user" },
  ]);
  await db.updateTable("users").set({ role: "admin" })
    .where("email", "=", "site-owner@example.com").execute();
  await owner.goto(`${base}/account`);
  assert.match(
    await owner.$eval("header nav", (n) => n.textContent!),
    /Admin/,
  );
  const viewer = visits.find((v) => v.name === "viewer")!.path;
  const visitor = await newPage();
  try {
    await visitor.goto(`${base}${viewer}`);
    await Promise.all([
      visitor.waitForNavigation(),
      visitor.click("a[href^='/report?image=']"),
    ]);
    await visitor.click("input[name=reason][value=spam]");
    await visitor.type("#note", "Looks like an advert");
    await Promise.all([
      visitor.waitForNavigation(),
      visitor.click("form[action='/report'] button[type=submit]"),
    ]);
    assert.match(
      await visitor.$eval("main", (m) => m.textContent!),
      /Thank you/,
    );
  } finally {
    await visitor.browserContext().close();
  }
  await owner.goto(`${base}/admin`);
  const figures = await owner.$eval(".stats", (s) => s.textContent!);
  assert.match(figures, /1Open reports/);
  await owner.goto(`${base}/admin/reports`);
  const queue = await owner.$eval("main", (m) => m.textContent!);
  assert.match(queue, /Spam or scam/);
  assert.match(queue, /Looks like an advert/);
  await owner.goto(`${base}/admin/invites`);
  await owner.select("#expires_in", "86400");
  await Promise.all([
    owner.waitForNavigation(),
    owner.click("form[action='/admin/invites'] button[type=submit]"),
  ]);
  const link = await owner.$eval(".secret", (e) => e.textContent!);
  assert.match(link, new RegExp(`^${base}/signup\\?invite=`));
  await owner.goto(`${base}/admin/audit`);
  assert.match(
    await owner.$eval("tbody", (t) => t.textContent!),
    /invite\.create/,
  );
  for (
    const section of ["", "/users", "/images", "/reports", "/invites", "/audit"]
  ) {
    visits.push({
      name: `admin${section.replace("/", "-")}`,
      path: `/admin${section}`,
      signedIn: true,
    });
  }
});

test("every page passes axe-core with no moderate, serious or critical violation, signed in and out, desktop and phone, light and dark, is never wider than the screen at 390 or 320 px, and breaks no CSP rule", async () => {
  const viewer = visits.find((v) => v.name === "viewer")!.path;
  const pages = [
    ...visits,
    { name: "home-signed-out", path: "/", signedIn: false },
    { name: "login", path: "/login", signedIn: false },
    { name: "signup", path: "/signup", signedIn: false },
    { name: "demo", path: "/demo", signedIn: false },
    { name: "viewer-signed-out", path: viewer, signedIn: false },
    { name: "not-found", path: "/no/such/page", signedIn: false },
  ];
  const cookies = await owner.browserContext().cookies();
  const report: string[] = [];
  for (const dark of [false, true]) {
    for (
      const [device, width, height] of [["desktop", 1366, 900], [
        "phone",
        390,
        844,
      ]] as const
    ) {
      const page = await newPage({ width, height, dark });
      for (const p of pages) {
        if (p.signedIn) await page.browserContext().setCookie(...cookies);
        else await page.browserContext().deleteCookie(...cookies);
        const res = await page.goto(`${base}${p.path}`, { waitUntil: "load" });
        assert.ok(res, p.path);
        if (p.name === "docs") {
          await page.waitForSelector(".swagger-ui .info .title", {
            timeout: 15_000,
          });
          // The docs follow the system's theme as the other pages do (they stayed light).
          const theme = await page.evaluate(() => ({
            swagger: document.documentElement.classList.contains("dark-mode"),
            body: getComputedStyle(document.body).backgroundColor,
          }));
          assert.deepEqual(theme, {
            swagger: dark,
            body: dark ? "rgb(28, 28, 28)" : "rgba(0, 0, 0, 0)",
          });
        }
        if (p.name === "home") {
          await page.waitForSelector("[data-image-uploader]");
        }
        // Standards mode: without a doctype a page renders in quirks mode.
        assert.equal(
          await page.evaluate(() => document.compatMode),
          "CSS1Compat",
          `${p.name} renders in quirks mode`,
        );
        await page.evaluate(AXE);
        const result: Any = await page.evaluate(() =>
          (globalThis as Any).axe.run(document, {
            resultTypes: ["violations"],
          })
        );
        const bad = result.violations.filter((v: Any) =>
          v.impact === "moderate" || v.impact === "serious" ||
          v.impact === "critical"
        );
        for (const v of bad) {
          report.push(
            `${p.name} ${device} ${
              dark ? "dark" : "light"
            }: ${v.id} (${v.impact}) ${
              v.nodes.slice(0, 3).map((n: Any) => n.target.join(" ")).join(
                " | ",
              )
            }`,
          );
        }
        // Controls stand out from what is behind them (WCAG 1.4.11, which axe does not
        // check): each field's and outlined button's border is at least 3:1.
        if (p.name !== "docs") {
          const weak: string[] = await page.evaluate(controlContrast);
          for (const w of weak) {
            report.push(`${p.name} ${device} ${dark ? "dark" : "light"}: ${w}`);
          }
        }
        if (device === "phone") {
          for (const w of [390, 320]) {
            await page.setViewport({ width: w, height });
            const scroll = await page.evaluate(() =>
              document.documentElement.scrollWidth
            );
            assert.ok(scroll <= w, `${p.name} is ${scroll} px wide at ${w}`);
          }
          await page.setViewport({ width, height });
        }
        const file = `${p.name}-${device}-${dark ? "dark" : "light"}.png`;
        const png = await page.screenshot({ fullPage: true, type: "png" });
        const meta = await sharp(png).metadata();
        assert.equal(meta.width, width);
        await Deno.writeFile(join(SHOTS, file), png);
      }
      await page.browserContext().close();
    }
  }
  assert.deepEqual(report, []);
  assert.deepEqual(problems, []);
});

test("the keyboard shows where it is: the first Tab brings the skip link into view, and focused links and buttons get a visible outline in light and dark", async () => {
  for (const dark of [false, true]) {
    const page = await newPage({ dark });
    try {
      await page.goto(`${base}/login`);
      await page.keyboard.press("Tab");
      const skip = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement;
        const r = el.getBoundingClientRect();
        const s = getComputedStyle(el);
        return {
          text: el.textContent,
          visible: r.left >= 0 && r.width > 0,
          outline: parseFloat(s.outlineWidth),
          style: s.outlineStyle,
        };
      });
      assert.equal(skip.text, "Skip to content");
      assert.ok(skip.visible, "the skip link comes into view");
      assert.ok(skip.outline >= 2 && skip.style !== "none");
      for (let i = 0; i < 3; i++) await page.keyboard.press("Tab");
      const next = await page.evaluate(() => {
        const s = getComputedStyle(document.activeElement!);
        return { outline: parseFloat(s.outlineWidth), style: s.outlineStyle };
      });
      assert.ok(
        next.outline >= 2 && next.style !== "none",
        JSON.stringify(next),
      );
    } finally {
      await page.browserContext().close();
    }
  }
});

test("underscores in monospace fields are drawn at 1x, not clipped by the field (a key reads ssSPOAKF_t7r, not ssSPOAKF t7r)", async () => {
  const page = await newPage({ width: 1366, height: 900 });
  try {
    const viewer = visits.find((v) => v.name === "viewer")!.path;
    await page.goto(`${base}${viewer}`);
    const field = (await page.$("#embed-0"))!;
    const render = async (value: string) => {
      await page.$eval(
        "#embed-0",
        (e, v) => (e as HTMLInputElement).value = v as string,
        value,
      );
      return await field.screenshot({ type: "png" });
    };
    const withUnderscore = await render("ssSPOAKF_t7r");
    const withSpace = await render("ssSPOAKF t7r");
    const raw = async (png: Uint8Array) =>
      new Uint8Array(await sharp(png).raw().toBuffer());
    const [a, b] = [await raw(withUnderscore), await raw(withSpace)];
    let differing = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differing++;
    assert.ok(differing > 0, "the underscore left no pixel: it is clipped");
  } finally {
    await page.browserContext().close();
  }
});

/**
 * In the page: the visible fields and outlined buttons whose border is under 3:1 against
 * the background behind them, described (the widget's shadow root included).
 */
function controlContrast(): string[] {
  const rgb = (c: string) => {
    const m = c.match(/[\d.]+/g)!.map(Number);
    return { r: m[0], g: m[1], b: m[2], a: m[3] ?? 1 };
  };
  const lum = ({ r, g, b }: { r: number; g: number; b: number }) => {
    const f = (v: number) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const behind = (el: Element) => {
    for (let e: Element | null = el.parentElement; e;) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.a > 0.5) return c;
      const root = e.getRootNode();
      e = e.parentElement ?? (root instanceof ShadowRoot ? root.host : null);
    }
    return rgb(getComputedStyle(document.body).backgroundColor);
  };
  const roots: (Document | ShadowRoot)[] = [document];
  for (const h of document.querySelectorAll("[data-image-uploader]")) {
    if (h.shadowRoot) roots.push(h.shadowRoot);
  }
  const weak: string[] = [];
  for (const root of roots) {
    const fields = root.querySelectorAll(
      "input:not([type=hidden]):not([type=checkbox]):not([type=file]),select,textarea,button.secondary,.drop",
    );
    for (const el of fields) {
      const s = getComputedStyle(el);
      if (el.getClientRects().length === 0 || s.visibility === "hidden") {
        continue;
      }
      const border = rgb(s.borderTopColor);
      if (parseFloat(s.borderTopWidth) === 0) continue;
      const [a, b] = [lum(border), lum(behind(el))].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < 3) {
        weak.push(
          `${el.tagName.toLowerCase()}#${el.id}.${el.className} border ${
            ratio.toFixed(2)
          }:1`,
        );
      }
    }
  }
  return weak;
}

test("the demo page uploads with the session for a signed-in user: no key asked, the dropped file lands in their images", async () => {
  await owner.goto(`${base}/demo`);
  const before = (await listed(owner)).total;
  assert.equal(
    await owner.$eval("#demo-key", (i) => (i as HTMLInputElement).required),
    false,
  );
  await owner.click("#demo-form button[type=submit]");
  await owner.waitForSelector("[data-image-uploader]");
  const png = await makeImage("png", { width: 77, height: 20 });
  await dropFiles(owner, [{
    name: "demo.png",
    type: "image/png",
    b64: b64(png),
  }]);
  await owner.waitForFunction(
    () => /Done: /.test(document.getElementById("demo-log")!.textContent!),
    { timeout: 15_000 },
  );
  const after = await listed(owner);
  assert.equal(after.total, before + 1);
  assert.ok(after.images.some((i: Any) => i.title === "demo.png"));
});

test("copy buttons work outside a secure context (plain http on a LAN name, where there is no clipboard API): the text is copied and nothing throws", async () => {
  const { key } = await userWithKey(env);
  const up = await env.app.request("/api/1/upload", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: formWith([{ name: "c.png", bytes: await makeImage("png") }]),
  });
  const rec = (await up.json()).data;
  const page = await newPage();
  try {
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.evaluateOnNewDocument(() => {
      document.addEventListener("copy", (e) => {
        const t = e.target as HTMLTextAreaElement;
        (globalThis as Any).__copied = t.value ?? String(getSelection());
      }, true);
    });
    await page.goto(`${alias}${new URL(rec.url_viewer).pathname}`);
    assert.equal(
      await page.evaluate(() => globalThis.isSecureContext),
      false,
      "the LAN name is not a secure context",
    );
    const button = (await page.$("[data-copy]"))!;
    const field = await button.evaluate((b) =>
      (document.getElementById(
        (b as HTMLElement).dataset.copy!,
      ) as HTMLInputElement).value
    );
    await button.click();
    await page.waitForFunction(
      (b) => (b as HTMLElement).textContent === "Copied",
      { timeout: 3000 },
      button,
    );
    assert.equal(
      await page.evaluate(() => (globalThis as Any).__copied),
      field,
    );
    assert.deepEqual(errors, []);
  } finally {
    await page.browserContext().close();
  }
});

/** Each row of the uploader's list: its name, its link, its error, a bar left moving. */
function uploaderRows(page: Page) {
  return page.evaluate(() => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    return [...root.querySelectorAll("li")].map((li) => ({
      name: li.querySelector(".name")?.textContent ?? "",
      link: li.querySelector(".ok a")?.textContent ?? null,
      error: li.querySelector(".err")?.textContent ?? null,
      spinning: li.querySelector("progress") !== null,
    }));
  });
}

/** Waits until the uploader's status line matches. */
function uploaderStatus(page: Page, re: RegExp) {
  return page.waitForFunction(
    (src: string) =>
      new RegExp(src).test(
        document.querySelector("[data-image-uploader]")!.shadowRoot!
          .querySelector(".status")!.textContent!,
      ),
    { timeout: 15_000 },
    re.source,
  );
}

test("a batch ties each result to its own row by position (a duplicate keeps its first title), no row keeps spinning, every link sits in one codes box with a type picker whose Copy all works without the clipboard API, and an import where every address fails shows each address's reason", async () => {
  const denied = startFixture({ "/a.png": "never", "/b.png": "never" });
  const page = await newPage();
  try {
    await page.evaluateOnNewDocument(() => {
      // What the copy command copied: its target is the widget's own textarea, inside
      // the shadow root (composedPath sees through it).
      document.addEventListener("copy", (e) => {
        const t = e.composedPath()[0] as HTMLTextAreaElement;
        (globalThis as Any).__copied = t.value;
      }, true);
    });
    // Plain http on a LAN name: no clipboard API, as for a newcomer on another machine.
    await sendAuthForm(page, `${alias}/signup`, "batch@example.com");
    await page.waitForSelector("[data-image-uploader]");
    assert.equal(await page.evaluate(() => globalThis.isSecureContext), false);
    const a = await makeImage("png", { width: 81, height: 20 });
    await dropFiles(page, [{
      name: "first.png",
      type: "image/png",
      b64: b64(a),
    }]);
    await uploaderStatus(page, /Uploaded 1 of 1/);
    const first = (await uploaderRows(page))[0].link!;

    // The same bytes under another name come back as the first record (its title is
    // "first.png"); the broken file is refused. Rows were matched by title before: the
    // duplicate's record landed on row 0 and one row spun for good.
    await dropFiles(page, [
      {
        name: "other.png",
        type: "image/png",
        b64: b64(await makeImage("png", { width: 82, height: 20 })),
      },
      { name: "again.png", type: "image/png", b64: b64(a) },
      { name: "broken.png", type: "image/png", b64: btoa("not an image") },
    ]);
    await uploaderStatus(page, /Uploaded 2 of 3/);
    const rows = await uploaderRows(page);
    assert.deepEqual(rows.map((r) => r.name), [
      "other.png",
      "again.png",
      "broken.png",
    ]);
    assert.equal(rows[1].link, first);
    assert.ok(rows[0].link && rows[0].link !== first, JSON.stringify(rows));
    assert.equal(rows[2].link, null);
    assert.match(rows[2].error ?? "", /Unsupported image type/);
    assert.deepEqual(rows.map((r) => r.spinning), [false, false, false]);

    // One box with every link of the batch, as text, for the chosen code type.
    const box = () =>
      page.evaluate(() => {
        const root = document.querySelector("[data-image-uploader]")!
          .shadowRoot!;
        const sel = root.querySelector<HTMLSelectElement>("#iu-code-type")!;
        return {
          hidden: root.querySelector<HTMLElement>(".codes")!.hidden,
          options: [...sel.options].map((o) => o.textContent),
          text: root.querySelector<HTMLTextAreaElement>("#iu-codes")!.value,
        };
      });
    let shown = await box();
    assert.equal(shown.hidden, false);
    for (
      const o of ["Direct links", "Viewer links", "HTML", "BBCode", "Markdown"]
    ) {
      assert.ok(shown.options.includes(o), `${o} in ${shown.options}`);
    }
    assert.deepEqual(shown.text.split("\n"), [rows[0].link, rows[1].link]);
    await page.evaluate(() => {
      const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
      const sel = root.querySelector<HTMLSelectElement>("#iu-code-type")!;
      sel.value = "BBCode";
      sel.dispatchEvent(new Event("change"));
    });
    shown = await box();
    const lines = shown.text.split("\n");
    assert.equal(lines.length, 2);
    lines.forEach((l, i) =>
      assert.match(
        l,
        new RegExp(
          `^\\[url=.*\\]\\[img\\]${rows[i].link}\\[/img\\]\\[/url\\]$`,
        ),
      )
    );
    await page.evaluate(() =>
      document.querySelector("[data-image-uploader]")!.shadowRoot!
        .querySelector<HTMLButtonElement>(".codes button")!.click()
    );
    await page.waitForFunction(
      () =>
        document.querySelector("[data-image-uploader]")!.shadowRoot!
          .querySelector(".codes button")!.textContent === "Copied",
      {
        timeout: 3000,
      },
    );
    assert.equal(
      await page.evaluate(() => (globalThis as Any).__copied),
      shown.text,
    );

    // Every address refused by the guard: each row says why, the box is gone.
    await page.evaluate((urls: string) => {
      const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
      root.querySelector("textarea#iu-urls")!.textContent = "";
      (root.querySelector("textarea#iu-urls") as HTMLTextAreaElement).value =
        urls;
      root.querySelector<HTMLFormElement>("form.urls")!.requestSubmit();
    }, `${denied.origin}/a.png\n${denied.origin}/b.png`);
    await uploaderStatus(page, /No files could be uploaded/);
    const failed = await uploaderRows(page);
    assert.deepEqual(
      failed.map((r) => [r.error, r.spinning]),
      [["URL not allowed", false], ["URL not allowed", false]],
    );
    assert.equal((await box()).hidden, true);
    assert.equal(denied.requests.length, 0, "the denied server saw nothing");
  } finally {
    await page.browserContext().close();
    await denied.close();
  }
});

test("teardown", async () => {
  await owner.browserContext().close();
  await browser.close();
  await shooter.close();
  await server.shutdown();
  await fixture.close();
  await env.close();
  if (Deno.env.get("UPDATE_SITE_SHOTS") !== "1") {
    await Deno.remove(SHOTS, { recursive: true });
  }
});
