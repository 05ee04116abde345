import assert from "node:assert/strict";
import ts from "typescript";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import sharp from "sharp";
import { test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import {
  CHROMIUM_FLAGS,
  findChromium,
} from "../services/screenshots/chromium_launch.ts";
import { createApiClient } from "../sdk/src/client.ts";
import { ServiceError } from "../sdk/src/errors.ts";

const CHROMIUM = findChromium(Deno.env.get("TEST_CHROMIUM_PATH"));
if (!CHROMIUM) {
  throw new Error(
    "Chromium is required for these tests: apt-get install -y chromium",
  );
}

// deno-lint-ignore no-explicit-any
type Any = any;

// The service on a real loopback port, and a customer's page on another origin. The
// resumable uploads' requests are noted as they come.
const tusLog: string[] = [];
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  (req) => {
    const path = new URL(req.url).pathname;
    if (path.startsWith("/api/1/tus") && req.method !== "OPTIONS") {
      tusLog.push(req.method);
    }
    return env.app.fetch(req);
  },
);
const service = `http://127.0.0.1:${server.addr.port}`;
const env: TestEnv = await testEnv({ env: { BASE_URL: service } });
const { key } = await userWithKey(env);
const site = startFixture({
  "/page":
    `<!doctype html><html><head><style>button{background:rgb(255,0,0)!important}</style>
    <script src="${service}/service-sdk.min.js"></script></head><body><h1>Customer site</h1></body></html>`,
  "/blank": `<!doctype html><html><body></body></html>`,
});

// A ~1.4 MB noisy PNG so the upload reports progress in several steps, and a small JPEG.
const noise = new Uint8Array(700 * 500 * 3);
for (let i = 0; i < noise.length; i += 65536) {
  crypto.getRandomValues(noise.subarray(i, Math.min(noise.length, i + 65536)));
}
const bigPng = new Uint8Array(
  await sharp(noise, { raw: { width: 700, height: 500, channels: 3 } }).png()
    .toBuffer(),
);
const smallJpeg = new Uint8Array(
  await sharp({
    create: { width: 40, height: 30, channels: 3, background: "#0a0" },
  }).jpeg().toBuffer(),
);
/** A JPEG no earlier test uploaded (the service answers repeated bytes with the old record). */
async function freshJpeg(): Promise<Uint8Array> {
  const c = crypto.getRandomValues(new Uint8Array(3));
  return new Uint8Array(
    await sharp({
      create: {
        width: 40,
        height: 30,
        channels: 3,
        background: { r: c[0], g: c[1], b: c[2] },
      },
    })
      .jpeg().toBuffer(),
  );
}
const b64 = (b: Uint8Array) =>
  btoa(Array.from(b, (c) => String.fromCharCode(c)).join(""));

const browser: Browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [...CHROMIUM_FLAGS, "--no-sandbox"],
});

