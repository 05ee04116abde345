/** Ghostery's tracker database (npm @ghostery/trackerdb, version pinned in deno.json). */
const TRACKERDB_TXT = new URL(
  "../trackerdb.txt",
  import.meta.resolve("@ghostery/trackerdb"),
);

/** Categories of the database `noAds` blocks, and those `blockTrackers` blocks. */
export const AD_CATEGORIES = ["advertising", "pornvertising"];
export const TRACKER_CATEGORIES = [
  "advertising",
  "pornvertising",
  "site_analytics",
];

/** The rules of some categories, as the guard (hosts) and Chromium (paths) apply them. */
export interface BlockList {
  /** Blocked with all their subdomains, at the capture's guard. */
  hosts: string[];
  /**
   * Host-and-path rules for Chromium's blocked-URL list, in its plain wildcard form
   * (`urls`): thousands of URLPatterns cost ~200 ms to set up per capture, these ~65 ms.
   */
  urls: string[];
}

/** A path of a filter as a wildcard pattern: ABP's `^` separator becomes `*`. */
function patternText(s: string): string {
  return s.replace(/\^/g, "*");
}

/**
 * Turns the database's filters (ABP syntax) of the given categories into hosts and
 * patterns. `||host^` (with or without `$3p`) is a host; `||host/path` a pattern on the host
 * and its subdomains; `/path` a pattern on any host. Filters with other options (a domain
 * list, a resource type) cannot be honoured this way and are left out, as are regular
 * expressions; `$3p` is applied to every party (the capture's own site is exempted
 * separately, see {@link exemptSite}).
 */
export function parseTrackerDb(text: string, categories: string[]): BlockList {
  const wanted = new Set(categories);
  const hosts = new Set<string>();
  const patterns = new Set<string>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length - 1; i++) {
    const m = lines[i].match(
      /^! trackerdb_id:\S+ trackerdb_category:(\S+) trackerdb_filter\s*$/,
    );
    if (!m || !wanted.has(m[1])) continue;
    const [rule, options = ""] = lines[i + 1].trim().split("$");
    if (options && !/^(3p|third-party)$/.test(options)) continue;
    // Regular expressions (/…/ with escapes and alternations) are left out.
    if (/[\\|()[\]]/.test(rule.replace(/^\|\|/, ""))) continue;
    const host = rule.match(/^\|\|([a-z0-9.-]+)\^?$/i);
    if (host) {
      hosts.add(host[1].toLowerCase());
      continue;
    }
    const hostPath = rule.match(/^\|\|([a-z0-9.-]+)(\/\S*)$/i);
    if (hostPath) {
      const [, h, path] = hostPath;
      const p = patternText(path) + "*";
      patterns.add(`*://${h}${p}`);
      patterns.add(`*://*.${h}${p}`);
      continue;
    }
    // A bare path on any host, only when specific enough (e.g. "/gtag/js").
    if (/^\/[^/*]\S{3,}$/.test(rule)) {
      patterns.add(`*://*/*${patternText(rule.slice(1))}*`);
    }
  }
  return {
    hosts: [...hosts],
    urls: [...patterns],
  };
}

let loaded: Promise<{ ads: BlockList; trackers: BlockList }> | undefined;

/** The database's ad and tracker lists, read once (offline: shipped in the npm package). */
export function trackerLists(): Promise<
  { ads: BlockList; trackers: BlockList }
> {
  return loaded ??= Deno.readTextFile(TRACKERDB_TXT).then((text) => ({
    ads: parseTrackerDb(text, AD_CATEGORIES),
    trackers: parseTrackerDb(text, TRACKER_CATEGORIES),
  }));
}

/**
 * Hosts without the capture's own site: `$3p` rules must not block the very page asked
 * for (a screenshot of an ad network's own site stays possible).
 */
export function exemptSite(hosts: string[], target: URL): string[] {
  const own = target.hostname.toLowerCase();
  return hosts.filter((h) => own !== h && !own.endsWith("." + h));
}
