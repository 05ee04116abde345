import type { HTTPRequest, HTTPResponse, Page } from "puppeteer-core";
import { ApiError } from "../../schemas/errors.ts";
import type { GuardProxy } from "../net/guard_proxy.ts";
import { withTimeout } from "../runtime/timeout.ts";

/**
 * A meta refresh of at most this many seconds is followed: the capture waits for it (and
 * its page) instead of capturing the "redirecting…" page. Longer ones are left alone.
 */
export const FOLLOW_REFRESH_S = 2;

/** The delay of the document's meta refresh in seconds, or -1 when it has none. */
function metaRefreshDelay(): number {
  const m = document.querySelector('meta[http-equiv="refresh" i]');
  const delay = parseFloat(m?.getAttribute("content") ?? "");
  return Number.isFinite(delay) && delay >= 0 ? delay : -1;
}

/** The main frame's latest navigation and how it ended. */
interface Navigation {
  url: string;
  response?: HTTPResponse;
  failure?: string;
}

/** How long a script's page must stay put after it ends to count as not navigating. */
const SCRIPT_QUIET_MS = 50;

/** Errors of a navigation replaced by another (meta refresh, script redirect). */
const REPLACED =
  /ERR_ABORTED|frame was detached|Navigating frame was detached|interrupted by another navigation|Execution context was destroyed/i;

/**
 * Loads `url` in `page` and waits until it has settled: its main frame's current document
 * has fired `load` and no other navigation is under way or announced by a meta refresh of
 * at most {@link FOLLOW_REFRESH_S} seconds. Unlike waiting on the first navigation alone
 * (which never ends when a meta refresh or a script replaces it), this follows the page to
 * where it comes to rest. JavaScript dialogs are dismissed as
 * they open, so `alert()` cannot hold the load. Throws 210 when the guard refused the final
 * document, 220 when it failed, 230 at `deadline`.
 */
export async function loadPage(
  page: Page,
  url: string,
  guard: GuardProxy,
  deadline: number,
  waitUntil: WaitUntil = "load",
): Promise<{ status: number | null; url: string }> {
  const settleOn = waitUntil === "domcontentloaded"
    ? "domcontentloaded"
    : "load";
  const load = async () =>
    (await settle(page, guard, deadline, waitUntil, {
      url,
      start: () =>
        page.goto(url, {
          waitUntil: settleOn,
          timeout: Math.max(1, deadline - Date.now()),
        }),
    }))!;
  try {
    return await load();
  } catch (e) {
    // Once more, within the same deadline, when the machine's network changed under the
    // load: nothing about the page, and the next try usually goes through.
    if (!networkChanged(e) || Date.now() >= deadline) throw e;
    return await load();
  }
}

/**
 * A load Chromium cut because an address or interface of the machine changed
 * (net::ERR_NETWORK_CHANGED): on Linux it watches netlink and fails what is in flight on
 * any change: a container network or a VPN coming up, or a test beside it making a
 * network namespace (a capture of the contract test failed so in one full run of two).
 */
export function networkChanged(e: unknown): boolean {
  return e instanceof ApiError && e.code === 220 &&
    (e.details ?? []).some((d) => /ERR_NETWORK_CHANGED/.test(d.message));
}

/** What a capture waits for before it is taken (the API's `waitUntil`). */
export type WaitUntil =
  | "load"
  | "domcontentloaded"
  | "networkidle0"
  | "networkidle2";

/**
 * Runs the caller's script on the loaded page and, when it navigates (`location`, a
 * form, a click), follows the page to where it comes to rest as {@link loadPage} does,
 * through the same guard (210 when the guard refused the new document). Returns the new
 * document's status and URL, or undefined when the script stayed on its page. `run`
 * rejects with the script's own error (an ApiError) unless the script navigated.
 */
export async function runAndFollow(
  page: Page,
  guard: GuardProxy,
  deadline: number,
  waitUntil: WaitUntil | undefined,
  run: () => Promise<unknown>,
): Promise<{ status: number | null; url: string } | undefined> {
  return await settle(page, guard, deadline, waitUntil ?? "load", {
    url: page.url(),
    start: run,
    script: true,
  });
}

/**
 * The shared loop: starts the navigation (or the script), then waits until the main frame
 * has settled. For a script that does not navigate, answers undefined once it has ended
 * and nothing started within {@link SCRIPT_QUIET_MS}.
 */
