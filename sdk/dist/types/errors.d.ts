/** Every error code the service can answer with, and its message. */
export declare const ERROR_CODES: Record<number, string>;
/** A failed call: the service's error code and message, and the HTTP status. */
export declare class ServiceError extends Error {
    /** Error code of the service's error table (0 for network failures, -1 when cancelled). */
    readonly code: number;
    readonly status: number;
    readonly details?: unknown[];
    /** Seconds the service asked to wait before trying again (Retry-After), if it did. */
    retryAfter?: number;
    constructor(message: string, code: number, status: number, details?: unknown[]);
}
/**
 * Turns an error envelope (or anything else a server sent) into a ServiceError, with the
 * answer's Retry-After (whole seconds; an HTTP date is turned into seconds from now) as
 * `retryAfter`, so a caller can say when to try again.
 */
export declare function errorFromBody(status: number, body: unknown, retryAfter?: string | null): ServiceError;
