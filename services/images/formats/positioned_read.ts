/**
 * Positioned reads of an upload's bytes, held in memory or in its file alike, for the
 * passes that look at a file's structure here and there (TIFF directories, AVIF boxes,
 * WebP chunk headers) rather than front to back.
 */

import { readFull } from "../../runtime/file_io.ts";
import { openScratch, type ScratchFile } from "../../runtime/scratch_files.ts";

/** Up to n bytes of the file from `offset` (fewer past its end). */
export type Read = (offset: number, n: number) => Promise<Uint8Array>;

/** `Read` over bytes in memory (views, not copies). */
export function readBytes(bytes: Uint8Array): Read {
  return (offset, n) => Promise.resolve(bytes.subarray(offset, offset + n));
}

/** `Read` over an open file. */
export function readFile(f: ScratchFile): Read {
  return async (offset, n) => {
    await f.seek(offset, Deno.SeekMode.Start);
    const buf = new Uint8Array(n);
    return buf.subarray(0, await readFull(f, buf));
  };
}

/**
 * Runs `use` with reads of `source`: its bytes, or the file at that path, opened for the
 * call and closed after. `size` is the source's length in bytes.
 */
export async function withReader<T>(
  source: Uint8Array | string,
  use: (read: Read, size: () => Promise<number>) => Promise<T>,
): Promise<T> {
  if (typeof source !== "string") {
    return await use(readBytes(source), () => Promise.resolve(source.length));
  }
  const f = await openScratch(source, { read: true });
  try {
    return await use(readFile(f), async () => (await f.stat()).size);
  } finally {
    f.close();
  }
}

/** Bytes copied at a time: one piece may be the whole image. */
const COPY_CHUNK = 1 << 20;

/**
 * Copies bytes [from, to) to `write` a MiB at a time; `edit` may change a piece (given
 * where it starts) before it is written. Throws when the bytes end early: the file
 * changed since its structure was read.
 */
export async function copyRange(
  read: Read,
  from: number,
  to: number,
  write: (b: Uint8Array) => Promise<void>,
  edit: (piece: Uint8Array, at: number) => Uint8Array = (piece) => piece,
): Promise<void> {
  for (let at = from; at < to; at += COPY_CHUNK) {
    const n = Math.min(COPY_CHUNK, to - at);
    const piece = await read(at, n);
    if (piece.length < n) throw new Error("the file changed while copied");
    await write(edit(piece, at));
  }
}