async function customerPage(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${site.origin}/page`);
  await page.evaluate(
    (big: string, small: string) => {
      const toFile = (s: string, name: string, type: string) =>
        new File([Uint8Array.from(atob(s), (c) => c.charCodeAt(0))], name, {
          type,
        });
      const w = globalThis as unknown as Record<string, unknown>;
      w.bigFile = toFile(big, "big.png", "image/png");
      w.smallFile = toFile(small, "small.jpg", "image/jpeg");
      w.textFile = new File(["hello"], "notes.txt", { type: "text/plain" });
    },
    b64(bigPng),
    b64(smallJpeg),
  );
  return page;
}

test("upload() from another site's page resolves to the SPEC record with url, progress rising to 100 in order", async () => {
  const page = await customerPage();
  try {
    const out = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      const app = new w.ServiceApp(k);
      const ps: number[] = [];
      const res = await app.upload(w.bigFile, {
        onProgress: (p: number) => ps.push(p),
      });
      return { res, ps, base: app.baseUrl };
    }, key);
    assert.equal(out.base, service); // defaulted to where the script came from
    assert.equal(out.res.status, 200);
    assert.equal(out.res.success, true);
    assert.equal(out.res.url, out.res.data.url);
    assert.match(out.res.url, new RegExp(`^${service}/[A-Za-z0-9_-]+\\.png$`));
    assert.equal(out.res.data.title, "big.png");
    assert.equal(out.res.data.image.mime, "image/png");
    assert.equal(out.ps[0], 0);
    assert.equal(out.ps.at(-1), 100);
    assert.ok(out.ps.length >= 2);
    assert.deepEqual(out.ps, [...out.ps].sort((a, b) => a - b));
    const served = await fetch(out.res.url);
    assert.equal(served.status, 200);
    assert.equal((await served.arrayBuffer()).byteLength, out.res.data.size);
  } finally {
    await page.close();
  }
});

test("a file over resumableFromMB goes resumable (tus) from another site's page: progress to 100, pause stops it and resume goes on from the server's offset, and after a reload the same file picked again goes on from where it stopped, not from zero", async () => {
  const photo = b64(await freshJpegOf(900_000));
  const run = async (page: Page, pauseAt: number | undefined) =>
    await page.evaluate(
      async (k: string, data: string, pauseAt: number | undefined) => {
        const w = globalThis as unknown as Record<string, Any>;
        const file = new File(
          [Uint8Array.from(atob(data), (c) => c.charCodeAt(0))],
          "train.jpg",
          { type: "image/jpeg", lastModified: 1_700_000_000_000 },
        );
        const ps: number[] = [];
        let controls: Any;
        let paused = false;
        const res = await new w.ServiceApp(k).upload(file, {
          resumableFromMB: 0.5,
          onResumable: (c: Any) => controls = c,
          onProgress: (p: number) => {
            ps.push(p);
            if (pauseAt !== undefined && !paused && p >= pauseAt) {
              paused = true;
              controls.pause();
              setTimeout(() => controls.resume(), 500);
            }
          },
        });
        return { res, ps, paused };
      },
      key,
      photo,
      pauseAt,
    );
  // A slow link, so the upload is still going when it is paused or the page reloaded.
  const slow = async (page: Page) => {
    const cdp = await page.createCDPSession();
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 20,
      downloadThroughput: 10_000_000,
      uploadThroughput: 300_000,
    });
  };
  const page = await customerPage();
  try {
    tusLog.length = 0;
    await slow(page);
    const paused = await run(page, 30);
    assert.equal(paused.paused, true);
    assert.equal(paused.res.data.title, "train.jpg");
    assert.equal(paused.ps.at(-1), 100);
    assert.equal(tusLog.filter((m) => m === "POST").length, 1, String(tusLog));
    assert.ok(tusLog.includes("HEAD"), `resumed by HEAD: ${tusLog}`);

    // Reloaded mid-upload: the same file picked again resumes (no second creation).
    tusLog.length = 0;
    const again = b64(await freshJpegOf(900_000));
    const started = page.evaluate(
      (k: string, data: string) => {
        const w = globalThis as unknown as Record<string, Any>;
        const file = new File(
          [Uint8Array.from(atob(data), (c) => c.charCodeAt(0))],
          "reload.jpg",
          { type: "image/jpeg", lastModified: 1_700_000_000_000 },
        );
        new w.ServiceApp(k).upload(file, { resumableFromMB: 0.5 }).catch(
          () => {},
        );
      },
      key,
      again,
    );
    await started;
    const until = Date.now() + 20_000;
    while (!tusLog.includes("PATCH") && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 800));
    await page.reload();
    const done = await page.evaluate(
      async (k: string, data: string) => {
        const w = globalThis as unknown as Record<string, Any>;
        const file = new File(
          [Uint8Array.from(atob(data), (c) => c.charCodeAt(0))],
          "reload.jpg",
          { type: "image/jpeg", lastModified: 1_700_000_000_000 },
        );
        return await new w.ServiceApp(k).upload(file, { resumableFromMB: 0.5 });
      },
      key,
      again,
    );
    assert.equal(done.data.title, "reload.jpg");
    assert.equal(
      tusLog.filter((m) => m === "POST").length,
      1,
      `one creation, the reloaded page resumed it: ${tusLog}`,
    );
    assert.ok(tusLog.includes("HEAD"), String(tusLog));
  } finally {
    await page.close();
  }
});

/** A unique noise JPEG of about `bytes`. */
async function freshJpegOf(bytes: number): Promise<Uint8Array> {
  const side = Math.round(Math.sqrt(bytes / 1.2));
  const raw = new Uint8Array(side * side * 3);
  for (let i = 0; i < raw.length; i += 65536) {
    crypto.getRandomValues(raw.subarray(i, Math.min(raw.length, i + 65536)));
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width: side, height: side, channels: 3 } })
      .jpeg({ quality: 90 }).toBuffer(),
  );
}

test("uploadMultiple() resolves to {images, count}", async () => {
  const page = await customerPage();
  try {
    const res = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      const second = new File(
        [await w.bigFile.slice(0, w.bigFile.size).arrayBuffer()],
        "copy.png",
        { type: "image/png" },
      );
      return await new w.ServiceApp(k).uploadMultiple([
        w.smallFile,
        w.textFile,
        second,
      ]);
    }, key);
    assert.equal(res.success, true);
    assert.equal(res.data.count, 2);
    assert.equal(res.data.images.length, 2);
    assert.equal(res.data.images[0].title, "small.jpg");
    assert.deepEqual(
      res.data.errors.map((
        e: { index: number; code: number },
      ) => [e.index, e.code]),
      [[1, 141]],
    );
  } finally {
    await page.close();
  }
});

test("a bad key rejects with message 'Invalid API key', code 110 and status 401, and the widget's onError gets it", async () => {
  const page = await customerPage();
  try {
    const out = await page.evaluate(async () => {
      const w = globalThis as unknown as Record<string, Any>;
      const app = new w.ServiceApp("ihk_not_a_real_key");
      const direct = await app.upload(w.smallFile).catch((
        e: { message: string; code: number; status: number },
      ) => ({
        message: e.message,
        code: e.code,
        status: e.status,
      }));
      const viaWidget = await new Promise((resolve) => {
        const widget = app.createUploadWidget({
          onError: (e: { message: string }, files: File[]) =>
            resolve({ message: e.message, files: files.length }),
        });
        const dt = new DataTransfer();
        dt.items.add(w.smallFile);
        widget.element.shadowRoot.querySelector(".drop").dispatchEvent(
          new DragEvent("drop", {
            dataTransfer: dt,
            bubbles: true,
            cancelable: true,
          }),
        );
      });
      return { direct, viaWidget };
    });
    assert.deepEqual(out.direct, {
      message: "Invalid API key",
      code: 110,
      status: 401,
    });
    assert.deepEqual(out.viaWidget, { message: "Invalid API key", files: 1 });
  } finally {
    await page.close();
  }
});

test("the widget sends a file over resumableFromMB resumable with a Pause / Resume button on its row, and the rest in one request: both stored, both listed in the codes", async () => {
  const page = await customerPage();
  try {
    const big = b64(await freshJpegOf(900_000));
    const cdp = await page.createCDPSession();
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 20,
      downloadThroughput: 10_000_000,
      uploadThroughput: 300_000,
    });
    tusLog.length = 0;
    const out = await page.evaluate(
      async (k: string, data: string) => {
        const w = globalThis as unknown as Record<string, Any>;
        const large = new File(
          [Uint8Array.from(atob(data), (c) => c.charCodeAt(0))],
          "large.jpg",
          { type: "image/jpeg" },
        );
        const clicks: string[] = [];
        const res = await new Promise((resolve, reject) => {
          const widget = new w.ServiceApp(k).createUploadWidget({
            multiple: true,
            resumableFromMB: 0.5,
            onSuccess: (r: unknown) => resolve(r),
            onError: (e: Error) => reject(e),
          });
          const root = widget.element.shadowRoot;
          const dt = new DataTransfer();
          dt.items.add(large);
          dt.items.add(w.smallFile);
          root.querySelector(".drop").dispatchEvent(
            new DragEvent("drop", {
              dataTransfer: dt,
              bubbles: true,
              cancelable: true,
            }),
          );
          // Pause once the button shows and some bytes went, then resume.
          const poll = setInterval(() => {
            const b = root.querySelector("button.pause") as
              | HTMLButtonElement
              | null;
            const bar = root.querySelector("progress.fp") as
              | HTMLProgressElement
              | null;
            if (b && bar && bar.value >= 20 && clicks.length === 0) {
              b.click();
              clicks.push(b.textContent!);
              setTimeout(() => {
                b.click();
                clicks.push(b.textContent!);
              }, 500);
              clearInterval(poll);
            }
          }, 20);
        });
        const root = document.querySelector("[data-image-uploader]")!
          .shadowRoot!;
        return {
          res,
          clicks,
          links: root.querySelectorAll(".ok a").length,
          status: root.querySelector(".status")?.textContent,
        };
      },
      key,
      big,
    );
    const res = out.res as {
      data: { count: number; images: { title: string }[] };
    };
    assert.equal(res.data.count, 2);
    assert.deepEqual(res.data.images.map((i) => i.title), [
      "large.jpg",
      "small.jpg",
    ]);
    assert.deepEqual(out.clicks, ["Resume", "Pause"]);
    assert.equal(tusLog.filter((m) => m === "POST").length, 1, String(tusLog));
    assert.ok(tusLog.includes("HEAD"), `resumed: ${tusLog}`);
  } finally {
    await page.close();
  }
});

test("the widget takes a dropped file: onStart, onProgress in order to 100, onSuccess with the multi-file shape", async () => {
  const page = await customerPage();
  try {
    const out = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      const events: unknown[] = [];
      const res = await new Promise((resolve, reject) => {
        const widget = new w.ServiceApp(k).createUploadWidget({
          multiple: true,
          onStart: (files: File[]) => events.push(["start", files.length]),
          onProgress: (p: number) => events.push(["progress", p]),
          onSuccess: (r: unknown, files: File[]) => {
            events.push(["success", files.length]);
            resolve(r);
          },
          onError: (e: Error) => reject(e),
        });
        const dt = new DataTransfer();
        dt.items.add(w.bigFile);
        widget.element.shadowRoot.querySelector(".drop").dispatchEvent(
          new DragEvent("drop", {
            dataTransfer: dt,
            bubbles: true,
            cancelable: true,
          }),
        );
      });
      const root = document.querySelector("[data-image-uploader]")!.shadowRoot!;
      return {
        res,
        events,
        links: Array.from(root.querySelectorAll(".ok a")).map((a) =>
          a.textContent
        ),
        copyButtons: root.querySelectorAll("li button.copy").length,
        copyAll: root.querySelector(".codes button")?.textContent,
        dialog: root.querySelector(".panel")!.getAttribute("role"),
        buttonBg:
          getComputedStyle(root.querySelector("button.copy")!).backgroundColor,
      };
    }, key);
    const res = out.res as {
      data: { images: { url: string }[]; count: number };
    };
    assert.equal(res.data.count, 1);
    assert.deepEqual(out.links, [res.data.images[0].url]);
    // link, viewer link, Markdown, HTML, BBCode
    assert.equal(out.copyButtons, 5);
    assert.equal(out.copyAll, "Copy all");
    assert.equal(out.dialog, "dialog");
    assert.notEqual(out.buttonBg, "rgb(255, 0, 0)"); // the page's CSS does not reach into the widget
    assert.deepEqual(out.events[0], ["start", 1]);
    assert.deepEqual(out.events.at(-1), ["success", 1]);
    const ps = (out.events as [string, number][]).filter((e) =>
      e[0] === "progress"
    ).map((e) => e[1]);
    assert.equal(ps.at(-1), 100);
    assert.deepEqual(ps, [...ps].sort((a, b) => a - b));
  } finally {
    await page.close();
  }
});

test("pasting an image into the page uploads it through the widget", async () => {
  const page = await customerPage();
  try {
    const res = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      return await new Promise((resolve, reject) => {
        new w.ServiceApp(k).createUploadWidget({
          onSuccess: (r: unknown) => resolve(r),
          onError: reject,
        });
        const dt = new DataTransfer();
        dt.items.add(w.smallFile);
        document.dispatchEvent(
          new ClipboardEvent("paste", {
            clipboardData: dt,
            bubbles: true,
            cancelable: true,
          }),
        );
      });
    }, key);
    const r = res as { url: string; data: { title: string; url: string } };
    assert.equal(r.data.title, "small.jpg");
    assert.equal(r.url, r.data.url);
    const served = await fetch(r.url);
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("content-type"), "image/jpeg");
    await served.body?.cancel();
  } finally {
    await page.close();
  }
});

test("the keyboard opens the file picker from the focused drop zone and the chosen file uploads", async () => {
  const page = await customerPage();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/picked.jpg`, await freshJpeg());
    await page.evaluate((k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      w.done = new Promise((resolve) =>
        new w.ServiceApp(k).createUploadWidget({
          onSuccess: (r: unknown) => resolve(r),
        })
      );
    }, key);
    await page.bringToFront();
    const focused = await page.evaluate(() =>
      document.querySelector("[data-image-uploader]")!.shadowRoot!.activeElement
        ?.className
    );
    assert.equal(focused, "drop");
    // The interception must be on before the key goes down.
    const chooserWait = page.waitForFileChooser({ timeout: 15_000 });
    await new Promise((r) => setTimeout(r, 200));
    await page.keyboard.press("Enter");
    const chooser = await chooserWait;
    await chooser.accept([`${dir}/picked.jpg`]);
    const res = await page.evaluate(() =>
      (globalThis as unknown as { done: Promise<{ data: { title: string } }> })
        .done
    );
    assert.equal(res.data.title, "picked.jpg");
    // Escape closes the dialog.
    await page.keyboard.press("Escape");
    assert.equal(
      await page.evaluate(() =>
        document.querySelector("[data-image-uploader]")
      ),
      null,
    );
  } finally {
    await page.close();
    await Deno.remove(dir, { recursive: true });
  }
});

