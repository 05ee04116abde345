/**
 * The browser itself: which Chromium binary, the flags every one gets, launching a local
 * one tied to this process's life (reaping what a dead run left) or connecting to a remote
 * one over DevTools, and telling when one is gone. The pool that shares it among captures
 * is chromium.ts; one capture's steps are capture_steps.ts.
 */
import puppeteer, { type Browser } from "puppeteer-core";
import type { Logger } from "../runtime/logger.ts";
import { answersWithin, withTimeout } from "../runtime/timeout.ts";
import { HOME_FLAG, OWNER_FLAG, reapOrphans } from "./reap.ts";
import { serviceHeaders } from "./remote_guard.ts";

/** Starts Chromium so that it dies with this process (a kill -9 included). */
const CHILD_SCRIPT = new URL("./chromium_child.sh", import.meta.url).pathname;

/** Flags every Chromium we start gets: no background traffic may leave the machine. */
export const CHROMIUM_FLAGS = [
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
  "--disable-default-apps",
  "--disable-extensions",
  "--disable-dev-shm-usage",
  "--mute-audio",
  "--hide-scrollbars",
  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
  "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
];

/** Where Debian puts Chromium; the headless shell first, as it starts faster. */
export const CHROMIUM_CANDIDATES = [
  "/usr/lib/chromium/chromium-headless-shell",
  "/usr/bin/chromium-headless-shell",
  "/usr/lib/chromium/chromium",
  "/usr/bin/chromium",
];

/** The first Chromium binary that exists, or undefined. */
export function findChromium(preferred?: string): string | undefined {
  for (const p of [preferred, ...CHROMIUM_CANDIDATES]) {
    if (!p) continue;
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* next */ }
  }
  return undefined;
}

/** What opening a browser needs (a subset of the pool's ChromiumOptions). */
export interface LaunchOptions {
  /** A local Chromium binary (unused with wsEndpoint). */
  executablePath?: string;
  /** A remote browser's DevTools endpoint (BROWSER_WS_ENDPOINT). */
  wsEndpoint?: string;
  /**
   * The browser service's shared secret (BROWSER_TOKEN): with it, wsEndpoint is a
   * `deno task browser` service, reached with the token, whose own guards the captures
   * use (remote_guard.ts); without it, a bare DevTools endpoint and a guard here.
   */
  browserToken?: string;
  /** This pool's id at the browser service (its guards close with our connection). */
  browserClient?: string;
  /** The capture timeout; the DevTools protocol's own bound is 10 s above it. */
  timeoutMs: number;
  log: Logger;
  /**
   * Whose leftovers start-up may reap (the composition passes DATA_DIR): only browsers a
   * dead run with this same home left behind. Unset matches only unmarked browsers.
   */
  home?: string;
}

/**
 * A connected browser: the remote one at `wsEndpoint` (its current ws URL looked up), or
 * a local Chromium launched through the wrapper that ties its life to ours, after reaping
 * the browsers a dead run with the same home left behind.
 */
export async function openBrowser(opts: LaunchOptions): Promise<Browser> {
  const { executablePath, wsEndpoint } = opts;
  if (!wsEndpoint) {
    const reaped = reapOrphans(opts.home);
    if (reaped) {
      opts.log.info({
        msg: "reaped browsers of a dead service",
        reaped,
      });
    }
  }
  const browser = wsEndpoint
    ? await withTimeout(
      (async () =>
        await puppeteer.connect({
          browserWSEndpoint: await discoverWsEndpoint(
            wsEndpoint,
            5000,
            access(opts),
          ),
          protocolTimeout: opts.timeoutMs + 10_000,
          wsOptions: { headers: access(opts) },
        }))(),
      10_000,
      "connecting to the remote browser timed out",
    )
    : await puppeteer.launch({
      // Through a wrapper that ties the browser's life to ours (see chromium_child.sh).
      executablePath: CHILD_SCRIPT,
      env: { ...Deno.env.toObject(), IMAGEHOST_CHROMIUM: executablePath! },
      headless: true,
      args: [
        ...CHROMIUM_FLAGS,
        `${OWNER_FLAG}${Deno.pid}`,
        ...(opts.home ? [`${HOME_FLAG}${opts.home}`] : []),
        ...(Deno.uid?.() === 0 ? ["--no-sandbox"] : []),
      ],
      timeout: 30_000,
      protocolTimeout: opts.timeoutMs + 10_000,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  return browser;
}

/** The headers a browser service wants (none for a bare DevTools endpoint). */
function access(opts: LaunchOptions): Record<string, string> {
  if (!opts.browserToken || !opts.wsEndpoint) return {};
  return serviceHeaders({
    endpoint: opts.wsEndpoint,
    token: opts.browserToken,
    client: opts.browserClient ?? "",
  });
}

/**
 * The ws:// URL of a DevTools endpoint. A ws URL is taken as it is; for http://host:port the
 * browser is asked (/json/version) for its current one, which changes at every browser
 * restart, and its host is replaced by the one we reached (Chromium reports its own bind
 * address). Chromium answers /json only to a Host that is an IP, so a name is resolved first.
 */
export async function discoverWsEndpoint(
  endpoint: string,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<string> {
  if (/^wss?:/.test(endpoint)) return endpoint;
  const base = new URL(endpoint);
  if (!/^[\d.]+$|^\[/.test(base.hostname) && base.hostname !== "localhost") {
    const [ip] = await Deno.resolveDns(base.hostname, "A");
    if (ip) base.hostname = ip;
  }
  const res = await fetch(new URL("/json/version", base), {
    headers,
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`DevTools endpoint answered ${res.status}`);
  }
  const { webSocketDebuggerUrl } = await res.json() as {
    webSocketDebuggerUrl?: string;
  };
  if (!webSocketDebuggerUrl) throw new Error("no webSocketDebuggerUrl");
  const ws = new URL(webSocketDebuggerUrl);
  ws.host = base.host;
  ws.protocol = base.protocol === "https:" ? "wss:" : "ws:";
  return ws.toString();
}

/** A readable line for any error, including the event objects WebSocket errors are. */
export function describe(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (e && typeof e === "object") {
    const m = (e as { message?: unknown; error?: unknown }).message ??
      (e as { error?: unknown }).error;
    if (m) return String(m);
    try {
      return JSON.stringify(e);
    } catch { /* fall through */ }
  }
  return String(e);
}

/**
 * True when the browser is gone: disconnected, or not answering within a second (the
 * disconnect event can trail the failure it caused by a few milliseconds).
 */
export async function browserLost(browser: Browser): Promise<boolean> {
  if (!browser.connected) return true;
  return !(await answersWithin(
    () => browser.version().then(() => browser.connected),
    1000,
  ));
}
