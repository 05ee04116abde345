import puppeteer, {
  type Browser,
  type BrowserContext,
  type Page,
} from "puppeteer-core";
import { ApiError } from "../../schemas/errors.ts";
import type { Logger } from "../deps.ts";
import { answersWithin, withTimeout } from "../timeout.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { type GuardProxy, startGuardProxy } from "../net/guard_proxy.ts";
import { loadPage } from "./page_load.ts";
import { HOME_FLAG, OWNER_FLAG, reapOrphans } from "./reap.ts";

import { type BlockList, exemptSite, trackerLists } from "./block_lists.ts";
import {
  blocks,
  collectDomTokens,
  cosmeticCss,
  FilterEngines,
  processFilterEngines,
  requestType,
} from "./filter_engine.ts";
import type { FiltersEngine } from "@ghostery/adblocker";
import {
  AD_HOSTS,
  adBlockPatterns,
  collapseBlockedAds,
  COOKIE_ACCEPT_BUTTONS,
  COOKIE_SELECTORS,
  dismissCookieBanners,
  hideCss,
  TRACKER_HOSTS,
} from "./page_cleanup.ts";
import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "./screenshotter.ts";

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

/** Settings of the pool. */
export interface ChromiumOptions {
  executablePath?: string;
  wsEndpoint?: string;
  concurrency: number;
  queueMax: number;
  recycleAfter: number;
  timeoutMs: number;
  allowRules: AllowRule[];
  log: Logger;
  /** Tallest full-page capture, CSS pixels (16384). */
  maxFullPageHeight?: number;
  /** Widest full-page capture, CSS pixels (16384). */
  maxFullPageWidth?: number;
  /** Most device pixels in one capture (MAX_IMAGE_PIXELS): a full page is cut to it. */
  maxPixels?: number;
  /** Hosts whose requests noAds blocks (AD_HOSTS; tests name a loopback host). */
  adHosts?: readonly string[];
  /** Tracker hosts `blockTrackers` blocks (tests name a fixture host). */
  trackerHosts?: readonly string[];
  /** The filter lists (default: Ghostery's tracker database, read once). */
  blockLists?: () => Promise<{ ads: BlockList; trackers: BlockList }>;
  /** The ad filter engine (AdGuard's lists); the composition gives it a cache folder. */
  filterEngines?: FilterEngines;
  /** Where each capture's guard proxy listens (SCREENSHOT_PROXY_LISTEN). */
  proxyListen?: string;
  /** The host the browser is told to reach the guard at (SCREENSHOT_PROXY_ADVERTISE). */
  proxyAdvertise?: string;
  /**
   * Whose leftovers start-up may reap (the composition passes DATA_DIR): only browsers a
   * dead run with this same home left behind. Unset matches only unmarked browsers.
   */
  home?: string;
}

