import { z } from "@hono/zod-openapi";
import { type ErrorCode, ERRORS } from "./errors.ts";

/** Wraps a payload schema in the success envelope of SPEC.md 2.1. */
export function envelopeOf<T extends z.ZodTypeAny>(
  data: T,
  status: 200 | 202 = 200,
) {
  return z.object({
    status: z.literal(status),
    success: z.literal(true),
    data,
  });
}

/** A success envelope (SPEC.md 2.1) around `data`, as a route answers it. */
export function okBody<T>(data: T) {
  return { status: 200 as const, success: true as const, data };
}

/** The envelope of work accepted to be done later (HTTP 202). */
export function acceptedBody<T>(data: T) {
  return { status: 202 as const, success: true as const, data };
}

/** One detail of an error: a failing field path or a failing file. */
export const ErrorDetailSchema = z.object({
  path: z.string().optional().openapi({ example: "url" }),
  message: z.string().openapi({ example: "Invalid URL" }),
  index: z.number().int().optional(),
  filename: z.string().optional(),
  code: z.number().int().optional(),
}).openapi("ErrorDetail");

const ALL_CODES = Object.keys(ERRORS).map(Number) as ErrorCode[];

/** Every error code, with its message and HTTP status, as a table in Markdown. */
export function errorCodeTable(codes: ErrorCode[] = ALL_CODES): string {
  return [
    "| code | HTTP | message |",
    "| --- | --- | --- |",
    ...codes.map((c) =>
      `| ${c} | ${ERRORS[c].status} | ${ERRORS[c].message} |`
    ),
  ].join("\n");
}

/** Every code of schemas/errors.ts, as the enum generated clients type `error.code` by. */
export const ErrorCodeSchema = z.number().int().openapi("ErrorCode", {
  enum: ALL_CODES,
  description: "The error table (schemas/errors.ts):\n\n" + errorCodeTable(),
  example: 110,
});

/** The failure envelope of DESIGN.md, any code. */
export const ErrorEnvelopeSchema = z.object({
  status: z.number().int().openapi({ example: 401 }),
  success: z.literal(false),
  error: z.object({
    code: ErrorCodeSchema,
    message: z.string().openapi({ example: "Invalid API key" }),
    details: z.array(ErrorDetailSchema).optional(),
  }),
}).openapi("ErrorEnvelope");

/**
 * Envelopes made so far, by status and codes: the ~340 error responses of the routes have
 * 24 distinct ones, and making each anew took ~25 ms of every start (issue #49, cold
 * start). A schema is only read when the document is generated, so one may serve many
 * operations.
 */
const envelopes = new Map<string, ReturnType<typeof makeEnvelope>>();

/** The failure envelope of one HTTP status of one operation: `code` is one of `codes`. */
function envelopeForCodes(status: number, codes: ErrorCode[]) {
  const key = `${status}:${codes.join(",")}`;
  let schema = envelopes.get(key);
  if (!schema) envelopes.set(key, schema = makeEnvelope(status, codes));
  return schema;
}

/** envelopeForCodes' schema, made. */
function makeEnvelope(status: number, codes: ErrorCode[]) {
  return z.object({
    status: z.literal(status),
    success: z.literal(false),
    error: z.object({
      code: z.number().int().openapi({
        enum: codes,
        description: codes.map((c) => `${c}: ${ERRORS[c].message}`).join(
          "; ",
        ),
      }),
      message: z.string().openapi({ example: ERRORS[codes[0]].message }),
      details: z.array(ErrorDetailSchema).optional(),
    }),
  });
}

/** A documented response header. */
export type Header = {
  description: string;
  schema: { type: "string" | "integer" };
};

/** A documented response header, by its description and type. */
export const header = (
  description: string,
  type: "string" | "integer" = "string",
): Header => ({ description, schema: { type } });

/** Headers every answer carries. */
export const REQUEST_ID_HEADER: Record<string, Header> = {
  "X-Request-Id": header(
    "Id of this request (the caller's own X-Request-Id when it sent a valid one); " +
      "logged with it",
  ),
};

