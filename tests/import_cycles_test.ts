import assert from "node:assert/strict";
import { circles, pathThrough } from "../scripts/import_cycles.ts";
import { test } from "./helpers.ts";

const graph = (edges: [string, string][]) => {
  const g = new Map<string, Set<string>>();
  for (const [a, b] of edges) {
    if (!g.has(a)) g.set(a, new Set());
    if (!g.has(b)) g.set(b, new Set());
    g.get(a)!.add(b);
  }
  return g;
};

test("the circle check finds every circle of imports, type-only ones included, and nothing in a clean tree", () => {
  // main → app → routes → services → schemas: top-down, no circle.
  const clean = graph([
    ["main", "app"],
    ["app", "routes"],
    ["routes", "services"],
    ["services", "schemas"],
    ["app", "schemas"],
  ]);
  assert.deepEqual(circles(clean), []);
  // The three the issue found: a pair, a triangle with a fourth member, and an SDK pair.
  const tangled = graph([
    ["base64", "multipart"],
    ["multipart", "base64"],
    ["database", "durable_fs"],
    ["durable_fs", "deps"],
    ["deps", "database"],
    ["deps", "lifecycle"],
    ["lifecycle", "deps"],
    ["service_app", "widget"],
    ["widget", "service_app"],
    ["app", "database"],
  ]);
  const found = circles(tangled).map((c) => c.join(","));
  assert.deepEqual(found.sort(), [
    "base64,multipart",
    "database,deps,durable_fs,lifecycle",
    "service_app,widget",
  ]);
  // A module importing itself is a circle too.
  assert.deepEqual(circles(graph([["a", "a"]])), [["a"]]);
  // The message's path starts and ends at the same module, along real edges.
  const members = ["database", "deps", "durable_fs", "lifecycle"];
  const path = pathThrough(tangled, members);
  assert.equal(path[0], path[path.length - 1]);
  for (let i = 0; i + 1 < path.length; i++) {
    assert.ok(tangled.get(path[i])!.has(path[i + 1]), path.join(" → "));
  }
});

test("the project's own modules import one another in no circle", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/import_cycles.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const said = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, said);
  assert.match(new TextDecoder().decode(out.stdout), /no import circles/);
});
