import { createRoute } from "@hono/zod-openapi";
import { envelopeOf, errorResponses } from "../schemas/envelope.ts";
import { HealthSchema } from "../schemas/system.ts";
import { ApiError } from "../schemas/errors.ts";
import type { App } from "../app.ts";
import type { AppDeps } from "../services/deps.ts";

/** GET /healthz: the process is up. */
export const getHealthRoute = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  security: [],
  tags: ["System"],
  summary: "Liveness: the process answers",
  responses: {
    200: {
      description: "Up",
      content: { "application/json": { schema: envelopeOf(HealthSchema) } },
    },
  },
});

/** GET /readyz: the database answers. */
export const getReadyRoute = createRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReady",
  security: [],
  tags: ["System"],
  summary: "Readiness: the database is reachable",
  responses: {
    200: {
      description: "Ready",
      content: { "application/json": { schema: envelopeOf(HealthSchema) } },
    },
    ...errorResponses(500),
  },
});

/** Registers the health endpoints. */
export function registerSystemRoutes(app: App, deps: AppDeps) {
  app.openapi(
    getHealthRoute,
    (c) =>
      c.json({
        status: 200 as const,
        success: true as const,
        data: { ok: true },
      }, 200),
  );
  app.openapi(getReadyRoute, async (c) => {
    if (!(await deps.database.ping(2000))) {
      throw new ApiError(500, { message: "Database unreachable" });
    }
    return c.json({
      status: 200 as const,
      success: true as const,
      data: {
        ok: true,
        database: deps.database.kind,
        store: deps.store.kind,
        screenshots: Boolean(deps.screenshotter),
      },
    }, 200);
  });
}