/** Headers of an answer to an authenticated /api/1 call (per-key rate limit). */
export const RATE_LIMIT_HEADERS: Record<string, Header> = {
  "X-RateLimit-Limit": header(
    "API calls allowed per key per minute (RATE_LIMIT_PER_MINUTE)",
    "integer",
  ),
  "X-RateLimit-Remaining": header(
    "Calls left in the current minute",
    "integer",
  ),
  "X-RateLimit-Reset": header(
    "Seconds until the current minute's window ends",
    "integer",
  ),
};

const RETRY_AFTER: Record<string, Header> = {
  "Retry-After": header("Seconds to wait before trying again", "integer"),
};

const ALLOW: Record<string, Header> = {
  "Allow": header("The methods this path answers"),
};

/**
 * Documents error responses for a route from the error table: codes grouped by HTTP status,
 * each status typed with the enum of its codes (so a generated client narrows `error.code`),
 * an example per code and the headers it carries (Retry-After on 429 and 503). 405
 * (another method on the path, with Allow) and 500 (a bug: an envelope, never a stack
 * trace) can happen on every operation and are always listed. The per-key rate limit's
 * headers are not declared here: a 170 of a route outside the key's admission (a wrong
 * key's throttle, a page's or a report's limit) sends Retry-After alone. Routes admitted by
 * a key use {@link keyedErrorResponses}.
 */
export function errorResponses(...codes: ErrorCode[]) {
  return responsesFor(codes, false);
}

/**
 * The error responses of a route admitted by a key or a session (the /api/1 middleware's
 * `admit`): {@link AUTH_ERRORS} and `codes`, as {@link errorResponses} documents them, and
 * every status but 401 and 405 declaring the per-key rate limit's headers, which every
 * answer after the caller was admitted carries.
 */
export function keyedErrorResponses(...codes: ErrorCode[]) {
  return responsesFor([...AUTH_ERRORS, ...codes], true);
}

/** errorResponses and keyedErrorResponses: `rateLimited` adds the rate headers. */
function responsesFor(codes: ErrorCode[], rateLimited: boolean) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes, 405, 500] as ErrorCode[])) {
    const s = ERRORS[code].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
  }
  const out: Record<
    number,
    {
      description: string;
      headers: Record<string, Header>;
      content: {
        "application/json": {
          schema: ReturnType<typeof envelopeForCodes>;
          examples: Record<string, { value: unknown }>;
        };
      };
    }
  > = {};
  for (const [status, list] of byStatus) {
    out[status] = {
      description: list.map((c) => `${c} ${ERRORS[c].message}`).join("; ") +
        (status === 405
          ? " (another method on this path; Allow lists the ones it has)"
          : ""),
      headers: {
        ...REQUEST_ID_HEADER,
        ...(status === 429 || status === 503 ? RETRY_AFTER : {}),
        ...(rateLimited && status !== 401 && status !== 405
          ? RATE_LIMIT_HEADERS
          : {}),
        ...(status === 405 ? ALLOW : {}),
      },
      content: {
        "application/json": {
          schema: envelopeForCodes(status, list),
          examples: Object.fromEntries(
            list.map((c) => [
              `code${c}`,
              {
                value: {
                  status,
                  success: false,
                  error: { code: c, message: ERRORS[c].message },
                },
              },
            ]),
          ),
        },
      },
    };
  }
  return out;
}

/**
 * A 200 answer in the success envelope, with its example and headers (X-Request-Id, and the
 * rate limit on authenticated /api/1 calls).
 */
export function okResponse<T extends z.ZodTypeAny>(
  description: string,
  data: T,
  example: unknown,
  opts: { rateLimited?: boolean; status?: 200 | 202 } = {},
) {
  const status = opts.status ?? 200;
  return {
    description,
    headers: {
      ...REQUEST_ID_HEADER,
      ...(opts.rateLimited ? RATE_LIMIT_HEADERS : {}),
    },
    content: {
      "application/json": {
        schema: envelopeOf(data, status),
        example: { status, success: true, data: example },
      },
    },
  };
}

/**
 * Codes every authenticated /api/1 route can return (170: per-key rate limit; 250: the
 * database or the store is down, with Retry-After: authentication itself needs the database).
 */
export const AUTH_ERRORS: ErrorCode[] = [100, 110, 120, 170, 250, 403];
