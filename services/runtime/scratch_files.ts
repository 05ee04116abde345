import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../schemas/errors.ts";
import { bigBuffer } from "./big_buffer.ts";
import { dropped } from "./collector.ts";

/**
 * An upload's scratch files (the received body's files, URL imports, variants and the
 * stripped original before the store takes them), on disk or, where no disk may be
 * written (Deno Deploy and any sandbox like it), in this process's memory. Paths under
 * {@link MEMORY_ROOT} live in memory; every other path is a real file. The readers and
 * writers of scratch files open them here, so one code path serves both profiles.
 */
export const MEMORY_ROOT = "memory:";

/** The subset of Deno.FsFile the scratch readers and writers use. */
export interface ScratchFile {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  seek(offset: number | bigint, whence: Deno.SeekMode): Promise<number>;
  stat(): Promise<{ size: number }>;
  sync(): Promise<void>;
  syncData(): Promise<void>;
  close(): void;
}

/** True for a path that lives in memory. */
export function isMemoryPath(path: string): boolean {
  return path.startsWith(MEMORY_ROOT);
}

const MiB = 1024 * 1024;

/**
 * The bytes of every memory scratch file of this process, within one budget: a write that
 * would pass it is refused with 250 / HTTP 503 and Retry-After (other uploads hold the
 * memory now), so a burst of large uploads cannot take the process down.
 */
class MemoryScratch {
  readonly files = new Map<string, MemoryEntry>();
  /**
   * Folders with a budget of their own (one request's body): its limit and use, and what
   * of the process's budget it reserved up front (see reserveFolder).
   */
  readonly folders = new Map<
    string,
    { limit: number; held: number; reserved: number; expect?: number }
  >();
  budget = 256 * MiB;
  #held = 0;

  /** Bytes held now by every memory file. */
  get held(): number {
    return this.#held;
  }

  /**
   * Takes `bytes` more for a file of `folder`: 130 past the folder's own limit (the
   * request can never fit, so no retry), 250 past the process's (others hold it now).
   */
  take(bytes: number, folder?: string) {
    const f = folder === undefined ? undefined : this.folders.get(folder);
    if (f && bytes > 0 && f.held + bytes > f.limit) {
      throw new ApiError(130, {
        details: [{
          path: "memory",
          message: `the images of one request may take at most ${
            Math.floor(f.limit / MiB)
          } MB here (MEMORY_REQUEST_MB)`,
        }],
      });
    }
    // Within what the folder reserved, the process's budget was taken already.
    const grow = f ? overReserve(f, bytes) : bytes;
    if (grow > 0 && this.#held + grow > this.budget) {
      throw new ApiError(250, {
        headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
        details: [{
          path: "memory",
          message:
            "other uploads hold the memory for received images (MEMORY_BODY_MB); try again shortly",
        }],
      });
    }
    this.#held += grow;
    if (f) f.held += bytes;
  }

  give(bytes: number, folder?: string) {
    const f = folder === undefined ? undefined : this.folders.get(folder);
    this.#held -= f ? -overReserve(f, -bytes) : bytes;
    if (f) f.held -= bytes;
  }

