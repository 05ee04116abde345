import busboy from "busboy";
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ApiError } from "../schemas/errors.ts";

/** One file part, already on disk in a temp file. */
export interface ReceivedFile {
  index: number;
  field: string;
  filename: string;
  path: string;
  size: number;
  sha256: string;
  /** The part was longer than the per-file limit; `path` holds only the first bytes. */
  truncated: boolean;
}

/** Result of streaming a multipart body to temp files. */
export interface ReceivedForm {
  files: ReceivedFile[];
  fields: Record<string, string>;
  /** Removes every temp file; safe to call twice. */
  cleanup(): Promise<void>;
}

/** Form fields that carry image files (DESIGN.md). */
export const FILE_FIELDS = new Set(["images", "images[]", "image", "source"]);

/**
 * Streams a multipart body to temp files with busboy, which honours backpressure: the
 * request is read only as fast as the disk takes it, so memory stays flat whatever the file
 * sizes. Each file is hashed and counted while written and cut off at `maxFileBytes`. More
 * than `maxFiles` file parts abort with 131 after deleting what was written.
 */
export async function receiveMultipart(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  opts: { tmpDir: string; maxFileBytes: number; maxFiles: number },
): Promise<ReceivedForm> {
  // Whole-body cap: every allowed file at its limit plus room for fields and boundaries.
  const maxTotal = opts.maxFiles * opts.maxFileBytes + 4 * 1024 * 1024;
  let total = 0;
  let overTotal = false;
  const counted = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        total += chunk.length;
        if (total > maxTotal) {
          overTotal = true;
          ctl.error(new Error("request body too large"));
          return;
        }
        ctl.enqueue(chunk);
      },
    }),
  );
  const files: ReceivedFile[] = [];
  const fields: Record<string, string> = {};
  const cleanup = async () => {
    await Promise.all(files.map((f) => Deno.remove(f.path).catch(() => {})));
  };
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: { "content-type": contentType },
      limits: {
        fileSize: opts.maxFileBytes,
        files: opts.maxFiles,
        fields: 50,
        fieldSize: 64 * 1024,
        parts: opts.maxFiles + 100,
        headerPairs: 100,
      },
    });
  } catch (e) {
    throw new ApiError(160, { details: [{ message: (e as Error).message }] });
  }
  let tooMany = false;
  const writes: Promise<void>[] = [];
  let index = 0;

  bb.on("field", (name, value) => {
    if (name.length <= 100) fields[name] = value;
  });
  bb.on("filesLimit", () => {
    tooMany = true;
  });
  bb.on("file", (field, stream, info) => {
    if (tooMany || !FILE_FIELDS.has(field)) {
      stream.resume();
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
    const hash = createHash("sha256");
    stream.on("data", (chunk: Uint8Array) => {
      rec.size += chunk.length;
      hash.update(chunk);
    });
    stream.on("limit", () => {
      rec.truncated = true;
    });
    writes.push(
      pipeline(stream, createWriteStream(rec.path)).then(() => {
        rec.sha256 = hash.digest("hex");
      }),
    );
  });

  try {
    await pipeline(Readable.fromWeb(counted as never), bb);
    await Promise.all(writes);
  } catch (e) {
    await Promise.allSettled(writes);
    await cleanup();
    if (e instanceof ApiError) throw e;
    if (overTotal) throw new ApiError(413);
    throw new ApiError(160, {
      details: [{
        message: `Malformed multipart body: ${(e as Error).message}`,
      }],
    });
  }
  if (tooMany) {
    await cleanup();
    throw new ApiError(131, {
      details: [{ message: `At most ${opts.maxFiles} files per request` }],
    });
  }
  return { files, fields, cleanup };
}
