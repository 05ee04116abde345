/**
 * One capture's steps, on a page the pool (chromium.ts) made ready: what it blocks (ads,
 * trackers, cookie notices), preparing the page (viewport, media, headers, cookies,
 * request blocking), loading it, arranging it (selectors, hiding, the caller's css and
 * js, consent banners, delay) and shooting it (PNG/JPEG/WebP, an element, a clip, the
 * full page or a PDF). Knows nothing of slots, spares or the browser's life.
 */
import type { BrowserContext, Page } from "puppeteer-core";
import { ApiError } from "../../schemas/errors.ts";
import type { Logger } from "../runtime/logger.ts";
import { withTimeout } from "../runtime/timeout.ts";
import type { GuardProxy } from "../net/guard_proxy.ts";
import { loadPage, runAndFollow } from "./page_load.ts";
import { type BlockList, trackerLists } from "./block_lists.ts";
import {
  blocks,
  collectDomTokens,
  cosmeticCss,
  type FilterEngines,
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
  keepShadowRoots,
  TRACKER_HOSTS,
} from "./page_cleanup.ts";
import type { CaptureOptions, CaptureResult } from "./screenshotter.ts";
import { browserLost, describe } from "./chromium_launch.ts";
import { measureFullPage } from "./full_page.ts";

/** What the steps need of the pool's settings (ChromiumOptions extends it). */
export interface CaptureSettings {
  log: Logger;
  /** Tallest full-page capture, CSS pixels (16384). */
  maxFullPageHeight?: number;
  /** Widest full-page capture, CSS pixels (16384). */
  maxFullPageWidth?: number;
  /** Most device pixels in one capture (MAX_IMAGE_PIXELS): a full page is cut to it. */
  maxPixels?: number;
  /** Most pages of a full-page PDF (SCREENSHOT_PDF_MAX_PAGES, 50). */
  maxPdfPages?: number;
  /** Hosts whose requests noAds blocks (AD_HOSTS; tests name a loopback host). */
  adHosts?: readonly string[];
  /** Tracker hosts `blockTrackers` blocks (tests name a fixture host). */
  trackerHosts?: readonly string[];
  /** The filter lists (default: Ghostery's tracker database, read once). */
  blockLists?: () => Promise<{ ads: BlockList; trackers: BlockList }>;
}

/** One capture's steps with the pool's settings and filter engines. */
export class CaptureSteps {
  constructor(
    private readonly opts: CaptureSettings,
    private readonly filters: FilterEngines,
  ) {}

