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
