import { z } from "zod";
import { parseAllowList } from "./allow_list.ts";

/** This machine's cores, the default of what scales with them. */
const CORES = Math.max(1, navigator.hardwareConcurrency || 1);

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const httpUrl = z.string().url().refine(
  (u) => /^https?:$/.test(new URL(u).protocol),
  "must be an http(s) URL",
).transform((u) => u.replace(/\/+$/, ""));

/** A comma-separated list of integers from 1 to `max`, as numbers. */
const sizeList = (def: string, max: number) =>
  z.string().default(def).transform((v) =>
    v.split(",").map((x) => x.trim()).filter(Boolean).map(Number)
  ).refine(
    (list) =>
      list.length > 0 &&
      list.every((n) => Number.isInteger(n) && n >= 1 && n <= max),
    `must be comma-separated integers from 1 to ${max}`,
  );

const allowList = z.string().default("").refine((v) => {
  try {
    parseAllowList(v);
    return true;
  } catch {
    return false;
  }
}, "must be comma-separated CIDRs or host:port pairs");

/**
 * The one schema over the environment (DESIGN.md "Configuration"). Only main.ts reads the
 * environment; tests build a Config through {@link loadConfig} with their own values.
 */
export const ConfigSchema = z.object({
  PORT: int(8080, 0, 65535),
  HOST: z.string().default("0.0.0.0"),
  BASE_URL: httpUrl.optional(),
  IMAGE_HOST_URL: httpUrl.optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z.string().regex(
    /^postgres(ql)?:\/\//,
    "must start with postgres://",
  ).optional(),
  /** Opening a PostgreSQL connection, or waiting for a free one (then 250 / HTTP 503). */
  DB_CONNECT_TIMEOUT_MS: int(3000, 100, 120_000),
  /** One SQL statement, enforced by the server and by the client. */
  DB_STATEMENT_TIMEOUT_MS: int(5000, 100, 600_000),
  DB_POOL_MAX: int(10, 1, 1000),
  STORE: z.enum(["fs", "s3"]).default("fs"),
  S3_ENDPOINT: httpUrl.optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_PUBLIC_URL: httpUrl.optional(),
  /** Until an S3 request has its answer's headers (then 250 / HTTP 503). */
  S3_TIMEOUT_MS: int(10_000, 100, 600_000),
  MAX_FILE_BYTES: int(32 * 1024 * 1024, 1),
  MAX_FILES: int(15, 1, 1000),
  /**
   * Plain (non-file) fields in one upload body, whatever its type: multipart fields,
   * urlencoded fields, JSON members. Past it: 160 at once, the rest unread.
   */
  BODY_MAX_FIELDS: int(100, 1, 10_000),
  /**
   * Any body a route reads whole (all but an upload's, which streams with its own limits):
   * a screenshot's JSON, the site's forms, the key check of a keyless JSON request. Past
   * it, 413 before more is read.
   */
  BODY_MAX_KB: int(1024, 16, 1_048_576),
  /**
   * A urlencoded or JSON upload whose `key` comes after its image (Chevereto's clients)
   * has its bytes held until the key comes: at most this many MB per request, per client
   * address and per process, and while the client sends at least 64 KB/s after 2 s;
   * past any of these it is answered 401 at once, the rest unread. Bodies keyed in a
   * header or ?key= never hold.
   */
  UNAUTH_HOLD_MB: int(32, 1, 65_536),
  UNAUTH_HOLD_ADDRESS_MB: int(32, 1, 65_536),
  UNAUTH_HOLD_TOTAL_MB: int(128, 1, 1_048_576),
  /** Longest JSON number (or true/false/null) in a body, in characters (else 160). */
  BODY_MAX_TOKEN: int(256, 8, 65_536),
  /** Decoded pixels an upload may have, all frames of an animation together (else 142). */
  MAX_IMAGE_PIXELS: int(100_000_000, 1),
  /**
   * Scratch disk one BMP may need to be read (its pixels uncompressed, 3 or 4 bytes
   * each), else 142; and all BMPs of a process at once, else 250 with Retry-After.
   */
  BMP_SCRATCH_MB: int(256, 1, 65_536),
  BMP_SCRATCH_TOTAL_MB: int(1024, 1, 1_048_576),
  /**
   * Where an upload's scratch files go (the received body, URL imports, variants before the
   * store takes them): `disk` (DATA_DIR/tmp), `memory` (this process's memory, within
   * MEMORY_BODY_MB; nothing is written to disk), or `auto` (the default): memory where
   * DATA_DIR may not be written (Deno Deploy), else disk.
   */
  SCRATCH: z.enum(["auto", "disk", "memory"]).default("auto"),
  /**
   * With memory scratch: what all uploads of this process may hold at once; past it an
   * upload is refused with 250 / HTTP 503 and Retry-After.
   */
  MEMORY_BODY_MB: int(256, 16, 1_048_576),
  /**
   * With memory scratch: what one request's images may hold together (each file's limit
   * is the smaller of this and MAX_FILE_BYTES); past it, 130 / HTTP 413.
   */
  MEMORY_REQUEST_MB: int(64, 1, 1_048_576),
  /** Per file: how long decoding and making its variants may take (else 143). */
  IMAGE_TIMEOUT_MS: int(20_000, 1_000, 600_000),
  /** Images processed at once; default: the cores. */
  IMAGE_WORKERS: int(CORES, 1, 256),
  /**
   * libvips threads per image; 0 (the default): the cores shared among IMAGE_WORKERS, at
   * least one each. With every core already busy with an image of its own, more threads
   * per image only add hand-offs between them (BENCHMARKS.md §7, session 13).
   */
  IMAGE_THREADS: int(0, 0, 256),
  /**
   * Files that may wait for a worker; past that, or after waiting IMAGE_TIMEOUT_MS, an
   * upload is refused at once with 250 / HTTP 503 and Retry-After.
   */
  IMAGE_QUEUE: int(32, 0, 10_000),
  /** Memory for the bytes of hot images (each at most 1 MiB); 0 turns it off. */
  IMAGE_CACHE_MB: int(32, 0, 65_536),
  /**
   * Who sends an image's bytes: `app` (this process), or `proxy`: after the same checks
   * (live row, ETag/304) the app answers with `X-Accel-Redirect` and nginx sends the file
   * from disk with sendfile (deploy/nginx-images.conf; STORE=fs only).
   */
  IMAGE_SERVE: z.enum(["app", "proxy"]).default("app"),
  /**
   * Transform URLs (`?w=&h=&fit=&format=&q=` on an image's URL): the widths and heights,
   * and the qualities, that may be asked for unsigned (anything else is 160 unless the URL
   * carries `s`, signed with IMAGE_SIGNING_KEY). Comma-separated.
   */
  IMAGE_WIDTHS: sizeList("160,320,640,1024,1600,2048", 16_384),
  IMAGE_QUALITIES: sizeList("50,75,90", 100),
  /**
   * `on`: a record's `display_url` is its image at `?format=auto` (AVIF or WebP where
   * the browser takes them, `Vary: Accept`); `off`: the file as uploaded, as ImgBB's.
   */
  IMAGE_NEGOTIATE: z.enum(["off", "on"]).default("off"),
  /** The secret signed transform URLs are made with; unset: only listed values work. */
  IMAGE_SIGNING_KEY: z.string().min(16).optional(),
  /**
   * Bytes the made variants may take in the store, all images together; past it the
   * oldest made are removed (hourly, and made again when asked for).
   */
  IMAGE_VARIANTS_MB: int(2048, 1, 1_048_576),
  /**
   * Variants one client address may have made per minute (all instances together);
   * past it 170 with Retry-After. Stored variants are served without counting. 0: off.
   */
  IMAGE_MAKES_PER_MINUTE: int(120, 0, 1_000_000),
  /**
   * How long the signed file URLs of a `password` image's page work (seconds): long
   * enough to view and download from the page, short enough that a copied URL dies.
   */
  PASSWORD_URL_SECONDS: int(1800, 60, 86_400),
  /**
   * `on`: the home page uploads without an account (as a guest of that browser), under
   * the GUEST_* limits, every image expiring; signing up there claims them.
   */
  GUEST_UPLOADS: z.enum(["off", "on"]).default("off"),
  /** The lifetime of a guest's upload (seconds; asked for longer or never: this). */
  GUEST_EXPIRATION: int(2_592_000, 60, 15_552_000),
  /** The largest file a guest may upload (bytes). */
  GUEST_MAX_FILE_BYTES: int(10_485_760, 1024),
  /** Guest upload requests one client address may make per minute (all instances). */
  GUEST_UPLOADS_PER_MINUTE: int(10, 1, 10_000),
  /** How long a page unlocked with its password stays unlocked in that browser (s). */
  PASSWORD_UNLOCK_SECONDS: int(43_200, 60, 2_592_000),
  /**
   * Password attempts one client address may make per minute, all images and albums
   * together (all instances); past it 170 with Retry-After. 0: off.
   */
  PASSWORD_ATTEMPTS_PER_MINUTE: int(10, 0, 10_000),
  SCREENSHOTS: z.enum(["on", "off"]).default("on"),
  CHROMIUM_PATH: z.string().optional(),
  /**
   * A remote Chromium: its ws://…/devtools/browser/<id> URL, or the http://host:port of its
   * DevTools endpoint, whose current ws URL is looked up (/json/version) at every connect.
   * Several, comma-separated: captures are spread over them, and one that is down is
   * skipped until it is back.
   */
  BROWSER_WS_ENDPOINT: z.string().regex(
    /^\s*(wss?|https?):\/\/[^/\s,]+[^\s,]*(\s*,\s*(wss?|https?):\/\/[^/\s,]+[^\s,]*)*\s*$/,
    "must be a ws:// DevTools URL or the http://host:port of one (several: comma-separated)",
  ).optional(),
  /**
   * The shared secret of the browser services in BROWSER_WS_ENDPOINT (`deno task browser`),
   * sent with every request to them. With it, each capture's network guard runs on the
   * browser's host and this instance opens no port for the browser (Deno Deploy can open
   * none); without it, BROWSER_WS_ENDPOINT is a bare DevTools endpoint and the guard runs
   * here (SCREENSHOT_PROXY_LISTEN).
   */
  BROWSER_TOKEN: z.string().min(16, "must be at least 16 characters")
    .optional(),
  /**
   * The address each capture's network guard listens on (a free port each time): one the
   * browser can reach. 127.0.0.1 for a local browser; off loopback the guard asks for
   * per-capture credentials.
   */
  SCREENSHOT_PROXY_LISTEN: z.string().regex(
    /^[0-9A-Za-z.:\[\]-]+$/,
    "must be an address such as 0.0.0.0 or 10.0.0.5",
  ).default("127.0.0.1"),
  /** The host the browser is told to use for the guard (defaults to the listen address). */
  SCREENSHOT_PROXY_ADVERTISE: z.string().regex(
    /^[0-9A-Za-z.:\[\]-]+$/,
    "must be a host name or address",
  ).optional(),
  SCREENSHOT_TIMEOUT_MS: int(30_000, 100, 600_000),
  SCREENSHOT_CONCURRENCY: int(2, 1, 64),
  /**
   * Captures one account may run at once on a browser; 0 (the default): one less than
   * SCREENSHOT_CONCURRENCY, at least one, so one account never holds every slot.
   */
  SCREENSHOT_PER_KEY: int(0, 0, 64),
  /**
   * Device pixels one capture may have (width × height × ratio², viewport or clip; a full
   * page is cut to it). Over it: 160 before anything is launched. 40 M is about
   * 3840×10000 at ratio 1, which this machine captures in ~7 s as PNG of noise.
   */
  SCREENSHOT_MAX_PIXELS: int(40_000_000, 1_000_000, 1_000_000_000),
  /** Pages a full-page PDF capture prints at most; the rest of the page is left out. */
  SCREENSHOT_PDF_MAX_PAGES: int(50, 1, 1000),
  SCREENSHOT_QUEUE: int(32, 0, 10_000),
  SCREENSHOT_RECYCLE_AFTER: int(200, 1),
  /**
   * Non-public addresses that screenshots and URL imports may reach (CIDRs or host:port,
   * comma-separated): empty in production, fixture ports in tests.
   */
  FETCH_ALLOW_PRIVATE: allowList,
  /** The older name of FETCH_ALLOW_PRIVATE, still read (both lists apply). */
  SCREENSHOT_ALLOW_PRIVATE: allowList,
  /** URL imports: the whole fetch (every redirect and the body) must end within this. */
  URL_IMPORT_TIMEOUT_MS: int(20_000, 100, 600_000),
  /**
   * URL imports of one request fetched at once; all of them share one
   * URL_IMPORT_TIMEOUT_MS from the first (231 for what it leaves unfinished).
   */
  URL_IMPORTS_AT_ONCE: int(4, 1, 64),
  LOGIN_MAX_FAILURES: int(5, 1),
  /**
   * Login and sign-up attempts per client address (IPv6: per /64) per minute, on top of
   * LOGIN_MAX_FAILURES per account; past it 429. 0 = off.
   */
  ACCOUNT_ATTEMPTS_PER_MINUTE: int(20, 0),
  /** Requests with a wrong API key per client address per minute; past it 170. 0 = off. */
  API_KEY_FAILURES_PER_MINUTE: int(30, 0),
  RATE_LIMIT_PER_MINUTE: int(600, 0),
  /** On SIGTERM/SIGINT: how long in-flight requests may take to finish. */
  SHUTDOWN_GRACE_MS: int(10_000, 0, 600_000),
  /**
   * On SIGTERM, before it stops accepting: how long the instance keeps serving while /readyz
   * answers 503 and every response closes its connection, so a balancer moves its traffic
   * (and its kept-alive connections) to the other instances without cutting a request.
   * SIGINT (Ctrl-C at a terminal) skips it.
   */
  SHUTDOWN_DRAIN_MS: int(2_000, 0, 600_000),
  /**
   * Behind a reverse proxy that overwrites X-Forwarded-For: its first hop is taken as the
   * client's address. Off by default: a client could otherwise forge it. (Secure cookies
   * and HSTS follow BASE_URL being https.)
   */
  TRUST_PROXY: z.enum(["true", "false"]).default("false").transform((v) =>
    v === "true"
  ),
  /** Store objects with no row older than this are crash leftovers the sweeper removes. */
  ORPHAN_GRACE_S: int(3600, 60),
  LOG_REQUESTS: z.enum(["true", "false"]).default("true").transform((v) =>
    v === "true"
  ),
  /**
   * Who may make an account at /signup: anyone (`open`), holders of an admin's invite link
   * (`invite`), or nobody (`closed`; admins still make accounts with `deno task
   * user:create`). The first account of an empty instance is always allowed: it is the
   * admin.
   */
  SIGNUP: z.enum(["open", "invite", "closed"]).default("open"),
  /** Each account's storage, in MB of stored originals (0: no limit); admins override it. */
  USER_STORAGE_MB: int(0, 0, 1_073_741_824),
  /** Each account's number of live images (0: no limit); admins override it. */
  USER_IMAGES_MAX: int(0, 0, 1_000_000_000),
  /** Each account's captures per calendar month, UTC (0: no limit); admins override it. */
  SCREENSHOTS_PER_MONTH: int(0, 0, 1_000_000_000),
  /** Reports one client address may send a minute (POST /api/1/reports). */
  REPORTS_PER_MINUTE: int(5, 1, 10_000),
  /**
   * `off` records no metric at all (and /metrics is 404): for measuring what the
   * instrumentation costs (bench/metrics_cost_bench.ts).
   */
  METRICS: z.enum(["on", "off"]).default("on"),
  /**
   * The token Prometheus sends (`Authorization: Bearer`) to read /metrics on the service's
   * own port; unset, /metrics is 404 there. At least 16 characters.
   */
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters")
    .optional(),
  /**
   * A separate `host:port` serving only /metrics, without a token (bind it to a private
   * address); unset, none.
   */
  METRICS_LISTEN: z.string().regex(
    /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/,
    "must be host:port",
  ).optional(),
}).transform((c) => {
  const base = c.BASE_URL ?? `http://localhost:${c.PORT}`;
  return {
    ...c,
    BASE_URL: base,
    IMAGE_HOST_URL: c.IMAGE_HOST_URL ?? c.S3_PUBLIC_URL ?? base,
    IMAGE_THREADS: c.IMAGE_THREADS ||
      Math.max(1, Math.floor(CORES / c.IMAGE_WORKERS)),
    SCREENSHOT_PER_KEY: c.SCREENSHOT_PER_KEY ||
      Math.max(1, c.SCREENSHOT_CONCURRENCY - 1),
    /** BROWSER_WS_ENDPOINT's browser services, one per comma-separated entry. */
    BROWSER_ENDPOINTS: (c.BROWSER_WS_ENDPOINT ?? "").split(",").map((e) =>
      e.trim()
    ).filter(Boolean),
  };
}).superRefine((c, ctx) => {
  if (
    /^(0\.0\.0\.0|::|\[::\])$/.test(c.SCREENSHOT_PROXY_LISTEN) &&
    !c.SCREENSHOT_PROXY_ADVERTISE
  ) {
    ctx.addIssue({
      code: "custom",
      path: ["SCREENSHOT_PROXY_ADVERTISE"],
      message:
        "is required when SCREENSHOT_PROXY_LISTEN is a wildcard address: the browser must be told where to reach this instance",
    });
  }
  if (c.BROWSER_TOKEN && !c.BROWSER_WS_ENDPOINT) {
    ctx.addIssue({
      code: "custom",
      path: ["BROWSER_TOKEN"],
      message:
        "is the secret of the browser services in BROWSER_WS_ENDPOINT: set that too, or unset this",
    });
  }
  if (c.IMAGE_SERVE === "proxy" && c.STORE !== "fs") {
    ctx.addIssue({
      code: "custom",
      path: ["IMAGE_SERVE"],
      message:
        "proxy needs STORE=fs (the proxy sends files from disk); with S3, point IMAGE_HOST_URL or S3_PUBLIC_URL at the bucket or CDN",
    });
  }
  if (c.STORE === "s3") {
    for (const k of ["S3_ENDPOINT", "S3_BUCKET"] as const) {
      if (!c[k]) {
        ctx.addIssue({
          code: "custom",
          path: [k],
          message: "is required when STORE=s3",
        });
      }
    }
  }
});

