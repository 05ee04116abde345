/**
 * Builds the ad and cookie engines from the locked lists into
 * services/screenshots/filter_engines/ (SHIPPED_ENGINES), replacing older ones, so that no
 * start builds one (filter_engine.ts). Run after upgrading @adguard/dnr-rulesets or
 * @ghostery/adblocker, or changing what we feed the engine; tests/filter_engine_test.ts
 * fails until then. `deno task filters`.
 */
import {
  buildEngineBytes,
  engineFileName,
  FILTER_LISTS,
  type FilterListName,
  SHIPPED_ENGINES,
} from "../services/screenshots/filter_engine.ts";

await Deno.mkdir(SHIPPED_ENGINES, { recursive: true });
const keep = new Set<string>();
for (const list of Object.keys(FILTER_LISTS) as FilterListName[]) {
  const name = await engineFileName(list);
  const bytes = await buildEngineBytes(list);
  await Deno.writeFile(new URL(name, SHIPPED_ENGINES), bytes);
  keep.add(name);
  console.log(`${name}: ${bytes.length} bytes`);
}
for (const e of Deno.readDirSync(SHIPPED_ENGINES)) {
  if (!keep.has(e.name)) {
    await Deno.remove(new URL(e.name, SHIPPED_ENGINES));
    console.log(`removed ${e.name}`);
  }
}
