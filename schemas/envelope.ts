import { z } from "@hono/zod-openapi";
import { type ErrorCode, ERRORS } from "./errors.ts";

/** Wraps a payload schema in the success envelope of SPEC.md 2.1. */
export function envelopeOf<T extends z.ZodTypeAny>(data: T) {
  return z.object({
    status: z.literal(200),
    success: z.literal(true),
    data,
  });
}

/** One detail of an error: a failing field path or a failing file. */
export const ErrorDetailSchema = z.object({
  path: z.string().optional().openapi({ example: "url" }),
  message: z.string().openapi({ example: "Invalid URL" }),
  index: z.number().int().optional(),
  filename: z.string().optional(),
  code: z.number().int().optional(),
}).openapi("ErrorDetail");

/** The failure envelope of DESIGN.md. */
export const ErrorEnvelopeSchema = z.object({
  status: z.number().int().openapi({ example: 401 }),
  success: z.literal(false),
  error: z.object({
    code: z.number().int().openapi({ example: 110 }),
    message: z.string().openapi({ example: "Invalid API key" }),
    details: z.array(ErrorDetailSchema).optional(),
  }),
}).openapi("ErrorEnvelope");

/**
 * Documents error responses for a route from the error table: codes grouped by HTTP status,
 * each with an example per code, so openapi.yaml lists every code a route can return.
 */
export function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const s = ERRORS[code].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
  }
  const out: Record<
    number,
    {
      description: string;
      content: {
        "application/json": {
          schema: typeof ErrorEnvelopeSchema;
          examples: Record<string, { value: unknown }>;
        };
      };
    }
  > = {};
  for (const [status, list] of byStatus) {
    out[status] = {
      description: list.map((c) => `${c} ${ERRORS[c].message}`).join("; "),
      content: {
        "application/json": {
          schema: ErrorEnvelopeSchema,
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
 * Codes every authenticated /api/1 route can return (170: per-key rate limit; 250: the
 * database or the store is down, with Retry-After: authentication itself needs the database).
 */
export const AUTH_ERRORS: ErrorCode[] = [100, 110, 120, 170, 250];
