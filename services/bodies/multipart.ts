import busboy from "busboy";
import { createHash, type Hash } from "node:crypto";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { ApiError } from "../../schemas/errors.ts";
import { writeAll } from "../runtime/file_io.ts";
import { Base64File } from "./base64_file.ts";
import {
  type BodyOptions,
  presentFiles,
  type ReceivedFile,
  type ReceivedForm,
} from "./received.ts";
import {
  base64Length,
  bodyCap,
  DEFAULT_MAX_FIELDS,
  tooManyFields,
} from "./budgets.ts";
import { TextPartMarker } from "./multipart_text_parts.ts";
import { Admission } from "./admission.ts";
import { BufferPool } from "./buffer_pool.ts";
import {
  openScratch,
  removeScratch,
  type ScratchFile,
} from "../runtime/scratch_files.ts";

/** Form fields that carry image files (DESIGN.md). */
export const FILE_FIELDS = new Set(["images", "images[]", "image", "source"]);

/** Size of one read from the request body. */
const READ_SIZE = 64 * 1024;
/**
 * Read buffers in rotation. A buffer is refilled only this many chunks after busboy saw it:
 * by then nothing can still point into it, since file bytes are copied out as they are
 * parsed and a field (at most 64 KB) spans at most three full chunks.
 */
const READ_POOL = 8;
/** Each file is written in pieces of this size, from two buffers taking turns. */
const WRITE_SIZE = 256 * 1024;

/**
 * The process's read and write buffers: a request takes them as it needs them and gives
 * them back once its body is parsed (see BufferPool for why). Eight 200 KB uploads at once
 * hold 32 reads and 8 writes.
 */
const READS = new BufferPool(READ_SIZE, 32);
const WRITES = new BufferPool(WRITE_SIZE, 8);

/** The process's body buffers (tests: what a request takes, it gives back). */
export const BODY_BUFFERS = { reads: READS, writes: WRITES } as const;

/** A written-out buffer's place once the file is finished: nothing to fill any more. */
const NONE = new Uint8Array(0);

/**
 * Writes one file part: bytes busboy hands over are copied at once into the current buffer
 * (so busboy's views into the read buffers are never kept), and a full buffer is written
 * while the other one fills. The reader waits on {@link FileSink.ready} before reading more,
 * which is the backpressure: at most two buffers per file are ever in use, the second one
 * taken only when the file outgrows the first.
 */
class FileSink {
  #file: Promise<ScratchFile>;
  #buf: Uint8Array;
  #spare: Uint8Array | undefined;
  #len = 0;
  #flushing: Promise<void> = Promise.resolve();
  #busy = false;
  /** finish() began: the buffers are about to go back to the pool. */
  #closed = false;
  error: unknown;
  readonly hash: Hash = createHash("sha256");

  constructor(readonly rec: ReceivedFile) {
    this.#buf = new Uint8Array(WRITES.take());
    this.#file = openScratch(rec.path, { write: true, createNew: true });
    this.#file.catch((e) => this.error ??= e);
  }

