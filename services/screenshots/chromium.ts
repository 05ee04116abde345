/**
 * The browser's life, shared by every capture: launched or connected on first need and
 * again after it dies (with backoff), capture slots behind a bounded queue, a spare
 * context made ahead of the next capture, a local browser recycled after so many
 * captures, and the answer a failed capture gets (240 when the browser went away, 220
 * when the page failed). The browser itself is chromium_launch.ts; what one capture does
 * in its page is capture_steps.ts.
 */
import type { Browser, BrowserContext, Page } from "puppeteer-core";
import { ApiError } from "../../schemas/errors.ts";
import { answersWithin } from "../runtime/timeout.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { type GuardProxy, startGuardProxy } from "../net/guard_proxy.ts";
import { exemptSite, trackerLists } from "./block_lists.ts";
import { FilterEngines, processFilterEngines } from "./filter_engine.ts";
import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "./screenshotter.ts";
import {
  browserLost,
  describe,
  type LaunchOptions,
  openBrowser,
} from "./chromium_launch.ts";
import { type CaptureSettings, CaptureSteps } from "./capture_steps.ts";
import { FairSlots } from "./fair_slots.ts";
import { startRemoteGuard } from "./remote_guard.ts";

/** Settings of the pool. */
export interface ChromiumOptions extends CaptureSettings, LaunchOptions {
  concurrency: number;
  /** Captures one owner (an account) may run at once (SCREENSHOT_PER_KEY; default: all). */
  perOwner?: number;
  queueMax: number;
  recycleAfter: number;
  allowRules: AllowRule[];
  /** The ad filter engine (AdGuard's lists); the composition gives it a cache folder. */
  filterEngines?: FilterEngines;
  /** Where each capture's guard proxy listens (SCREENSHOT_PROXY_LISTEN). */
  proxyListen?: string;
  /** The host the browser is told to reach the guard at (SCREENSHOT_PROXY_ADVERTISE). */
  proxyAdvertise?: string;
}

/** True for a loopback listen address, where the guard needs no credentials. */
function isLoopbackHost(h: string): boolean {
  return /^(127\.|localhost$|\[?::1\]?$)/.test(h);
}

/**
 * No browser could be had for a capture that had not begun: this service's browser is
 * down, backing off after failed starts, or the pool is closed. Nothing of the capture
 * ran, so another browser service may take it (SpreadScreenshotter does).
 */
export class NoBrowser extends ApiError {
  constructor(retryAfterS: number) {
    super(240, { headers: { "Retry-After": String(retryAfterS) } });
  }
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
  #slots: FairSlots;
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
  #steps: CaptureSteps;
  /** Our id at a browser service: its guards for us close with our connection. */
  readonly #client = crypto.randomUUID();

  constructor(private readonly opts: ChromiumOptions) {
    this.#filters = opts.filterEngines ?? processFilterEngines;
    this.#steps = new CaptureSteps(opts, this.#filters);
    this.#slots = new FairSlots(
      opts.concurrency,
      opts.perOwner ?? opts.concurrency,
      opts.queueMax,
    );
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
      import("../images/sharp_module.ts"),
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

  queued(): number {
    return this.#slots.waiting;
  }

  async ready(timeoutMs: number): Promise<boolean> {
    if (this.#browser?.connected) return true;
    return await answersWithin(
      () => this.#getBrowser().then(() => true),
      timeoutMs,
    );
  }

  /** True when a browser is connected, or one can be had within timeoutMs. */
  async #launch(): Promise<Browser> {
    const browser = await openBrowser({
      ...this.opts,
      browserClient: this.#client,
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
      remote: Boolean(this.opts.wsEndpoint),
    });
    return browser;
  }

