/**
 * The one table of error codes: message and HTTP status per code. It drives the error
 * envelope, every route's documented responses in openapi.yaml and the SDK's error type.
 */
export const ERRORS = {
  100: { message: "No API key provided", status: 401 },
  110: { message: "Invalid API key", status: 401 },
  120: { message: "User not found", status: 401 },
  130: { message: "File size too large", status: 413 },
  131: { message: "Too many files", status: 400 },
  140: { message: "No image file provided", status: 400 },
  141: { message: "Unsupported image type", status: 415 },
  142: { message: "Image dimensions too large", status: 413 },
  143: { message: "Image took too long to process", status: 422 },
  150: { message: "No files could be uploaded", status: 422 },
  160: { message: "Invalid request", status: 400 },
  161: { message: "Upload offset does not match", status: 409 },
  162: { message: "Tus-Resumable 1.0.0 required", status: 412 },
  170: { message: "Rate limit exceeded", status: 429 },
  180: { message: "Quota exceeded", status: 403 },
  181: { message: "Sign-up is closed or the invite is not valid", status: 403 },
  182: {
    message: "This image was taken down and may not be uploaded",
    status: 403,
  },
  200: { message: "Invalid URL", status: 400 },
  210: { message: "URL not allowed", status: 403 },
  220: { message: "Page could not be loaded", status: 502 },
  221: { message: "Image could not be fetched", status: 502 },
  222: { message: "Element not found", status: 404 },
  230: { message: "Screenshot timed out", status: 504 },
  231: { message: "Image fetch timed out", status: 504 },
  240: { message: "Screenshot service unavailable", status: 503 },
  250: { message: "Service temporarily unavailable", status: 503 },
  403: { message: "Forbidden", status: 403 },
  404: { message: "Not found", status: 404 },
  405: { message: "Method not allowed", status: 405 },
  413: { message: "Request too large", status: 413 },
  415: { message: "Unsupported media type", status: 415 },
  451: { message: "Unavailable for legal reasons", status: 451 },
  500: { message: "Internal error", status: 500 },
} as const;

/** Any code of the error table. */
export type ErrorCode = keyof typeof ERRORS;

/** A detail line of an error: where (path or file) and what. */
export interface ErrorDetail {
  path?: string;
  message: string;
  index?: number;
  filename?: string;
  code?: number;
}

/**
 * The only exception services throw for expected failures; onError turns it into the
 * envelope. Headers carry things like Retry-After.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    opts: {
      details?: ErrorDetail[];
      headers?: Record<string, string>;
      message?: string;
      cause?: unknown;
    } = {},
  ) {
    super(opts.message ?? ERRORS[code].message, { cause: opts.cause });
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = opts.details;
    this.headers = opts.headers;
  }
}

/** 160 naming the one field that is wrong and why. */
export function invalidField(path: string, message: string): ApiError {
  return new ApiError(160, { details: [{ path, message }] });
}

/** The error envelope body for a code, as every failing response carries it. */
export function errorBody(
  code: ErrorCode,
  details?: ErrorDetail[],
  message?: string,
) {
  const { status } = ERRORS[code];
  return {
    status,
    success: false as const,
    error: {
      code,
      message: message ?? ERRORS[code].message,
      ...(details && details.length ? { details } : {}),
    },
  };
}

/** Seconds a client is told to wait after an upload found the disk full. */
export const NO_SPACE_RETRY_AFTER_S = 60;

/**
 * The disk that holds uploads (DATA_DIR: received files, their variants, the store) has no
 * space left: 250 / HTTP 503, not the file's fault (libvips reports a failed write as a
 * failed save, which read as 141 before) and not a 500. Nothing half-written is kept.
 */
export function noSpace(cause?: unknown): ApiError {
  return new ApiError(250, {
    headers: { "Retry-After": String(NO_SPACE_RETRY_AFTER_S) },
    details: [{
      path: "disk",
      message: "the server has no disk space left for images; try again later",
    }],
    cause,
  });
}

/** The dependencies whose outage answers 250 (database, store) or 240 (browser). */
export type Dependency = "database" | "store" | "browser";

/** Seconds a client is told to wait before retrying after a dependency outage. */
export const OUTAGE_RETRY_AFTER_S = 5;

/**
 * A dependency (database or store) could not be reached or did not answer in time: the
 * request answers 250 / HTTP 503 with Retry-After instead of a 500, and nothing half-done
 * is acknowledged.
 */
export function unavailable(dependency: Dependency, cause?: unknown): ApiError {
  return new ApiError(250, {
    headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
    details: [{
      path: dependency,
      message: `the ${dependency} is not answering; try again shortly`,
    }],
    cause,
  });
}
