/**
 * What a generator script does with its text: writes the committed file, or with
 * `--check` exits 1 when the committed file differs from it (CI runs the checks).
 */
export async function writeOrCheck(
  path: URL,
  text: string,
  opts: { name: string; task: string },
): Promise<void> {
  if (Deno.args.includes("--check")) {
    const current = await Deno.readTextFile(path).catch(() => "");
    if (current !== text) {
      console.error(
        `${opts.name} is stale: run \`${opts.task}\` and commit it`,
      );
      Deno.exit(1);
    }
    console.log(`${opts.name} is up to date`);
  } else {
    await Deno.writeTextFile(path, text);
    console.log(`wrote ${path.pathname}`);
  }
}
