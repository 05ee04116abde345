/**
 * services/bodies/ — an upload's request body, read with bounded memory: multipart
 * (multipart.ts, with text parts found by multipart_text_parts.ts and byte_search.ts),
 * urlencoded and JSON bodies (form_bodies.ts) and base64 images within any of them
 * (base64_file.ts). Each gives a ReceivedForm (this file): every file part already in a
 * scratch file (on disk, or in memory with SCRATCH=memory: runtime/scratch_files.ts), and
 * the text fields; with BodyOptions, what each takes. A leaf, so the
 * readers of each body type can share both without importing one another.
 */
import type { KeyHold } from "./key_hold.ts";

/** One file part, already in a scratch file (disk or memory). */
export interface ReceivedFile {
  index: number;
  field: string;
  filename: string;
  path: string;
  size: number;
  sha256: string;
  /** The part was longer than the per-file limit; `path` holds only the first bytes. */
  truncated: boolean;
  /** The value named an address: the image is still to be fetched (URL import) into `path`. */
  url?: string;
  /**
   * A text image field that held nothing (`source=`, `"image": ""`): absent, as an empty
   * `key` is. Swagger UI's "Try it out" sends an empty `source` beside the file.
   */
  empty?: boolean;
}

/** The received files without the empty text fields (see ReceivedFile.empty). */
export function presentFiles(files: ReceivedFile[]): ReceivedFile[] {
  return files.filter((f) => !f.empty);
}

/** Result of streaming a multipart body to temp files. */
export interface ReceivedForm {
  files: ReceivedFile[];
  fields: Record<string, string>;
  /** Removes every temp file; safe to call twice. */
  cleanup(): Promise<void>;
}

/** How every body reader reads: where temp files go, and the limits it keeps. */
export interface BodyOptions {
  tmpDir: string;
  maxFileBytes: number;
  maxFiles: number;
  /**
   * What the request's images may hold together, where that is less than `maxFiles` at
   * `maxFileBytes` (memory scratch: MEMORY_REQUEST_MB); it bounds the whole body too.
   */
  requestBytes?: number;
  /** Plain fields or members at most (BODY_MAX_FIELDS; 100 when unset): past it, 160. */
  maxFields?: number;
  /** Longest JSON literal, in characters (BODY_MAX_TOKEN; 256 when unset). */
  maxToken?: number;
  /**
   * Authenticates from the fields seen so far; it runs once (admission.ts): when a `key`
   * field comes, else at the first image or once KEY_PREFIX_BYTES have arrived (or at
   * the end of a body with no image), unless `hold` lets the body wait for its key. When
   * it throws, the rest of the body is never read, so a caller without a valid key costs
   * at most that prefix, or the hold.
   */
  admit?: (fields: Record<string, string>) => Promise<unknown>;
  /**
   * Lets a body hold what comes before its `key` (see key_hold.ts), files included;
   * `stalled` stops the reader when the client falls below the rate.
   * Unset: a body key must precede the images.
   */
  hold?: (stalled: () => void) => KeyHold;
}