test("client-side checks refuse wrong types and oversize files before sending, the headline naming why; a text file named .png is refused by the service with its reason on its row and no broken preview; a rate limit says when to try again; a 160 B file reads 160 B; uploads can be cancelled", async () => {
  const page = await customerPage();
  const before =
    (await env.deps.database.db.selectFrom("images").selectAll().execute())
      .length;
  try {
    const out = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      const app = new w.ServiceApp(k);
      const drop = (widget: { element: HTMLElement }, f: File) => {
        const dt = new DataTransfer();
        dt.items.add(f);
        widget.element.shadowRoot!.querySelector(".drop")!.dispatchEvent(
          new DragEvent("drop", {
            dataTransfer: dt,
            bubbles: true,
            cancelable: true,
          }),
        );
      };
      /**
       * Drops `f` on a new widget; once it fails: the headline and the row. Unless
       * `sent`, being sent at all is the wrong answer.
       */
      const refused = (
        f: File,
        opts: Record<string, unknown> = {},
        sent = false,
      ) =>
        new Promise<Record<string, Any>>((resolve) => {
          document.querySelector("[data-image-uploader]")?.remove();
          const widget = app.createUploadWidget({
            ...opts,
            onError: (e: Error) =>
              // The row is settled right after onError, in the same turn.
              setTimeout(() => {
                const root = widget.element.shadowRoot;
                const img = root.querySelector("li img") as HTMLImageElement;
                resolve({
                  error: e.message,
                  headline: root.querySelector(".status").textContent,
                  row: root.querySelector("li .err")?.textContent,
                  size: root.querySelector("li .meta div:nth-child(2)")
                    ?.textContent,
                  preview: img.getAttribute("src"),
                  previewBroken: img.complete && img.naturalWidth === 0 &&
                    img.hasAttribute("src"),
                });
              }, 300),
            onStart: () => sent || resolve({ error: "sent!" }),
          });
          drop(widget, f);
        });
      const wrongType = await refused(w.textFile);
      const tooBig = await refused(w.bigFile, { maxFileSize: 1000 });
      const fake = await refused(
        new File(["x".repeat(160)], "fake.png", { type: "image/png" }),
        {},
        true,
      );
      const ctl = new AbortController();
      const pending = app.upload(w.bigFile, { signal: ctl.signal });
      ctl.abort();
      const cancelled = await pending.then(
        () => "uploaded",
        (e: { code: number }) => e.code,
      );
      return { wrongType, tooBig, fake, cancelled };
    }, key);
    assert.equal(out.wrongType.error, "Unsupported image type");
    assert.equal(out.wrongType.headline, "Unsupported image type");
    assert.match(String(out.tooBig.headline), /^File size too large \(over /);
    assert.match(String(out.tooBig.row), /File size too large/);
    // Sent (its name and type say PNG); the service's 415 is the row's reason.
    assert.match(String(out.fake.headline), /Unsupported image type/);
    assert.match(String(out.fake.row), /Unsupported image type/);
    assert.equal(out.fake.size, "160 B");
    assert.equal(out.fake.previewBroken, false, "no broken-image icon");
    assert.equal(out.cancelled, -1);
    assert.equal(
      (await env.deps.database.db.selectFrom("images").selectAll().execute())
        .length,
      before,
    );

    // A rate limit's answer (429 with Retry-After) says when to try again.
    await page.setRequestInterception(true);
    page.on("request", (r) => {
      if (!r.url().endsWith("/api/1/upload")) return r.continue();
      r.respond({
        status: 429,
        headers: {
          "Retry-After": "42",
          "Access-Control-Allow-Origin": "*",
          "Access-Control-Expose-Headers": "Retry-After",
        },
        contentType: "application/json",
        body: JSON.stringify({
          status: 429,
          success: false,
          error: { code: 170, message: "Rate limit exceeded" },
        }),
      });
    });
    const limited = await page.evaluate(async (k: string) => {
      const w = globalThis as unknown as Record<string, Any>;
      const app = new w.ServiceApp(k);
      document.querySelector("[data-image-uploader]")?.remove();
      return await new Promise((resolve) => {
        const widget = app.createUploadWidget({
          onError: (e: { retryAfter?: number }) =>
            setTimeout(() =>
              resolve({
                retryAfter: e.retryAfter,
                headline: widget.element.shadowRoot.querySelector(".status")
                  .textContent,
              }), 100),
        });
        const dt = new DataTransfer();
        dt.items.add(w.smallFile);
        widget.element.shadowRoot.querySelector(".drop").dispatchEvent(
          new DragEvent("drop", { dataTransfer: dt, bubbles: true }),
        );
      });
    }, key);
    assert.deepEqual(limited, {
      retryAfter: 42,
      headline: "Rate limit exceeded: try again in 42 s",
    });
  } finally {
    await page.close();
  }
});

