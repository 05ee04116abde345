/**
 * Marks every Chromium this process starts, so that a later start-up can tell its own
 * leftovers from anyone else's browsers: `--imagehost-owner=<pid of the service>`.
 */
export const OWNER_FLAG = "--imagehost-owner=";

/**
 * Marks which service a Chromium belongs to: `--imagehost-home=<its DATA_DIR>`. Start-up
 * reaps only the leftovers of the same home (a previous run of this service), never the
 * browsers of another service on the host, which may be mid-restart itself.
 */
export const HOME_FLAG = "--imagehost-home=";

/** The home a command line was marked with, or undefined. */
export function homeOf(cmdline: string[]): string | undefined {
  return cmdline.find((a) => a.startsWith(HOME_FLAG))?.slice(HOME_FLAG.length);
}

/** The owner pid a command line was marked with, or undefined. */
export function ownerOf(cmdline: string[]): number | undefined {
  const arg = cmdline.find((a) => a.startsWith(OWNER_FLAG));
  const pid = arg ? Number(arg.slice(OWNER_FLAG.length)) : NaN;
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** The parent pid of a process (from /proc/<pid>/stat), or undefined if it is gone. */
export function parentOf(pid: number): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The fields after the command name, which may hold spaces, in parentheses.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Every process's pid and command line (none without /proc: not Linux). */
export function processes(): { pid: number; cmdline: string[] }[] {
  const out: { pid: number; cmdline: string[] }[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch {
    return out;
  }
  for (const e of entries) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    try {
      out.push({
        pid,
        cmdline: Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0"),
      });
    } catch { /* gone meanwhile, or not ours to read */ }
  }
  return out;
}

/**
 * The processes of `found` that are not a copy of another one in it. A child Chromium has
 * forked and not yet exec'd (or a helper that kept its command line) shows its parent's
 * marks; it goes with its browser's process group.
 */
export function withoutForkedCopies<T extends { pid: number }>(
  found: T[],
): T[] {
  const pids = new Set(found.map((p) => p.pid));
  return found.filter((p) => !pids.has(parentOf(p.pid) ?? -1));
}

/**
 * Processes of this home (see HOME_FLAG; undefined matches unmarked ones) marked by an
 * owner that is gone: leftovers of a killed run of this service, the browsers themselves
 * (see {@link withoutForkedCopies}).
 */
export function findOrphans(
  home: string | undefined,
): { pid: number; owner: number }[] {
  const out: { pid: number; owner: number }[] = [];
  for (const { pid, cmdline } of processes()) {
    const owner = ownerOf(cmdline);
    if (
      pid !== Deno.pid && owner !== undefined && owner !== Deno.pid &&
      homeOf(cmdline) === home && !alive(owner)
    ) {
      out.push({ pid, owner });
    }
  }
  return withoutForkedCopies(out);
}

/**
 * Kills the Chromium processes a dead run of this home left behind (each with its process
 * group, which holds its helpers). Returns how many were found.
 */
export function reapOrphans(home: string | undefined): number {
  const orphans = findOrphans(home);
  for (const { pid } of orphans) {
    try {
      Deno.kill(-pid, "SIGKILL"); // the group: Chromium is started as its leader
    } catch {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }
  return orphans.length;
}