  /** One capture on a page made ready for it: prepare, load, arrange, capture. */
  async shoot(
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
    await checkSelectors(page, opts);
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
    const moved = await this.#arrange(page, opts, deadline, blocking, guard);
    if (moved) loaded = moved;
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
  async blocking(opts: CaptureOptions, deadline: number): Promise<Blocking> {
    const hosts = [
      ...new Set([
        ...(opts.noAds ? this.opts.adHosts ?? AD_HOSTS : []),
        ...(opts.blockTrackers ? this.opts.trackerHosts ?? TRACKER_HOSTS : []),
      ]),
    ];
    const cookieEngine = opts.noCookie
      ? await this.#engine("cookies", "noCookie", deadline)
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
      opts.noAds ? this.#engine("ads", "noAds", deadline) : undefined,
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
   * is refused (240, retry), never made without it: the next try builds it again. Waited
   * for until the capture's deadline at most, so a build that never ends cannot hold the
   * capture's slot past it.
   */
  #engine(
    list: "ads" | "cookies",
    option: string,
    deadline: number,
  ): Promise<FiltersEngine> {
    return withTimeout(
      this.filters.get(list),
      Math.max(1, deadline - Date.now()),
      "the filter engine was not ready before the capture's deadline",
    ).catch((e) => {
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
    // A consent bar may live in a closed shadow root, which no page script can reach:
    // its roots are kept, before the page's own scripts run, for dismissCookieBanners.
    if (opts.noCookie) await page.evaluateOnNewDocument(keepShadowRoots);
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
    guard: GuardProxy,
  ): Promise<{ status: number | null; url: string } | undefined> {
    let moved: { status: number | null; url: string } | undefined;
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
    if (css) {
      // Inserted, not awaited: puppeteer's addStyleTag waits for the sheet's load and
      // fails the capture when an @import in it fails (a denied address: 502/220). The
      // import is simply dropped, as a browser drops it, and the rest applies.
      await page.evaluate((text: string) => {
        const style = document.createElement("style");
        style.textContent = text;
        (document.head ?? document.documentElement).append(style);
      }, css);
    }
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
    if (opts.js) moved = await this.#runScript(page, opts, deadline, guard);
    if (opts.delay) {
      await new Promise((r) => setTimeout(r, Math.min(opts.delay!, left())));
    }
    // Watched until the capture: a banner a script adds later (during the caller's
    // script or delay) goes too.
    if (opts.noCookie && (opts.delay || opts.js)) {
      await page.evaluate(dismissCookieBanners, COOKIE_ACCEPT_BUTTONS);
    }
    return moved;
  }

  /**
   * Runs the caller's `js`. A script may navigate the page (a link's click, `location`):
   * the new page is loaded as the first was, through the same guard and its rules (210
   * when it refuses it), and captured; returns its status and URL then. A script that
   * throws is 160.
   */
  async #runScript(
    page: Page,
    opts: CaptureOptions,
    deadline: number,
    guard: GuardProxy,
  ): Promise<{ status: number | null; url: string } | undefined> {
    const left = () => Math.max(1, deadline - Date.now());
    // In an async function: the script may await; its statements run as written.
    const script = `(async () => {\n${opts.js}\n})()`;
    return await runAndFollow(
      page,
      guard,
      deadline,
      opts.waitUntil,
      () =>
        withTimeout(page.evaluate(script), left(), "js").catch((e) => {
          if (Date.now() >= deadline) throw new ApiError(230);
          // Its page went away under it: it navigated, which is followed.
          if (/context was destroyed/i.test(describe(e))) return;
          throw new ApiError(160, {
            details: [{
              path: "js",
              message: `the script failed: ${describe(e).split("\n")[0]}`
                .slice(0, 300),
            }],
          });
        }),
    );
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
        // A full page prints at most maxPdfPages pages: a page millions of pixels tall
        // held its capture slot for the whole timeout.
        pageRanges: opts.fullPage ? `1-${this.opts.maxPdfPages ?? 50}` : "1",
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
        (opts.fullPage ? await measureFullPage(page, this.opts) : undefined);
      bytes = await page.screenshot({
        type,
        ...quality,
        ...(clip
          ? { clip, captureBeyondViewport: true }
          : { fullPage: opts.fullPage }),
      });
    }
    const { default: sharp } = await import("../images/sharp_module.ts");
    const meta = await sharp(bytes).metadata();
    return {
      bytes: new Uint8Array(bytes),
      width: meta.width!,
      height: meta.height!,
    };
  }
}

/** What one capture blocks; see CaptureSteps.blocking. */
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

/**
 * Every selector the caller gave, parsed by the browser itself on the still blank page,
 * before anything is loaded: a bad one is 160 at once. Before, a bad `waitForSelector`
 * waited out the whole timeout (then 222), and a bad `hideSelectors` entry silently
 * dropped the hiding rule with every other selector in it.
 */
async function checkSelectors(page: Page, opts: CaptureOptions) {
  const given: [string, string][] = [
    ...(opts.selector ? [["selector", opts.selector] as [string, string]] : []),
    ...(opts.waitForSelector
      ? [["waitForSelector", opts.waitForSelector] as [string, string]]
      : []),
    ...(opts.hideSelectors ?? []).map((s): [string, string] => [
      "hideSelectors",
      s,
    ]),
  ];
  if (!given.length) return;
  const bad = await page.evaluate((list: [string, string][]) => {
    for (const [path, selector] of list) {
      try {
        document.querySelector(selector);
      } catch (e) {
        return [path, (e as Error).message];
      }
    }
    return null;
  }, given);
  if (bad) throw badSelector(bad[0], new Error(bad[1]));
}

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