  async #getBrowser(): Promise<Browser> {
    if (this.#closed) throw new NoBrowser(30);
    if (this.#browser?.connected) return this.#browser;
    if (!this.#launching && Date.now() < this.#nextTryAt) {
      // Backing off after failed starts: answer at once rather than hammer the browser.
      throw new NoBrowser(
        Math.max(1, Math.ceil((this.#nextTryAt - Date.now()) / 1000)),
      );
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
      throw new NoBrowser(5);
    }
  }

  /**
   * False while this pool's browser is known to be unreachable (backing off after a failed
   * start) or the pool is closed: a spread over several browser services skips it until
   * its next try is due.
   */
  get usable(): boolean {
    if (this.#closed) return false;
    return Boolean(this.#browser?.connected) || this.#launching !== undefined ||
      Date.now() >= this.#nextTryAt;
  }

  /** Captures holding or waiting for a slot of this pool. */
  get load(): number {
    return this.#slots.load;
  }

  /** A new context (through a new guard) and its page, for the next capture. */
  async #makeSpare(browser: Browser): Promise<Spare> {
    const { guard, credentials } = await this.#startGuard();
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
      // Answers the guard's 407 (a guard off loopback, or the browser service's).
      if (credentials) await page.authenticate(credentials);
      return { browser, context, page, guard };
    } catch (e) {
      await context?.close().catch(() => {});
      await guard.close();
      throw await this.#explain(e, browser);
    }
  }

  /**
   * A capture's guard: asked of the browser service, which runs it beside its Chromium
   * (BROWSER_TOKEN set), or started here, where the browser reaches it.
   */
  async #startGuard(): Promise<{
    guard: GuardProxy;
    credentials?: { username: string; password: string };
  }> {
    const { browserToken, wsEndpoint } = this.opts;
    if (browserToken && wsEndpoint) {
      try {
        const guard = await startRemoteGuard({
          endpoint: wsEndpoint,
          token: browserToken,
          client: this.#client,
        });
        return { guard, credentials: guard.credentials };
      } catch (e) {
        this.opts.log.error({
          msg: "the browser service gave no guard",
          error: describe(e),
        });
        throw new ApiError(240, { headers: { "Retry-After": "5" } });
      }
    }
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
    return { guard, credentials };
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
   * The spare, when it belongs to this browser, is still whole and its guard outlives a
   * capture's deadline; otherwise undefined (the capture makes its own). The browser
   * service closes each guard at its age (BROWSER_GUARD_MAX_AGE_S): a spare made before a
   * quiet spell held a dead one, and the next capture failed (issue #49). Whatever is
   * taken is gone from the pool.
   */
  async #takeSpare(
    browser: Browser,
    deadline: number,
  ): Promise<Spare | undefined> {
    const waiting = this.#spare;
    this.#spare = undefined;
    const spare = await waiting;
    if (!spare) return undefined;
    const expiresAt = spare.guard.expiresAt ?? Infinity;
    if (
      spare.browser === browser && browser.connected &&
      !spare.page.isClosed() && expiresAt > deadline + GUARD_MARGIN_MS
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
    // Slots are shared in turns among accounts, at most perOwner each (see FairSlots). A
    // slot whose context is being torn down frees within milliseconds: the line may hold
    // that many more rather than answer "busy" to a caller who came right after.
    const owner = opts.owner ?? "";
    const signal = opts.signal;
    await this.#slots.acquire(owner, deadline, this.#tearingDown, signal);
    let teardown: Promise<void> | undefined;
    this.#recycleIfDue();
    this.#shooting++;
    try {
      const browser = await this.#getBrowser();
      this.#captures++;
      const blocking = await this.#steps.blocking(opts, deadline);
      // The spare made while we waited (or a new one, when there was none), and then the
      // next one, made while this capture runs.
      const readying = this.#takeSpare(browser, deadline).then((s) =>
        s ?? this.#makeSpare(browser)
      );
      // The next one once this one is had: two renderers starting at once would slow
      // this capture down.
      readying.then(() => this.#refillSpare(browser), () => {});
      let timer: ReturnType<typeof setTimeout> | undefined;
      let stop: (() => void) | undefined;
      try {
        return await Promise.race([
          readying.then(async ({ context, page, guard }) => {
            // Also at the guard, not only in the page: a cross-site ad frame may run in a
            // process of its own, which the page's blocked-URL list does not reach; every
            // process's connections pass the guard.
            await guard.setFilterHosts([
              ...blocking.hosts,
              ...exemptSite(blocking.listHosts, new URL(opts.url)),
            ]);
            return this.#steps.shoot(
              context,
              page,
              guard,
              opts,
              deadline,
              blocking,
            );
          })
            .catch(
              async (e) => {
                throw await this.#explain(e, browser);
              },
            ),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new ApiError(230)),
              Math.max(0, deadline - Date.now()),
            );
            // Cancelled: ended as at the deadline, its context closed below.
            if (!signal) return;
            stop = () => reject(signal.reason);
            if (signal.aborted) stop();
            else signal.addEventListener("abort", stop, { once: true });
          }),
        ]);
      } finally {
        clearTimeout(timer);
        if (stop) signal?.removeEventListener("abort", stop);
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
          this.#slots.release(owner);
        });
        this.#teardowns.add(t);
        t.finally(() => this.#teardowns.delete(t));
      } else this.#slots.release(owner);
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

  async close(): Promise<void> {
    this.#closed = true;
    const spare = await this.#spare;
    this.#spare = undefined;
    if (spare) await this.#discard(spare);
    this.#slots.wakeAll();
    await Promise.allSettled([...this.#teardowns]);
    const b = this.#browser ?? await this.#launching?.catch(() => undefined);
    this.#browser = undefined;
    if (!b) return;
    if (this.opts.wsEndpoint) await b.disconnect().catch(() => {});
    else await b.close().catch(() => {});
  }
}

/** A context made ahead of its capture; see ChromiumScreenshotter.#spare. */
/**
 * A spare's guard must outlive its capture's deadline by this much (the browser service's
 * clock started a little after ours; its timer and our last request may cross).
 */
const GUARD_MARGIN_MS = 5_000;

interface Spare {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  guard: GuardProxy;
}
