import assert from "node:assert/strict";
import { test } from "./helpers.ts";

/**
 * Issue #52: a fresh `deno install` used to end with a yellow "Ignored build scripts …
 * Run deno approve-scripts" that nobody explained. Every package with a lifecycle script
 * is now reviewed in deno.json's `allowScripts` (README says why each is denied), so the
 * warning is gone; a new one that nobody reviewed fails here, not at a newcomer's start.
 */

const ROOT = new URL("..", import.meta.url).pathname;

/** Every installed npm package (name@version) with an install-time script. */
async function packagesWithScripts(): Promise<Set<string>> {
  const found = new Set<string>();
  const store = `${ROOT}node_modules/.deno`;
  for await (const entry of Deno.readDir(store)) {
    if (!entry.isDirectory) continue;
    const modules = `${store}/${entry.name}/node_modules`;
    const dirs: string[] = [];
    try {
      for await (const m of Deno.readDir(modules)) {
        if (m.name.startsWith("@")) {
          for await (const s of Deno.readDir(`${modules}/${m.name}`)) {
            dirs.push(`${modules}/${m.name}/${s.name}`);
          }
        } else dirs.push(`${modules}/${m.name}`);
      }
    } catch {
      continue;
    }
    for (const dir of dirs) {
      let pkg: { name: string; scripts?: Record<string, string> };
      try {
        pkg = JSON.parse(await Deno.readTextFile(`${dir}/package.json`));
      } catch {
        continue;
      }
      const s = pkg.scripts ?? {};
      const gyp = await Deno.stat(`${dir}/binding.gyp`).then(
        () => true,
        () => false,
      );
      if (s.preinstall || s.install || s.postinstall || gyp) {
        found.add(pkg.name);
      }
    }
  }
  return found;
}

test("every installed npm package with an install script is reviewed in deno.json's allowScripts, so a fresh install prints no warning", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const reviewed = new Set<string>(
    [
      ...(config.allowScripts?.deny ?? []),
      ...(config.allowScripts?.allow ?? []),
    ]
      .map((s: string) => s.replace(/^npm:/, "").replace(/(.)@.*$/, "$1")),
  );
  const withScripts = await packagesWithScripts();
  assert.ok(withScripts.size > 0, "the scan sees node_modules");
  for (const name of withScripts) {
    assert.ok(reviewed.has(name), `${name}'s install script is not reviewed`);
  }
  // README explains each denial.
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  for (const name of reviewed) {
    assert.ok(readme.includes(name), `README says why ${name} is denied`);
  }
});
