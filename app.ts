import { OpenAPIHono } from "@hono/zod-openapi";
import { getPath } from "hono/utils/url";
import { HTTPException } from "hono/http-exception";
import type { Context } from "hono";
import {
  ApiError,
  errorBody,
  type ErrorCode,
  ERRORS,
  noSpace,
} from "./schemas/errors.ts";
import { isNoSpace } from "./services/runtime/file_io.ts";
import type { AppDeps } from "./routes/deps.ts";
import { registerSystemRoutes } from "./routes/system.ts";
import { registerDocsRoutes } from "./routes/docs.ts";
import { registerAccountRoutes } from "./routes/account.tsx";
import { apiAuth, apiRoutes, authOf } from "./routes/api_auth.ts";
import { wholeBodyLimit } from "./routes/body_limit.ts";
import { registerUploadRoutes } from "./routes/upload.ts";
import { registerTusRoutes } from "./routes/tus.ts";
import { registerImageListRoutes } from "./routes/image_list.ts";
import { registerAdminRoutes } from "./routes/admin.ts";
import { Metrics } from "./services/metrics/metrics.ts";
import { CountedStore } from "./services/metrics/counted_store.ts";
import {
  FAST_PATH_ROUTE,
  registerMetricsRoute,
  routeTemplateOf,
} from "./routes/metrics_route.ts";
import { registerAccountApi } from "./routes/account_api.ts";
import { registerAdminPages } from "./routes/admin_pages.tsx";
import { registerReportPage } from "./routes/report_page.tsx";
import { registerAlbumRoutes } from "./routes/albums.ts";
import { registerAlbumPage } from "./routes/album_page.tsx";
import { registerOrganiseRoutes } from "./routes/organise.tsx";
import {
  imageFastPath,
  registerHostRoutes,
  StoredFixed,
} from "./routes/host.ts";
import { registerSdkRoutes } from "./routes/sdk.tsx";
import { registerScreenshotRoutes } from "./routes/screenshot.ts";
import { ImagePipeline } from "./services/images/pipeline.ts";
import { VariantMaker } from "./services/images/variant_maker.ts";
import {
  avifEffort,
  imageEngine,
  webpEffort,
} from "./services/images/engine.ts";
import { avifMaxPixels } from "./services/images/encode_budget.ts";
import { WorkSlots } from "./services/runtime/work_slots.ts";
import { ImageRowCache } from "./services/images/image_cache.ts";
import { BlobCache } from "./services/images/blob_cache.ts";
import { ScreenshotService } from "./services/screenshots/screenshot_service.ts";
import { registerViewerRoutes } from "./routes/viewer.tsx";
import { PasswordAccess } from "./services/privacy/password_access.ts";
import { PasswordGate } from "./routes/pages/password_gate.tsx";
import { documentPublicRoutes } from "./routes/public_docs.ts";
import { clientAddress } from "./routes/client_address.ts";
import { registerSiteRoutes } from "./routes/site.tsx";
import { ErrorPage, hasErrorPage, wantsHtml } from "./routes/pages/errors.tsx";
import { formErrorTarget, isSiteForm } from "./routes/pages/form_errors.ts";
import { ownOrigin } from "./routes/pages/layout.tsx";
import { sessionUser } from "./routes/session.ts";
import { logRequest, requestIdOf } from "./routes/request_id.ts";
import {
  originOfRequest,
  withRequestOrigin,
} from "./services/runtime/link_base.ts";

import type { App, AppEnv } from "./routes/env.ts";
import { ScreenshotJobs } from "./services/screenshots/jobs.ts";
import { registerScreenshotJobRoutes } from "./routes/screenshot_jobs.ts";
import { ScreenshotSchedules } from "./services/screenshots/schedules.ts";
import { registerScheduleRoutes } from "./routes/screenshot_schedules.ts";

const backgroundReady = new WeakMap<App, Promise<void>>();

const makers = new WeakMap<App, VariantMaker>();