test("service-sdk.min.js is served minified with a source map, long caching, an ETag and CORS", async () => {
  const res = await fetch(`${service}/service-sdk.min.js`);
  const js = await res.text();
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /javascript/);
  assert.match(res.headers.get("cache-control")!, /max-age=86400/);
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
  assert.equal(res.headers.get("sourcemap"), "/service-sdk.min.js.map");
  // Minified, and small: 20.1 KB (8.2 KB gzipped) on 2026-11-27. The tus client is not
  // in it: its own module, loaded at the first large file.
  assert.ok(js.length < 24_000 && !js.includes("\n  "), "minified");
  assert.ok(
    !js.includes("findPreviousUploads"),
    "the tus client is not bundled in",
  );
  const tus = await fetch(`${service}/service-sdk-resumable.mjs`);
  assert.equal(tus.status, 200);
  assert.equal(tus.headers.get("access-control-allow-origin"), "*");
  assert.ok((await tus.text()).includes("findPreviousUploads"));
  const again = await fetch(`${service}/service-sdk.min.js`, {
    headers: { "if-none-match": res.headers.get("etag")! },
  });
  assert.equal(again.status, 304);
  await again.body?.cancel();
  const map = await (await fetch(`${service}/service-sdk.min.js.map`)).json();
  assert.ok(map.sources.some((s: string) => s.includes("service_app.ts")));
  const demo = await fetch(`${service}/demo`);
  assert.match(await demo.text(), /<script src="\/service-sdk.min.js">/);
  // CORS preflight for cross-site uploads.
  const pre = await fetch(`${service}/api/1/upload`, {
    method: "OPTIONS",
    headers: {
      origin: site.origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization",
    },
  });
  assert.equal(pre.status, 204);
  assert.match(
    pre.headers.get("access-control-allow-headers")!,
    /authorization/i,
  );
  await pre.body?.cancel();
});