  /**
   * Takes `bytes` of the process's budget for `folder` now; false when it has no room.
   * The folder may grow past it, from the process's budget like any memory file (250
   * when that has no room): what a stage writes beside the body is bounded by the
   * pipeline, not by the body's size (a TIFF's lossless rewrite may come to three times
   * it; issue #51 had a 306 KB one refused with "at most 0 MB").
   */
  reserve(folder: string, bytes: number): boolean {
    if (this.#held + bytes > this.budget) return false;
    this.#held += bytes;
    this.folders.set(folder, { limit: Infinity, held: 0, reserved: bytes });
    return true;
  }

  /**
   * Ends a folder's own budget: its reservation goes back, and whatever its files still
   * hold counts for the process from now on.
   */
  release(folder: string) {
    const f = this.folders.get(folder);
    if (!f) return;
    this.folders.delete(folder);
    // The folder counted max(reserved, held); its files now count what they hold.
    this.#held += f.held - Math.max(f.held, f.reserved);
  }

  remove(path: string) {
    const e = this.files.get(path);
    if (!e) throw new Deno.errors.NotFound(`no scratch file ${path}`);
    this.files.delete(path);
    const bytes = capacityOf(e);
    this.give(bytes, e.folder);
    dropped(bytes);
  }
}

/**
 * How much more of the process's budget a folder takes when its files grow by `bytes`
 * (negative: shrink): a folder counts max(reserved, held) against the process.
 */
function overReserve(
  f: { held: number; reserved: number },
  bytes: number,
): number {
  return Math.max(f.reserved, f.held + bytes) - Math.max(f.reserved, f.held);
}

/**
 * One memory file: its bytes in parts, appended as it is written (capacity may exceed size
 * until it is closed), made one contiguous part when read whole. A file written piece by
 * piece used to be one buffer grown by half again, copying what it held each time: a 5 MB
 * upload left ~15 MB of dropped buffers behind it (its body, then its stripped copy), which
 * the process kept as RSS long after (issue #49). Parts are never copied to grow.
 */
interface MemoryEntry {
  parts: Uint8Array[];
  size: number;
  folder: string;
  /**
   * Bytes its parts' buffers hold beyond the parts' views: a little room left at close
   * rather than copied away (see MemoryFile#close). Counted as held until the file goes.
   */
  slack: number;
}

/** Room at a file's close left in place (counted) rather than copied away: at most this. */
const SLACK_MAX = 64 * 1024;

/** The first part of a file written piece by piece; each next one doubles, up to PART_MAX. */
const PART_MIN = 64 * 1024;
const PART_MAX = MiB;

/** Bytes a memory file's parts hold (its size, plus the last part's room). */
function capacityOf(e: MemoryEntry): number {
  let n = e.slack;
  for (const p of e.parts) n += p.length;
  return n;
}

/**
 * The file's bytes as one buffer: its only part as it is, else its parts copied into one,
 * which then replaces them (read whole once, read whole again for free).
 */
function wholeOf(e: MemoryEntry): Uint8Array {
  if (e.parts.length <= 1) {
    return e.parts[0]?.subarray(0, e.size) ?? new Uint8Array(0);
  }
  // The copy is counted before the parts are given back: both are held meanwhile.
  memory.take(e.size, e.folder);
  const whole = bigBuffer(e.size);
  let at = 0;
  for (const p of e.parts) {
    const n = Math.min(p.length, e.size - at);
    whole.set(n === p.length ? p : p.subarray(0, n), at);
    at += n;
  }
  const parts = capacityOf(e);
  memory.give(parts, e.folder);
  dropped(parts);
  e.parts = [whole];
  e.slack = 0;
  return whole;
}

function folderOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}

const memory = new MemoryScratch();

/** Sets the process's memory budget for scratch files (MEMORY_BODY_MB). */
export function setMemoryBudget(mb: number): void {
  memory.budget = mb * MiB;
}

/**
 * Gives a memory folder (one request's received files) a budget of its own, until
 * {@link releaseFolder}: writes past it throw 130. `expect`: the size its first file is
 * expected to reach (a body's declared length), made its first part.
 */
export function limitFolder(
  folder: string,
  bytes: number,
  expect?: number,
): void {
  if (isMemoryPath(folder)) {
    memory.folders.set(folder, { limit: bytes, held: 0, reserved: 0, expect });
  }
}

/**
 * Reserves `bytes` of the process's budget for a memory folder, which may then hold that
 * much with no write refused for the process's sake, and more while the process's budget
 * has room (250 past it); false, reserving nothing, when the budget has no room (the
 * caller then writes to disk instead). `expect` as for limitFolder.
 */
export function reserveFolder(
  folder: string,
  bytes: number,
  expect?: number,
): boolean {
  if (!memory.reserve(folder, bytes)) return false;
  memory.folders.get(folder)!.expect = expect;
  return true;
}

/** Ends a folder's own budget (its files, if any are left, still count for the process). */
export function releaseFolder(folder: string): void {
  memory.release(folder);
}

