import assert from "node:assert/strict";
import { FiltersEngine } from "@ghostery/adblocker";
import { test } from "./helpers.ts";
import { Worker as NodeWorker } from "node:worker_threads";
import { Buffer } from "node:buffer";
import {
  blocks,
  buildInWorker,
  cosmeticCss,
  engineFileName,
  engineText,
  FilterEngines,
  OWN_AD_RULES,
  readList,
  SHIPPED_ENGINES,
} from "../services/screenshots/filter_engine.ts";
import { withTimeout } from "../services/runtime/timeout.ts";

const PAGE = "https://news.example/";
const GPT = "https://news.example/tag/gpt.js";

test("the ads list is AdGuard Base as the npm package ships it, fed to the engine without its local-address exemptions and with our own rules", async () => {
  const raw = await readList("ads");
  assert.match(raw, /^! Title: AdGuard Base filter$/m);
  assert.ok(raw.split("\n").length > 100_000);
  assert.match(raw, /^@@:\/\/127\.0\.0\.1\$generichide$/m);
  const text = engineText("ads", raw);
  assert.doesNotMatch(text, /^@@:\/\/(127\.0\.0\.1|192\.168\.|localhost)/m);
  assert.deepEqual(text.split("\n").slice(-OWN_AD_RULES.length), OWN_AD_RULES);
  // Only the four exemptions go (127.0.0.1, 192.168., localhost/ and localhost:).
  assert.equal(
    engineText("ads", raw, false).split("\n").length,
    raw.split("\n").length - 4,
  );
});

test("the engines shipped with the code are the locked lists' engines byte for byte, and a start reads them without building (deno task filters makes them)", async () => {
  const names = new Set<string>();
  for (const list of ["ads", "cookies"] as const) {
    const name = await engineFileName(list);
    names.add(name);
    // Built in a process of its own: a build's ~290 MB would stay with the suite's.
    const fresh = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        "--ext=ts",
        `import { buildEngineBytes } from ${
          JSON.stringify(
            new URL("../services/screenshots/filter_engine.ts", import.meta.url)
              .href,
          )
        };
await Deno.stdout.write(await buildEngineBytes(${JSON.stringify(list)}));`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(fresh.success, new TextDecoder().decode(fresh.stderr));
    const shipped = await Deno.readFile(new URL(name, SHIPPED_ENGINES));
    assert.ok(
      Buffer.from(shipped).equals(Buffer.from(fresh.stdout)),
      `${name} is not what the lists build now: run deno task filters`,
    );
  }
  assert.deepEqual(
    new Set([...Deno.readDirSync(SHIPPED_ENGINES)].map((e) => e.name)),
    names,
    "no stale engine is shipped",
  );
  // No cache folder (the sandbox profile) and a build that must not be called.
  let builds = 0;
  const engines = new FilterEngines(undefined, {
    build: () => {
      builds++;
      return Promise.reject(new Error("built"));
    },
  });
  assert.ok(blocks(await engines.get("ads"), GPT, PAGE, "script"));
  assert.match(
    cosmeticCss(await engines.get("cookies"), PAGE, {
      classes: [],
      ids: [],
      hrefs: [],
    }),
    /#cookie-policy/,
  );
  assert.equal(builds, 0);
});

test("the ad engine is built once (in a worker), kept in the cache folder, and the next start reads it from there; an unreadable cache is rebuilt", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-filters-" });
  try {
    const first = new FilterEngines(dir, { shipped: false });
    const engine = await first.get("ads");
    assert.equal(await first.get("ads"), engine, "one engine per process");
    assert.ok(blocks(engine, GPT, PAGE, "script"));
    const files = [...Deno.readDirSync(dir)].map((e) => e.name);
    assert.equal(files.length, 1, files.join());
    const [name] = files;
    // Named by the list's own version and the engine's, so an upgrade rebuilds it.
    assert.match(name, /^adblock-ads-2\.\d+\.\d+\.\d+-\w+-e\d+-r\d+\.bin$/);
    // The next start takes what the folder holds: here a one-rule engine put in its place.
    const marker = FiltersEngine.parse("/only-this-rule.").serialize();
    await Deno.writeFile(`${dir}/${name}`, marker);
    const cached = await new FilterEngines(dir, { shipped: false }).get("ads");
    assert.ok(
      blocks(cached, "https://a.example/only-this-rule.png", PAGE, "image"),
    );
    assert.ok(!blocks(cached, GPT, PAGE, "script"));
    // Garbage in the folder: built again and written over.
    await Deno.writeFile(`${dir}/${name}`, new Uint8Array(64).fill(7));
    const rebuilt = await new FilterEngines(dir, { shipped: false }).get(
      "ads",
    );
    assert.ok(blocks(rebuilt, GPT, PAGE, "script"));
    assert.ok(Deno.statSync(`${dir}/${name}`).size > 1_000_000);
    assert.deepEqual(
      [...Deno.readDirSync(dir)].map((e) => e.name),
      [name],
      "no temporary file left",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("the engines are built where sharp's WebAssembly build has replaced the global Worker with Node's, and a worker that dies or hangs fails the build instead of leaving it pending", async () => {
  // What @img/sharp-wasm32 does on load (the sandbox profile): globalThis.Worker becomes
  // node:worker_threads' Worker. A web-worker build then died at once (`self is not
  // defined`) and its promise never settled: every noAds capture waited for ever.
  const web = globalThis.Worker;
  (globalThis as { Worker: unknown }).Worker = NodeWorker;
  try {
    const cookies = await withTimeout(
      new FilterEngines(undefined, { shipped: false }).get("cookies"),
      60_000,
      "the cookie engine was never built",
    );
    // AdGuard's Cookie Notices list: its generic rules hide what consent bars are named.
    const css = cosmeticCss(cookies, "https://news.example/", {
      classes: [],
      ids: [],
      hrefs: [],
    });
    assert.match(css, /#cookie-policy/);
  } finally {
    globalThis.Worker = web;
  }
  // A worker that exits without an answer, and one that never answers.
  const dir = await Deno.makeTempDir({ prefix: "imagehost-worker-" });
  try {
    const dies = `${dir}/dies.ts`;
    await Deno.writeTextFile(dies, "throw new Error('no engine here');\n");
    await assert.rejects(
      withTimeout(
        buildInWorker("ads", new URL(`file://${dies}`)),
        30_000,
        "pending",
      ),
      (e: Error) => e.message !== "pending",
    );
    const hangs = `${dir}/hangs.ts`;
    await Deno.writeTextFile(hangs, "setInterval(() => {}, 1000);\n");
    await assert.rejects(
      withTimeout(
        buildInWorker("ads", new URL(`file://${hangs}`), 300),
        30_000,
        "pending",
      ),
      /took over 300 ms/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