test("the typed client generated from openapi.yaml round-trips an upload, a read, a listing and a delete", async () => {
  const api = createApiClient({ baseUrl: service, apiKey: key });
  const up = await api.upload([
    new File([(await freshJpeg()) as Uint8Array<ArrayBuffer>], "typed.jpg", {
      type: "image/jpeg",
    }),
  ], { expiration: 3600 });
  const rec = up.data as { id: string; url: string; expiration: number };
  assert.equal(rec.expiration, 3600);
  const got = await api.getImage(rec.id);
  assert.equal(got.data.url, rec.url);
  const one = await api.listImages({ perPage: 1 });
  assert.equal(one.data.images.length, 1);
  assert.equal(one.data.per_page, 1);
  const listed = await api.listImages({ perPage: 100 });
  assert.ok(listed.data.images.some((i) => i.id === rec.id));
  assert.equal(listed.data.total, one.data.total);
  const shots = await api.listImages({ source: "screenshot" });
  assert.ok(shots.data.images.every((i) => i.id !== rec.id));
  const presets = await api.presets();
  assert.equal(presets.data.length, 15);
  const del = await api.deleteImage(rec.id);
  assert.equal(del.data.deleted, true);
  await assert.rejects(
    api.getImage(rec.id),
    (e: ServiceError) => e.code === 404 && e.status === 404,
  );
  const bad = createApiClient({ baseUrl: service, apiKey: "ihk_nope" });
  await assert.rejects(
    bad.presets(),
    (e: ServiceError) => e.code === 110 && e.message === "Invalid API key",
  );
});