/** What stops an app's background workers (the screenshot job queue's). */
const stoppers = new WeakMap<App, () => Promise<void>>();

/** What starts an app's screenshot job worker, when main.ts (or a test) says so. */
const workerStarters = new WeakMap<App, () => Promise<void>>();

/**
 * Starts the app's screenshot job worker: the queued captures (its own, a restarted
 * instance's, a dead one's), their webhooks and the schedules' timers. Not as the app is
 * made: pg-boss's start holds the main thread ~0.3 s on PGlite (its import, its schema's
 * check), and a cold start's first capture waited ~0.4 s on it (bench:screenshot-compare).
 * A request that needs the queue (an asynchronous capture, a schedule) starts it itself.
 * Resolves once it has started, or failed (logged); does nothing without a browser.
 */
export function startJobWorker(app: App): Promise<void> {
  return workerStarters.get(app)?.() ?? Promise.resolve();
}

/**
 * Resolves once the variants the app has answered are stored (their files and rows are
 * written after the answer) and its job worker has stopped (a running capture finished):
 * before its dependencies close.
 */
export async function appSettled(app: App): Promise<void> {
  await Promise.all([makers.get(app)?.settled(), stoppers.get(app)?.()]);
}

/**
 * Resolves once the app's background subscriptions (deletion notices from other instances)
 * have been set up; requests are served before that, this is for tests and start-up logs.
 */
export function appReady(app: App): Promise<void> {
  return backgroundReady.get(app) ?? Promise.resolve();
}

/** Renders an error envelope response for a code. */
export function errorResponse(
  c: Context,
  code: ErrorCode,
  opts: {
    details?: ApiError["details"];
    headers?: Record<string, string>;
    message?: string;
  } = {},
) {
  for (const [k, v] of Object.entries(opts.headers ?? {})) c.header(k, v);
  return c.json(
    errorBody(code, opts.details, opts.message),
    ERRORS[code].status,
  );
}

/**
 * Builds the whole service from injected dependencies. Nothing here reads the environment,
 * so tests build as many independent apps as they like.
 */
