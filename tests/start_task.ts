/**
 * How `deno task start` runs the service, read from deno.json, so tests and benchmarks
 * that start main.ts in a process of its own measure what operators run (the Dockerfile is
 * checked against the same task in deploy_test).
 */
const task: string = JSON.parse(
  Deno.readTextFileSync(new URL("../deno.json", import.meta.url)),
).tasks.start;

/** The environment assignments before `deno` (MALLOC_ARENA_MAX=1). */
export const START_ENV: Record<string, string> = Object.fromEntries(
  [...task.slice(0, task.indexOf("deno ")).matchAll(/(\w+)=(\S+)/g)].map((
    m,
  ) => [m[1], m[2]]),
);

/** The `--v8-flags=` value of the start task, as DENO_V8_FLAGS takes it. */
export const START_V8_FLAGS: string = /--v8-flags=(\S+)/.exec(task)?.[1] ?? "";
