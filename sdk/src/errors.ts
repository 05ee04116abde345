import { ERRORS } from "./error_table.ts";

/** Every error code the service can answer with, and its message. */
export const ERROR_CODES: Record<number, string> = Object.fromEntries(
  Object.entries(ERRORS).map(([code, e]) => [Number(code), e.message]),
);

/** A failed call: the service's error code and message, and the HTTP status. */
export class ServiceError extends Error {
  /** Error code of the service's error table (0 for network failures, -1 when cancelled). */
  readonly code: number;
  readonly status: number;
  readonly details?: unknown[];
  /** Seconds the service asked to wait before trying again (Retry-After), if it did. */
  retryAfter?: number;
  constructor(
    message: string,
    code: number,
    status: number,
    details?: unknown[],
  ) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

/**
 * Turns an error envelope (or anything else a server sent) into a ServiceError, with the
 * answer's Retry-After (whole seconds; an HTTP date is turned into seconds from now) as
 * `retryAfter`, so a caller can say when to try again.
 */
export function errorFromBody(
  status: number,
  body: unknown,
  retryAfter?: string | null,
): ServiceError {
  const e = (body as {
    error?: { code?: number; message?: string; details?: unknown[] };
  })?.error;
  const err = e && typeof e.code === "number"
    ? new ServiceError(
      e.message ?? ERROR_CODES[e.code] ?? "Request failed",
      e.code,
      status,
      e.details,
    )
    : new ServiceError(`Request failed with HTTP ${status}`, status, status);
  if (retryAfter) {
    const s = /^\d+$/.test(retryAfter.trim())
      ? Number(retryAfter)
      : Math.ceil((Date.parse(retryAfter) - Date.now()) / 1000);
    if (Number.isFinite(s) && s >= 0) err.retryAfter = s;
  }
  return err;
}