export function createApp(deps: AppDeps): App {
  // One registry per app, shared by every part of it through deps (tests run many apps).
  const metrics = deps.metrics ??= new Metrics(deps.config.METRICS === "on");
  // Store failures are counted wherever they happen (every part reads deps.store).
  if (!(deps.store instanceof CountedStore)) {
    deps.store = new CountedStore(deps.store, metrics);
  }
  metrics.bind({
    pool: deps.database.poolStats,
    captureQueue: deps.screenshotter?.queued?.bind(deps.screenshotter),
  });
  const app = new OpenAPIHono<AppEnv>({
    // Chevereto's documented requests end the path in a slash (/api/1/upload/?key=…):
    // under /api/1 one trailing slash is the same route.
    // ImgBB's clients call /1/upload (api.imgbb.com/1/upload): the same route, so that
    // only the host changes for them.
    getPath: (req) => {
      const path = getPath(req);
      if (path === "/1/upload" || path === "/1/upload/") return "/api/1/upload";
      return path.length > 7 && path.startsWith("/api/1/") && path.endsWith("/")
        ? path.slice(0, -1)
        : path;
    },
    // The one validation hook: every schema failure becomes code 160 with path + message.
    defaultHook: (result, c) => {
      if (!result.success) {
        const details = result.error.issues.map((i) => ({
          path: i.path.join("."),
          message: i.message,
        }));
        return errorResponse(c, 160, { details });
      }
    },
  });

  // With BASE_URL unset, the links of everything below follow the origin this request
  // was addressed to (services/runtime/link_base.ts).
  if (!deps.config.BASE_URL_SET) {
    app.use((c, next) =>
      withRequestOrigin(
        () =>
          originOfRequest(
            c.req.url,
            c.req.raw.headers,
            deps.config.TRUST_PROXY,
          ),
        next,
      )
    );
  }

  // Request id and access log in one middleware, the id header set on the finished
  // response. Hono's requestId middleware sets it beforehand, and a handler that answers
  // with a Response of its own (immutable headers, e.g. Response.redirect) then goes out
  // without it; the test covers that case.
  app.use(async (c, next) => {
    const start = performance.now();
    const id = requestIdOf(c.req.raw.headers.get("x-request-id"));
    c.set("requestId", id);
    await next();
    if (metrics.enabled) {
      metrics.request(
        routeTemplateOf(c),
        c.req.method,
        c.res.status,
        (performance.now() - start) / 1000,
      );
    }
    // While draining, every answer closes its connection: a balancer's kept-alive
    // connection would otherwise be cut at shutdown with its next request on it.
    const extra: [string, string][] = [["X-Request-Id", id]];
    if (deps.lifecycle?.draining) extra.push(["Connection", "close"]);
    for (const [k, v] of extra) {
      try {
        c.res.headers.set(k, v);
      } catch {
        c.header(k, v); // immutable headers (e.g. a fetched Response)
      }
    }
    if (deps.config.LOG_REQUESTS) {
      logRequest(deps.log, {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        started: start,
        ip: clientAddress(c, deps.config.TRUST_PROXY),
        requestId: id,
      });
    }
  });

  // A method no route answers (TRACE, PROPFIND, made-up ones) is 405 with `Allow` here,
  // before authentication: behind /api/1 it met the key check first (401), and TRACE,
  // whose Request may not be copied, had failed earlier as a plain-text 500 (see
  // Lifecycle.track). Methods some route answers elsewhere get their 405 from notFound.
  app.use(async (c, next) => {
    if (KNOWN_METHODS.has(c.req.method)) return await next();
    const allowed = methodsFor(app, c.req.path, c.req.method);
    return errorResponse(c, 405, {
      headers: allowed.length ? { Allow: allowed.join(", ") } : {},
    });
  });

  // Bodies read whole (everything but an upload's) are bounded before anyone reads them.
  app.use(wholeBodyLimit(deps.config.BODY_MAX_KB));

  registerSystemRoutes(app, deps);
  registerMetricsRoute(app, deps, metrics);
  // Before the image host, whose `/<name>.<ext>` pattern would shadow /openapi.json.
  registerDocsRoutes(app, deps);
  registerAccountRoutes(app, deps);
  // CORS first: browser preflights carry no key.
  registerSdkRoutes(app, deps);
  app.use(
    "/api/1/*",
    apiAuth(
      deps,
      apiRoutes(() =>
        app.openAPIRegistry.definitions.flatMap((d) =>
          d.type === "route" ? [d.route] : []
        )
      ),
    ),
  );
  const pipeline = new ImagePipeline(deps);
  const rowCache = new ImageRowCache(
    deps.database.db,
    deps.clock,
    new BlobCache(deps.config.IMAGE_CACHE_MB * 1024 * 1024),
  );
  backgroundReady.set(
    app,
    Promise.all([
      authOf(deps).follow(deps.database),
      rowCache.follow(deps.database),
    ]).then(
      () => {},
      (e) =>
        deps.log.error({ msg: "cannot follow deletions", error: String(e) }),
    ),
  );
  registerUploadRoutes(app, deps, pipeline, rowCache);
  registerTusRoutes(app, deps, pipeline);
  registerAdminRoutes(app, deps, pipeline.quotas, rowCache);
  registerAccountApi(app, deps);
  registerAdminPages(app, deps, pipeline.quotas, rowCache);
  registerReportPage(app, deps);
  registerImageListRoutes(app, deps);
  registerAlbumRoutes(app, deps, rowCache);
  const shots = new ScreenshotService(deps, pipeline);
  const jobs: ScreenshotJobs = new ScreenshotJobs({
    db: deps.database.db,
    kind: deps.database.kind,
    config: deps.config,
    clock: deps.clock,
    log: deps.log,
    runs: Boolean(deps.screenshotter),
    capture: async (userId, req, signal) =>
      (await shots.take(userId, req, signal)).result,
    decide: (row, result) => schedules.decide(row, result),
  });
  const schedules: ScreenshotSchedules = new ScreenshotSchedules({
    db: deps.database.db,
    store: deps.store,
    config: deps.config,
    clock: deps.clock,
    log: deps.log,
  }, jobs);
  stoppers.set(app, () => jobs.stop());
  // Only an instance with a browser runs queued captures (startJobWorker).
  if (deps.screenshotter) {
    workerStarters.set(app, () =>
      schedules.start().then(
        () => deps.log.info({ msg: "job queue started" }),
        (e) =>
          deps.log.error({ msg: "job queue did not start", error: String(e) }),
      ));
  }
  registerScreenshotRoutes(app, deps, shots, jobs);
  registerScreenshotJobRoutes(app, deps, jobs);
  registerScheduleRoutes(app, deps, schedules);
  // Unlock cookies and signed file URLs of password images and albums.
  const access = new PasswordAccess(deps.database.db, deps.clock, {
    url: deps.config.PASSWORD_URL_SECONDS,
    unlock: deps.config.PASSWORD_UNLOCK_SECONDS,
  });
  const gate = new PasswordGate(deps, access);
  registerViewerRoutes(app, deps, rowCache, gate);
  registerAlbumPage(app, deps, gate);
  registerOrganiseRoutes(app, deps, rowCache);
  registerSiteRoutes(app, deps, rowCache, jobs);
  const fixedSeen = new StoredFixed();
  const maker = new VariantMaker(
    deps.database.db,
    deps.store,
    // Slots of their own, half the image workers: a flood of transforms may busy the
    // CPU but never takes a slot an upload would wait for (uploads kept all of theirs).
    new WorkSlots(
      Math.max(1, Math.floor(deps.config.IMAGE_WORKERS / 2)),
      deps.config.IMAGE_QUEUE,
      "variants",
    ),
    deps.config.IMAGE_TIMEOUT_MS,
    deps.database.kind === "postgres",
    (bytes, ext, deadline) => pipeline.decodable(bytes, ext, deadline),
    // Answered already: the next request makes it again.
    (key, e) =>
      deps.log.error({
        msg: "a made variant could not be stored",
        key,
        error: String(e),
      }),
    {
      engine: imageEngine(),
      avif: avifEffort(imageEngine(), deps.config.IMAGE_AVIF_EFFORT),
      webp: webpEffort(imageEngine()),
      avifMaxPixels: avifMaxPixels(imageEngine(), deps.config.IMAGE_ENCODE_MB),
    },
  );
  makers.set(app, maker);
  registerHostRoutes(
    app,
    deps,
    rowCache,
    maker,
    fixedSeen,
    access,
  );
  // Revalidations of hot images, and with IMAGE_SERVE=proxy their plain GETs, skip the
  // router and the middleware chain (issue #19).
  const fast = imageFastPath(deps, rowCache, fixedSeen);
  const dispatch = app.fetch;
  app.fetch = (req, env, ctx) => {
    const began = metrics.enabled ? performance.now() : 0;
    const answer = fast(req, env);
    if (!answer) return dispatch(req, env, ctx);
    if (metrics.enabled) {
      metrics.request(
        FAST_PATH_ROUTE,
        req.method,
        answer.status,
        (performance.now() - began) / 1000,
      );
    }
    return answer;
  };
  documentPublicRoutes(app);

  app.notFound(async (c) => {
    const allowed = methodsFor(app, c.req.path, c.req.method);
    if (allowed.length) {
      c.header("Allow", allowed.join(", "));
      return errorResponse(c, 405);
    }
    return await errorAnswer(c, 404);
  });

  /**
   * An error for whoever asked: a person's browser asking for a page gets the site's error
   * page with the same status; API and image clients get the envelope.
   */
  const ownSite = ownOrigin(deps.config);
  const errorAnswer = async (
    c: Context<AppEnv>,
    code: ErrorCode,
    opts: Parameters<typeof errorResponse>[2] = {},
  ) => {
    const status = ERRORS[code].status;
    const html = wantsHtml(c);
    if (
      html &&
      isSiteForm(
        c.req.method,
        c.req.path,
        status,
        c.req.header("content-type"),
      )
    ) {
      // A site form's refusal goes back to its page, said beside the field.
      const fields = await c.req.parseBody().catch(() => ({}));
      const back = formErrorTarget(
        {
          url: c.req.url,
          path: c.req.path,
          referer: c.req.header("referer"),
          own: (origin) => ownSite(origin, c.req.url),
        },
        {
          message: opts.message ?? ERRORS[code].message,
          details: opts.details,
        },
        fields,
      );
      if (back) return c.redirect(back, 303);
    }
    if (!html || !hasErrorPage(status)) return errorResponse(c, code, opts);
    for (const [k, v] of Object.entries(opts.headers ?? {})) c.header(k, v);
    const user = await sessionUser(c, deps).catch(() => null);
    return c.html(
      ErrorPage({ status, user, requestId: c.get("requestId") }),
      status as 404,
    );
  };

  app.onError((err, c) => {
    if (!(err instanceof ApiError) && isNoSpace(err)) {
      // Receiving the body (multipart or base64 to a temp file) found the disk full.
      deps.log.error({
        msg: "request failed: no disk space left",
        request_id: c.get("requestId"),
        path: c.req.path,
        error: err instanceof Error ? err.message : String(err),
      });
      err = noSpace(err);
    }
    if (err instanceof ApiError) {
      return errorAnswer(c, err.code, {
        details: err.details,
        headers: err.headers,
        message: err.message,
      });
    }
    if (err instanceof HTTPException) {
      const status = err.status;
      if (status === 400) {
        if (/Content-Type/i.test(err.message)) {
          return errorResponse(c, 415, {
            details: [{ message: "expected Content-Type: application/json" }],
          });
        }
        return errorResponse(c, 160, { details: [{ message: err.message }] });
      }
      const code = (status in ERRORS ? status : 500) as ErrorCode;
      return errorResponse(c, code);
    }
    deps.log.error({
      msg: "unhandled error",
      request_id: c.get("requestId"),
      path: c.req.path,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
    return errorAnswer(c, 500);
  });

  return app;
}

/** The methods any route of ours may answer; every other one is 405 before anything runs. */
const KNOWN_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);

/**
 * The methods some route answers for `path` (for 405 + Allow). Route patterns become regexes
 * with their own constraints (`:file{regex}`), so a path no route could match is a 404, and
 * so is a path whose method is among them (the route itself then said not found).
 */
function methodsFor(app: App, path: string, method: string): string[] {
  const methods = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL") continue;
    if (routePattern(r.path).test(path)) methods.add(r.method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  if (methods.has(method.toUpperCase())) return [];
  return [...methods];
}

const patterns = new Map<string, RegExp>();

/** Hono's route syntax as a regex: `:name` is one segment, `:name{re}` is `re`, `*` anything. */
function routePattern(route: string): RegExp {
  let re = patterns.get(route);
  if (re) return re;
  const escape = (t: string) => t.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  let out = "";
  const token = /:[A-Za-z0-9_]+(?:\{((?:[^{}]|\{[^{}]*\})+)\})?|\*/g;
  let last = 0;
  for (const m of route.matchAll(token)) {
    out += escape(route.slice(last, m.index));
    out += m[0] === "*" ? ".*" : m[1] !== undefined ? `(?:${m[1]})` : "[^/]+";
    last = m.index! + m[0].length;
  }
  out += escape(route.slice(last));
  re = new RegExp(`^${out}$`);
  patterns.set(route, re);
  return re;
}
