import { join } from "node:path";
import { createApp } from "./app.ts";
import { ConfigError, loadConfig } from "./schemas/config.ts";
import { jsonLogger, systemClock } from "./services/deps.ts";
import { buildRuntime } from "./services/runtime.ts";

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
  await Deno.mkdir(config.DATA_DIR, { recursive: true });
  const log = jsonLogger;
  const rt = await buildRuntime(config, log, {
    pgliteDir: join(config.DATA_DIR, "pgdata"),
  });
  const app = createApp({ ...rt.deps, clock: systemClock });
  const server = Deno.serve({
    port: config.PORT,
    hostname: config.HOST,
    onListen: ({ hostname, port }) =>
      log.info({ msg: "listening", hostname, port, base_url: config.BASE_URL }),
  }, app.fetch);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const grace = config.SHUTDOWN_GRACE_MS;
    log.info({ msg: "shutting down", signal, grace_ms: grace });
    // The whole shutdown is bounded: a dependency that is down must not keep us alive.
    setTimeout(() => {
      log.error({ msg: "shutdown overran its bound; exiting" });
      Deno.exit(0);
    }, grace + 10_000);
    // Stop accepting now; in-flight requests get up to the grace period to finish (every
    // dependency call is bounded, so they end well within it unless the period is tiny).
    const drained = await Promise.race([
      server.shutdown().then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), grace)),
    ]);
    if (!drained) {
      log.error({ msg: "grace period over; cutting remaining requests" });
    }
    await rt.close().catch((e) =>
      log.error({ msg: "close failed", error: String(e) })
    );
    log.info({ msg: "stopped", drained });
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
}

if (import.meta.main) await main();
