import { createRoute } from "@hono/zod-openapi";
import { errorResponses, okResponse } from "../schemas/envelope.ts";
import { HealthSchema } from "../schemas/system.ts";
import {
  ApiError,
  type Dependency,
  OUTAGE_RETRY_AFTER_S,
} from "../schemas/errors.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";

/** GET /healthz: the process is up. */
export const getHealthRoute = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  security: [],
  tags: ["System"],
  summary: "Liveness: the process answers",
  description:
    "Always 200 while the process runs, whatever its dependencies do: for a process " +
    "supervisor, not a load balancer (use /readyz).",
  responses: {
    200: okResponse("Up", HealthSchema, { ok: true }),
    ...errorResponses(),
  },
});

/** GET /readyz: every dependency answers (database, store, and the browser when on). */
export const getReadyRoute = createRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReady",
  security: [],
  tags: ["System"],
  summary: "Readiness: database, store and browser are reachable",
  description:
    "200 when every dependency answers within 2 s; otherwise 503 (code 250) with " +
    "Retry-After and one detail per dependency that is down (`path`: database, store " +
    "or browser), or `path` instance while the instance drains before a shutdown. A " +
    "load balancer stops sending traffic while it is 503.",
  responses: {
    200: okResponse("Ready", HealthSchema, { ok: true }),
    ...errorResponses(250),
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
    const checks: [Dependency, Promise<boolean>][] = [
      ["database", deps.database.ping(2000)],
      ["store", deps.store.ping(2000)],
    ];
    if (deps.screenshotter) {
      checks.push(["browser", deps.screenshotter.ready(2000)]);
    }
    const down: { path: string; message: string }[] = [];
    if (deps.lifecycle?.draining) {
      down.push({ path: "instance", message: "instance is shutting down" });
    }
    for (const [name, ok] of checks) {
      if (!(await ok.catch(() => false))) {
        down.push({ path: name, message: `${name} is down` });
      }
    }
    if (down.length) {
      throw new ApiError(250, {
        headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
        details: down,
      });
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
