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
  const stop = async () => {
    log.info({ msg: "shutting down" });
    await server.shutdown();
    await rt.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

if (import.meta.main) await main();
