/**
 * What noAds and noCookie do inside the page besides the filter engine (filter_engine.ts):
 * hosts whose requests are dropped, consent managers' roots, a script that dismisses
 * consent dialogs, and one that collapses what blocked ads leave.
 */

/** Hosts (and their subdomains) of ad servers and trackers; requests to them are blocked. */
export const AD_HOSTS = [
  "doubleclick.net",
  "googlesyndication.com",
  "googleadservices.com",
  "googletagservices.com",
  "adservice.google.com",
  "google-analytics.com",
  "googletagmanager.com",
  "amazon-adsystem.com",
  "adnxs.com",
  "adsrvr.org",
  "criteo.com",
  "criteo.net",
  "taboola.com",
  "outbrain.com",
  "pubmatic.com",
  "rubiconproject.com",
  "openx.net",
  "casalemedia.com",
  "scorecardresearch.com",
  "quantserve.com",
  "moatads.com",
  "adform.net",
  "smartadserver.com",
  "yieldmo.com",
  "media.net",
  "zedo.com",
  "hotjar.com",
  "connect.facebook.net",
  "ads-twitter.com",
  "ads.linkedin.com",
  "bat.bing.com",
];

/** Analytics and tracking hosts (`blockTrackers`; noAds blocks these too). */
export const TRACKER_HOSTS = [
  "google-analytics.com",
  "googletagmanager.com",
  "scorecardresearch.com",
  "quantserve.com",
  "hotjar.com",
  "connect.facebook.net",
  "bat.bing.com",
  "ads-twitter.com",
  "ads.linkedin.com",
  "doubleclick.net",
  "api.segment.io",
  "cdn.segment.com",
  "mixpanel.com",
  "fullstory.com",
  "clarity.ms",
  "js-agent.newrelic.com",
  "nr-data.net",
  "matomo.cloud",
  "plausible.io",
  "api.amplitude.com",
  "cdn.amplitude.com",
  "cdn.heapanalytics.com",
  "mouseflow.com",
  "crazyegg.com",
  "mc.yandex.ru",
  "mc.yandex.com",
];

/** One entry of Chromium's `Network.setBlockedURLs` (URLPattern syntax). */
export interface BlockPattern {
  urlPattern: string;
  block: boolean;
}

/**
 * URL patterns that block every request to these hosts and their subdomains, on any scheme
 * and port. Chromium drops matching requests itself, so blocking costs no round trip to us
 * per request.
 */
export function adBlockPatterns(hosts: readonly string[] = AD_HOSTS) {
  return hosts.flatMap((h): BlockPattern[] => [
    { urlPattern: `*://${h}:*/*`, block: true },
    { urlPattern: `*://*.${h}:*/*`, block: true },
  ]);
}

/**
 * Roots of the consent managers we know (OneTrust, Cookiebot, Didomi, Quantcast,
 * Usercentrics, TrustArc, Osano, Complianz, Iubenda, Klaro, CookieYes, Borlabs, Termly):
 * hidden whole, with their backdrops.
 */
export const COOKIE_SELECTORS = [
  "#onetrust-consent-sdk",
  "#onetrust-banner-sdk",
  ".onetrust-pc-dark-filter",
  "#CybotCookiebotDialog",
  "#CybotCookiebotDialogBodyUnderlay",
  ".qc-cmp2-container",
  "#qc-cmp2-container",
  "#qc-cmp2-ui",
  "#didomi-host",
  ".didomi-popup-backdrop",
  "#usercentrics-root",
  "#usercentrics-cmp-ui",
  "#truste-consent-track",
  "#consent_blackbar",
  ".truste_overlay",
  ".truste_box_overlay",
  ".osano-cm-window",
  ".osano-cm-dialog",
  "#cmplz-cookiebanner-container",
  ".cmplz-cookiebanner",
  "#iubenda-cs-banner",
  ".iubenda-cs-container",
  "#klaro",
  ".klaro .cookie-notice",
  ".klaro .cookie-modal",
  ".cky-consent-container",
  ".cky-overlay",
  "#BorlabsCookieBox",
  "#termly-code-snippet-support",
  "#cmpbox",
  "#cmpbox2",
];

/** Accept buttons of those managers, clicked so sites that gate content on consent show it. */
export const COOKIE_ACCEPT_BUTTONS = [
  "#onetrust-accept-btn-handler",
  "#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll",
  "#CybotCookiebotDialogBodyButtonAccept",
  '.qc-cmp2-summary-buttons button[mode="primary"]',
  "#didomi-notice-agree-button",
  '[data-testid="uc-accept-all-button"]',
  ".osano-cm-accept-all",
  ".cmplz-accept",
  ".iubenda-cs-accept-btn",
  ".klaro .cm-btn-accept-all",
  ".cky-btn-accept",
  ".cc-allow",
  ".cc-dismiss",
];

