/**
 * The project's files below a folder, for the tools that read them (the import floors,
 * the link check, the module-size test).
 */
import { join } from "node:path";

/** Every file below `dir` whose name `keep` accepts, node_modules left out. */
export async function filesUnder(
  dir: string,
  keep: (name: string) => boolean,
): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (e.isDirectory && e.name !== "node_modules") await walk(p);
      else if (e.isFile && keep(e.name)) out.push(p);
    }
  };
  await walk(dir);
  return out;
}
