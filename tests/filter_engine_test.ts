import assert from "node:assert/strict";
import { FiltersEngine } from "@ghostery/adblocker";
import { test } from "./helpers.ts";
import {
  blocks,
  engineText,
  FilterEngines,
  OWN_AD_RULES,
  readList,
} from "../services/screenshots/filter_engine.ts";

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

test("the ad engine is built once (in a worker), kept in the cache folder, and the next start reads it from there; an unreadable cache is rebuilt", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-filters-" });
  try {
    const first = new FilterEngines(dir);
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
    const cached = await new FilterEngines(dir).get("ads");
    assert.ok(
      blocks(cached, "https://a.example/only-this-rule.png", PAGE, "image"),
    );
    assert.ok(!blocks(cached, GPT, PAGE, "script"));
    // Garbage in the folder: built again and written over.
    await Deno.writeFile(`${dir}/${name}`, new Uint8Array(64).fill(7));
    const rebuilt = await new FilterEngines(dir).get("ads");
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
