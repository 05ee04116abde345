import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import type { Metrics } from "../services/metrics/metrics.ts";
import { ApiError } from "../schemas/errors.ts";
import { safeEqual } from "../services/accounts/crypto.ts";

/**
 * The route template a request was answered by (`/api/1/images/:id`, never the raw path),
 * or `unmatched`: the last matched route that is not a middleware.
 */
export function routeTemplateOf(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i].method !== "ALL") return routes[i].path;
  }
  return "unmatched";
}

/** The label of the image host's fast path (a revalidation answered before the router). */
export const FAST_PATH_ROUTE = "/:file (fast path)";

/**
 * GET /metrics on the service's own port: Prometheus text for a caller with
 * `Authorization: Bearer METRICS_TOKEN`, 401 with a wrong or missing token, and 404 when
 * no METRICS_TOKEN is set (never public by default). METRICS_LISTEN serves the same text
 * on an address of its own (main.ts).
 */
export function registerMetricsRoute(
  app: App,
  deps: AppDeps,
  metrics: Metrics,
) {
  const token = deps.config.METRICS_TOKEN;
  app.get("/metrics", async (c) => {
    if (!token || !metrics.enabled) throw new ApiError(404);
    const given = c.req.header("authorization")?.match(/^Bearer\s+(\S+)\s*$/i)
      ?.[1];
    if (!given || !safeEqual(given, token)) {
      throw new ApiError(100, {
        message: "METRICS_TOKEN required as a Bearer token",
        headers: { "WWW-Authenticate": 'Bearer realm="metrics"' },
      });
    }
    c.header("Cache-Control", "no-store");
    return c.body(await metrics.text(), 200, {
      "content-type": metrics.contentType,
    });
  });
}

/** A handler for METRICS_LISTEN's own server: /metrics, nothing else, no token. */
export function metricsOnlyHandler(
  metrics: Metrics,
): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = new URL(req.url).pathname;
    if (
      path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")
    ) {
      return new Response("not found\n", { status: 404 });
    }
    return new Response(req.method === "HEAD" ? null : await metrics.text(), {
      headers: {
        "content-type": metrics.contentType,
        "cache-control": "no-store",
      },
    });
  };
}

/** `host:port` (METRICS_LISTEN) as Deno.serve takes it; `[::1]:9100` too. */
export function listenAddress(v: string): { hostname: string; port: number } {
  const i = v.lastIndexOf(":");
  return {
    hostname: v.slice(0, i).replace(/^\[(.*)\]$/, "$1"),
    port: Number(v.slice(i + 1)),
  };
}
