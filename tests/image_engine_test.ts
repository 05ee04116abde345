import assert from "node:assert/strict";
import sharp from "sharp";
import {
  avifEffort,
  engineThreads,
  imageEngine,
  webpEffort,
} from "../services/images/engine.ts";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
import { test, testEnv, upload, userWithKey } from "./helpers.ts";
import { keyBeforeStart, startService } from "./service_process.ts";

const ffiGranted = Deno.permissions.querySync({ name: "ffi" }).state ===
  "granted";

test("the image engine is told by what sharp loaded: native with FFI, WebAssembly without, one thread per image in wasm", () => {
  // This file runs in both passes of the suite: natively, and again with --deny-ffi.
  assert.equal(imageEngine(), ffiGranted ? "native" : "wasm");
  assert.equal(imageEngine({ vips: "8.18.7", emscripten: "6.0.10" }), "wasm");
  assert.equal(imageEngine({ vips: "8.18.7" }), "native");
  assert.equal(engineThreads("native", 3), 3);
  assert.equal(engineThreads("wasm", 3), 1);
});

test("with FFI denied, sharp runs its WebAssembly build and decodes, resizes and encodes the same pixels as the native one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-engine-" });
  try {
    const jpeg = await makeImage("jpeg", { width: 640, height: 480 });
    const png = await makeImage("png", { width: 300, height: 200 });
    await Deno.writeFile(`${dir}/a.jpg`, jpeg);
    await Deno.writeFile(`${dir}/b.png`, png);
    // The same work, here and in a child process that may not load native code.
    const work = async (
      sharpOf: typeof sharp,
      jpg: Uint8Array,
      pn: Uint8Array,
    ) => {
      const thumb = await sharpOf(jpg).resize(160).raw().toBuffer({
        resolveWithObject: true,
      });
      const webp = await sharpOf(pn).webp({ lossless: true }).toBuffer();
      const back = await sharpOf(webp).raw().toBuffer();
      return {
        thumb: [thumb.info.width, thumb.info.height, thumb.data.length],
        png: [...(await sharpOf(pn).raw().toBuffer())].slice(0, 300),
        webpBack: [...back].slice(0, 300),
      };
    };
    await Deno.writeTextFile(
      `${dir}/child.ts`,
      `import sharp from "sharp";
const work = ${work.toString()};
const r = await work(sharp, await Deno.readFile("${dir}/a.jpg"), await Deno.readFile("${dir}/b.png"));
console.log(JSON.stringify({ emscripten: Boolean(sharp.versions.emscripten), ...r }));
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--config",
        new URL("../deno.json", import.meta.url).pathname,
        "--allow-read",
        "--allow-env",
        "--allow-sys",
        "--deny-ffi",
        `${dir}/child.ts`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const wasm = JSON.parse(new TextDecoder().decode(out.stdout).trim());
    assert.equal(wasm.emscripten, true);
    const here = await work(sharp, jpeg, png);
    // Lossless steps give exactly the same pixels; the resize the same shape.
    assert.deepEqual(wasm.thumb, here.thumb);
    assert.deepEqual(wasm.png, here.png);
    assert.deepEqual(wasm.webpBack, here.webpBack);
    assert.deepEqual(wasm.webpBack, wasm.png);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("main.ts with FFI denied serves uploads on the WebAssembly engine and says so at start", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-wasm-" });
  const key = await keyBeforeStart(
    { dataDir },
    "wasm@example.com",
    "correct horse battery",
  );
  const svc = await startService({}, { dataDir, denoFlags: ["--deny-ffi"] });
  try {
    const png = await makeImage("png", { width: 120, height: 90 });
    const fd = new FormData();
    fd.append("images", new Blob([png as BlobPart]), "wasm.png");
    const r = await fetch(`${svc.base}/api/1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const body = await r.json();
    assert.equal(r.status, 200, JSON.stringify(body));
    assert.deepEqual([body.data.width, body.data.height], [120, 90]);
    // The stored original and its thumbnail come back as images of the right size.
    const original = await fetch(body.data.image.url);
    const thumb = await fetch(body.data.thumb.url);
    const o = await sharp(new Uint8Array(await original.arrayBuffer()))
      .metadata();
    const t = await sharp(new Uint8Array(await thumb.arrayBuffer())).metadata();
    assert.deepEqual([o.width, o.height], [120, 90]);
    assert.ok(t.width! <= 320 && t.width! > 0);
    const line = svc.log().split("\n").find((l) =>
      l.includes('"image engine"')
    );
    assert.ok(line, svc.log().slice(-2000));
    assert.equal(JSON.parse(line).engine, "wasm");
    assert.equal(JSON.parse(line).threads_per_image, 1);
  } finally {
    await svc.close();
  }
});

test("a transform's AVIF and WebP are encoded at the engine's efforts (AVIF 1 and WebP 2 in WebAssembly, where the defaults took ~20x and 2x longer; libvips' 4 natively), AVIF's as IMAGE_AVIF_EFFORT says when set", async () => {
  assert.equal(avifEffort("wasm"), 1);
  assert.equal(avifEffort("native"), 4);
  assert.equal(avifEffort("wasm", 6), 6);
  assert.deepEqual([webpEffort("wasm"), webpEffort("native")], [2, 4]);
  const engine = ffiGranted ? "native" : "wasm";
  for (const configured of [undefined, "0"]) {
    const env = await testEnv({
      env: configured ? { IMAGE_AVIF_EFFORT: configured } : {},
    });
    try {
      const { key } = await userWithKey(env);
      const jpeg = await makeNoiseJpeg(400, 300);
      const up = await upload(
        env,
        key,
        formWith([{ name: "n.jpg", bytes: jpeg }]),
      );
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const path = new URL(up.body.data.url).pathname;
      const get = async (q: string) =>
        new Uint8Array(
          await (await env.app.request(`${path}${q}`)).arrayBuffer(),
        );
      const stored = await get("");
      // libvips' encoders are deterministic: the same pixels at the same settings give the
      // same bytes, so the effort used is the one whose bytes these are.
      const small = () =>
        sharp(stored).resize({ width: 160, withoutEnlargement: true });
      const avifAt = async (e: number) =>
        new Uint8Array(
          await small().avif({ quality: 50, effort: e }).toBuffer(),
        );
      const webpAt = async (e: number) =>
        new Uint8Array(
          await small().webp({ quality: 75, effort: e }).toBuffer(),
        );
      const effort = avifEffort(
        engine,
        configured === undefined ? undefined : Number(configured),
      );
      const avif = await get("?w=160&format=avif");
      assert.deepEqual(avif, await avifAt(effort), `AVIF effort ${effort}`);
      assert.notDeepEqual(avif, await avifAt(effort === 4 ? 2 : 4));
      const webp = await get("?w=160&format=webp");
      assert.deepEqual(webp, await webpAt(webpEffort(engine)));
    } finally {
      await env.close();
    }
  }
});
