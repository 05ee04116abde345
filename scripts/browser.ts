/**
 * The browser service (`deno task browser`): Chromium, its DevTools and the captures'
 * network guards together on the browser's host, behind one port that app instances reach
 * with BROWSER_TOKEN (services/screenshots/browser_gateway.ts). Every request a page makes
 * leaves through a guard here, so the instances need no inbound port: the way to take
 * screenshots from Deno Deploy. Instances set BROWSER_WS_ENDPOINT=http://<this host>:<port>
 * and the same BROWSER_TOKEN.
 *
 * Environment: BROWSER_TOKEN (required, ≥16 characters), BROWSER_LISTEN (0.0.0.0),
 * BROWSER_PORT (9222), CHROMIUM_PATH, FETCH_ALLOW_PRIVATE (fixture ports in tests; empty
 * in production). Exits non-zero when Chromium dies, so its supervisor restarts both.
 */
import { ConfigError, loadBrowserServiceConfig } from "../schemas/config.ts";
import { allowRulesOf } from "../schemas/allow_list.ts";
import { jsonLogger } from "../services/runtime/logger.ts";
import {
  findChromium,
  openBrowser,
} from "../services/screenshots/chromium_launch.ts";
import { browserGateway } from "../services/screenshots/browser_gateway.ts";

let config;
try {
  config = loadBrowserServiceConfig(Deno.env.toObject());
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.message);
  Deno.exit(2);
}
const log = jsonLogger;
const executablePath = findChromium(config.CHROMIUM_PATH);
if (!executablePath) {
  console.error(
    "no Chromium: sudo bash scripts/install_system.sh runtime (or set CHROMIUM_PATH)",
  );
  Deno.exit(2);
}
const browser = await openBrowser({ executablePath, timeoutMs: 60_000, log });
let stopping = false;
browser.on("disconnected", () => {
  if (stopping) return;
  log.error({ msg: "Chromium went away; exiting so the service restarts" });
  Deno.exit(1);
});
const gateway = browserGateway({
  token: config.BROWSER_TOKEN,
  innerWsUrl: () => browser.wsEndpoint(),
  rules: allowRulesOf(config),
  log,
  guardMaxAgeMs: config.BROWSER_GUARD_MAX_AGE_S * 1000,
});
const server = Deno.serve({
  hostname: config.BROWSER_LISTEN,
  port: config.BROWSER_PORT,
  onListen: ({ hostname, port }) => {
    log.info({
      msg: "browser service listening",
      hostname,
      port,
      chromium: executablePath,
      uptime_ms: Math.round(performance.now()),
    });
  },
}, gateway.fetch);
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await gateway.close();
  await server.shutdown().catch(() => {});
  await browser.close().catch(() => {});
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);
