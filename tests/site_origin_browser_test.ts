/**
 * Issue #52 in a real browser: the site at a second address with no BASE_URL (the server
 * on 127.0.0.2, reached as `photos-lan.test`, a name Chromium maps itself: no DNS), its
 * IMAGE_HOST_URL another origin (`cdn-lan.test`, a CDN before the same service). Every
 * link, thumbnail and form must work at the address the site was opened by.
 */
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { test, type TestEnv, testEnv } from "./helpers.ts";
import { requireChromium } from "./browser_service.ts";
import { CHROMIUM_FLAGS } from "../services/screenshots/chromium_launch.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { createUser } from "../services/accounts/accounts.ts";
import { createApiKey } from "../services/accounts/api_keys.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const server = Deno.serve(
  { port: 0, hostname: "127.0.0.2", onListen: () => {} },
  (req) => env.app.fetch(req),
);
const port = server.addr.port;
const SITE = `http://photos-lan.test:${port}`;
const CDN = `http://cdn-lan.test:${port}`;
const env: TestEnv = await testEnv({
  env: { BASE_URL: undefined, IMAGE_HOST_URL: CDN },
});

const browser: Browser = await puppeteer.launch({
  executablePath: requireChromium(),
  headless: true,
  args: [
    ...CHROMIUM_FLAGS,
    "--no-sandbox",
    "--host-resolver-rules=MAP photos-lan.test 127.0.0.2, MAP cdn-lan.test 127.0.0.2",
  ],
});
/** Requests to anywhere but the two names of our server, and page errors. */
const outside: string[] = [];
const problems: string[] = [];

async function newPage(): Promise<Page> {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  page.on("pageerror", (e) => problems.push(`${page.url()}: ${e}`));
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) {
      problems.push(`${page.url()}: ${m.text()}`);
    }
  });
  await page.setRequestInterception(true);
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (
      u.origin === SITE || u.origin === CDN || u.protocol === "data:" ||
      u.protocol === "blob:"
    ) return r.continue();
    outside.push(r.url());
    return r.abort();
  });
  return page;
}

/** Every <img> of the page that is shown: its source and whether it loaded. */
function images(page: Page) {
  return page.$$eval("img", (imgs) =>
    imgs.map((i) => ({
      src: i.currentSrc || i.src,
      loaded: i.complete && i.naturalWidth > 0,
    })));
}

/** Scrolls so lazy images load, then waits until every image has settled. */
async function settle(page: Page) {
  await page.evaluate(() => globalThis.scrollTo(0, document.body.scrollHeight));
  await page.waitForFunction(
    () => [...document.images].every((i) => i.complete),
    { timeout: 15_000 },
  );
}

/** Drops a PNG on the home uploader. */
async function dropPng(page: Page, name: string, bytes: Uint8Array) {
  await page.evaluate(
    (name: string, b64: string) => {
      const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
      const dt = new DataTransfer();
      const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([raw], name, { type: "image/png" }));
      root.querySelector(".drop")!.dispatchEvent(
        new DragEvent("drop", { dataTransfer: dt, bubbles: true }),
      );
    },
    name,
    btoa(String.fromCharCode(...bytes)),
  );
}

/** The uploader's one finished row: its link, link text and loaded preview. */
async function uploadedRow(page: Page) {
  await page.waitForFunction(
    () =>
      /Uploaded 1 of 1/.test(
        document.querySelector("[data-image-uploader]")!.shadowRoot!
          .querySelector(".status")!.textContent!,
      ),
    { timeout: 15_000 },
  );
  return await page.evaluate(async () => {
    const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
    const img = root.querySelector("li img") as HTMLImageElement;
    await img.decode().catch(() => {});
    return {
      href: (root.querySelector(".ok a") as HTMLAnchorElement).href,
      text: root.querySelector(".ok a")!.textContent,
      thumb: img.src,
      loaded: img.naturalWidth > 0,
    };
  });
}

const email = "origin@example.com";
const password = "a long enough password";
const user = await createUser(env.deps.database.db, email, password);
const { key } = await createApiKey(env.deps.database.db, user.id, "test");
let page: Page;
const uploaded: Record<string, Any> = {};

test("signed in by the log-in form at a second address with no BASE_URL, the session works there", async () => {
  page = await newPage();
  await page.goto(`${SITE}/login`);
  await page.type("#email", email);
  await page.type("#password", password);
  await Promise.all([
    page.waitForNavigation(),
    page.click("button[type=submit]"),
  ]);
  assert.equal(page.url(), `${SITE}/`);
  assert.ok(await page.$('form[action="/logout"]'), "signed in");
});

test("the home uploader's result links stay at the address the page was opened by, and its preview loads", async () => {
  await page.goto(`${SITE}/`);
  await page.waitForSelector("[data-image-uploader]");
  const bytes = await makeImage("png", { width: 420, height: 300 });
  await dropPng(page, "lan.png", bytes);
  const result = await uploadedRow(page);
  assert.match(result.href, new RegExp(`^${SITE}/i/`));
  // A public image's link is IMAGE_HOST_URL's (the CDN), and it loads from there.
  assert.match(result.text!, new RegExp(`^${CDN}/`));
  assert.match(result.thumb, new RegExp(`^${CDN}/`));
  assert.ok(result.loaded, "the preview loaded");
});

