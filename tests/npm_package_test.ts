import assert from "node:assert/strict";
import { createTar } from "nanotar";
import { withEndOfArchive } from "../services/sdk/npm_package.ts";
import { test } from "./helpers.ts";

test("a packed tar always ends with the two zero blocks, even when its entries fill a 10 KiB record exactly (npm refused the SDK as truncated)", async () => {
  // One header (512) and 9728 bytes of data: exactly one 10240-byte record.
  const data = new Uint8Array(9728).fill(65);
  const bare = createTar([{ name: "package/a.txt", data }]);
  assert.equal(bare.length, 10240);
  // nanotar's own output has no room left for the end-of-archive blocks.
  assert.ok(bare.subarray(-1024).some((b) => b !== 0));
  const tar = withEndOfArchive(bare);
  assert.deepEqual(tar.subarray(-1024), new Uint8Array(1024));
  assert.deepEqual(tar.subarray(0, bare.length), bare);
  // GNU tar lists it, with its one entry at its size.
  const dir = await Deno.makeTempDir({ prefix: "imagehost-tar-" });
  try {
    await Deno.writeFile(`${dir}/p.tar`, tar);
    const out = await new Deno.Command("tar", {
      args: ["-tvf", `${dir}/p.tar`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.match(
      new TextDecoder().decode(out.stdout),
      /9728 .*package\/a\.txt/,
    );
    assert.equal(new TextDecoder().decode(out.stderr), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