/** True for a loopback listen address, where the guard needs no credentials. */
function isLoopbackHost(h: string): boolean {
  return /^(127\.|localhost$|\[?::1\]?$)/.test(h);
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
): Promise<string> {
  if (/^wss?:/.test(endpoint)) return endpoint;
  const base = new URL(endpoint);
  if (!/^[\d.]+$|^\[/.test(base.hostname) && base.hostname !== "localhost") {
    const [ip] = await Deno.resolveDns(base.hostname, "A");
    if (ip) base.hostname = ip;
  }
  const res = await fetch(new URL("/json/version", base), {
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
function describe(e: unknown): string {
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
 * Screenshots through one shared Chromium (local, or remote over a DevTools WebSocket). Each
 * capture gets a fresh browser context with its own guard proxy, so no cookies or cache
 * cross users and every connection is checked. Captures run SCREENSHOT_CONCURRENCY at a time
 * behind a bounded queue; a crashed or disconnected browser is replaced on the next capture
 * and a local one is recycled after `recycleAfter` captures.
 */
export class ChromiumScreenshotter implements Screenshotter {
  #browser?: Browser;
  #launching?: Promise<Browser>;
  #active = 0;
  #queue: (() => void)[] = [];
  #captures = 0;
  #closed = false;
  /** Slots held only while their capture's context is closed. */
  #tearingDown = 0;
  /** Captures between taking the browser and answering. */
  #shooting = 0;
  /** Contexts still being closed after their capture answered, and retired browsers. */
  #teardowns = new Set<Promise<void>>();
  /**
   * A fresh context with its page and guard, made before the capture that will take it:
   * a new page in a new context starts a renderer process, the slowest step of a capture
   * (~200 ms), so it is done while the service waits or captures something else. Never
   * used twice: each capture takes it whole and a new one is made.
   */
  #spare?: Promise<Spare | undefined>;
  /** Failed starts in a row, and when the next may be tried (backoff up to 10 s). */
  #failures = 0;
  #nextTryAt = 0;

  #filters: FilterEngines;

  constructor(private readonly opts: ChromiumOptions) {
    this.#filters = opts.filterEngines ?? processFilterEngines;
  }

  /** The running browser's process id (tests kill it to prove recovery). */
  get pid(): number | undefined {
    return this.#browser?.process()?.pid;
  }

  /** The shared browser (benchmarks compare a bare capture in the same browser). */
  browser(): Promise<Browser> {
    return this.#getBrowser();
  }

  /**
   * Starts the browser and warms what the first capture would otherwise pay for: the
   * first spare context and page (Chromium's first renderer), sharp loaded and the filter
   * lists read. Then the ad engine is loaded (or built, in a worker), not waited for: only
   * a noAds capture needs it (and waits for it), and a first build's CPU should not slow
   * the browser's start.
   */
  async start(): Promise<void> {
    const extras = Promise.all([
      import("sharp"),
      (this.opts.blockLists ?? trackerLists)(),
    ]);
    const browser = await this.#getBrowser();
    this.#refillSpare(browser);
    await Promise.all([this.#spare, extras]);
    for (const list of ["ads", "cookies"] as const) {
      this.#filters.get(list).catch((e) =>
        this.opts.log.error({
          msg: "filter engine failed to load",
          list,
          error: describe(e),
        })
      );
    }
  }

  /** True when a browser is connected, or one can be had within timeoutMs. */
  async ready(timeoutMs: number): Promise<boolean> {
    if (this.#browser?.connected) return true;
    return await answersWithin(
      () => this.#getBrowser().then(() => true),
      timeoutMs,
    );
  }

  async #launch(): Promise<Browser> {
    const { executablePath, wsEndpoint } = this.opts;
    if (!wsEndpoint) {
      const reaped = reapOrphans(this.opts.home);
      if (reaped) {
        this.opts.log.info({
          msg: "reaped browsers of a dead service",
          reaped,
        });
      }
    }
    const browser = wsEndpoint
      ? await withTimeout(
        (async () =>
          await puppeteer.connect({
            browserWSEndpoint: await discoverWsEndpoint(wsEndpoint, 5000),
            protocolTimeout: this.opts.timeoutMs + 10_000,
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
          ...(this.opts.home ? [`${HOME_FLAG}${this.opts.home}`] : []),
          ...(Deno.uid?.() === 0 ? ["--no-sandbox"] : []),
        ],
        timeout: 30_000,
        protocolTimeout: this.opts.timeoutMs + 10_000,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
    browser.once("disconnected", () => {
      if (this.#browser === browser) {
        this.#browser = undefined;
        this.#dropSpare();
      }
      if (!this.#closed) this.opts.log.info({ msg: "browser disconnected" });
    });
    this.#captures = 0;
    this.opts.log.info({
      msg: "browser ready",
      uptime_ms: Math.round(performance.now()),
      version: await browser.version(),
      remote: Boolean(wsEndpoint),
    });
    return browser;
  }

  async #getBrowser(): Promise<Browser> {
    if (this.#closed) {
      throw new ApiError(240, { headers: { "Retry-After": "30" } });
    }
    if (this.#browser?.connected) return this.#browser;
    if (!this.#launching && Date.now() < this.#nextTryAt) {
      // Backing off after failed starts: answer at once rather than hammer the browser.
      throw new ApiError(240, {
        headers: {
          "Retry-After": String(
            Math.max(1, Math.ceil((this.#nextTryAt - Date.now()) / 1000)),
          ),
        },
      });
    }
    this.#launching ??= this.#launch().then((b) => {
      this.#browser = b;
      this.#failures = 0;
      return b;
    }, (e) => {
      this.#failures++;
      this.#nextTryAt = Date.now() +
        Math.min(10_000, 250 * 2 ** (this.#failures - 1));
      this.opts.log.error({
        msg: "browser start failed",
        error: describe(e),
        retry_in_ms: this.#nextTryAt - Date.now(),
      });
      throw e;
    }).finally(() => this.#launching = undefined);
    try {
      return await this.#launching;
    } catch {
      throw new ApiError(240, { headers: { "Retry-After": "5" } });
    }
  }

  /** Takes a slot, waiting in line at most until `deadline` (then 240: busy). */
  async #acquire(deadline: number): Promise<void> {
    if (this.#active < this.opts.concurrency) {
      this.#active++;
      return;
    }
    const busy = () =>
      new ApiError(240, {
        headers: { "Retry-After": "5" },
        details: [{ message: "all browsers are busy; try again shortly" }],
      });
    // A slot whose context is being torn down frees within milliseconds: wait for it
    // rather than answer "busy" to a caller who came right after the previous answer.
    if (this.#queue.length >= this.opts.queueMax + this.#tearingDown) {
      throw busy();
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      // The wait counts against the capture's time: past its deadline it leaves the line.
      const timer = setTimeout(() => {
        const i = this.#queue.indexOf(wake);
        if (i >= 0) this.#queue.splice(i, 1);
        reject(busy());
      }, Math.max(0, deadline - Date.now()));
      this.#queue.push(wake);
    });
  }

  #release() {
    const next = this.#queue.shift();
    if (next) next();
    else this.#active--;
  }

  /** A new context (through a new guard) and its page, for the next capture. */
  async #makeSpare(browser: Browser): Promise<Spare> {
    const listen = this.opts.proxyListen ?? "127.0.0.1";
    // Off loopback, only the capture holding these may use its guard.
    const credentials = isLoopbackHost(listen) ? undefined : {
      username: crypto.randomUUID(),
      password: crypto.randomUUID(),
    };
    const guard = await startGuardProxy(this.opts.allowRules, {
      listenHost: listen,
      advertiseHost: this.opts.proxyAdvertise,
      credentials,
    }).catch((e) => {
      // SCREENSHOT_PROXY_LISTEN names an address this host does not have: no capture can
      // be guarded, so none is made.
      this.opts.log.error({ msg: "guard cannot listen", error: describe(e) });
      throw new ApiError(240, { headers: { "Retry-After": "30" } });
    });
    let context: BrowserContext | undefined;
    try {
      context = await browser.createBrowserContext({
        proxyServer: guard.url,
        // Chromium sends loopback straight out unless told otherwise; everything must
        // pass the guard.
        proxyBypassList: ["<-loopback>"],
        downloadBehavior: { policy: "deny" },
      });
      const page = await context.newPage();
      // Answers the guard's 407 (a remote browser's guard listens off loopback).
      if (credentials) await page.authenticate(credentials);
      return { browser, context, page, guard };
    } catch (e) {
      await context?.close().catch(() => {});
      await guard.close();
      throw await this.#explain(e, browser);
    }
  }

  /** Starts making the next spare, unless one is on its way or the pool is closed. */
  #refillSpare(browser: Browser) {
    if (this.#closed || this.#spare) return;
    this.#spare = this.#makeSpare(browser).catch((e) => {
      this.opts.log.error({ msg: "spare context failed", error: describe(e) });
      return undefined;
    });
  }

  /**
   * The spare, when it belongs to this browser and is still whole; otherwise undefined
   * (the capture makes its own). Whatever is taken is gone from the pool.
   */
  async #takeSpare(browser: Browser): Promise<Spare | undefined> {
    const waiting = this.#spare;
    this.#spare = undefined;
    const spare = await waiting;
    if (!spare) return undefined;
    if (
      spare.browser === browser && browser.connected && !spare.page.isClosed()
    ) return spare;
    this.#discard(spare);
    return undefined;
  }

  /** Closes a spare no capture will use (its browser was replaced, or the pool closes). */
  #discard(spare: Spare): Promise<void> {
    return spare.context.close().catch(() => {}).then(() => spare.guard.close())
      .catch(() => {});
  }

  /** Drops the spare (made by a browser that is going away). */
  #dropSpare() {
    const waiting = this.#spare;
    this.#spare = undefined;
    waiting?.then((s) => s && this.#discard(s));
  }

  /**
   * Replaces a local browser that has served `recycleAfter` captures, once no capture is
   * using it; it is closed after the contexts still being torn down are gone.
   */
  #recycleIfDue() {
    const old = this.#browser;
    if (
      !old || this.opts.wsEndpoint || this.#shooting > 0 ||
      this.#captures < this.opts.recycleAfter
    ) return;
    this.#browser = undefined;
    this.#dropSpare();
    const closed = Promise.allSettled([...this.#teardowns])
      .then(() => old.close()).catch(() => {});
    this.#teardowns.add(closed);
    closed.finally(() => this.#teardowns.delete(closed));
  }

  async capture(opts: CaptureOptions): Promise<CaptureResult> {
    // One deadline for the whole capture: waiting in line, starting the browser, loading,
    // capturing. A caller never waits much past SCREENSHOT_TIMEOUT_MS.
    const deadline = Date.now() +
      Math.min(opts.timeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs);
    await this.#acquire(deadline);
    let teardown: Promise<void> | undefined;
    this.#recycleIfDue();
    this.#shooting++;
    try {
      const browser = await this.#getBrowser();
      this.#captures++;
      const blocking = await this.#blocking(opts);
      // The spare made while we waited (or a new one, when there was none), and then the
      // next one, made while this capture runs.
      const readying = this.#takeSpare(browser).then((s) =>
        s ?? this.#makeSpare(browser)
      );
      // The next one once this one is had: two renderers starting at once would slow
      // this capture down.
      readying.then(() => this.#refillSpare(browser), () => {});
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        return await Promise.race([
          readying.then(({ context, page, guard }) => {
            // Also at the guard, not only in the page: a cross-site ad frame may run in a
            // process of its own, which the page's blocked-URL list does not reach; every
            // process's connections pass the guard.
            guard.setFilterHosts([
              ...blocking.hosts,
              ...exemptSite(blocking.listHosts, new URL(opts.url)),
            ]);
            return this.#shoot(context, page, guard, opts, deadline, blocking);
          })
            .catch(
              async (e) => {
                throw await this.#explain(e, browser);
              },
            ),
          new Promise<never>((_, reject) =>
            timer = setTimeout(
              () => reject(new ApiError(230)),
              Math.max(0, deadline - Date.now()),
            )
          ),
        ]);
      } finally {
        clearTimeout(timer);
        // Torn down after the answer: the caller does not wait the ~8 ms Chromium takes
        // to close a context, yet the slot stays taken until it is gone (see below).
        teardown = readying.then(({ context, guard }) =>
          context.close().catch(() => {}).then(() => guard.close())
        ).catch(() => {});
      }
    } finally {
      this.#shooting--;
      if (teardown) {
        this.#tearingDown++;
        const t = teardown.finally(() => {
          this.#tearingDown--;
          this.#release();
        });
        this.#teardowns.add(t);
        t.finally(() => this.#teardowns.delete(t));
      } else this.#release();
    }
  }

  /**
   * What a failed capture tells the caller: a browser that died or went away is the
   * service's outage (240, retry), anything else the page's failure (220).
   */
  async #explain(e: unknown, browser: Browser): Promise<ApiError> {
    if (e instanceof ApiError) return e;
    if (this.#closed || await browserLost(browser)) {
      this.opts.log.error({
        msg: "browser lost mid-capture",
        error: describe(e),
      });
      return new ApiError(240, {
        headers: { "Retry-After": "5" },
        details: [{ message: "the browser went away; try again shortly" }],
      });
    }
    return new ApiError(220, {
      details: [{ message: describe(e).split(" at ")[0].slice(0, 200) }],
    });
  }

  async #shoot(
    context: BrowserContext,
    page: Page,
    guard: GuardProxy,
    opts: CaptureOptions,
    deadline: number,
    blocking: Blocking,
  ): Promise<CaptureResult> {
    // Popups are closed as they open: they would hold connections and time for nothing.
    context.on("targetcreated", (t) => {
      if (t.type() !== "page" || !t.opener()) return;
      t.page().then((p) => p?.close()).catch(() => {});
    });
    // alert(), confirm(), prompt() and beforeunload would otherwise hold the page.
    page.on("dialog", (d) => d.dismiss().catch(() => {}));
    await this.#prepare(page, opts, blocking);
    let loaded: { status: number | null; url: string };
    try {
      loaded = await loadPage(page, opts.url, guard, deadline, opts.waitUntil);
    } catch (e) {
      // A navigation cut short by the browser's own death is our outage, not the page's
      // (#explain turns what is not an ApiError into 240 or 220).
      if (
        e instanceof ApiError && e.code === 220 &&
        await browserLost(context.browser())
      ) throw new Error("browser lost while loading");
      throw e;
    }
    await this.#arrange(page, opts, deadline, blocking);
    const shot = await this.#capture(page, opts, deadline);
    const title = await withTimeout(page.title(), 1000, "title").catch(() =>
      ""
    );
    return { ...shot, title, ...loaded };
  }

  /**
   * What this capture blocks (noAds, blockTrackers), worked out once: our own hosts
   * (inside Chromium and at the guard); the tracker database's hosts (noAds: advertising;
   * blockTrackers: advertising and analytics) for the guard, and its host-path rules for
   * Chromium (blockTrackers); and for noAds the ad filter engine, which decides each
   * request in the page and hides by its cosmetic rules.
   */
  async #blocking(opts: CaptureOptions): Promise<Blocking> {
    const hosts = [
      ...new Set([
        ...(opts.noAds ? this.opts.adHosts ?? AD_HOSTS : []),
        ...(opts.blockTrackers ? this.opts.trackerHosts ?? TRACKER_HOSTS : []),
      ]),
    ];
    const cookieEngine = opts.noCookie
      ? await this.#engine("cookies", "noCookie")
      : undefined;
    if (!opts.noAds && !opts.blockTrackers) {
      return {
        hosts,
        listHosts: [],
        listUrls: [],
        blocked: new Set(),
        cookieEngine,
      };
    }
    const [lists, engine] = await Promise.all([
      (this.opts.blockLists ?? trackerLists)(),
      opts.noAds ? this.#engine("ads", "noAds") : undefined,
    ]);
    const pick = [
      ...(opts.noAds ? [lists.ads] : []),
      ...(opts.blockTrackers ? [lists.trackers] : []),
    ];
    return {
      hosts,
      listHosts: [...new Set(pick.flatMap((l) => l.hosts))],
      // noAds' paths are the engine's (AdGuard Base covers the database's ad paths and
      // far more); Chromium's list would cost ~45 ms a capture for nothing.
      listUrls: opts.blockTrackers ? lists.trackers.urls : [],
      engine,
      blocked: new Set(),
      cookieEngine,
    };
  }

  /**
   * A list's engine for a capture that asked for it. When it cannot be had the capture
   * is refused (240, retry), never made without it: the next try builds it again.
   */
  #engine(list: "ads" | "cookies", option: string): Promise<FiltersEngine> {
    return this.#filters.get(list).catch((e) => {
      this.opts.log.error({
        msg: "filter engine failed to load",
        list,
        error: describe(e),
      });
      throw new ApiError(240, {
        headers: { "Retry-After": "30" },
        details: [{
          path: option,
          message: `the ${
            list === "ads" ? "ad" : "cookie notice"
          } filter is unavailable`,
        }],
      });
    });
  }

  /** Before loading: viewport, user agent, media features, headers, cookies, blocking. */
  async #prepare(page: Page, opts: CaptureOptions, blocking: Blocking) {
    const zoom = opts.zoom;
    await page.setViewport({
      width: Math.round(opts.viewport.width / zoom),
      height: Math.round(opts.viewport.height / zoom),
      deviceScaleFactor: opts.viewport.deviceScaleFactor * zoom,
      isMobile: opts.viewport.isMobile,
      hasTouch: opts.viewport.hasTouch,
    });
    if (opts.userAgent) await page.setUserAgent({ userAgent: opts.userAgent });
    const media = [
      ...(opts.colorScheme !== "default"
        ? [{ name: "prefers-color-scheme", value: opts.colorScheme }]
        : []),
      ...(opts.reducedMotion
        ? [{ name: "prefers-reduced-motion", value: "reduce" }]
        : []),
    ];
    if (media.length) await page.emulateMediaFeatures(media);
    await page.setBypassCSP(true);
    const target = new URL(opts.url);
    if (opts.cookies?.length) {
      // Host-only cookies of the target URL: no other site gets them.
      await page.setCookie(
        ...opts.cookies.map((c) => ({ ...c, url: target.origin + "/" })),
      );
    }
    const extra = opts.headers && Object.keys(opts.headers).length
      ? opts.headers
      : undefined;
    const { engine } = blocking;
    if (extra || engine) {
      // One handler decides each request (puppeteer's interception also reaches
      // cross-site frames): the ad engine's block first, then the caller's headers.
      await page.setRequestInterception(true);
      page.on("request", async (req) => {
        if (req.isInterceptResolutionHandled()) return;
        if (engine) {
          const frame = req.frame();
          const main = !frame || frame === page.mainFrame();
          // The page asked for is never blocked, whatever its address looks like.
          const navigation = req.isNavigationRequest() && main;
          const source = (main ? frame : frame.parentFrame() ?? frame)?.url() ||
            target.href;
          if (
            !navigation &&
            blocks(
              engine,
              req.url(),
              source,
              requestType(req.resourceType(), main),
            )
          ) {
            blocking.blocked.add(req.url());
            return void req.abort("blockedbyclient").catch(() => {});
          }
        }
        let same = false;
        try {
          same = new URL(req.url()).origin === target.origin;
        } catch { /* data: and the like */ }
        // Headers go to the target's own origin only: a caller's Authorization must not
        // reach the third parties the page loads.
        if (!extra || !same) return void req.continue().catch(() => {});
        // Overriding the headers drops the cookies Chromium would attach: add them back.
        const jar = await page.cookies(req.url()).catch(() => []);
        const cookie = jar.map((c) => `${c.name}=${c.value}`).join("; ");
        req.continue({
          headers: {
            ...req.headers(),
            ...extra,
            ...(cookie ? { cookie } : {}),
          },
        }).catch(() => {});
      });
    }
    const { hosts, listUrls } = blocking;
    if (hosts.length || listUrls.length) {
      // Blocked inside Chromium: no per-request round trip through us. (Navigations to
      // file:, chrome: and other non-web schemes need no rule: the API takes only http(s)
      // URLs and Chromium refuses web pages that redirect or script their way to them, as
      // the tests show.)
      const cdp = await page.createCDPSession();
      await cdp.send("Network.enable");
      await cdp.send("Network.setBlockedURLs", {
        urlPatterns: adBlockPatterns(hosts),
        // The lists' rules in the plain wildcard form, which is cheap to set up.
        urls: listUrls,
      });
    }
  }

  /**
   * After loading, before capturing: wait for a selector, hide and restyle, run the
   * caller's script, deal with ads and consent banners, then the caller's delay.
   */
  async #arrange(
    page: Page,
    opts: CaptureOptions,
    deadline: number,
    blocking: Blocking,
  ) {
    const left = () => Math.max(1, deadline - Date.now());
    if (opts.waitForSelector) {
      // A little before the deadline, so the answer says what was missing (222).
      await page.waitForSelector(opts.waitForSelector, {
        timeout: Math.max(1, left() - 300),
      })
        .catch((e: Error) => {
          if (/not a valid selector|SyntaxError/i.test(e.message)) {
            throw badSelector("waitForSelector", e);
          }
          throw new ApiError(222, {
            details: [{
              path: "waitForSelector",
              message: "no element matched within the timeout",
            }],
          });
        });
    }
    // The lists' hiding rules for what this page holds (its classes, ids and links).
    const engines = [blocking.engine, blocking.cookieEngine].filter((e) =>
      e !== undefined
    );
    const tokens = engines.length
      ? await page.evaluate(collectDomTokens, 5000)
      : undefined;
    const css = [
      ...engines.map((e) => cosmeticCss(e, page.url(), tokens!)),
      ...(opts.noCookie ? [hideCss(COOKIE_SELECTORS)] : []),
      ...(opts.hideSelectors?.length
        ? [
          `${
            opts.hideSelectors.join(",\n")
          } { visibility: hidden !important; }`,
        ]
        : []),
      ...(opts.css ? [opts.css] : []),
    ].join("\n");
    if (css) await page.addStyleTag({ content: css });
    if (opts.noCookie) {
      await page.evaluate(dismissCookieBanners, COOKIE_ACCEPT_BUTTONS);
    }
    if (opts.noAds) {
      await page.evaluate(
        collapseBlockedAds,
        [...(this.opts.adHosts ?? AD_HOSTS)],
        [...blocking.blocked],
      );
    }
    if (opts.js) {
      // In an async function: the script may await; its statements run as written.
      const script = `(async () => {\n${opts.js}\n})()`;
      await withTimeout(page.evaluate(script), left(), "js").catch((e) => {
        if (Date.now() >= deadline) throw new ApiError(230);
        throw new ApiError(160, {
          details: [{
            path: "js",
            message: `the script failed: ${describe(e).split("\n")[0]}`.slice(
              0,
              300,
            ),
          }],
        });
      });
    }
    if (opts.delay) {
      await new Promise((r) => setTimeout(r, Math.min(opts.delay!, left())));
    }
  }

  /** The capture itself: a PDF, one element, a clip, the full page or the viewport. */
  async #capture(
    page: Page,
    opts: CaptureOptions,
    deadline: number,
  ): Promise<Pick<CaptureResult, "bytes" | "width" | "height">> {
    if (opts.format === "pdf") {
      const paper = PDF_PAPER[opts.pdfPaper ?? "A4"];
      const bytes = await page.pdf({
        format: opts.pdfPaper ?? "A4",
        printBackground: true,
        ...(opts.fullPage ? {} : { pageRanges: "1" }),
        timeout: Math.max(1, deadline - Date.now()),
      });
      return { bytes: new Uint8Array(bytes), ...paper };
    }
    const type = opts.format;
    const quality = type === "png" ? {} : { quality: opts.quality ?? 85 };
    let bytes: Uint8Array;
    if (opts.selector) {
      const el = await page.$(opts.selector).catch((e: Error) => {
        throw badSelector("selector", e);
      });
      if (!el) {
        throw new ApiError(222, {
          details: [{ path: "selector", message: "no element matched" }],
        });
      }
      try {
        bytes = await el.screenshot({
          type,
          ...quality,
          captureBeyondViewport: true,
        })
          .catch((e: Error) => {
            // An element with no box (display: none, zero size) cannot be captured.
            if (/not visible|no layout|0 width|has no/i.test(e.message)) {
              throw new ApiError(222, {
                details: [{
                  path: "selector",
                  message: "the element has no visible box",
                }],
              });
            }
            throw e;
          });
      } finally {
        await el.dispose().catch(() => {});
      }
    } else {
      const clip = opts.clip ??
        (opts.fullPage ? await this.#fullPageClip(page) : undefined);
      bytes = await page.screenshot({
        type,
        ...quality,
        ...(clip
          ? { clip, captureBeyondViewport: true }
          : { fullPage: opts.fullPage }),
      });
    }
    const { default: sharp } = await import("sharp");
    const meta = await sharp(bytes).metadata();
    return {
      bytes: new Uint8Array(bytes),
      width: meta.width!,
      height: meta.height!,
    };
  }

  /**
   * A full-page capture: scrolls through the page so lazy images load, lets the network
   * settle, then measures it; the clip when it is over a cap, else undefined.
   */
  async #fullPageClip(page: Page) {
    const maxHeight = this.opts.maxFullPageHeight ?? 16_384;
    const maxWidth = this.opts.maxFullPageWidth ?? 16_384;
    await page.evaluate(async (cap: number) => {
      const step = Math.max(200, innerHeight * 0.8);
      for (
        let y = 0;
        y < Math.min(document.documentElement.scrollHeight, cap);
        y += step
      ) {
        scrollTo(0, y);
        await new Promise((r) => setTimeout(r, 60));
      }
      scrollTo(0, 0);
    }, maxHeight);
    await page.waitForNetworkIdle({ idleTime: 250, timeout: 3000 }).catch(
      () => {},
    );
    await page.evaluate(() =>
      Promise.all(
        Array.from(document.images).filter((i) => !i.complete).map((i) =>
          new Promise((r) => {
            i.onload = i.onerror = r;
          })
        ),
      )
    ).catch(() => {});
    const size = await page.evaluate(() => ({
      width: Math.max(
        document.documentElement.scrollWidth,
        document.body?.scrollWidth ?? 0,
      ),
      height: Math.max(
        document.documentElement.scrollHeight,
        document.body?.scrollHeight ?? 0,
      ),
    }));
    return fullPageClip(size, page.viewport()!, {
      maxWidth,
      maxHeight,
      maxPixels: this.opts.maxPixels ?? 100_000_000,
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const spare = await this.#spare;
    this.#spare = undefined;
    if (spare) await this.#discard(spare);
    this.#queue.splice(0).forEach((wake) => wake());
    await Promise.allSettled([...this.#teardowns]);
    const b = this.#browser ?? await this.#launching?.catch(() => undefined);
    this.#browser = undefined;
    if (!b) return;
    if (this.opts.wsEndpoint) await b.disconnect().catch(() => {});
    else await b.close().catch(() => {});
  }
}

/** A context made ahead of its capture; see ChromiumScreenshotter.#spare. */
interface Spare {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  guard: GuardProxy;
}

/** What one capture blocks; see ChromiumScreenshotter.#blocking. */
interface Blocking {
  hosts: string[];
  listHosts: string[];
  listUrls: string[];
  /** The ad engine (noAds). */
  engine?: FiltersEngine;
  /** URLs the engine blocked in this capture, for collapsing what held them. */
  blocked: Set<string>;
  /** The cookie notices list's engine (noCookie): hiding rules only. */
  cookieEngine?: FiltersEngine;
}

/** CSS pixel size of a PDF page (96 px to the inch). */
const PDF_PAPER = {
  A4: { width: 794, height: 1123 },
  Letter: { width: 816, height: 1056 },
};

/** A selector the browser cannot parse: the caller's mistake (160). */
function badSelector(path: string, e: Error): ApiError {
  return new ApiError(160, {
    details: [{
      path,
      message: `not a valid CSS selector: ${e.message.split("\n")[0]}`.slice(
        0,
        300,
      ),
    }],
  });
}

/**
 * True when the browser is gone: disconnected, or not answering within a second (the
 * disconnect event can trail the failure it caused by a few milliseconds).
 */
async function browserLost(browser: Browser): Promise<boolean> {
  if (!browser.connected) return true;
  return !(await answersWithin(
    () => browser.version().then(() => browser.connected),
    1000,
  ));
}

/**
 * The clip of a full-page capture when the page is over a cap, else undefined (the whole
 * page is captured): at most `maxWidth` × `maxHeight` CSS pixels from the top left (and
 * 16384 device pixels wide), and at most `maxPixels` device pixels (the height gives way
 * first), so neither Chromium ("Page is too large") nor the image limits refuse it.
 */
export function fullPageClip(
  page: { width: number; height: number },
  viewport: { width: number; deviceScaleFactor?: number },
  caps: { maxWidth: number; maxHeight: number; maxPixels: number },
): { x: 0; y: 0; width: number; height: number } | undefined {
  const dpr = viewport.deviceScaleFactor ?? 1;
  // Also at most 16384 device pixels wide, the widest image Chromium encodes reliably.
  const width = Math.max(
    1,
    Math.min(page.width, caps.maxWidth, Math.floor(16_384 / dpr)),
  );
  let height = Math.max(1, Math.min(page.height, caps.maxHeight));
  const budget = Math.floor(caps.maxPixels / (width * dpr * dpr));
  if (height > budget) height = Math.max(1, budget);
  if (width === page.width && height === page.height) return undefined;
  return { x: 0, y: 0, width, height };
}