test("the typed client organises: an album made, an upload into it, an image edited and found, the album listed, changed and deleted with its images", async () => {
  const api = createApiClient({ baseUrl: service, apiKey: key });
  const album = (await api.createAlbum({ title: "SDK album" })).data;
  assert.equal(album.title, "SDK album");
  const up = await api.upload([
    new File([(await freshJpeg()) as Uint8Array<ArrayBuffer>], "sdk.jpg", {
      type: "image/jpeg",
    }),
  ], { albumId: album.id });
  const rec = up.data as { id: string; album_id: string | null };
  assert.equal(rec.album_id, album.id);
  const edited = await api.updateImage(rec.id, {
    title: "Zanzibar harbour",
    description: "typed",
  });
  assert.equal(edited.data.title, "Zanzibar harbour");
  const found = await api.listImages({ q: "zanzibar", album: album.id });
  assert.deepEqual(found.data.images.map((i) => i.id), [rec.id]);
  const inAlbum = await api.listAlbumImages(album.id, { perPage: 5 });
  assert.equal(inAlbum.data.total, 1);
  assert.equal(inAlbum.data.album.image_count, 1);
  const renamed = await api.updateAlbum(album.id, { privacy: "unlisted" });
  assert.equal(renamed.data.privacy, "unlisted");
  assert.ok(
    (await api.listAlbums()).data.albums.some((a) => a.id === album.id),
  );
  assert.equal((await api.getAlbum(album.id)).data.id, album.id);
  await api.deleteAlbum(album.id, { withImages: true });
  await assert.rejects(
    api.getImage(rec.id),
    (e: ServiceError) => e.code === 404,
  );
  await assert.rejects(
    api.getAlbum(album.id),
    (e: ServiceError) => e.code === 404,
  );
});

