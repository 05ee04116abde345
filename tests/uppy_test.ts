import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";
import sharp from "sharp";
import { json, test, testEnv, userWithKey } from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { CHROMIUM_FLAGS } from "../services/screenshots/chromium_launch.ts";
import { requireChromium } from "./browser_service.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

test("@uppy/tus in Chromium, on another site's page, uploads a photo to /api/1/tus/ and rides out a dropped network mid-way (it asks the offset and goes on): the image is stored and listed, made once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-uppy-" });
  const bundle = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--format",
      "iife",
      new URL("./uppy_entry.ts", import.meta.url).pathname,
      "-o",
      `${dir}/uppy.js`,
    ],
    stderr: "piped",
  }).output();
  assert.ok(bundle.success, new TextDecoder().decode(bundle.stderr));
  const env = await testEnv();
  const seen: string[] = [];
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => {
    if (new URL(req.url).pathname.startsWith("/api/1/tus")) {
      seen.push(req.method);
    }
    return env.app.fetch(req);
  });
  const service = `http://127.0.0.1:${server.addr.port}`;
  const uppyJs = await Deno.readTextFile(`${dir}/uppy.js`);
  const site = startFixture({
    "/page":
      `<!doctype html><html><head><script src="/uppy.js"></script></head><body>shop</body></html>`,
    "/uppy.js": () =>
      new Response(uppyJs, { headers: { "content-type": "text/javascript" } }),
  });
  const browser = await puppeteer.launch({
    executablePath: requireChromium(),
    headless: true,
    args: [...CHROMIUM_FLAGS, "--no-sandbox"],
  });
  try {
    const { key } = await userWithKey(env);
    const side = 900;
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
    const page = await browser.newPage();
    await page.goto(`${site.origin}/page`);
    const cdp = await page.createCDPSession();
    const network = (offline: boolean) =>
      cdp.send("Network.emulateNetworkConditions", {
        offline,
        latency: 20,
        downloadThroughput: 10_000_000,
        uploadThroughput: 300_000,
      });
    await network(false);
    await page.exposeFunction("dropNetwork", async () => {
      await network(true);
      setTimeout(() => network(false), 1000);
    });
    const out = await page.evaluate(
      async (endpoint: string, k: string, data: string) => {
        const w = globalThis as unknown as Record<string, Any>;
        const uppy = new w.Uppy({ autoProceed: false }).use(w.UppyTus, {
          endpoint,
          headers: { authorization: `Bearer ${k}` },
          chunkSize: 256 * 1024,
          retryDelays: [0, 500, 1000, 2000, 3000],
        });
        let dropped = false;
        uppy.on("upload-progress", (_f: Any, p: Any) => {
          if (!dropped && p.bytesUploaded / p.bytesTotal >= 0.3) {
            dropped = true;
            w.dropNetwork();
          }
        });
        uppy.addFile({
          name: "uppy.jpg",
          type: "image/jpeg",
          data: new Blob(
            [Uint8Array.from(atob(data), (c) => c.charCodeAt(0))],
            {
              type: "image/jpeg",
            },
          ),
        });
        const result = await uppy.upload();
        return {
          ok: result.successful.length,
          failed: result.failed.map((f: Any) => String(f.error)),
          dropped,
        };
      },
      `${service}/api/1/tus/`,
      key,
      btoa(Array.from(photo, (c) => String.fromCharCode(c)).join("")),
    );
    assert.deepEqual(out.failed, []);
    assert.equal(out.ok, 1);
    assert.equal(out.dropped, true);
    assert.equal(seen.filter((m) => m === "POST").length, 1, String(seen));
    assert.ok(
      seen.includes("HEAD"),
      `it asked the offset after the drop: ${seen}`,
    );
    const list = await json(
      await env.app.request("/api/1/images", {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.deepEqual(
      list.body.data.images.map((i: { title: string }) => i.title),
      ["uppy.jpg"],
    );
  } finally {
    await browser.close();
    await site.close();
    ac.abort();
    await server.finished;
    await env.close();
    await Deno.remove(dir, { recursive: true });
  }
});
