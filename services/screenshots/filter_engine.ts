import { ENGINE_VERSION, FiltersEngine, Request } from "@ghostery/adblocker";
import { join } from "node:path";
import { Worker as NodeWorker } from "node:worker_threads";

/**
 * Ad blocking by a real filter-list engine: AdGuard's lists, as shipped in the npm package
 * `@adguard/dnr-rulesets` (version pinned in deno.json: the list text is part of the
 * package, so nothing is downloaded at run time), matched by Ghostery's adblocker engine
 * (network rules with their options, and cosmetic rules, generic and per site).
 */
const LIST_DIR = new URL(
  "../filters/",
  import.meta.resolve("@adguard/dnr-rulesets"),
);

/**
 * The lists we use, by purpose: AdGuard Base is EasyList plus AdGuard's English filter;
 * AdGuard Cookie Notices hides the consent banners of thousands of sites by name.
 */
export const FILTER_LISTS = {
  ads: "filter_2.txt",
  cookies: "filter_18.txt",
} as const;

/** A list we apply. */
export type FilterListName = keyof typeof FILTER_LISTS;

/**
 * Our own rules, in the lists' syntax, appended to the ads list: only what the list lacks
 * (a test keeps each of them adding something). The list blocks Google's ad paths on
 * Google's hosts only and leaves the IAB mobile banner size out, while ad tags served from
 * a site's own host or a CDN take the same paths; and AdGuard dropped EasyList's shortest
 * generic names (`.ad`, `#ads`), which we keep as exact names (never prefixes:
 * `[class^="ad-"]` also hid `ad-hoc-results` and `ad-free-notice`).
 */
export const OWN_AD_RULES = [
  "/gpt/pubads_impl",
  "/adsbygoogle.js",
  "/pagead/*",
  "/ads/banner",
  "/banners/ads/*",
  "_320x50.",
  "##.adsbygoogle",
  "##[data-google-query-id]",
  "##[data-ad-slot]",
  "##[data-ad-unit]",
  "##[data-ad]",
  '##[aria-label="Advertisement" i]',
  '##iframe[src*="doubleclick.net"]',
  '##iframe[src*="googlesyndication"]',
  '##iframe[id^="google_ads_iframe"]',
  '##iframe[src*="amazon-adsystem.com"]',
  '##[id^="amzn_assoc_ad"]',
  "##.amzn-native-container",
  '##a[href*="amazon-adsystem.com"]',
  "##.ad",
  "##.ads",
  "##.advert",
  "##.advertisement",
  "##.ad-banner",
  "##.ad-container",
  "###ad",
  "###ads",
];

/**
 * The list's lines that exempt local addresses (127.0.0.1, 192.168., localhost) from
 * generic hiding. They keep an ad blocker from touching a developer's own sites; a capture
 * that asked for noAds wants the ads gone on any host it is allowed to reach.
 */
const LOCAL_EXEMPTION = /^@@:\/\/(127\.0\.0\.1|192\.168\.|localhost[/:])/;

/** Changes when what we feed the engine changes, so an old cached engine is rebuilt. */
const OUR_REVISION = 1;

/**
 * The list text as we feed it to the engine: minus local exemptions, plus our own rules
 * (tests leave those out, to show what each adds).
 */
export function engineText(
  list: FilterListName,
  raw: string,
  own = true,
): string {
  const lines = raw.split("\n").filter((l) => !LOCAL_EXEMPTION.test(l));
  if (list === "ads" && own) lines.push(...OWN_AD_RULES);
  return lines.join("\n");
}

/** Reads a shipped list. */
export function readList(list: FilterListName): Promise<string> {
  return Deno.readTextFile(new URL(FILTER_LISTS[list], LIST_DIR));
}

/**
 * Parses a list into an engine and serializes it (~1.3 s and ~150 MB for AdGuard Base: it
 * runs in a worker, see filter_worker.ts). Scriptlets and extended selectors are left out:
 * we run no list's code in the page, and cosmetic rules are applied as plain CSS. Of the
 * cookie list only the hiding rules are kept: blocking a consent manager's script can
 * leave a site's content waiting for a consent that never comes.
 */
