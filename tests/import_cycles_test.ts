import assert from "node:assert/strict";
import {
  backArrows,
  circles,
  floorOf,
  pathThrough,
} from "../scripts/import_cycles.ts";
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

test("the floor check finds every import back up the house and none down it", () => {
  const base = "/p";
  const g = graph([
    // Down the floors: main → server → app → routes → services → runtime → schemas.
    ["/p/main.ts", "/p/server/composition.ts"],
    ["/p/server/composition.ts", "/p/app.ts"],
    ["/p/server/composition.ts", "/p/services/db/database.ts"],
    ["/p/app.ts", "/p/routes/upload.ts"],
    ["/p/routes/upload.ts", "/p/routes/deps.ts"],
    ["/p/routes/deps.ts", "/p/services/images/pipeline.ts"],
    ["/p/services/images/pipeline.ts", "/p/services/runtime/clock.ts"],
    ["/p/services/runtime/clock.ts", "/p/schemas/errors.ts"],
    // The tools around the house may import any floor.
    ["/p/tests/helpers.ts", "/p/server/composition.ts"],
    ["/p/scripts/operator.ts", "/p/main.ts"],
    // Back up: the composition where it was (runtime → every capability), a service
    // taking the app's deps, a route importing the app, a schema importing a service.
    ["/p/services/runtime/composition.ts", "/p/services/images/pipeline.ts"],
    ["/p/services/images/pipeline.ts", "/p/routes/deps.ts"],
    ["/p/routes/admin.ts", "/p/app.ts"],
    ["/p/schemas/config.ts", "/p/services/runtime/clock.ts"],
  ]);
  assert.deepEqual(backArrows(g, base), [
    ["routes/admin.ts", "app.ts"],
    ["schemas/config.ts", "services/runtime/clock.ts"],
    ["services/images/pipeline.ts", "routes/deps.ts"],
    ["services/runtime/composition.ts", "services/images/pipeline.ts"],
  ]);
  assert.equal(floorOf("sdk/src/index.ts"), undefined);
  assert.ok(floorOf("server/composition.ts")! > floorOf("app.ts")!);
});

test("the project's own modules import one another in no circle and never back up a floor", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/import_cycles.ts"],
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const said = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, said);
  assert.match(
    new TextDecoder().decode(out.stdout),
    /no import circles and no arrows back up/,
  );
});
