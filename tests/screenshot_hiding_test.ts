import assert from "node:assert/strict";
import sharp from "sharp";
import { json, test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { dataUriBytes } from "./pixels.ts";
import {
  type BlockList,
  exemptSite,
  trackerLists,
} from "../services/screenshots/block_lists.ts";

/**
 * Precise hiding: every consent banner of the managers people meet (markup shaped as those
 * managers ship it) and every ad goes with noCookie / noAds, and every decoy stays: a
 * sticky navigation with a "Cookie policy" link, blocks named `ad-hoc-results` and
 * `ad-free-notice`, a chat widget with an OK button. Banners and ads are red (#ff0000),
 * decoys blue or green, so the pixels say what happened.
 */
const RED = "background:#f00;color:#f00";
const bottomBar = `position:fixed;left:0;right:0;bottom:0;height:120px;${RED}`;
const modal =
  `position:fixed;left:200px;top:150px;width:600px;height:300px;${RED}`;

/** Consent managers as they ship: their roots, wording and buttons. */
const CMPS: Record<string, string> = {
  onetrust:
    `<div id="onetrust-consent-sdk"><div class="onetrust-pc-dark-filter" style="position:fixed;inset:0;background:rgba(255,0,0,1)"></div>
     <div id="onetrust-banner-sdk" style="${bottomBar}"><p>We use cookies.</p><button id="onetrust-accept-btn-handler">Accept All Cookies</button></div></div>`,
  cookiebot:
    `<div id="CybotCookiebotDialog" role="dialog" style="${modal}"><h2>This website uses cookies</h2>
     <button id="CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll">Allow all</button></div>`,
  didomi:
    `<div id="didomi-host"><div class="didomi-popup-backdrop" style="position:fixed;inset:0;${RED}"></div>
     <div style="${modal}">We and our partners use cookies<button id="didomi-notice-agree-button">Agree and close</button></div></div>`,
  quantcast:
    `<div id="qc-cmp2-container"><div class="qc-cmp2-container" style="${bottomBar}">We value your privacy
     <div class="qc-cmp2-summary-buttons"><button mode="primary">AGREE</button></div></div></div>`,
  usercentrics:
    `<div id="usercentrics-root" style="${bottomBar}">Privacy settings <button data-testid="uc-accept-all-button">Accept All</button></div>`,
  trustarc:
    `<div id="truste-consent-track" style="${bottomBar}">This site uses cookies <button id="truste-consent-button">Agree and Proceed</button></div>`,
  osano:
    `<div class="osano-cm-window"><div class="osano-cm-dialog" style="${bottomBar}">This website utilizes cookies
     <button class="osano-cm-accept-all">Accept</button></div></div>`,
  complianz:
    `<div id="cmplz-cookiebanner-container"><div class="cmplz-cookiebanner" style="${bottomBar}">Manage Cookie Consent
     <button class="cmplz-accept">Accept</button></div></div>`,
  iubenda:
    `<div id="iubenda-cs-banner" style="${bottomBar}">We use cookies for technical purposes <button class="iubenda-cs-accept-btn">Accept</button></div>`,
  klaro:
    `<div class="klaro"><div class="cookie-notice" style="${bottomBar}">We use cookies. <button class="cm-btn cm-btn-accept-all">That's ok</button></div></div>`,
  generic:
    `<div class="gdpr-bar" style="${bottomBar}">This site uses cookies to improve your experience. <a href="#" role="button">Got it</a></div>`,
  german:
    `<div class="hinweis" role="dialog" aria-modal="true" style="${modal}">Wir verwenden Cookies. <button>Alle akzeptieren</button></div>`,
};

/** What must survive every kind of hiding. */
const DECOYS =
  `<nav style="position:sticky;top:0;height:60px;background:#00f;color:#fff">Home · Blog ·
     <a href="/cookies" style="color:#fff">Cookie policy</a> · <a href="/privacy" style="color:#fff">Privacy</a></nav>
   <div id="ad-hoc-results" style="height:80px;background:#0f0">Ad-hoc query results</div>
   <div class="ad-free-notice" style="height:80px;background:#0f0">This page is ad-free for members</div>
   <div class="chat" style="position:fixed;right:0;top:300px;width:150px;height:100px;background:#00f;color:#fff">Chat with us <button>OK</button></div>`;

const page = (inner: string) =>
  `<!doctype html><html><head><style>html,body{margin:0;background:#fff}</style></head><body>${DECOYS}<p>Article</p>${inner}</body></html>`;

/** The ad page: names the fixture's own port, so it is built per request. */
const ads = (port: number) =>
  page(
    `<div class="ad-slot" style="width:300px;height:250px;${RED}"></div>
     <div class="wrapper" style="width:728px;padding:10px;border:4px solid #f00"><span>Advertisement</span>
       <iframe src="http://localhost:${port}/pagead/ad.html" style="width:728px;height:90px;border:0;${RED}"></iframe></div>
     <div class="promo"><img src="/banners/summer_728x90.png" style="width:728px;height:90px;${RED}"></div>
     <script src="/tag/gpt.js"></script>
     <div class="amzn-native-container" style="width:300px;height:200px;${RED}"></div>`,
  );
const fixture = startFixture({
  ...Object.fromEntries(
    Object.entries(CMPS).map(([name, html]) => [`/cmp/${name}`, page(html)]),
  ),
  "/ads": (req) =>
    new Response(ads(Number(new URL(req.url).port)), {
      headers: { "content-type": "text/html" },
    }),
  "/pagead/ad.html": `<body style="background:#f00;margin:0">ad</body>`,
  "/banners/summer_728x90.png": "not reached",
  "/tag/gpt.js": "document.title = 'gpt ran'",
  "/listed": (req) => {
    const q = new URL(req.url).searchParams;
    return new Response(
      page(
        `<img src="/x/${q.get("a")}"><script src="/x/${q.get("t")}"></script>`,
      ),
      { headers: { "content-type": "text/html" } },
    );
  },
});
const ALLOW = `127.0.0.1:${fixture.port},localhost:${fixture.port}`;
const shooter = testScreenshotter(ALLOW, {
  queueMax: 32,
  adHosts: ["localhost"],
});
let env: TestEnv;
let key: string;

test("setup", async () => {
  env = await testEnv({
    screenshotter: shooter,
    env: { FETCH_ALLOW_PRIVATE: ALLOW },
  });
  key = (await userWithKey(env)).key;
});

/** Pixels of a capture counted by colour: red (banners, ads), blue and green (decoys). */
async function colours(body: Record<string, unknown>) {
  const r = await json(
    await env.app.request("/api/1/screenshot", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        share: false,
        viewport: { width: 1000, height: 800 },
        ...body,
      }),
    }),
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const bytes = dataUriBytes(r.body.data.display_url);
  const { data } = await sharp(bytes).removeAlpha().raw().toBuffer({
    resolveWithObject: true,
  });
  const n = { red: 0, blue: 0, green: 0 };
  for (let i = 0; i < data.length; i += 3) {
    const [R, G, B] = [data[i], data[i + 1], data[i + 2]];
    if (R > 230 && G < 30 && B < 30) n.red++;
    else if (R < 30 && G < 30 && B > 230) n.blue++;
    else if (R < 30 && G > 230 && B < 30) n.green++;
  }
  return { ...n, title: r.body.data.metadata.title as string };
}