test("My images shows a private image's thumbnail (fetched from this address, where the session is) and a public one's from IMAGE_HOST_URL, and its links stay here", async () => {
  for (const [name, privacy] of [["priv", "private"], ["pub", "public"]]) {
    const form = formWith([{
      name: `${name}.png`,
      bytes: await makeImage("png", { width: 500 + name.length, height: 200 }),
    }]);
    const res = await env.app.request(`${SITE}/api/1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    const id = (await res.json()).data.id;
    const set = await env.app.request(`${SITE}/api/1/images/${id}`, {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ privacy }),
    });
    uploaded[name] = (await set.json()).data;
    assert.equal(uploaded[name].privacy, privacy);
  }
  await page.goto(`${SITE}/images`);
  await settle(page);
  const shown = await images(page);
  const priv = shown.find((i) => i.src.includes(uploaded.priv.id));
  const pub = shown.find((i) => i.src.includes(uploaded.pub.id));
  assert.ok(priv && pub, JSON.stringify(shown));
  assert.ok(priv.src.startsWith(`${SITE}/`), priv.src);
  assert.ok(priv.loaded, "the private thumbnail loaded");
  assert.ok(pub.src.startsWith(`${CDN}/`), pub.src);
  assert.ok(pub.loaded, "the public thumbnail loaded");
  for (const i of shown) assert.ok(i.loaded, `${i.src} loaded`);
  const hrefs = await page.$$eval(
    "a[href]",
    (as) => as.map((a) => (a as HTMLAnchorElement).href),
  );
  for (const h of hrefs) assert.ok(h.startsWith(`${SITE}/`), h);
});

test("the home uploader's preview of a private image (a duplicate of one) comes from this address, where the session is, not from IMAGE_HOST_URL", async () => {
  await page.goto(`${SITE}/`);
  await page.waitForSelector("[data-image-uploader]");
  // The same bytes as the private image: the answer is its record, private.
  const bytes = await makeImage("png", { width: 504, height: 200 });
  await dropPng(page, "again.png", bytes);
  const result = await uploadedRow(page);
  assert.match(result.href, new RegExp(`^${SITE}/i/${uploaded.priv.id}$`));
  assert.ok(result.thumb.startsWith(`${SITE}/`), result.thumb);
  assert.ok(result.loaded, "the preview loaded");
});

test("a private image's viewer page shows its picture at this address", async () => {
  await page.goto(`${SITE}/i/${uploaded.priv.id}`);
  await settle(page);
  const shown = await images(page);
  assert.ok(shown.length >= 1);
  for (const i of shown) {
    assert.ok(i.src.startsWith(`${SITE}/`), i.src);
    assert.ok(i.loaded, `${i.src} loaded`);
  }
});

test("an album's title and cover on Albums link this address, and its page shows its images", async () => {
  const made = await env.app.request(`${SITE}/api/1/albums`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ title: "LAN album" }),
  });
  const album = (await made.json()).data;
  await env.app.request(`${SITE}/api/1/images/${uploaded.priv.id}`, {
    method: "PATCH",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ album_id: album.id }),
  });
  await page.goto(`${SITE}/albums`);
  await settle(page);
  for (const i of await images(page)) assert.ok(i.loaded, `${i.src} loaded`);
  await Promise.all([
    page.waitForNavigation(),
    page.click('.grid .card a.title[href*="/a/"]'),
  ]);
  assert.equal(page.url(), `${SITE}/a/${album.id}`);
  await settle(page);
  const shown = await images(page);
  assert.ok(shown.some((i) => i.src.includes(uploaded.priv.id)));
  for (const i of shown) assert.ok(i.loaded, `${i.src} loaded`);
});

test("/docs offers this address as the server, and Try it out reaches it (no CORS failure)", async () => {
  await page.goto(`${SITE}/docs`);
  await page.waitForSelector(".servers select", { timeout: 15_000 });
  const first = await page.$eval(
    ".servers select",
    (s) => (s as HTMLSelectElement).value,
  );
  assert.equal(first, SITE);
  // What Try it out does: a call to that server from this page, with the key.
  const status = await page.evaluate(async (k: string) => {
    const r = await fetch(
      `${
        (document.querySelector(".servers select") as HTMLSelectElement).value
      }/api/1/images`,
      { headers: { authorization: `Bearer ${k}` } },
    );
    return r.status;
  }, key);
  assert.equal(status, 200);
});

test("Export my data on the account page downloads a zip Info-ZIP reads, with every original and the manifest", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-download-" });
  try {
    const cdp = await page.createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", {
      behavior: "allow",
      downloadPath: dir,
      browserContextId: page.browserContext().id,
      eventsEnabled: true,
    });
    const finished = new Promise<void>((resolve, reject) => {
      cdp.on("Browser.downloadProgress", (e: Any) => {
        if (e.state === "completed") resolve();
        if (e.state === "canceled") reject(new Error("download cancelled"));
      });
    });
    await page.goto(`${SITE}/account`);
    await page.click('form[action="/account/export"] button');
    await finished;
    const files = [...Deno.readDirSync(dir)].map((f) => f.name);
    assert.equal(files.length, 1, files.join(" "));
    assert.match(files[0], /^image-host-export-\d{4}-\d{2}-\d{2}\.zip$/);
    const listing = await new Deno.Command("unzip", {
      args: ["-t", `${dir}/${files[0]}`],
      stdout: "piped",
    }).output();
    const text = new TextDecoder().decode(listing.stdout);
    assert.ok(listing.success, text);
    for (const rec of [uploaded.priv, uploaded.pub]) {
      assert.ok(text.includes(`images/${rec.id}.png`), rec.id);
    }
    assert.ok(text.includes("manifest.json"));
    // Still on the account page: the download did not navigate away.
    assert.equal(page.url(), `${SITE}/account`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("nothing left the two addresses, and no page reported an error", () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(problems, []);
});

test("teardown", async () => {
  await browser.close();
  await server.shutdown();
  await env.close();
});