/** CSS that hides the given selectors. */
export function hideCss(selectors: string[]): string {
  return `${
    selectors.join(",\n")
  } { display: none !important; visibility: hidden !important; }`;
}

/**
 * Runs in the page: clicks the known managers' accept buttons, then hides what is shaped
 * like a consent dialog and nothing else: a fixed or sticky element (or a dialog) whose text
 * talks about cookies or consent AND that holds a control labelled accept, agree, allow,
 * reject, decline, OK, got it (and their German, French, Spanish, Italian, Dutch and
 * Portuguese forms). A sticky navigation with a "Cookie policy" link has no such control
 * and stays. Scrolling a banner locked is unlocked only when something was hidden.
 */
export function dismissCookieBanners(acceptSelectors: string[]): number {
  for (const sel of acceptSelectors) {
    const b = document.querySelector<HTMLElement>(sel);
    if (b) b.click();
  }
  const topic = /\b(cookies?|consent|gdpr|tracking|privacy settings)\b/i;
  const answer =
    /^\s*(accept|accept all|accept cookies|allow|allow all|agree|i agree|agree and close|reject|reject all|decline|deny|ok|okay|got it|i understand|understood|continue|close|dismiss|save|confirm|alle akzeptieren|akzeptieren|zustimmen|ablehnen|einverstanden|tout accepter|accepter|j'accepte|refuser|aceptar|aceptar todo|rechazar|accetta|accetta tutto|rifiuta|accepteren|alles accepteren|weigeren|aceitar|rejeitar)\s*[.!]?\s*$/i;
  const isControl = (el: Element) =>
    el.matches(
      'button, [role="button"], input[type="button"], input[type="submit"], a',
    ) &&
    answer.test(
      (el as HTMLElement).innerText || (el as HTMLInputElement).value || "",
    );
  let hidden = 0;
  const candidates = Array.from(
    document.querySelectorAll<HTMLElement>(
      'body *:not(script):not(style):not(nav):not([role="navigation"])',
    ),
  );
  for (const el of candidates) {
    if (el.closest("[data-imagehost-hidden]")) continue;
    const style = getComputedStyle(el);
    const overlay = style.position === "fixed" || style.position === "sticky" ||
      el.matches('[role="dialog"], [role="alertdialog"], [aria-modal="true"]');
    if (!overlay || style.display === "none") continue;
    const text = el.innerText || "";
    if (!topic.test(text) || text.length > 5000) continue;
    if (!Array.from(el.querySelectorAll("*")).some(isControl)) continue;
    el.setAttribute("data-imagehost-hidden", "");
    el.style.setProperty("display", "none", "important");
    hidden++;
  }
  if (hidden > 0) {
    for (const el of [document.documentElement, document.body]) {
      if (!el) continue;
      el.style.setProperty("overflow", "auto", "important");
    }
  }
  return hidden;
}

/**
 * Runs in the page: hides the iframes and images whose requests were blocked (the filter
 * engine's `blockedUrls`, and any on the blocked `hosts`), as they would show as empty
 * boxes, then collapses each wrapper left with nothing visible but such a frame and perhaps
 * an "Advertisement" label.
 */
export function collapseBlockedAds(
  hosts: string[],
  blockedUrls: string[],
): number {
  const blocked = new Set(blockedUrls);
  const isAd = (src: string) => {
    try {
      const u = new URL(src, location.href);
      const h = u.hostname;
      return blocked.has(u.href) ||
        hosts.some((a) => h === a || h.endsWith("." + a));
    } catch {
      return false;
    }
  };
  const label =
    /^\s*(advertisement|ad|ads|sponsored|anzeige|publicité|publicidad)\s*$/i;
  let collapsed = 0;
  for (
    const el of Array.from(
      document.querySelectorAll<HTMLElement>("iframe[src], img[src]"),
    )
  ) {
    if (!isAd(el.getAttribute("src")!)) continue;
    let box: HTMLElement = el;
    // Up while the parent holds nothing else that shows.
    while (box.parentElement && box.parentElement !== document.body) {
      const parent: HTMLElement = box.parentElement;
      const others = Array.from(parent.children).filter((c) =>
        c !== box && (c as HTMLElement).offsetParent !== null &&
        !label.test((c as HTMLElement).innerText || "")
      );
      const ownText = Array.from(parent.childNodes).some((n) =>
        n.nodeType === 3 && n.textContent!.trim() &&
        !label.test(n.textContent!)
      );
      if (others.length || ownText) break;
      box = parent;
    }
    box.style.setProperty("display", "none", "important");
    collapsed++;
  }
  return collapsed;
}