for (const name of Object.keys(CMPS)) {
  test(`noCookie hides the ${name} consent banner and every decoy stays`, async () => {
    const plain = await colours({ url: `${fixture.origin}/cmp/${name}` });
    assert.ok(plain.red > 5000, `${name}: the banner shows (${plain.red})`);
    const clean = await colours({
      url: `${fixture.origin}/cmp/${name}`,
      noCookie: true,
    });
    assert.equal(clean.red, 0, `${name}: banner pixels left`);
    // The sticky nav (60 px × 1000) and the chat widget are blue; the two green blocks stay.
    assert.ok(clean.blue > 60_000, `${name}: decoys lost (${clean.blue} blue)`);
    assert.ok(clean.green > 150_000, `${name}: green blocks lost`);
  });
}

test("noAds removes ad slots, blocked ad frames with their wrapper and label, ad-path images and scripts; ad-hoc-results, ad-free-notice and the nav stay", async () => {
  const before = fixture.requests.length;
  const plain = await colours({ url: `${fixture.origin}/ads` });
  assert.ok(plain.red > 50_000, `ads show without noAds (${plain.red})`);
  assert.equal(plain.title, "gpt ran");
  const mark = fixture.requests.length;
  const clean = await colours({ url: `${fixture.origin}/ads`, noAds: true });
  assert.equal(clean.red, 0, "ad pixels left (a wrapper border counts)");
  assert.ok(clean.green > 150_000, "ad-hoc-results and ad-free-notice stay");
  assert.ok(clean.blue > 60_000, "the nav and the chat stay");
  const asked = fixture.requests.slice(mark).map((q) => q.path);
  assert.ok(!asked.includes("/tag/gpt.js"), asked.join());
  assert.ok(!asked.includes("/banners/summer_728x90.png"), asked.join());
  assert.ok(!asked.includes("/pagead/ad.html"), asked.join());
  assert.notEqual(clean.title, "gpt ran");
  assert.ok(mark > before);
});

test("noAds and blockTrackers apply Ghostery's tracker database (shipped in npm, read offline): a generic ad path and a generic analytics path from the list are never requested, and only with their flag", async () => {
  const lists = await trackerLists();
  // A rule of the list that applies on any host ("*://*/*<path>*"), made into a path.
  const generic = (l: BlockList) =>
    l.urls.find((p) => /^\*:\/\/\*\/\*[a-z0-9/_.-]+\*$/i.test(p))!
      .slice("*://*/*".length, -1);
  const adPath = generic(lists.ads);
  const trackerPath = generic({
    hosts: [],
    urls: lists.trackers.urls.filter((u) => !lists.ads.urls.includes(u)),
  });
  assert.ok(lists.ads.hosts.includes("doubleclick.net"));
  assert.ok(
    lists.ads.hosts.length > 1000 && lists.trackers.hosts.length > 1000,
  );
  const page = `${fixture.origin}/listed?a=${encodeURIComponent(adPath)}&t=${
    encodeURIComponent(trackerPath)
  }`;
  const seen = async (body: Record<string, unknown>) => {
    const mark = fixture.requests.length;
    await colours({ url: page, ...body });
    return fixture.requests.slice(mark).map((q) => q.path);
  };
  const plain = await seen({});
  assert.ok(plain.includes(`/x/${adPath}`), plain.join());
  assert.ok(plain.includes(`/x/${trackerPath}`), plain.join());
  const noAds = await seen({ noAds: true });
  assert.ok(!noAds.includes(`/x/${adPath}`), `${adPath}: ${noAds.join()}`);
  assert.ok(
    noAds.includes(`/x/${trackerPath}`),
    "an analytics-only rule is not an ad",
  );
  const trackers = await seen({ blockTrackers: true });
  assert.ok(!trackers.includes(`/x/${trackerPath}`), trackers.join());
  assert.deepEqual(
    exemptSite(["ads.example", "b.example"], new URL("https://x.ads.example/")),
    ["b.example"],
  );
});

test("teardown", async () => {
  await env.close();
  await shooter.close();
  await fixture.close();
});
