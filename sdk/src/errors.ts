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
 * `e` with the Retry-After its answer carried (whole seconds; an HTTP date is turned into
 * seconds from now), so a caller can say when to try again.
 */
export function withRetryAfter(
  e: ServiceError,
  header: string | null | undefined,
): ServiceError {
  if (!header) return e;
  const s = /^\d+$/.test(header.trim())
    ? Number(header)
    : Math.ceil((Date.parse(header) - Date.now()) / 1000);
  if (Number.isFinite(s) && s >= 0) e.retryAfter = s;
  return e;
}

/** Turns an error envelope (or anything else a server sent) into a ServiceError. */
export function errorFromBody(status: number, body: unknown): ServiceError {
  const e = (body as {
    error?: { code?: number; message?: string; details?: unknown[] };
  })?.error;
  if (e && typeof e.code === "number") {
    return new ServiceError(
      e.message ?? ERROR_CODES[e.code] ?? "Request failed",
      e.code,
      status,
      e.details,
    );
  }
  return new ServiceError(`Request failed with HTTP ${status}`, status, status);
}
