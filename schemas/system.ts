import { z } from "@hono/zod-openapi";

/** Liveness/readiness payload. */
export const HealthSchema = z.object({
  ok: z.boolean().openapi({ example: true }),
  database: z.enum(["pglite", "postgres"]).optional(),
  store: z.string().optional(),
  screenshots: z.boolean().optional(),
}).openapi("Health");
