import { join } from "node:path";
import { appSettled, createApp, startJobWorker } from "./app.ts";
import { ConfigError, loadConfig } from "./schemas/config.ts";
import { systemClock } from "./services/runtime/clock.ts";
import { jsonLogger } from "./services/runtime/logger.ts";
import {
  buildRuntime,
  chromiumPathProblem,
  startupLine,
} from "./server/composition.ts";
import { drainAndStop, Lifecycle } from "./server/lifecycle.ts";
import {
  capabilities,
  profileProblem,
  resolveProfile,
} from "./server/profile.ts";
import { collectNow } from "./services/runtime/collector.ts";
import { withTimeout } from "./services/runtime/timeout.ts";
import { Metrics } from "./services/metrics/metrics.ts";
import { imageEngine, warmEngine } from "./services/images/engine.ts";
import {
  allocatorLog,
  allocatorSetting,
} from "./services/runtime/allocator.ts";
import { listenAddress, metricsOnlyHandler } from "./routes/metrics_route.ts";

/** How long after listening the screenshot job worker starts (see onListen). */
const JOB_WORKER_DELAY_MS = 2000;

/** Reads the environment once, builds the dependencies and serves the app. */
async function main() {
  let config;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      Deno.exit(2);
    }
    throw e;
  }
  // What the platform refuses (Deno Deploy: native code, processes, disk writes) against
  // what this configuration needs: one line naming the variable to set, not a stack trace.
  const can = capabilities(config.DATA_DIR);
  const problem = profileProblem(config, can) ?? chromiumPathProblem(config);
  if (problem) {
    console.error(problem);
    Deno.exit(2);
  }
  config = resolveProfile(config, can);
  if (can.writeDataDir) await Deno.mkdir(config.DATA_DIR, { recursive: true });
  const log = jsonLogger;
  const rt = await buildRuntime(config, log, {
    pgliteDir: join(config.DATA_DIR, "pgdata"),
  });
  // What glibc was started with: the sandbox profile's memory depends on it, and on Deno
  // Deploy this line is how one finds out. (Deno refuses /proc/self/environ, the exact
  // record, to all but --allow-all; a platform sets its variables before the start.)
  log.info(allocatorLog(allocatorSetting(Deno.env.toObject()), imageEngine()));
  const lifecycle = new Lifecycle();
  const metrics = new Metrics(config.METRICS === "on");
  metrics.start();
  const app = createApp({ ...rt.deps, clock: systemClock, lifecycle, metrics });
  // Prometheus on an address of its own (a private interface), without a token.
  const metricsServer = config.METRICS_LISTEN
    ? Deno.serve({
      ...listenAddress(config.METRICS_LISTEN),
      onListen: ({ hostname, port }) =>
        log.info({ msg: "metrics listening", hostname, port }),
    }, metricsOnlyHandler(metrics))
    : undefined;
  let workerTimer: ReturnType<typeof setTimeout> | undefined;
  const server = Deno.serve({
    port: config.PORT,
    hostname: config.HOST,
    onListen: ({ hostname, port }) => {
      log.info({
        msg: "listening",
        hostname,
        port,
        base_url: config.BASE_URL_SET
          ? config.BASE_URL
          : "the request's origin",
        uptime_ms: Math.round(performance.now()),
      });
      // The image engine starts once a first request has had its chance to start it
      // itself. Started beside the database, its threads' start (~200 ms in wasm, ~60 of
      // them holding this thread) held up the database's first answer and made the first
      // upload of a cold start ~60 ms later (issue #49); in an idle process it is free.
      Deno.unrefTimer(setTimeout(warmEngine, 500));
      // The job worker too, once a cold start's first requests have had the instance:
      // started beside them, its ~0.3 s (pg-boss's import and schema check, on PGlite)
      // made the first capture ~0.4 s later. Queued jobs wait that much longer, once.
      workerTimer = setTimeout(() => startJobWorker(app), JOB_WORKER_DELAY_MS);
      // With memory scratch (Deno Deploy), start-up's garbage (the module graph's, the
      // migrations'; ~35 MB of RSS) is collected once, soon after, not at V8's leisure.
      if (config.SCRATCH === "memory") {
        Deno.unrefTimer(setTimeout(collectNow, 1000));
      }
      // For the person who started it; stdout stays one JSON object per line.
      console.error(startupLine(config, hostname, port));
    },
  }, lifecycle.track(app.fetch));
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearTimeout(workerTimer);
    const grace = config.SHUTDOWN_GRACE_MS;
    const drain = signal === "SIGTERM" ? config.SHUTDOWN_DRAIN_MS : 0;
    log.info({
      msg: "shutting down",
      signal,
      drain_ms: drain,
      grace_ms: grace,
    });
    // The whole shutdown is bounded: a dependency that is down must not keep us alive.
    const end = Date.now() + drain + grace;
    setTimeout(() => {
      log.error({ msg: "shutdown overran its bound; exiting" });
      Deno.exit(0);
    }, drain + grace + 10_000);
    await metricsServer?.shutdown().catch(() => {});
    const drained = await drainAndStop(server, lifecycle, {
      drainMs: drain,
      graceMs: grace,
      log,
    });
    // Closing waits on the dependencies (the database pool ends its connections), so it
    // gets only what is left of the grace period, and at least a second: with PostgreSQL
    // frozen it waited until the 10 s backstop above (22 s in all, against 12 documented).
    // Variants answered before they were stored get their files and rows first.
    await withTimeout(
      appSettled(app).then(() => rt.close()),
      Math.max(1000, end - Date.now()),
      "closing the dependencies timed out",
    ).catch((e) => log.error({ msg: "close failed", error: String(e) }));
    log.info({ msg: "stopped", drained });
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
}

if (import.meta.main) await main();
