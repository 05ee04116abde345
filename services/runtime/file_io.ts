import { isMemoryPath } from "./scratch_files.ts";

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
  f: { read(p: Uint8Array): Promise<number | null> },
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

/** A body as bytes: as it is when it already is, else read whole (see readWhole). */
export async function wholeBody(
  body: ReadableStream<Uint8Array> | Uint8Array,
  size: number,
): Promise<Uint8Array> {
  return body instanceof Uint8Array ? body : await readWhole(body, size);
}

/** Reads a stream of known small size into one buffer. */
export async function readWhole(
  stream: ReadableStream<Uint8Array>,
  size: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(size);
  await streamInto(stream, out);
  return out;
}

/** Reads a stream into `out`, which it must fill exactly (else it throws). */
export async function streamInto(
  stream: ReadableStream<Uint8Array>,
  out: Uint8Array,
): Promise<void> {
  const size = out.length;
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
}

/** fsync(2) of one file or folder: its bytes (or its names) survive a crash. */
export async function syncFile(path: string): Promise<void> {
  // A scratch file held in memory (no writable disk) has nothing to make durable.
  if (isMemoryPath(path)) return;
  const f = await Deno.open(path, { read: true });
  try {
    await f.sync();
  } finally {
    f.close();
  }
}

/**
 * Syncs every file under `dir`, then every folder (deepest first, `dir` itself last), at
 * most 16 at a time: a new PostgreSQL cluster is ~1000 files, more than a default limit
 * of open files allows at once.
 */
export async function syncTree(dir: string): Promise<void> {
  const files: string[] = [];
  const dirs: string[] = [];
  const walk = async (d: string) => {
    dirs.push(d);
    for await (const e of Deno.readDir(d)) {
      const path = `${d}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.isFile) files.push(path);
    }
  };
  await walk(dir);
  for (const batch of [files, dirs.reverse()]) {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(16, batch.length) }, async () => {
        while (next < batch.length) await syncFile(batch[next++]);
      }),
    );
  }
}

/** What a full disk or an exceeded quota says: errno names, Rust's text, libvips' text. */
const NO_SPACE =
  /\b(ENOSPC|EDQUOT)\b|No space left on device|Disk quota exceeded|os error (28|122)\b/;

/**
 * Whether an error (or an error it was caused by) is a write refused for want of disk
 * space: Deno's and Node's file errors, and libvips' "write error … No space left on
 * device", which sharp passes on as a plain Error.
 */
export function isNoSpace(e: unknown): boolean {
  for (let depth = 0; e instanceof Error && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NO_SPACE.test(code)) return true;
    if (NO_SPACE.test(e.message)) return true;
    e = e.cause;
  }
  return false;
}
