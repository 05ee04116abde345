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
  // Sourcepoint: a fixed container around a cross-origin iframe, whose text we cannot read.
  '[id^="sp_message_container_"]',
  'iframe[id^="sp_message_iframe_"]',
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

/** Where keepShadowRoots keeps the page's shadow roots, closed ones included. */
export const SHADOW_ROOTS_KEY = "__imagehostShadowRoots";

/**
 * Runs in the page before its own scripts (noCookie): keeps every shadow root the page
 * attaches, closed ones included, where dismissCookieBanners finds them (issue #51: a
 * consent bar in a closed shadow root of an unknown host stayed). The page sees its
 * roots as it made them.
 */
export function keepShadowRoots(): void {
  const roots: ShadowRoot[] = [];
  Object.defineProperty(window, "__imagehostShadowRoots", { value: roots });
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init: ShadowRootInit) {
    const root = attach.call(this, init);
    roots.push(root);
    return root;
  };
}

/**
 * Runs in the page: clicks the known managers' accept buttons, then hides what is shaped
 * like a consent dialog and nothing else, in the document and in every shadow root (open,
 * or closed ones keepShadowRoots kept). A word or two is not enough; it takes:
 * - an overlay: a fixed or sticky element, or a dialog;
 * - consent prose: its own text (outside its links and buttons) says the site uses or
 *   stores cookies, or asks for consent or about privacy (not merely the word "cookie":
 *   a recipe, a cookie jar, "no tracking cookies"), and the sentences about it are most
 *   of that text;
 * - consent controls: two or more buttons or links labelled as consent answers (accept,
 *   agree, "I'm happy", "Accept and continue", reject, settings, … in the usual European
 *   languages, matched as phrases, not whole labels) with at least one accept or reject;
 *   or, on a one-line notice (prose under 200 characters), one accept control;
 * - or, for a manager whose dialog is a cross-origin iframe (Sourcepoint, TCF CMPs): an
 *   overlay holding such an iframe, named or addressed as consent.
 * So a sticky header with a "Cookies" link and a promo's Close button, a footer with
 * "Privacy & cookie settings" and an unrelated OK, "New cookie recipes every week [OK]"
 * or a "Cookie jar [Agree & buy]" bar stay. When a consent dialog was found (hidden here,
 * or already by the lists' rules), the scroll lock it put on the page is lifted, however
 * it was set (inline, or a class rule with !important; overflow or a pinned body).
 */