/** Bytes the memory scratch files hold now (for tests and the logs). */
export function memoryHeld(): number {
  return memory.held;
}

/** The names of the memory scratch files that exist now (tests: none may be left behind). */
export function memoryFileNames(): string[] {
  return [...memory.files.keys()].map((p) => p.slice(p.lastIndexOf("/") + 1));
}

class MemoryFile implements ScratchFile {
  #pos = 0;
  constructor(
    private readonly path: string,
    private readonly entry: MemoryEntry,
  ) {}

  read(p: Uint8Array): Promise<number | null> {
    const { size } = this.entry;
    if (this.#pos >= size) return Promise.resolve(p.length ? null : 0);
    const n = Math.min(p.length, size - this.#pos);
    this.#each(this.#pos, n, (part, at, len, off) => {
      p.set(part.subarray(at, at + len), off);
    });
    this.#pos += n;
    return Promise.resolve(n);
  }

  write(p: Uint8Array): Promise<number> {
    if (memory.files.get(this.path) !== this.entry) {
      return Promise.reject(new Deno.errors.NotFound(this.path));
    }
    const e = this.entry;
    const end = this.#pos + p.length;
    const cap = capacityOf(e) - e.slack;
    if (end > cap) {
      // One new part for what does not fit: doubling from PART_MIN up to PART_MAX, or
      // the whole rest when one write brings more. Taken from the budget first.
      const last = e.parts.at(-1)?.length ?? 0;
      const want = Math.max(
        end - cap,
        Math.min(PART_MAX, Math.max(PART_MIN, 2 * last)),
      );
      memory.take(want, e.folder);
      e.parts.push(bigBuffer(want));
    }
    this.#each(this.#pos, p.length, (part, at, len, off) => {
      part.set(p.subarray(off, off + len), at);
    });
    this.#pos = end;
    if (end > e.size) e.size = end;
    return Promise.resolve(p.length);
  }

  /**
   * Visits the parts covering [from, from + n): each with the offset in it, the length
   * there, and the offset in the caller's buffer.
   */
  #each(
    from: number,
    n: number,
    visit: (part: Uint8Array, at: number, len: number, off: number) => void,
  ) {
    let start = 0, off = 0;
    for (const part of this.entry.parts) {
      if (off >= n) break;
      const end = start + part.length;
      if (from + off < end) {
        const at = from + off - start;
        const len = Math.min(part.length - at, n - off);
        visit(part, at, len, off);
        off += len;
      }
      start = end;
    }
  }

  seek(offset: number | bigint, whence: Deno.SeekMode): Promise<number> {
    const o = Number(offset);
    this.#pos = whence === Deno.SeekMode.Start
      ? o
      : whence === Deno.SeekMode.Current
      ? this.#pos + o
      : this.entry.size + o;
    return Promise.resolve(this.#pos);
  }

  stat(): Promise<{ size: number }> {
    return Promise.resolve({ size: this.entry.size });
  }

  /** Nothing to make durable: memory files never outlive the request. */
  sync(): Promise<void> {
    return Promise.resolve();
  }

  syncData(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Ends the last part at the file's end. Little room (a body's closing boundary, a
   * stripped file's removed metadata) stays in its buffer, counted; more is given back,
   * that part alone copied to its length.
   */
  close(): void {
    const e = this.entry;
    const room = capacityOf(e) - e.slack - e.size;
    if (room > 0 && memory.files.get(this.path) === e) {
      const last = e.parts.length - 1;
      const keep = e.parts[last].length - room;
      if (keep > 0 && room <= SLACK_MAX) {
        e.parts[last] = e.parts[last].subarray(0, keep);
        e.slack += room;
      } else {
        memory.give(room, e.folder);
        if (keep > 0) e.parts[last] = e.parts[last].slice(0, keep);
        else e.parts.pop();
      }
    }
  }
}

/**
 * Opens a scratch file, in memory or on disk (Deno.open's options). A new memory file's
 * first part holds `expect` bytes when the writer knows about how many will come (a
 * stripped copy of a file, a one-file body), so it is never gathered from parts into one
 * buffer before it is read whole; else its folder's expected first file, if it has one
 * (see limitFolder); else parts as it grows.
 */
export async function openScratch(
  path: string,
  opts: Deno.OpenOptions,
  expect?: number,
): Promise<ScratchFile> {
  if (!isMemoryPath(path)) return await Deno.open(path, opts);
  let entry = memory.files.get(path);
  if (entry && opts.createNew) {
    throw new Deno.errors.AlreadyExists(`scratch file ${path} exists`);
  }
  if (!entry) {
    if (!opts.create && !opts.createNew) {
      throw new Deno.errors.NotFound(`no scratch file ${path}`);
    }
    const folder = folderOf(path);
    entry = { parts: [], size: 0, folder, slack: 0 };
    const first = firstPart(folder, expect);
    if (first > 0) entry.parts.push(bigBuffer(first));
    memory.files.set(path, entry);
  } else if (opts.truncate) {
    memory.give(capacityOf(entry), entry.folder);
    entry.parts = [];
    entry.size = 0;
    entry.slack = 0;
  }
  return new MemoryFile(path, entry);
}

/**
 * The size of a new file's first part in `folder` (0: none yet), taken from the budget
 * now: `expect`, or the folder's expected first file once; within the folder's own limit,
 * and 0 when the process's budget has no room for it (the writes then ask, part by part).
 */
function firstPart(folder: string, expect?: number): number {
  const f = memory.folders.get(folder);
  let want = expect ?? 0;
  if (!want && f?.expect) {
    want = f.expect;
    f.expect = 0;
  }
  if (f) want = Math.min(want, f.limit - f.held);
  if (want <= 0) return 0;
  try {
    memory.take(want, folder);
  } catch {
    return 0;
  }
  return want;
}

/**
 * A scratch file's whole bytes: a memory file's own bytes, not a copy (a file written in
 * parts is made one buffer first, once).
 */
export async function readScratch(path: string): Promise<Uint8Array> {
  if (!isMemoryPath(path)) return await Deno.readFile(path);
  const e = memory.files.get(path);
  if (!e) throw new Deno.errors.NotFound(`no scratch file ${path}`);
  return wholeOf(e);
}

/**
 * Ends a memory file of one part (read whole) at `size` bytes, after its bytes were
 * rewritten shorter within themselves (strip_in_place.ts). The room past it stays in
 * its buffer, counted, until the file goes: nothing is copied to give it back.
 */
export function shrinkScratch(path: string, size: number): void {
  const e = memory.files.get(path);
  if (!e) throw new Deno.errors.NotFound(`no scratch file ${path}`);
  if (e.parts.length !== 1 || size > e.size) {
    throw new RangeError(`cannot shrink ${path} to ${size} bytes`);
  }
  e.slack += e.parts[0].length - size;
  e.parts[0] = e.parts[0].subarray(0, size);
  e.size = size;
}

/** Writes a whole scratch file at once (libvips' output, made in memory). */
export async function writeScratch(
  path: string,
  bytes: Uint8Array,
): Promise<void> {
  if (!isMemoryPath(path)) return await Deno.writeFile(path, bytes);
  if (memory.files.has(path)) memory.remove(path);
  const folder = folderOf(path);
  memory.take(bytes.length, folder);
  memory.files.set(path, {
    parts: [bytes],
    size: bytes.length,
    folder,
    slack: 0,
  });
}

/** Removes a scratch file (NotFound when there is none, as Deno.remove). */
export async function removeScratch(path: string): Promise<void> {
  if (!isMemoryPath(path)) return await Deno.remove(path);
  memory.remove(path);
}

/** Creates a scratch folder; memory needs none. */
export async function mkdirScratch(path: string): Promise<void> {
  if (!isMemoryPath(path)) await Deno.mkdir(path, { recursive: true });
}

/** A scratch file's size in bytes. */
export async function statScratch(path: string): Promise<{ size: number }> {
  if (!isMemoryPath(path)) return await Deno.stat(path);
  const e = memory.files.get(path);
  if (!e) throw new Deno.errors.NotFound(`no scratch file ${path}`);
  return { size: e.size };
}