  /** Takes a piece of the part's bytes (synchronously: the view is not kept). */
  push(chunk: Uint8Array) {
    // Nothing may be written into buffers another request may have taken.
    if (this.#closed) return;
    this.rec.size += chunk.length;
    this.hash.update(chunk);
    let off = 0;
    while (off < chunk.length) {
      if (this.#len === WRITE_SIZE) {
        if (this.#busy) {
          // Both buffers full: only possible if the reader ignored ready(); keep the bytes.
          this.#spare = new Uint8Array(WRITE_SIZE);
          this.#busy = false;
        }
        this.#swap();
      }
      const n = Math.min(chunk.length - off, WRITE_SIZE - this.#len);
      this.#buf.set(chunk.subarray(off, off + n), this.#len);
      this.#len += n;
      off += n;
    }
  }

  /** Starts writing the full buffer and continues in the spare one. */
  #swap() {
    const full = this.#buf.subarray(0, this.#len);
    this.#buf = this.#spare ??
      (this.#closed ? NONE : new Uint8Array(WRITES.take()));
    this.#spare = undefined;
    this.#len = 0;
    this.#busy = true;
    this.#flushing = this.#flushing.then(async () => {
      try {
        await writeAll(await this.#file, full);
      } catch (e) {
        this.error ??= e;
      }
      this.#spare = new Uint8Array(full.buffer, 0, WRITE_SIZE);
      this.#busy = false;
    });
  }

  /** Resolves when another read's worth of bytes can be taken without a third buffer. */
  ready(): Promise<void> | undefined {
    if (this.#busy && WRITE_SIZE - this.#len < READ_SIZE) return this.#flushing;
  }

  #finished?: Promise<void>;

  /** Writes what is left, closes the file and records its hash; safe to call twice. */
  finish(): Promise<void> {
    return this.#finished ??= this.#finish();
  }

  async #finish(): Promise<void> {
    this.#closed = true;
    if (this.#len > 0) this.#swap();
    await this.#flushing;
    // Nothing is being written any more: the next file part takes these buffers.
    for (const b of [this.#buf, this.#spare]) {
      if (b && b !== NONE) WRITES.give(b.buffer as ArrayBuffer);
    }
    this.#buf = NONE;
    this.#spare = undefined;
    const f = await this.#file.catch(() => undefined);
    f?.close();
    if (this.error) throw this.error;
    this.rec.sha256 = this.hash.digest("hex");
  }
}

/**
 * The sink of a text part (base64 or a URL) of an image field: the text goes to a
 * {@link Base64File} as it arrives. A bad character fails the request (141), as a bad
 * form field does; a value cut by a limit is 130, not a base64 error.
 */
class TextSink {
  error: unknown;
  #decoder = new TextDecoder();
  #finished?: Promise<void>;

  constructor(readonly img: Base64File) {}

  push(chunk: Uint8Array) {
    this.pushText(this.#decoder.decode(chunk, { stream: true }));
  }

  /** Takes text (a whole field's value, or a decoded piece of a part). */
  pushText(text: string) {
    if (this.error) return;
    try {
      this.img.push(text);
    } catch (e) {
      if (!this.img.rec.truncated) this.error = e;
    }
  }

  /** Resolves when what was pushed is on disk. */
  ready(): Promise<void> {
    return this.img.drained();
  }

  finish(): Promise<void> {
    return this.#finished ??= this.#finish();
  }

  async #finish() {
    try {
      if (this.error) throw this.error;
      this.img.push(this.#decoder.decode());
      await this.img.finish();
    } catch (e) {
      // Its file must exist and be closed before the cleanup may remove it.
      await this.img.abandon();
      if (!this.img.rec.truncated) throw this.error ??= e;
    }
  }
}

/**
 * Streams a multipart body to temp files with busboy. The body is read into a few reused
 * buffers (BYOB reads where the stream offers them) and each file's bytes are copied into
 * two reused write buffers, all from the process's pools: a request holds a fixed ~1 MB
 * at most however large it is, and is read only as fast as the disk takes it. Each file
 * is hashed and counted as it arrives and cut off at `maxFileBytes`. More than
 * `maxFiles` file parts abort with 131 after deleting what was written; a body over the
 * total cap gives 413; a malformed one 160.
 */
export async function receiveMultipart(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  opts: BodyOptions,
): Promise<ReceivedForm> {
  const slots: ArrayBuffer[] = [];
  try {
    return await receiveInto(body, contentType, opts, slots);
  } finally {
    // Parsed, every part copied out and every sink finished: no view into them is left.
    for (const b of slots) if (b) READS.give(b);
  }
}

/** receiveMultipart's work, reading into `slots`. */
async function receiveInto(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  opts: BodyOptions,
  slots: ArrayBuffer[],
): Promise<ReceivedForm> {
  // Base64 text parts are a third larger than the bytes they carry (plus line breaks).
  const maxPartBytes = base64Length(opts.maxFileBytes);
  const maxTotal = bodyCap("multipart", opts);
  const boundary = contentType.match(/boundary=(?:"([^"]+)"|([^;\s]+))/i);
  const marker = boundary
    ? new TextPartMarker(
      boundary[1] ?? boundary[2],
      FILE_FIELDS,
      `x-imagehost-text-${crypto.randomUUID()}`,
    )
    : undefined;
  const files: ReceivedFile[] = [];
  const sinks: (FileSink | TextSink)[] = [];
  const fields: Record<string, string> = {};
  const cleanup = async () => {
    await Promise.all(files.map((f) => removeScratch(f.path).catch(() => {})));
  };
  const maxFields = opts.maxFields ?? DEFAULT_MAX_FIELDS;
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: { "content-type": contentType },
      limits: {
        // Files are cut at maxFileBytes by their sink; base64 text parts by Base64File.
        fileSize: maxPartBytes,
        files: opts.maxFiles,
        fields: maxFields,
        fieldSize: 64 * 1024,
        parts: opts.maxFiles + maxFields,
        headerPairs: 100,
      },
    });
  } catch (e) {
    await body.cancel().catch(() => {});
    throw new ApiError(160, { details: [{ message: (e as Error).message }] });
  }
  let tooMany = false;
  let parseError: Error | undefined;
  let index = 0;

  bb.on("error", (e: Error) => parseError ??= e);
  // An image field's text part that reached busboy as a field: only when the marker did
  // not read the boundary busboy did (busboy refuses header blocks over 16 KB, the
  // marker's own limit, so that is not a way here). busboy keeps a field whole, so these
  // stay capped at 64 KB of text (130 past it); marked parts stream as files.
  const textImages: Promise<void>[] = [];
  bb.on("field", (name, value, info) => {
    if (!FILE_FIELDS.has(name)) {
      if (name.length <= 100) fields[name] = value;
      return;
    }
    if (tooMany || index >= opts.maxFiles) {
      tooMany = true;
      return;
    }
    const sink = new TextSink(
      new Base64File(index++, name, opts.tmpDir, opts.maxFileBytes),
    );
    files.push(sink.img.rec);
    // A value busboy cut at 64 KB is 130, not a base64 error (it may end mid-group).
    if (info.valueTruncated) sink.img.rec.truncated = true;
    else sink.pushText(value);
    textImages.push(sink.finish());
  });
  bb.on("filesLimit", () => {
    tooMany = true;
  });
  // Past the field or part budget the body is refused at once and read no further:
  // busboy would drop the extra ones but go on scanning (100k fields: 49 s).
  bb.on("fieldsLimit", () => parseError ??= tooManyFields(maxFields));
  bb.on("partsLimit", () => parseError ??= tooManyFields(maxFields));
  bb.on("file", (field, stream, info) => {
    // A part cut short errors its stream too; the form-level error already says why.
    stream.on("error", (e: Error) => parseError ??= e);
    // Text images count against MAX_FILES too.
    if (FILE_FIELDS.has(field) && index >= opts.maxFiles) tooMany = true;
    if (tooMany || !FILE_FIELDS.has(field)) {
      stream.resume();
      return;
    }
    if (marker && info.encoding === marker.marker) {
      // An image field's text part (base64 or a URL), marked on its way in: decoded in
      // pieces like a form body's, never kept whole.
      const sink = new TextSink(
        new Base64File(index++, field, opts.tmpDir, opts.maxFileBytes),
      );
      files.push(sink.img.rec);
      sinks.push(sink);
      stream.on("data", (chunk: Uint8Array) => sink.push(chunk));
      stream.on("end", () => sink.finish().catch(() => {}));
      stream.on("limit", () => {
        sink.img.rec.truncated = true;
      });
      return;
    }
    const rec: ReceivedFile = {
      index: index++,
      field,
      filename: (info.filename ?? "").slice(0, 255) || "image",
      path: join(opts.tmpDir, `up-${crypto.randomUUID()}`),
      size: 0,
      sha256: "",
      truncated: false,
    };
    files.push(rec);
    const sink = new FileSink(rec);
    sinks.push(sink);
    stream.on("data", (chunk: Uint8Array) => {
      // busboy's own limit is the larger base64 one: a file is cut here, at its limit.
      if (rec.truncated) return;
      const room = opts.maxFileBytes - rec.size;
      if (chunk.length > room) {
        sink.push(chunk.subarray(0, room));
        rec.truncated = true;
        return;
      }
      sink.push(chunk);
    });
    // Finished as soon as the part ends, so its buffers serve the next part; errors are
    // collected when every sink is awaited below.
    stream.on("end", () => sink.finish().catch(() => {}));
    stream.on("limit", () => {
      rec.truncated = true;
    });
  });
  const finished = new Promise<void>((resolve) => {
    bb.once("close", resolve);
    bb.once("error", () => resolve());
  });
  const feed = (chunk: Uint8Array) =>
    new Promise<void>((resolve) => {
      bb.write(
        Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
        (e) => {
          if (e) parseError ??= e;
          resolve();
        },
      );
    });

  let overTotal = false;
  // A keyless request may hold its parts, files too, until its `key` field comes
  // (admission.ts); stalled, its reader is stopped and it is admitted as it stands.
  const stop = new AbortController();
  const admission = new Admission(opts, fields, () => stop.abort());
  const admit = () => admission.admit();
  try {
    let total = 0;
    // Until the caller is admitted, pieces are taken as they arrive: a slow client whose
    // file part has begun is judged at once, not once 64 KB have come.
    for await (
      const chunk of readPooled(
        body,
        slots,
        () => !admission.admitted,
        stop.signal,
      )
    ) {
      total += chunk.length;
      if (total > maxTotal) {
        overTotal = true;
        break;
      }
      for (const piece of marker ? marker.push(chunk) : [chunk]) {
        await feed(piece);
      }
      // Let busboy's per-file streams deliver what they queued before their first read.
      await new Promise((r) => queueMicrotask(() => r(undefined)));
      await admission.progress(
        total,
        sinks.length > 0 || textImages.length > 0,
      );
      if (parseError) break;
      // Parts arrive one after another: only the latest can still be filling.
      await sinks.at(-1)?.ready();
      const failed = sinks.find((s) => s.error);
      if (failed) throw failed.error;
    }
    // A client that stalled while its key had not come: refused as it stands.
    if (admission.stalled) await admit();
    if (!overTotal && !parseError) {
      for (const piece of marker?.flush() ?? []) await feed(piece);
      bb.end();
      await finished;
    }
    if (overTotal || parseError) bb.destroy();
    const results = await Promise.allSettled([
      ...sinks.map((s) => s.finish()),
      ...textImages,
    ]);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    // A form with no file part (and a short one): admission decides before any error.
    await admit();
    if (overTotal) throw new ApiError(413);
    if (parseError) throw parseError;
  } catch (e) {
    admission.release();
    bb.destroy();
    await Promise.allSettled([...sinks.map((s) => s.finish()), ...textImages]);
    await cleanup();
    if (e instanceof ApiError) throw e;
    // A temp file that could not be written (disk full, say) is our failure, not the
    // client's: it goes on as a 500, not as a malformed body.
    if (sinks.some((s) => s.error === e)) throw e;
    throw new ApiError(160, {
      details: [{
        message: `Malformed multipart body: ${(e as Error).message}`,
      }],
    });
  }
  admission.release();
  if (tooMany) {
    await cleanup();
    throw new ApiError(131, {
      details: [{ message: `At most ${opts.maxFiles} files per request` }],
    });
  }
  return { files: presentFiles(files), fields, cleanup };
}

/**
 * Yields the body in full READ_SIZE chunks (the last one shorter) of a rotating set of
 * reused buffers, kept in `pool` (taken from the process's pool as needed; the caller
 * gives them back once nothing can point into them). Full chunks keep the pool's promise
 * whatever size the network's pieces are: a 64 KB field spans at most three of them. A
 * byte stream is read BYOB straight into the buffers; any other stream's chunks are
 * copied in. While `eager()` holds, whatever has arrived is yielded at once as a copy of
 * its own (outside the pool, so the promise still holds): the first bytes of a body
 * decide admission.
 */
async function* readPooled(
  body: ReadableStream<Uint8Array>,
  pool: ArrayBuffer[],
  eager: () => boolean = () => false,
  stop?: AbortSignal,
): AsyncGenerator<Uint8Array> {
  // Taken from the process's pool as the body needs them (a 200 KB body, four).
  const buf = (slot: number) => pool[slot] ??= READS.take();
  let turn = 0;
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    byob = undefined;
  }
  if (byob) {
    // Stopping cancels the reader: a read waiting on a silent client ends at once.
    const onStop = () => byob!.cancel().catch(() => {});
    stop?.addEventListener("abort", onStop, { once: true });
    try {
      while (true) {
        const slot = turn++ % READ_POOL;
        let filled = 0;
        let done = false;
        while (filled < READ_SIZE) {
          const r = await byob.read(
            new Uint8Array(buf(slot), filled, READ_SIZE - filled),
          );
          // The read transferred the buffer; keep the new one for the next turn.
          if (r.value) pool[slot] = r.value.buffer as ArrayBuffer;
          if (r.done) {
            done = true;
            break;
          }
          filled += r.value.length;
          if (eager()) break;
        }
        if (filled) {
          yield filled < READ_SIZE && !done
            ? new Uint8Array(pool[slot], 0, filled).slice()
            : new Uint8Array(pool[slot], 0, filled);
        }
        if (done) return;
      }
    } finally {
      stop?.removeEventListener("abort", onStop);
      await byob.cancel().catch(() => {});
    }
  }
  const reader = body.getReader();
  const onStop = () => reader.cancel().catch(() => {});
  stop?.addEventListener("abort", onStop, { once: true });
  try {
    let into = new Uint8Array(buf(turn++ % READ_POOL));
    let filled = 0;
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      if (eager() && filled === 0) {
        yield value.slice();
        continue;
      }
      let off = 0;
      while (off < value.length) {
        const n = Math.min(READ_SIZE - filled, value.length - off);
        into.set(value.subarray(off, off + n), filled);
        filled += n;
        off += n;
        if (filled === READ_SIZE) {
          yield into;
          into = new Uint8Array(buf(turn++ % READ_POOL));
          filled = 0;
        }
      }
    }
    if (filled) yield into.subarray(0, filled);
  } finally {
    stop?.removeEventListener("abort", onStop);
    await reader.cancel().catch(() => {});
  }
}