export function dismissCookieBanners(acceptSelectors: string[]): number {
  for (const sel of acceptSelectors) {
    const b = document.querySelector<HTMLElement>(sel);
    if (b) b.click();
  }
  const topic =
    /\b(cookies?|consent|gdpr|tracking|privacy settings|your privacy|personal data|data protection|datenschutz|einwilligung|confidentialité|consentement|vie privée|privacidad|consentimiento|riservatezza|consenso|toestemming|privacidade)\b/i;
  const accept =
    /(^|[\s,.!¡¿(])(accept|agree|allow|ok|okay|got it|i understand|understood|i'?m happy|i am happy|yes|continue|akzeptieren|zustimmen|einverstanden|annehmen|accepter|j'accepte|d'accord|aceptar|acepto|accetta|accetto|accepteren|akkoord|aceitar|concordo)(?=$|[\s,.!?)])/i;
  const reject =
    /(^|[\s,.!(])(reject|decline|deny|refuse|necessary only|only necessary|essential only|ablehnen|refuser|rechazar|rifiuta|weigeren|rejeitar)(?=$|[\s,.!?)])/i;
  const manage =
    /(^|[\s,.!(&])(settings|preferences|customi[sz]e|manage|options|more info|learn more|cookie policy|privacy policy|einstellungen|paramètres|personnaliser|configurar|impostazioni|instellingen|personalizar)(?=$|[\s,.!?)])/i;
  const controlSelector =
    'button, [role="button"], input[type="button"], input[type="submit"], a';
  const label = (el: Element) =>
    ((el as HTMLElement).innerText || (el as HTMLInputElement).value || "")
      .trim();
  const cmpFrame = /consent|cmp|gdpr|tcf|sp_message|privacy-?mgmt|cookie/i;
  // What a consent notice says: the site uses or stores cookies (a verb before them, or
  // a purpose after), or it asks for consent or about privacy.
  const vocabulary = new RegExp(
    [
      String
        .raw`\b(use|uses|using|used|store|stores|utili[sz]es?|set|sets|place|places|verwenden|nutzen|utilisons|utilise|usamos|utilizamos|usiamo|utilizziamo|gebruiken|gebruikt)\b[^.!?\n]{0,60}\bcookies?\b`,
      String
        .raw`\bcookies?\b[^.!?\n]{0,60}\b(to|for)\b[^.!?\n]{0,40}\b(improve|personali[sz]e|analy[sz]e|measure|ads|advertising|experience|deliver|provide|enhance|performance|technical|statistics)`,
      String
        .raw`\b(consent|gdpr|your privacy|privacy (settings|preferences|choices|cent(er|re))|personal data|data protection|cookie (settings|preferences|consent|choices|notice|banner))\b`,
      String
        .raw`\b(datenschutz|einwilligung|confidentialité|consentement|vie privée|privacidad|consentimiento|riservatezza|consenso|toestemming|privacidade)`,
    ].join("|"),
    "i",
  );
  // "no tracking cookies", "we never use cookies": about cookies, asking nothing.
  const negated =
    /\b(no|never|not|don'?t|without|zero)\b[^.!?\n]{0,30}\bcookies?\b/i;

  /** Text of an element, or of a shadow root's top elements. */
  const textOf = (scope: HTMLElement | ShadowRoot) =>
    scope instanceof ShadowRoot
      ? Array.from(scope.children).map((c) =>
        (c as HTMLElement).innerText || ""
      )
        .join("\n")
      : scope.innerText || "";
  /** The element's own prose: its text without that of its controls. */
  const proseOf = (el: HTMLElement | ShadowRoot) => {
    let text = textOf(el);
    for (const c of Array.from(el.querySelectorAll(controlSelector))) {
      const l = label(c);
      if (l) text = text.replace(l, " ");
    }
    return text.trim();
  };
  const isConsentDialog = (el: HTMLElement | ShadowRoot) => {
    const frames = Array.from(el.querySelectorAll("iframe")).filter((f) =>
      cmpFrame.test(
        [f.id, f.title, f.name, f.getAttribute("src") ?? ""].join(" "),
      )
    );
    if (frames.length) return true;
    const raw = proseOf(el);
    const prose = raw.replace(/\s+/g, " ");
    if (!topic.test(prose) || prose.length > 3000) return false;
    if (!vocabulary.test(prose)) return false;
    if (
      negated.test(prose) && !/\b(consent|gdpr|your privacy)\b/i.test(prose)
    ) {
      return false;
    }
    // Most of the prose is about consent: the sentences (or lines) that mention it.
    const sentences = raw.split(/(?<=[.!?])\s+|\n+/).map((x) => x.trim());
    const about = sentences.filter((x) => topic.test(x)).join(" ").length;
    if (about < prose.length / 2) return false;
    const labels = Array.from(el.querySelectorAll(controlSelector)).map(label)
      .filter((l) => l && l.length <= 40);
    const answers = labels.filter((l) => accept.test(l) || reject.test(l));
    const consent = labels.filter((l) =>
      accept.test(l) || reject.test(l) || manage.test(l)
    );
    return (consent.length >= 2 && answers.length >= 1) ||
      (prose.length < 200 && labels.some((l) => accept.test(l)));
  };

  // Every root: the document, open shadow roots, and those keepShadowRoots kept.
  const kept = (window as unknown as Record<string, ShadowRoot[] | undefined>)[
    "__imagehostShadowRoots"
  ] ?? [];
  const roots: (Document | ShadowRoot)[] = [document, ...kept];
  for (let i = 0; i < roots.length; i++) {
    for (const el of Array.from(roots[i].querySelectorAll("*"))) {
      const open = el.shadowRoot;
      if (open && !roots.includes(open)) roots.push(open);
    }
  }
  let hidden = 0, found = 0;
  for (const root of roots) {
    const candidates = Array.from(
      root.querySelectorAll<HTMLElement>(
        root === document
          ? 'body *:not(script):not(style):not(nav):not([role="navigation"])'
          : '*:not(script):not(style):not(nav):not([role="navigation"])',
      ),
    );
    for (const el of candidates) {
      if (el.closest("[data-imagehost-hidden]")) continue;
      const style = getComputedStyle(el);
      const overlay = style.position === "fixed" ||
        style.position === "sticky" ||
        el.matches(
          '[role="dialog"], [role="alertdialog"], [aria-modal="true"]',
        );
      if (!overlay) continue;
      // A shadow host shows its root's content: judge that.
      const own = kept.find((r) => r.host === el) ?? el.shadowRoot;
      if (style.display === "none") {
        // Hidden by the lists' rules already: its lock still wants lifting.
        if (isConsentDialog(own ?? el)) found++;
        continue;
      }
      if (!isConsentDialog(own ?? el)) continue;
      el.setAttribute("data-imagehost-hidden", "");
      el.style.setProperty("display", "none", "important");
      hidden++;
    }
  }
  if (
    hidden > 0 || found > 0 ||
    document.querySelector('[id^="sp_message_container_"]')
  ) {
    unlockScroll();
  }
  return hidden;

  /**
   * Lifts a consent wall's scroll lock on html and body, however it was set: the viewport
   * scrolls again and body is no scroller of its own (its overflow shows, so a body cut to
   * the viewport's height no longer hides the rest), and a pinned body is let go, so a
   * full-page capture has the whole page (issue #51: a class rule `overflow:hidden
   * !important; height:100%` left it at the viewport's 800 px; `overflow:auto` on body
   * then made body the scroller and kept it there).
   */
  function unlockScroll() {
    const html = document.documentElement, body = document.body;
    if (!body) return;
    const locked = [html, body].some((el) => {
      const s = getComputedStyle(el);
      return /hidden|clip/.test(s.overflow + s.overflowY) ||
        s.position === "fixed";
    });
    if (!locked) return;
    // The viewport scrolls (html's overflow); body itself must not become a scroller.
    html.style.setProperty("overflow", "auto", "important");
    body.style.setProperty("overflow", "visible", "important");
    for (const el of [html, body]) {
      if (getComputedStyle(el).position === "fixed") {
        el.style.setProperty("position", "static", "important");
        el.style.setProperty("top", "auto", "important");
      }
    }
  }
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