export async function buildEngineBytes(
  list: FilterListName,
): Promise<Uint8Array> {
  const engine = FiltersEngine.parse(engineText(list, await readList(list)), {
    loadCosmeticFilters: true,
    loadNetworkFilters: list !== "cookies",
    loadExtendedSelectors: false,
    loadCSPFilters: false,
    enableHtmlFiltering: false,
  });
  return engine.serialize();
}

/** The list's own version and checksum (its header), to name a cached engine. */
async function listStamp(list: FilterListName): Promise<string> {
  const file = await Deno.open(new URL(FILTER_LISTS[list], LIST_DIR));
  try {
    const head = new Uint8Array(1024);
    const n = await file.read(head) ?? 0;
    const text = new TextDecoder().decode(head.subarray(0, n));
    const version = text.match(/^! Version: (\S+)/m)?.[1] ?? "unknown";
    const sum = text.match(/^! Checksum: (\S+)/m)?.[1] ?? "";
    return `${version}-${sum.replace(/[^\w]/g, "")}`;
  } finally {
    file.close();
  }
}

/**
 * Builds the engine's bytes in a worker, so the 1.3 s parse never holds the event loop.
 * A node:worker_threads worker, not the global Worker: sharp's WebAssembly build (the
 * sandbox profile's image engine) replaces `globalThis.Worker` with Node's, under which a
 * web-worker script dies at once (`self is not defined`) and its promise never settled
 * (issue #49). Settles on the first of the answer, an error, or the worker's exit.
 */
export function buildInWorker(
  list: FilterListName,
  script: URL = new URL("./filter_worker.ts", import.meta.url),
  timeoutMs = BUILD_TIMEOUT_MS,
): Promise<Uint8Array> {
  const worker = new NodeWorker(script);
  let timer: ReturnType<typeof setTimeout> | undefined;
  return new Promise<Uint8Array>((resolve, reject) => {
    // A build that never ends is ended: the next capture that asks builds it again.
    timer = setTimeout(
      () => reject(new Error(`the filter build took over ${timeoutMs} ms`)),
      timeoutMs,
    );
    worker.once("message", (data: Uint8Array | { error: string }) => {
      if (data instanceof Uint8Array) resolve(data);
      else reject(new Error(data.error));
    });
    worker.once("error", (e: Error) => reject(e));
    worker.once(
      "exit",
      (code: number) =>
        reject(
          new Error(`the filter worker exited (${code}) without an engine`),
        ),
    );
    worker.postMessage(list);
  }).finally(() => {
    clearTimeout(timer);
    worker.terminate();
  });
}

/** How long one engine build may take (~1.3 s natively, ~4 s on a loaded box). */
const BUILD_TIMEOUT_MS = 60_000;

/**
 * Engines built ahead from the locked lists (`deno task filters`) and shipped with the
 * code, so no start builds one: a build takes ~1 s and ~290 MB of RSS that the process then
 * keeps (an idle sandbox instance with screenshots held 384 MB, 214 without; issue #49),
 * where reading one takes ~10 ms and ~11 MB for both. A test keeps them equal to a fresh
 * build, byte for byte.
 */
export const SHIPPED_ENGINES = new URL("./filter_engines/", import.meta.url);

/**
 * An engine file's name: the list's own version and checksum, the engine's format version
 * and our revision, so an upgrade of any of them is never read as the old one.
 */
export async function engineFileName(list: FilterListName): Promise<string> {
  return `adblock-${list}-${await listStamp(
    list,
  )}-e${ENGINE_VERSION}-r${OUR_REVISION}.bin`;
}

/**
 * One engine per list, made once per process: read from `cacheDir` when an engine of this
 * list version, engine version and revision is there, else from the engines shipped with
 * the code (`shipped`), else built in a worker and written to `cacheDir` (atomically) for
 * the next start.
 */
export class FilterEngines {
  #engines = new Map<FilterListName, Promise<FiltersEngine>>();