test("the typed client sends an upload once more when the first got no answer, and the service stores it once", async () => {
  // The first try reaches the service and is stored, but its answer is lost (as when a
  // proxy closes the connection under it): the second is answered with that same image.
  const calls: string[] = [];
  const losing: typeof fetch = async (input, init) => {
    calls.push(`${init?.method} ${new URL(String(input)).pathname}`);
    const res = await fetch(input, init);
    if (calls.length === 1) {
      await res.body?.cancel();
      throw new TypeError("connection closed before message completed");
    }
    return res;
  };
  const api = createApiClient({ baseUrl: service, apiKey: key, fetch: losing });
  const file = new File(
    [(await freshJpeg()) as Uint8Array<ArrayBuffer>],
    "lost.jpg",
    { type: "image/jpeg" },
  );
  const up = await api.upload(file);
  const rec = up.data as { id: string; duplicate?: boolean };
  assert.deepEqual(calls, ["POST /api/1/upload", "POST /api/1/upload"]);
  assert.equal(rec.duplicate, true);
  const listed = await createApiClient({ baseUrl: service, apiKey: key })
    .listImages({ perPage: 100 });
  assert.equal(listed.data.images.filter((i) => i.id === rec.id).length, 1);
  // Nothing but an upload is sent twice: a read that got no answer fails at once.
  calls.length = 0;
  const dead: typeof fetch = (input, init) => {
    calls.push(`${init?.method} ${new URL(String(input)).pathname}`);
    return Promise.reject(new TypeError("connection reset"));
  };
  const off = createApiClient({ baseUrl: service, apiKey: key, fetch: dead });
  await assert.rejects(off.getImage(rec.id), (e: ServiceError) => e.code === 0);
  await assert.rejects(off.upload(file), (e: ServiceError) => e.code === 0);
  assert.deepEqual(calls, [
    `GET /api/1/images/${rec.id}`,
    "POST /api/1/upload",
    "POST /api/1/upload",
  ]);
});

