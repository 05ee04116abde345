import { PRESETS } from "../schemas/presets.ts";
import type { CaptureOptions } from "../services/screenshots/screenshotter.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import {
  discoverWsEndpoint,
  findChromium,
} from "../services/screenshots/chromium_launch.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { answersOk, waitUntilAsync } from "./helpers.ts";
import { freePort } from "./pg_cluster.ts";

/** The Chromium the suite uses (TEST_CHROMIUM_PATH, else Debian's); a test without it fails. */
export function requireChromium(): string {
  const path = findChromium(Deno.env.get("TEST_CHROMIUM_PATH"));
  if (!path) {
    throw new Error(
      "Chromium is required for these tests: sudo bash scripts/install_system.sh test",
    );
  }
  return path;
}

/**
 * A local screenshotter for tests: the suite's Chromium, `allow` (FETCH_ALLOW_PRIVATE
 * syntax) as the guard's allow list, 2 at once, 15 s a capture, unless `over` says else.
 */
export function testScreenshotter(
  allow: string,
  over: Partial<ConstructorParameters<typeof ChromiumScreenshotter>[0]> = {},
): ChromiumScreenshotter {
  return new ChromiumScreenshotter({
    executablePath: requireChromium(),
    concurrency: 2,
    queueMax: 16,
    recycleAfter: 1000,
    timeoutMs: 15_000,
    allowRules: parseAllowList(allow),
    log: memoryLogger(),
    ...over,
  });
}

/**
 * The browser service as deployments run it (scripts/browser.sh: Chromium plus the socat
 * that exposes its DevTools on `address:port`); with `netns`, inside that namespace. It runs
 * in a session of its own so that killing it kills Chromium too.
 */
export async function startDevtoolsBrowser(
  address: string,
  port: number,
  netns?: string,
  chromium = requireChromium(),
) {
  const script = new URL("../scripts/browser.sh", import.meta.url).pathname;
  // The script's profile goes in here: a SIGKILL leaves it no chance to clean up itself.
  const tmp = await Deno.makeTempDir({ prefix: "imagehost-browser-test-" });
  const cmd = ["setsid", "bash", script];
  const proc = new Deno.Command(netns ? "ip" : cmd[0], {
    args: netns ? ["netns", "exec", netns, ...cmd] : cmd.slice(1),
    env: {
      BROWSER_LISTEN: address,
      BROWSER_PORT: String(port),
      BROWSER_INNER_PORT: String(netns ? port + 1 : freePort()),
      CHROMIUM_PATH: chromium,
      TMPDIR: tmp,
    },
    stdout: "null",
    stderr: "null",
  }).spawn();
  const endpoint = `http://${address}:${port}`;
  await waitUntilAsync(
    () => answersOk(`${endpoint}/json/version`),
    20_000,
    100,
  );
  return {
    endpoint,
    async wsUrl() {
      return await discoverWsEndpoint(endpoint, 2000);
    },
    async kill() {
      try {
        Deno.kill(-proc.pid, "SIGKILL");
      } catch { /* gone */ }
      await proc.status;
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * The browser service with its own guards (`deno task browser`: scripts/browser.ts) on
 * `address:port`, with BROWSER_TOKEN `token` and `allow` as its FETCH_ALLOW_PRIVATE; with
 * `netns`, inside that namespace. Its log lines are kept for the test to read.
 */
export async function startBrowserService(opts: {
  address: string;
  port: number;
  token: string;
  allow?: string;
  netns?: string;
  /** More of the service's environment (BROWSER_GUARD_MAX_AGE_S, …). */
  env?: Record<string, string>;
}) {
  const script = new URL("../scripts/browser.ts", import.meta.url).pathname;
  const cmd = [Deno.execPath(), "run", "-A", script];
  const proc = new Deno.Command(opts.netns ? "ip" : cmd[0], {
    args: opts.netns ? ["netns", "exec", opts.netns, ...cmd] : cmd.slice(1),
    env: {
      BROWSER_TOKEN: opts.token,
      BROWSER_LISTEN: opts.address,
      BROWSER_PORT: String(opts.port),
      CHROMIUM_PATH: requireChromium(),
      FETCH_ALLOW_PRIVATE: opts.allow ?? "",
      ...opts.env,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const collect = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of s) {
      lines.push(
        ...dec.decode(chunk, { stream: true }).split("\n").filter(Boolean),
      );
    }
  };
  const collecting = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  const endpoint = `http://${opts.address}:${opts.port}`;
  const headers = { authorization: `Bearer ${opts.token}` };
  await waitUntilAsync(
    async () => {
      try {
        const r = await fetch(`${endpoint}/json/version`, {
          headers,
          signal: AbortSignal.timeout(1000),
        });
        await r.body?.cancel();
        return r.ok;
      } catch {
        return false;
      }
    },
    30_000,
    100,
  );
  return {
    endpoint,
    lines,
    /** Guards and DevTools connections open at the service now. */
    async health(): Promise<{ guards: number; devtools: number }> {
      const r = await fetch(`${endpoint}/health`, { headers });
      return await r.json();
    },
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        proc.kill(signal);
      } catch { /* gone */ }
      await proc.status;
      await collecting.catch(() => {});
    },
  };
}

/** A plain capture of `url` at the desktop-720p preset, as PNG, with nothing hidden. */
export function desktopShot(url: string): CaptureOptions {
  const p = PRESETS.find((x) => x.id === "desktop-720p") ?? PRESETS[0];
  return {
    url,
    viewport: p,
    format: "png",
    fullPage: false,
    noAds: false,
    noCookie: false,
    colorScheme: "default",
    zoom: 1,
  };
}
