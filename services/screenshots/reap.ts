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
function parentOf(pid: number): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The fields after the command name, which may hold spaces, in parentheses.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/**
 * Processes of this home (see HOME_FLAG; undefined matches unmarked ones) marked by an
 * owner that is gone: leftovers of a killed run of this service. Only the browsers
 * themselves: a child Chromium has forked and not yet exec'd (or a helper that kept its
 * command line) shows the same marks, and goes with its browser's process group.
 */
export function findOrphans(
  home: string | undefined,
): { pid: number; owner: number }[] {
  const out: { pid: number; owner: number }[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch {
    return out; // no /proc: not Linux, nothing to reap
  }
  for (const e of entries) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    let cmdline: string[];
    try {
      cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const owner = ownerOf(cmdline);
    if (
      owner !== undefined && owner !== Deno.pid && homeOf(cmdline) === home &&
      !alive(owner)
    ) {
      out.push({ pid, owner });
    }
  }
  const marked = new Set(out.map((o) => o.pid));
  return out.filter((o) => !marked.has(parentOf(o.pid) ?? -1));
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
