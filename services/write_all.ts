/** Writes every byte: a single `write` may take only part of them. */
export async function writeAll(f: Deno.FsFile, bytes: Uint8Array) {
  let off = 0;
  while (off < bytes.length) off += await f.write(bytes.subarray(off));
}
