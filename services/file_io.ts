/** Writes every byte: a single `write` may take only part of them (files, sockets). */
export async function writeAll(
  w: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
) {
  let off = 0;
  while (off < bytes.length) off += await w.write(bytes.subarray(off));
}

/**
 * Fills `buf` from the file's position (a single `read` may return less); returns how many
 * bytes it got, fewer than `buf.length` only at the end of the file.
 */
export async function readFull(
  f: Deno.FsFile,
  buf: Uint8Array,
): Promise<number> {
  let off = 0;
  while (off < buf.length) {
    const n = await f.read(buf.subarray(off));
    if (n === null) break;
    off += n;
  }
  return off;
}

/** Reads a stream of known small size into one buffer. */
export async function readWhole(
  stream: ReadableStream<Uint8Array>,
  size: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(size);
  let at = 0;
  for await (const chunk of stream) {
    if (at + chunk.length > size) {
      throw new Error(`stream longer than its announced ${size} bytes`);
    }
    out.set(chunk, at);
    at += chunk.length;
  }
  if (at !== size) {
    throw new Error(`stream ended at ${at} of its announced ${size} bytes`);
  }
  return out;
}

/** fsync(2) of one file or folder: its bytes (or its names) survive a crash. */
export async function syncFile(path: string): Promise<void> {
  const f = await Deno.open(path, { read: true });
  try {
    await f.sync();
  } finally {
    f.close();
  }
}

/** Syncs every file and folder under `dir`, and `dir` itself last. */
export async function syncTree(dir: string): Promise<void> {
  const work: Promise<void>[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) work.push(syncTree(path));
    else if (e.isFile) work.push(syncFile(path));
  }
  await Promise.all(work);
  await syncFile(dir);
}