/** Validated service configuration. */
export type Config = z.output<typeof ConfigSchema>;

/**
 * The environment of the browser service (`deno task browser`, scripts/browser.ts):
 * Chromium, its DevTools and the captures' network guards on one host, reached by the
 * app instances with BROWSER_TOKEN.
 */
export const BrowserServiceConfigSchema = z.object({
  BROWSER_TOKEN: z.string().min(16, "must be at least 16 characters"),
  BROWSER_LISTEN: z.string().default("0.0.0.0"),
  BROWSER_PORT: int(9222, 0, 65535),
  CHROMIUM_PATH: z.string().optional(),
  /** Non-public addresses the pages may reach (as the app's; empty in production). */
  FETCH_ALLOW_PRIVATE: allowList,
  SCREENSHOT_ALLOW_PRIVATE: allowList,
});

/** The browser service's validated environment. */
export type BrowserServiceConfig = z.output<typeof BrowserServiceConfigSchema>;

/** Thrown when the environment holds a bad value; the message names each variable. */
export class ConfigError extends Error {}

/**
 * Validates an environment-like record. Empty strings count as unset so `FOO=` in a shell
 * falls back to the default instead of failing.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  return loadWith(ConfigSchema, env);
}

/** {@link loadConfig} for the browser service's environment. */
export function loadBrowserServiceConfig(
  env: Record<string, string | undefined>,
): BrowserServiceConfig {
  return loadWith(BrowserServiceConfigSchema, env);
}

/**
 * Variables whose values are secrets (or may carry one, as a database URL's password):
 * a configuration error names the variable and the rule, never the value, so a start-up
 * log never holds them (issue #49).
 */
export function isSecretVariable(name: string): boolean {
  if (/^(BASE|IMAGE_HOST)_URL$/.test(name)) return false;
  return /(^|_)(TOKEN|SECRET|PASSWORD|KEY|KEY_ID)($|_)|_URL$|_ENDPOINT$/.test(
    name,
  );
}

function loadWith<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined>,
): z.output<S> {
  const clean = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const r = schema.safeParse(clean);
  if (!r.success) {
    const lines = r.error.issues.map((i) =>
      `${i.path.join(".") || "config"}: ${i.message}${
        i.path.length && clean[String(i.path[0])] !== undefined &&
          !isSecretVariable(String(i.path[0]))
          ? ` (got ${JSON.stringify(clean[String(i.path[0])])})`
          : ""
      }`
    );
    throw new ConfigError(`Invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  return r.data;
}
