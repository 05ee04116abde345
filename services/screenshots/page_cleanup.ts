/**
 * What noAds and noCookie do inside the page: CSS that hides known containers, hosts whose
 * requests are dropped, and a script that dismisses consent dialogs and removes fixed bars.
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
 * per request (request interception did, and measurably slowed every capture).
 */
export function adBlockPatterns(hosts: readonly string[] = AD_HOSTS) {
  return hosts.flatMap((h): BlockPattern[] => [
    { urlPattern: `*://${h}:*/*`, block: true },
    { urlPattern: `*://*.${h}:*/*`, block: true },
  ]);
}

/** Selectors of common ad containers. */
export const AD_SELECTORS = [
  "ins.adsbygoogle",
  ".adsbygoogle",
  '[id^="google_ads_"]',
  '[id^="div-gpt-ad"]',
  "[data-google-query-id]",
  "[data-ad-slot]",
  "[data-ad-unit]",
  "[data-ad]",
  '[aria-label="Advertisement" i]',
  'iframe[src*="doubleclick.net"]',
  'iframe[src*="googlesyndication"]',
  'iframe[id^="google_ads_iframe"]',
  ".ad",
  ".ads",
  ".advert",
  ".advertisement",
  ".ad-banner",
  ".ad-container",
  ".ad-slot",
  ".ad-wrapper",
  ".banner-ad",
  ".sponsored-ad",
  "#ad",
  "#ads",
  '[id^="ad-"]',
  '[class^="ad-"]',
  '[class*=" ad-"]',
  ".taboola",
  '[id^="taboola-"]',
  ".OUTBRAIN",
];

/** Selectors of the consent managers we know and of generic cookie bars. */
export const COOKIE_SELECTORS = [
  "#onetrust-consent-sdk",
  "#onetrust-banner-sdk",
  ".onetrust-pc-dark-filter",
  "#CybotCookiebotDialog",
  "#CybotCookiebotDialogBodyUnderlay",
  ".qc-cmp2-container",
  "#qc-cmp2-ui",
  "#didomi-host",
  ".didomi-popup-backdrop",
  "#usercentrics-root",
  "#usercentrics-cmp-ui",
  "#truste-consent-track",
  "#cmpbox",
  ".cc-window",
  ".cc-banner",
  "#cookie-law-info-bar",
  "#cookie-notice",
  "#cookie-banner",
  ".cookie-banner",
  "#cookieConsent",
  ".cookie-consent",
  '[id*="cookie-consent" i]',
  '[class*="cookie-consent" i]',
  '[id*="cookiebanner" i]',
  '[class*="cookiebanner" i]',
  '[aria-label*="cookie" i][role="dialog"]',
  '[aria-label*="consent" i][role="dialog"]',
];

/** Accept buttons, clicked so sites that gate content on consent render it. */
export const COOKIE_ACCEPT_BUTTONS = [
  "#onetrust-accept-btn-handler",
  "#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll",
  "#CybotCookiebotDialogBodyButtonAccept",
  '.qc-cmp2-summary-buttons button[mode="primary"]',
  "#didomi-notice-agree-button",
  '[data-testid="uc-accept-all-button"]',
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
 * Runs in the page: clicks known accept buttons, then removes fixed or sticky elements whose
 * text talks about cookies or consent, and unlocks scrolling that banners lock.
 */
export function dismissCookieBanners(acceptSelectors: string[]): number {
  let removed = 0;
  for (const sel of acceptSelectors) {
    const b = document.querySelector<HTMLElement>(sel);
    if (b) b.click();
  }
  const words =
    /\b(cookies?|consent|gdpr|privacy settings|we value your privacy)\b/i;
  for (
    const el of Array.from(document.querySelectorAll<HTMLElement>("body *"))
  ) {
    const style = getComputedStyle(el);
    if (style.position !== "fixed" && style.position !== "sticky") continue;
    if (!words.test(el.innerText || "")) continue;
    el.style.setProperty("display", "none", "important");
    removed++;
  }
  for (const el of [document.documentElement, document.body]) {
    if (!el) continue;
    el.style.setProperty("overflow", "auto", "important");
  }
  return removed;
}
