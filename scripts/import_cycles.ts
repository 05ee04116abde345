/**
 * Fails when the project's own modules import each other in a circle, type-only imports
 * included: `deno run -A scripts/import_cycles.ts` (part of `deno task check`, so CI runs
 * it). The graph is Deno's own (`deno info --json`) over every module of the project:
 * main.ts, app.ts, server/, routes/, services/, schemas/, sdk/src/, scripts/, tests/ and bench/.
 * Prints each circle as a path of files; exits 1 when there is any, 0 otherwise.
 *
 * It also fails on an arrow back up the house's floors (see `floorOf`): the process at the
 * top (main.ts, then the composition in server/), the app (app.ts), its routes, the
 * services, the ground floor every layer may use (services/runtime/), and the schemas at
 * the bottom. A module may import its own floor or any floor below, never one above.
 */
import { relative } from "node:path";
import { filesUnder } from "./files_under.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const FOLDERS = [
  "server",
  "routes",
  "services",
  "schemas",
  "sdk/src",
  "scripts",
  "tests",
  "bench",
];

/** Every .ts/.tsx file of the project's own folders (node_modules and builds left out). */
async function projectModules(): Promise<string[]> {
  const out = [`${root}/main.ts`, `${root}/app.ts`];
  for (const f of FOLDERS) {
    out.push(
      ...await filesUnder(
        `${root}/${f}`,
        (name) => /\.tsx?$/.test(name) && !name.endsWith(".d.ts"),
      ),
    );
  }
  return out.sort();
}

interface InfoModule {
  specifier: string;
  dependencies?: {
    code?: { specifier: string };
    type?: { specifier: string };
  }[];
}

/** The edges among the project's own files, from one `deno info` over all of them. */
async function importGraph(files: string[]): Promise<Map<string, Set<string>>> {
  const dir = await Deno.makeTempDir({ prefix: "import-cycles-" });
  try {
    const entry = `${dir}/all.ts`;
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import type {} from "file://${f}";`).join("\n") + "\n",
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `deno info failed: ${new TextDecoder().decode(out.stderr)}`,
      );
    }
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      modules: InfoModule[];
    };
    const own = (s: string | undefined) =>
      s?.startsWith(`file://${root}/`) && !s.includes("/node_modules/")
        ? s.slice("file://".length)
        : undefined;
    const graph = new Map<string, Set<string>>();
    for (const m of info.modules) {
      const from = own(m.specifier);
      if (!from) continue;
      const to = graph.get(from) ?? new Set<string>();
      graph.set(from, to);
      for (const d of m.dependencies ?? []) {
        for (const target of [own(d.code?.specifier), own(d.type?.specifier)]) {
          if (target) to.add(target);
        }
      }
    }
    return graph;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The strongly connected components with more than one module, or a self-import. */
export function circles(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's algorithm, iterative so deep graphs cannot overflow the stack.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; i: number }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      low.set(node, next++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.get(node) ?? [])], i: 0 });
    };
    enter(start);
    while (work.length) {
      const top = work[work.length - 1];
      if (top.i < top.edges.length) {
        const to = top.edges[top.i++];
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) {
          low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const scc: string[] = [];
        let n: string;
        do {
          n = stack.pop()!;
          onStack.delete(n);
          scc.push(n);
        } while (n !== top.node);
        if (scc.length > 1 || graph.get(top.node)?.has(top.node)) {
          found.push(scc.sort());
        }
      }
    }
  }
  return found;
}

/** One circle through `members` as a path that returns to its start (for the message). */
export function pathThrough(
  graph: Map<string, Set<string>>,
  members: string[],
): string[] {
  const inside = new Set(members);
  const start = members[0];
  // Breadth-first from start back to start, staying inside the component.
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const n = queue.shift()!;
    for (const to of graph.get(n) ?? []) {
      if (!inside.has(to)) continue;
      if (to === start) {
        const path: string[] = [];
        for (let c = n; c !== start; c = prev.get(c)!) path.unshift(c);
        return [start, ...path, start];
      }
      if (!prev.has(to)) {
        prev.set(to, n);
        queue.push(to);
      }
    }
  }
  return members;
}

/**
 * The floor of a project file, top first: main.ts 6, server/ 5, app.ts 4, routes/ 3,
 * services/ 2, services/runtime/ 1, schemas/ 0; undefined for the tools around the house
 * (sdk/src, scripts, tests, bench), which may import any floor.
 */
export function floorOf(path: string): number | undefined {
  if (path === "main.ts") return 6;
  if (path.startsWith("server/")) return 5;
  if (path === "app.ts") return 4;
  if (path.startsWith("routes/")) return 3;
  if (path.startsWith("services/runtime/")) return 1;
  if (path.startsWith("services/")) return 2;
  if (path.startsWith("schemas/")) return 0;
  return undefined;
}

/** Each import from a floor to a higher one, as [from, to] paths relative to `base`. */
export function backArrows(
  graph: Map<string, Set<string>>,
  base: string,
): [string, string][] {
  const found: [string, string][] = [];
  for (const [from, targets] of graph) {
    const a = floorOf(relative(base, from));
    if (a === undefined) continue;
    for (const to of targets) {
      const b = floorOf(relative(base, to));
      if (b !== undefined && b > a) {
        found.push([relative(base, from), relative(base, to)]);
      }
    }
  }
  return found.sort((x, y) => x.join().localeCompare(y.join()));
}

if (import.meta.main) {
  const graph = await importGraph(await projectModules());
  const found = circles(graph);
  for (const scc of found) {
    const path = pathThrough(graph, scc).map((f) => relative(root, f));
    const all = scc.map((f) => relative(root, f)).join(", ");
    console.error(`import circle: ${path.join(" → ")} (all of: ${all})`);
  }
  const back = backArrows(graph, root);
  for (const [from, to] of back) {
    console.error(`import back up a floor: ${from} → ${to}`);
  }
  if (found.length || back.length) {
    console.error(
      `${found.length} import circle(s) and ${back.length} arrow(s) back up among the project's modules`,
    );
    Deno.exit(1);
  }
  console.log(
    `no import circles and no arrows back up among ${graph.size} modules`,
  );
}
