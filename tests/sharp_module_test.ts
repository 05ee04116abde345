import assert from "node:assert/strict";
import process from "node:process";
import { test } from "./helpers.ts";
import { startService } from "./service_process.ts";
import { filesUnder } from "../scripts/files_under.ts";
import sharp from "../services/images/sharp_module.ts";

/**
 * sharp's WebAssembly build wrote a number into process.env as it loaded, and Deno printed
 * a DEP0104 deprecation warning at every start of the sandbox profile. sharp is loaded in
 * services/images/sharp_module.ts alone, with deprecation warnings silenced for that load.
 */

const ROOT = new URL("../", import.meta.url).pathname;

test("the app's modules take sharp from services/images/sharp_module.ts, never from the package itself", async () => {
  const offenders: string[] = [];
  const files = [`${ROOT}main.ts`, `${ROOT}app.ts`];
  for (const dir of ["server", "routes", "services", "schemas"]) {
    files.push(
      ...await filesUnder(`${ROOT}${dir}`, (n) => /\.tsx?$/.test(n)),
    );
  }
  for (const f of files) {
    if (f.endsWith("services/images/sharp_module.ts")) continue;
    const text = await Deno.readTextFile(f);
    if (
      /^import (?!type )[^;]*from "(npm:)?sharp(@[^"]*)?";/m.test(text) ||
      /import\("(npm:)?sharp/.test(text)
    ) {
      offenders.push(f);
    }
  }
  assert.deepEqual(offenders, []);
  assert.ok(files.length > 100, `${files.length} modules read`);
});

test("loading sharp leaves deprecation warnings as they were", () => {
  assert.equal(typeof sharp, "function");
  assert.notEqual(process.noDeprecation, true);
});

test("the service started without native code (the WebAssembly engine) prints no deprecation warning", async () => {
  const svc = await startService({}, { denoFlags: ["--deny-ffi"] });
  try {
    const log = svc.log();
    assert.match(log, /"msg":"image engine","engine":"wasm"/);
    assert.doesNotMatch(log, /DeprecationWarning|DEP0104/);
  } finally {
    await svc.close();
  }
});