test("the committed SDK build equals a fresh build from sdk/src, schemas/errors.ts and openapi.yaml", async () => {
  const out = await Deno.makeTempDir();
  try {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "scripts/build_sdk.ts", "--out", out],
      cwd: new URL("..", import.meta.url).pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
    const root = new URL("../sdk/", import.meta.url).pathname;
    for (
      const f of [
        "src/api_types.ts",
        "src/error_table.ts",
        "dist/service-sdk.min.js",
        "dist/index.mjs",
        "dist/types/index.d.ts",
        "dist/types/client.d.ts",
      ]
    ) {
      // The ESM build names its source files in comments; only the paths may differ.
      const norm = (t: string) => t.replace(/^\/\/ .*?src\//gm, "// src/");
      assert.equal(
        norm(await Deno.readTextFile(`${out}/${f}`)),
        norm(await Deno.readTextFile(`${root}${f}`)),
        `${f} is stale: run deno task sdk`,
      );
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

test("npm pack of image-uploader-widget works and the package bundles with esbuild into a page that uploads", async () => {
  const dir = await Deno.makeTempDir();
  const run = async (cmd: string, args: string[], cwd: string) => {
    const r = await new Deno.Command(cmd, {
      args,
      cwd,
      env: { NO_UPDATE_NOTIFIER: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(
      r.code,
      0,
      `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(r.stderr)}`,
    );
    return new TextDecoder().decode(r.stdout);
  };
  try {
    const tgz = (await run(
      "npm",
      ["pack", "--pack-destination", dir, "--silent"],
      new URL("../sdk", import.meta.url).pathname,
    )).trim().split("\n").at(-1)!;
    await Deno.writeTextFile(
      `${dir}/package.json`,
      JSON.stringify({ name: "bundler-app", private: true, type: "module" }),
    );
    await run("npm", ["install", "--no-audit", "--no-fund", `./${tgz}`], dir);
    await Deno.writeTextFile(
      `${dir}/entry.js`,
      `import { ServiceApp, createApiClient } from "image-uploader-widget";\nwindow.BundledApp = ServiceApp;\nwindow.bundledClient = createApiClient;\n`,
    );
    await run("npx", [
      "-y",
      "esbuild@0.28.2",
      "entry.js",
      "--bundle",
      "--format=iife",
      "--outfile=out.js",
    ], dir);
    const bundled = await Deno.readTextFile(`${dir}/out.js`);
    const page = await browser.newPage();
    try {
      await page.goto(`${site.origin}/blank`);
      await page.addScriptTag({ content: bundled });
      const res = await page.evaluate(
        async (k: string, base: string, small: string) => {
          const w = globalThis as unknown as Record<string, Any>;
          const file = new File(
            [Uint8Array.from(atob(small), (c) => c.charCodeAt(0))],
            "bundled.jpg",
            { type: "image/jpeg" },
          );
          return await new w.BundledApp(k, { baseUrl: base }).upload(file);
        },
        key,
        service,
        b64(await freshJpeg()),
      );
      assert.equal(res.data.title, "bundled.jpg");
      assert.ok(res.url.startsWith(service));
    } finally {
      await page.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

test("teardown", async () => {
  await browser.close();
  await site.close();
  await server.shutdown();
  await env.close();
});

test("every TypeScript example of the SDK's README compiles under tsc --strict against the published types (request fields with defaults are optional)", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const readme = await Deno.readTextFile(`${root}sdk/README.md`);
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length >= 1, "the README has TypeScript examples");
  const dir = await Deno.makeTempDir({ prefix: "imagehost-readme-ts-" });
  try {
    const files = await Promise.all(blocks.map(async (code, i) => {
      const path = `${dir}/example_${i}.ts`;
      // What a page has in scope: the file a user picked.
      await Deno.writeTextFile(
        path,
        `declare const file: File;\n${code}\nexport {};\n`,
      );
      return path;
    }));
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
      skipLibCheck: true,
      baseUrl: dir,
      paths: {
        "image-uploader-widget": [`${root}sdk/dist/types/index.d.ts`],
      },
    });
    const errors = ts.getPreEmitDiagnostics(program).map((d) =>
      ts.flattenDiagnosticMessageText(d.messageText, "\n")
    );
    assert.deepEqual(errors, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("npm installs the SDK as sdk/README says, from the running service's /sdk/image-uploader-widget.tgz: the package named image-uploader-widget, whose ServiceApp Node imports, and nothing fetched from any registry", async () => {
  const env = await testEnv();
  const dir = await Deno.makeTempDir({ prefix: "imagehost-npm-" });
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => env.app.fetch(req));
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const readme = await Deno.readTextFile(
      new URL("../sdk/README.md", import.meta.url),
    );
    const line = readme.match(/^npm install (\S+)$/m)?.[1];
    assert.ok(line, "sdk/README gives an npm install line");
    const url = line!.replace(/^https?:\/\/[^/]+/, base);
    assert.match(url, /\/sdk\/image-uploader-widget\.tgz$/);
    const tarball = await fetch(url);
    assert.equal(tarball.status, 200);
    assert.equal(tarball.headers.get("content-type"), "application/gzip");
    const etag = tarball.headers.get("etag")!;
    await tarball.body?.cancel();
    const again = await fetch(url, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    await again.body?.cancel();
    await Deno.writeTextFile(
      `${dir}/package.json`,
      '{"name":"app","private":true}',
    );
    const npm = await new Deno.Command("npm", {
      args: ["install", url, "--no-audit", "--no-fund", "--no-save"],
      cwd: dir,
      // No registry is reachable: a package with no dependencies needs none.
      env: {
        npm_config_registry: "http://127.0.0.1:9/",
        npm_config_cache: `${dir}/.npm`,
        NO_UPDATE_NOTIFIER: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(npm.code, 0, new TextDecoder().decode(npm.stderr));
    const installed = JSON.parse(
      await Deno.readTextFile(
        `${dir}/node_modules/image-uploader-widget/package.json`,
      ),
    );
    assert.equal(installed.name, "image-uploader-widget");
    const node = await new Deno.Command("node", {
      args: [
        "--input-type=module",
        "-e",
        'const m = await import("image-uploader-widget"); console.log(typeof m.ServiceApp, typeof m.createApiClient);',
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(node.code, 0, new TextDecoder().decode(node.stderr));
    assert.equal(
      new TextDecoder().decode(node.stdout).trim(),
      "function function",
    );
    const missing = await fetch(`${base}/sdk/someone-else.tgz`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await Deno.remove(dir, { recursive: true });
  }
});
