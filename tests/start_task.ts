/**
 * How `deno task start` and `deno task start:sandbox` run the service, read from deno.json,
 * so tests and benchmarks that start main.ts in a process of their own measure what
 * operators run (the Dockerfile is checked against the same task in deploy_test).
 */
const tasks: Record<
  string,
  string | { command: string; dependencies?: string[] }
> = JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url)))
  .tasks;

/** The shell command of the task `name` (a task is a string or `{ command, dependencies }`). */
export function taskCommand(name: string): string {
  const t = tasks[name];
  return typeof t === "string" ? t : t.command;
}

/** The tasks `name` runs first (`install`: node_modules is "manual", see deno.json). */
export function taskDependencies(name: string): string[] {
  const t = tasks[name];
  return typeof t === "string" ? [] : t.dependencies ?? [];
}

/** Every task's name. */
export const TASK_NAMES: string[] = Object.keys(tasks);

const task = taskCommand("start");

/** The environment assignments before `deno` in the task `name`. */
export function taskEnv(name: string): Record<string, string> {
  const t = taskCommand(name);
  return Object.fromEntries(
    [...t.slice(0, t.indexOf("deno ")).matchAll(/(\w+)=(\S+)/g)].map((
      m,
    ) => [m[1], m[2]]),
  );
}

/** The `--` flags of the task `name`, in order. */
export function taskFlags(name: string): string[] {
  const t = taskCommand(name);
  return t.slice(t.indexOf("deno ")).split(/\s+/).filter((a) =>
    a.startsWith("--")
  );
}

/** The environment assignments before `deno` in the start task (MALLOC_ARENA_MAX=1). */
export const START_ENV: Record<string, string> = taskEnv("start");

/**
 * The environment assignments of `deno task start:sandbox`: glibc's allocator told to map
 * buffers of 256 KB or more on their own for good (issue #49).
 */
export const SANDBOX_ENV: Record<string, string> = taskEnv("start:sandbox");

/** The `--v8-flags=` value of the start task, as DENO_V8_FLAGS takes it. */
export const START_V8_FLAGS: string = /--v8-flags=(\S+)/.exec(task)?.[1] ?? "";