async function settle(
  page: Page,
  guard: GuardProxy,
  deadline: number,
  waitUntil: WaitUntil,
  how: { url: string; start: () => Promise<unknown>; script?: boolean },
): Promise<{ status: number | null; url: string } | undefined> {
  const settleOn = waitUntil === "domcontentloaded"
    ? "domcontentloaded"
    : "load";
  const { url } = how;
  const main = page.mainFrame();
  let loading = true;
  let changedAt = Date.now();
  let last: Navigation = { url };
  /** A script's run: still running, or ended (having navigated or not). */
  let navigated = !how.script;
  const isMain = (r: HTTPRequest) =>
    r.isNavigationRequest() && r.frame() === main;
  const onRequest = (r: HTTPRequest) => {
    if (!isMain(r)) return;
    navigated = true;
    loading = true;
    changedAt = Date.now();
    last = { url: r.url() };
  };
  const onResponse = (r: HTTPResponse) => {
    if (isMain(r.request()) && r.url() === last.url) last.response = r;
  };
  const onFailed = (r: HTTPRequest) => {
    if (!isMain(r)) return;
    last = { url: r.url(), failure: r.failure()?.errorText ?? "failed" };
    loading = false;
    changedAt = Date.now();
  };
  // How long the loaded document must stay put; undefined until it has been asked.
  let quiet: number | undefined;
  const onLoad = () => {
    loading = false;
    changedAt = Date.now();
    quiet = undefined;
  };
  page.on("request", onRequest);
  page.on("response", onResponse);
  page.on("requestfailed", onFailed);
  page.on(settleOn, onLoad);
  let crashed = false;
  const onCrash = () => crashed = true;
  page.on("error", onCrash);
  let gotoError: Error | undefined;
  try {
    how.start().then(
      () => {
        // A script ended: if it set no navigation off, the page is as it was (a
        // navigation it scheduled starts within SCRIPT_QUIET_MS, and resets this).
        if (how.script && !navigated) {
          loading = false;
          changedAt = Date.now();
        }
      },
      (e: Error) => {
        gotoError = e;
        if (how.script && !navigated) {
          loading = false;
          changedAt = Date.now();
        }
      },
    );
    for (;;) {
      if (how.script && !loading && !navigated) {
        if (gotoError) throw gotoError;
        if (Date.now() - changedAt >= SCRIPT_QUIET_MS) return undefined;
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      if (!loading) {
        // Settled unless the document announced a meta refresh it is about to follow.
        quiet ??= await withTimeout(
          page.evaluate(metaRefreshDelay),
          Math.max(1, Math.min(1000, deadline - Date.now())),
          "reading the page's meta refresh timed out",
        ).then(
          (d) => d >= 0 && d <= FOLLOW_REFRESH_S ? d * 1000 + 300 : 0,
          () => 100, // its context went away: a navigation is starting
        );
        if (!loading && Date.now() - changedAt >= quiet) break;
      }
      if (Date.now() >= deadline) throw new ApiError(230);
      // The renderer crashed or the browser went away: the caller tells which (220/240).
      if (crashed || page.isClosed() || !page.browser().connected) {
        throw new Error("the page or its browser went away while loading");
      }
      if (
        gotoError && !how.script && !REPLACED.test(gotoError.message) &&
        !last.failure
      ) {
        throw await judgeFailure(gotoError.message, guard);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    page.off("request", onRequest);
    page.off("response", onResponse);
    page.off("requestfailed", onFailed);
    page.off(settleOn, onLoad);
    page.off("error", onCrash);
  }
  const tag = last.response?.headers()["x-screenshot-guard"];
  if (tag === "blocked") throw new ApiError(210);
  if (tag) {
    throw new ApiError(220, {
      details: [{ message: "the page's server could not be reached" }],
    });
  }
  if (last.failure) throw await judgeFailure(last.failure, guard);
  if (waitUntil === "networkidle0" || waitUntil === "networkidle2") {
    // Idle for 500 ms with no (or at most two) requests in flight, as puppeteer defines
    // it; a page that never goes quiet is a timeout.
    const left = deadline - Date.now();
    await page.waitForNetworkIdle({
      idleTime: 500,
      concurrency: waitUntil === "networkidle0" ? 0 : 2,
      timeout: Math.max(1, left),
    }).catch(() => {
      throw new ApiError(230, {
        details: [{
          path: "waitUntil",
          message: "the page's network never went idle",
        }],
      });
    });
  }
  return { status: last.response?.status() ?? null, url: page.url() };
}

/** A failed main-frame navigation: the guard's refusal (210), a timeout (230), else 220. */
async function judgeFailure(
  message: string,
  guard: GuardProxy,
): Promise<ApiError> {
  if (/timeout/i.test(message)) return new ApiError(230);
  await guard.refresh?.().catch(() => {});
  if (guard.events.some((ev) => ev.kind === "blocked")) {
    return new ApiError(210);
  }
  return new ApiError(220, {
    details: [{ message: message.split(" at ")[0].slice(0, 200) }],
  });
}
