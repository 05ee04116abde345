import { ApiError } from "../../schemas/errors.ts";

/**
 * The parsing budgets every body reader keeps, so no input costs unbounded work: plain
 * fields per body (BODY_MAX_FIELDS) and the longest JSON literal (BODY_MAX_TOKEN); these
 * are the defaults when a caller gives none.
 */
export const DEFAULT_MAX_FIELDS = 100;
/** See DEFAULT_MAX_FIELDS. */
export const DEFAULT_MAX_TOKEN = 256;

/** 160 for a body with more plain fields than `max`: read no further. */
export function tooManyFields(max: number): ApiError {
  return new ApiError(160, {
    details: [{ message: `at most ${max} fields per request` }],
  });
}

/** The body types an upload may come in, by how they carry an image's bytes. */
export type BodyKind = "multipart" | "urlencoded" | "json";

/** The kind of an upload body by its Content-Type; undefined for one no reader takes. */
export function bodyKindOf(contentType: string): BodyKind | undefined {
  if (/^multipart\/form-data/i.test(contentType)) return "multipart";
  if (/^application\/x-www-form-urlencoded/i.test(contentType)) {
    return "urlencoded";
  }
  if (/^application\/json/i.test(contentType)) return "json";
  return undefined;
}

/** Room in every body cap for plain fields, part headers and boundaries. */
const FRAMING_BYTES = 4 * 1024 * 1024;

/**
 * Bytes of base64 text that carry `bytes` bytes, with room for MIME line breaks (a CRLF
 * every 76 characters) and a data: URI prefix.
 */
export function base64Length(bytes: number): number {
  const chars = Math.ceil(bytes / 3) * 4;
  return chars + Math.ceil(chars / 76) * 2 + 1024;
}

/**
 * How much larger than its base64 an image's text is in each body kind: a form's value may
 * be percent-encoded (`+`, `/`, `=` take three characters each), a JSON string may escape
 * each `/` as `\/`; a multipart text part is the base64 as it is (and a file part is the
 * bytes themselves, smaller still).
 */
const TEXT_FACTOR: Record<BodyKind, number> = {
  multipart: 1,
  urlencoded: 3,
  json: 2,
};

/**
 * The longest upload body of `kind` that could still be taken whole: `maxFiles` images of
 * `maxFileBytes` each, as base64 text (the larger way to carry them), and where the
 * request's images may hold only `requestBytes` together (memory scratch,
 * MEMORY_REQUEST_MB) no more than that as text; plus room for fields and framing. A body
 * over it is 413: before a byte is read when its Content-Length says so (upload.ts), else
 * as soon as that much has come (the readers).
 */
export function bodyCap(
  kind: BodyKind,
  limits: { maxFiles: number; maxFileBytes: number; requestBytes?: number },
): number {
  const factor = TEXT_FACTOR[kind];
  const each = limits.maxFiles * base64Length(limits.maxFileBytes) * factor;
  // Each image's text rounds up on its own: at most a group and a line's slack apiece.
  const together = limits.requestBytes === undefined ? Infinity : (
    base64Length(limits.requestBytes) + limits.maxFiles * 1024
  ) * factor;
  return Math.min(each, together) + FRAMING_BYTES;
}