  constructor(
    private readonly cacheDir?: string,
    private readonly opts: {
      /** Where the prebuilt engines are; false: none (the build is tested so). */
      shipped?: URL | false;
      /** Builds an engine's bytes (in a worker). */
      build?: (list: FilterListName) => Promise<Uint8Array>;
    } = {},
  ) {}

  /** The engine of a list (read or built on first use). */
  get(list: FilterListName): Promise<FiltersEngine> {
    let engine = this.#engines.get(list);
    if (!engine) {
      engine = this.#load(list);
      // A failed build is tried again by the next capture, not remembered.
      engine.catch(() => this.#engines.delete(list));
      this.#engines.set(list, engine);
    }
    return engine;
  }

  async #load(list: FilterListName): Promise<FiltersEngine> {
    const name = await engineFileName(list);
    const file = this.cacheDir && join(this.cacheDir, name);
    const shipped = this.opts.shipped ?? SHIPPED_ENGINES;
    for (const at of [file, shipped && new URL(name, shipped)]) {
      if (!at) continue;
      try {
        return FiltersEngine.deserialize(await Deno.readFile(at));
      } catch { /* none, or unreadable: the next place, or a build */ }
    }
    const bytes = await (this.opts.build ?? buildInWorker)(list);
    const engine = FiltersEngine.deserialize(bytes);
    if (file) {
      const tmp = `${file}.${crypto.randomUUID()}.tmp`;
      try {
        await Deno.mkdir(this.cacheDir!, { recursive: true });
        await Deno.writeFile(tmp, bytes);
        await Deno.rename(tmp, file);
      } catch {
        await Deno.remove(tmp).catch(() => {});
      }
    }
    return engine;
  }
}

/** Puppeteer's resource types as the engine names them (a frame's document is a sub_frame). */
export function requestType(resourceType: string, mainFrame: boolean): string {
  return resourceType === "document" && !mainFrame ? "sub_frame" : resourceType;
}

/** True when the engine blocks this request (a block rule and no exception). */
export function blocks(
  engine: FiltersEngine,
  url: string,
  sourceUrl: string,
  type: string,
): boolean {
  const { match, exception } = engine.match(
    Request.fromRawDetails({ url, sourceUrl, type: type as "other" }),
  );
  return match && !exception;
}

/** What a page's DOM offers the engine's generic cosmetic rules. */
export interface DomTokens {
  classes: string[];
  ids: string[];
  hrefs: string[];
}

/**
 * The CSS that hides what the engine's cosmetic rules name on this page: its site's rules,
 * the generic rules its classes, ids and links call for, and the generic rules that cannot
 * be indexed (the base stylesheet). Empty when the list turns cosmetics off for the site.
 */
export function cosmeticCss(
  engine: FiltersEngine,
  url: string,
  dom: DomTokens,
): string {
  const { hostname, domain } = Request.fromRawDetails({ url });
  return engine.getCosmeticsFilters({
    url,
    hostname,
    domain: domain ?? hostname,
    ...dom,
    getBaseRules: true,
    getInjectionRules: false,
    getExtendedRules: false,
    getRulesFromDOM: true,
    getRulesFromHostname: true,
  }).styles;
}

/**
 * Runs in the page: the class names, ids and link targets the page holds, at most `cap`
 * of each, for {@link cosmeticCss}.
 */
export function collectDomTokens(cap: number): DomTokens {
  const classes = new Set<string>();
  const ids = new Set<string>();
  const hrefs = new Set<string>();
  for (const el of Array.from(document.querySelectorAll("[class],[id]"))) {
    if (el.id && ids.size < cap) ids.add(el.id);
    for (const c of Array.from(el.classList)) {
      if (classes.size < cap) classes.add(c);
    }
  }
  for (const a of Array.from(document.querySelectorAll("a[href]"))) {
    if (hrefs.size >= cap) break;
    hrefs.add((a as HTMLAnchorElement).href);
  }
  return { classes: [...classes], ids: [...ids], hrefs: [...hrefs] };
}

/** The engines of screenshotters not given their own (tests): built once per process. */
export const processFilterEngines: FilterEngines = new FilterEngines();
