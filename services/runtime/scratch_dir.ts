import { hostname } from "node:os";
import { join } from "node:path";

/**
 * This process's name for its scratch folders: host, pid and the kernel's start time of the
 * pid (so a reused pid is not mistaken for us). Two instances sharing a DATA_DIR each get a
 * folder of their own, and neither ever empties the other's.
 */
export function processTag(): string {
  // Constant for the life of the process; every store and pipeline asks for it.
  return tag ??= `${hostTag()}-${Deno.pid}-${startTime(Deno.pid) ?? "0"}`;
}
let tag: string | undefined;

/** This host's name as it may stand in a folder name. */
function hostTag(): string {
  return hostname().replace(/[^A-Za-z0-9_.-]/g, "_");
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or undefined if no such process. */
function startTime(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** True unless the tag names a process of this host that no longer runs. */
export function tagIsLive(tag: string): boolean {
  const m = tag.match(/^(.*)-(\d+)-(\d+)$/);
  if (!m) return false;
  const [, host, pid, start] = m;
  // Another host's process (a shared volume): we cannot tell, so we leave it alone.
  if (host !== hostTag()) return true;
  return startTime(Number(pid)) === start;
}

/**
 * Creates `<base>/<this process's tag>` and removes the folders of dead processes of this
 * host (crash leftovers), and loose files from versions that used `<base>` directly.
 * Returns the new folder.
 */
export async function claimScratchDir(base: string): Promise<string> {
  await Deno.mkdir(base, { recursive: true });
  const mine = processTag();
  for await (const e of Deno.readDir(base)) {
    if (e.name === mine) continue;
    if (e.isDirectory && tagIsLive(e.name)) continue;
    await Deno.remove(join(base, e.name), { recursive: true }).catch(() => {});
  }
  const dir = join(base, mine);
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}
