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

/** Which run profile a variable matters to (docs/configuration.md's last column). */
export type Profile = "both" | "embedded" | "sandbox";

/** What the configuration reference says of a variable (kept as the field's zod meta). */
export interface VarDoc {
  /** What it is and what it bounds: one or two sentences. */
  description: string;
  /** The unit of a number (ms, s, MB, bytes, per minute, …) or the kind of a string. */
  unit?: string;
  /** Which profile uses it (default both). */
  profile?: Profile;
  /** The default as the reference prints it, where it depends on the machine. */
  shownDefault?: string;
}

/** A field with its reference entry. */
const v = <T extends z.ZodType>(schema: T, doc: VarDoc): T =>
  schema.meta({ ...doc }) as T;

/** The process: where it listens, what it is called, how it logs and stops. */
const SERVER = {
  PORT: v(int(8080, 0, 65535), {
    description: "The port the service listens on.",
    unit: "port",
  }),
  HOST: v(z.string().default("0.0.0.0"), {
    description: "The address the service listens on.",
    unit: "address",
  }),
  BASE_URL: v(httpUrl.optional(), {
    description:
      "The public address of the service: links use it; https makes session cookies Secure and pages send HSTS. Unset: the links follow the address each request was sent to (X-Forwarded-Host/-Proto with TRUST_PROXY); set it in production.",
    unit: "URL",
    shownDefault: "the request's origin",
  }),
  IMAGE_HOST_URL: v(httpUrl.optional(), {
    description:
      "Where image links point (another origin, or a CDN before the service; it then serves thumbnails and transform URLs too). Unset: S3_PUBLIC_URL for originals, else BASE_URL (or the request's origin).",
    unit: "URL",
    shownDefault: "S3_PUBLIC_URL, else BASE_URL",
  }),
  DATA_DIR: v(z.string().min(1).default("./data"), {
    description:
      "The embedded database (pgdata/), STORE=fs's files (images/), scratch files (tmp/, one folder per process) and the ad filter's cache.",
    unit: "path",
    profile: "embedded",
  }),
  TRUST_PROXY: v(
    z.enum(["true", "false"]).default("false").transform((x) => x === "true"),
    {
      description:
        "Behind a reverse proxy that overwrites X-Forwarded-For: its first hop is taken as the client's address (throttles, logs). Off: a client could forge it.",
    },
  ),
  LOG_REQUESTS: v(
    z.enum(["true", "false"]).default("true").transform((x) => x === "true"),
    { description: "One JSON log line per request." },
  ),
  SHUTDOWN_DRAIN_MS: v(int(2_000, 0, 600_000), {
    description:
      "On SIGTERM, before it stops accepting: how long the instance keeps serving with /readyz 503 and every answer closing its connection, so a balancer moves away. SIGINT skips it.",
    unit: "ms",
  }),
  SHUTDOWN_GRACE_MS: v(int(10_000, 0, 600_000), {
    description:
      "On SIGTERM/SIGINT, after the drain: how long in-flight requests may take to finish before the pool and browser close.",
    unit: "ms",
  }),
};

/** The database: PGlite in DATA_DIR, or one PostgreSQL for every instance. */
const DATABASE = {
  DATABASE_URL: v(
    z.string().regex(/^postgres(ql)?:\/\//, "must start with postgres://")
      .optional(),
    {
      description:
        "A PostgreSQL for all instances (sessions, rate limits, migrations and change notices live there). Unset: the embedded PGlite in DATA_DIR/pgdata.",
      unit: "postgres:// URL",
      profile: "sandbox",
    },
  ),
  DB_CONNECT_TIMEOUT_MS: v(int(3000, 100, 120_000), {
    description:
      "Opening a PostgreSQL connection, or waiting for a free one; past it 250 (HTTP 503).",
    unit: "ms",
  }),
  DB_STATEMENT_TIMEOUT_MS: v(int(5000, 100, 600_000), {
    description:
      "One SQL statement, enforced by the server and by the client; past it 250 (HTTP 503).",
    unit: "ms",
  }),
  DB_POOL_MAX: v(int(10, 1, 1000), {
    description: "PostgreSQL connections one instance opens at most.",
    unit: "connections",
  }),
};

/** Where image bytes live: a folder, or an S3-compatible bucket. */
const STORAGE = {
  STORE: v(z.enum(["fs", "s3"]).default("fs"), {
    description:
      "Where image bytes live: fs (DATA_DIR/images) or s3 (S3_* below; created at start if missing).",
  }),
  S3_ENDPOINT: v(httpUrl.optional(), {
    description: "The S3 server's URL (STORE=s3).",
    unit: "URL",
    profile: "sandbox",
  }),
  S3_BUCKET: v(z.string().min(1).optional(), {
    description: "The bucket (STORE=s3).",
    profile: "sandbox",
  }),
  S3_REGION: v(z.string().min(1).default("us-east-1"), {
    description: "The bucket's region, for request signing.",
    profile: "sandbox",
  }),
  S3_ACCESS_KEY_ID: v(z.string().optional(), {
    description: "The S3 access key id.",
    profile: "sandbox",
  }),
  S3_SECRET_ACCESS_KEY: v(z.string().optional(), {
    description: "The S3 secret key.",
    profile: "sandbox",
  }),
  S3_PUBLIC_URL: v(httpUrl.optional(), {
    description:
      "Where the bucket (or a CDN before it) serves the files publicly: public originals are linked there; thumbnails, mediums, transform URLs and non-public images stay on the service.",
    unit: "URL",
    profile: "sandbox",
  }),
  S3_TIMEOUT_MS: v(int(10_000, 100, 600_000), {
    description:
      "Until an S3 request has its answer's headers; past it 250 (HTTP 503).",
    unit: "ms",
  }),
  ORPHAN_GRACE_S: v(int(3600, 60), {
    description:
      "Store objects no row claims, older than this, are crash leftovers the hourly sweep removes.",
    unit: "s",
  }),
};

/** Upload bodies: how much is read, where it is received, what is held for a late key. */
const BODIES = {
  MAX_FILE_BYTES: v(int(32 * 1024 * 1024, 1), {
    description:
      "One uploaded file (or URL import); past it 130 (HTTP 413), nothing stored.",
    unit: "bytes",
  }),
  MAX_FILES: v(int(15, 1, 1000), {
    description: "Files in one upload request.",
    unit: "files",
  }),
  BODY_MAX_FIELDS: v(int(100, 1, 10_000), {
    description:
      "Plain (non-file) fields in one upload body, whatever its type: multipart fields, urlencoded fields, JSON members. Past it: 160 at once, the rest unread.",
    unit: "fields",
  }),
  BODY_MAX_KB: v(int(1024, 16, 1_048_576), {
    description:
      "Any body a route reads whole (all but an upload's, which streams with its own limits): a screenshot's JSON, the site's forms. Past it, 413 before more is read.",
    unit: "KB",
  }),
  BODY_MAX_TOKEN: v(int(256, 8, 65_536), {
    description:
      "Longest JSON number (or true/false/null) in a body; else 160.",
    unit: "characters",
  }),
  UNAUTH_HOLD_MB: v(int(32, 1, 65_536), {
    description:
      "A body whose key comes after its image (Chevereto's clients) is held until the key comes: at most this per request, and while the client sends ≥ 64 KB/s after 2 s; past it 401 at once.",
    unit: "MB",
  }),
  UNAUTH_HOLD_ADDRESS_MB: v(int(32, 1, 65_536), {
    description:
      "What such held bodies may take per client address; a body that finds it full is answered 503/250 with Retry-After.",
    unit: "MB",
  }),
  UNAUTH_HOLD_TOTAL_MB: v(int(128, 1, 1_048_576), {
    description:
      "What such held bodies may take in the whole process; a body that finds it full is answered 503/250 with Retry-After.",
    unit: "MB",
  }),
  TUS_MAX_FILE_BYTES: v(int(200 * 1024 * 1024, 1), {
    description:
      "One resumable upload (tus, /api/1/tus/): its Upload-Length at most this; past it 413/130 at creation, nothing stored.",
    unit: "bytes",
  }),
  RESUMABLE_FROM_MB: v(int(8, 0, 1_000_000), {
    description:
      "The site's uploader sends files larger than this resumable (tus, /api/1/tus/), with pause and resume; 0: never. Guests always upload in one request.",
    unit: "MB",
  }),
  TUS_EXPIRE_HOURS: v(int(24, 1, 8760), {
    description:
      "An unfinished resumable upload is removed (its parts with it) this long after it was last written to.",
    unit: "hours",
  }),
  TUS_PENDING_MB: v(int(1024, 1, 1_048_576), {
    description:
      "Bytes of unfinished resumable uploads one account may have open (their Upload-Length); a creation past it is 413/130.",
    unit: "MB",
  }),
  TUS_UPLOADS_AT_ONCE: v(int(8, 1, 1000), {
    description:
      "Unfinished resumable uploads one account may have open; a creation past it is 429/170.",
    unit: "uploads",
  }),
  SCRATCH: v(z.enum(["auto", "disk", "memory"]).default("auto"), {
    description:
      "Where an upload's scratch files go: disk (DATA_DIR/tmp), memory (within MEMORY_BODY_MB; nothing written), or auto: memory where DATA_DIR may not be written (Deno Deploy), else disk.",
  }),
  MEMORY_BODY_MB: v(int(256, 16, 1_048_576), {
    description:
      "With memory scratch: what all uploads of this process may hold at once; past it 250 (HTTP 503) with Retry-After. On disk, small bodies are received into it too.",
    unit: "MB",
    profile: "sandbox",
  }),
  MEMORY_INFLIGHT_MB: v(int(12, 1, 1_048_576), {
    description:
      "With memory scratch: the request bodies admitted at once, counted by their declared size (one of unknown size, which browsers never send, as 1 MB); later ones wait their turn before their body is read, up to IMAGE_QUEUE of them for at most IMAGE_TIMEOUT_MS, then 250 (HTTP 503) with Retry-After. An upload costs a few times its body while it is stored, and the process keeps that peak as RSS: with 12 MB (two 5 MB photos at once), eight sent at once peaked at 341 MB, not 475.",
    unit: "MB",
    profile: "sandbox",
  }),
  MEMORY_REQUEST_MB: v(int(24, 1, 1_048_576), {
    description:
      "With memory scratch: what one request's images may hold together (each file's limit is the smaller of this and MAX_FILE_BYTES), and the largest resumable upload; past it 130 (HTTP 413). A large one costs about three times its size at its peak, on top of what a warmed instance keeps: over six rounds of the sandbox bench an instance peaked at 445 MB with 24, at 474–491 MB with 32 (Deno Deploy allows 512), at 434 with 16 (docs/deploy.md).",
    unit: "MB",
    profile: "sandbox",
  }),
};

/** Image processing: what an upload may be, and how much work runs at once. */
const PROCESSING = {
  MAX_IMAGE_PIXELS: v(int(100_000_000, 1), {
    description:
      "Decoded pixels an upload may have, all frames of an animation together; else 142. Also bounds a full-page capture.",
    unit: "pixels",
  }),
  BMP_SCRATCH_MB: v(int(256, 1, 65_536), {
    description:
      "Scratch one BMP may need to be read (its pixels uncompressed, 3 or 4 bytes each); else 142.",
    unit: "MB",
  }),
  BMP_SCRATCH_TOTAL_MB: v(int(1024, 1, 1_048_576), {
    description:
      "Scratch all BMPs of a process may need at once; else 250 with Retry-After.",
    unit: "MB",
  }),
  IMAGE_TIMEOUT_MS: v(int(20_000, 1_000, 600_000), {
    description:
      "Per file: decoding it (and making a variant of it); else 143. An encode libvips cannot stop (AVIF, a transform's mozjpeg, GIF) starts only at an effort whose measured worst case fits half the time left, else 143 at once.",
    unit: "ms",
  }),
  IMAGE_WORKERS: v(int(CORES, 1, 256), {
    description: "Images processed at once.",
    unit: "images",
    shownDefault: "the machine's cores",
  }),
  IMAGE_THREADS: v(int(0, 0, 256), {
    description:
      "libvips threads per image; 0: the cores shared among IMAGE_WORKERS, at least one each (more per image only add hand-offs when every core is busy).",
    unit: "threads",
  }),
  IMAGE_QUEUE: v(int(32, 0, 10_000), {
    description:
      "Files that may wait for a worker; past that, or after waiting IMAGE_TIMEOUT_MS, 250 (HTTP 503) with Retry-After at once.",
    unit: "files",
  }),
};

/** Serving images: caches, who sends the bytes, transform URLs and their bounds. */
const SERVING = {
  IMAGE_CACHE_MB: v(int(32, 0, 65_536), {
    description:
      "Memory for the bytes of hot images (each at most 1 MiB), served without touching the disk or S3; 0 turns it off.",
    unit: "MB",
  }),
  IMAGE_SERVE: v(z.enum(["app", "proxy"]).default("app"), {
    description:
      "Who sends an image's bytes: app, or proxy: after the same checks (live row, ETag/304) the app answers X-Accel-Redirect and nginx sends the file (deploy/nginx-images.conf; STORE=fs only).",
    profile: "embedded",
  }),
  IMAGE_WIDTHS: v(sizeList("160,320,640,1024,1600,2048", 16_384), {
    description:
      "The widths and heights transform URLs (?w=&h=) may ask for unsigned; anything else is 160 unless the URL is signed.",
    unit: "px, comma-separated",
  }),
  IMAGE_QUALITIES: v(sizeList("50,75,90", 100), {
    description: "The qualities (?q=) transform URLs may ask for unsigned.",
    unit: "comma-separated",
  }),
  IMAGE_AVIF_EFFORT: v(z.coerce.number().int().min(0).max(9).optional(), {
    description:
      "The AVIF encoder's effort for transforms: higher is smaller and slower. Unset: 4 natively, 1 in WebAssembly (the sandbox profile), where effort 4 took ~20× longer for 10–26 % fewer bytes.",
    unit: "0–9",
    shownDefault: "4 natively, 1 in WebAssembly",
  }),
  IMAGE_ENCODE_MB: v(z.coerce.number().int().min(16).max(65_536).optional(), {
    description:
      "The memory one AVIF encode may take, by the WebAssembly engine's measured cost (~26 MB + 34.5 MB per output megapixel). Larger: format=auto answers WebP, format=avif 143 naming the size that fits. The wasm engine's heap keeps what it grew to for the life of the process, so a 2048 px AVIF (+135 MB) would hold a Deno Deploy instance near its 512 MB. Unset: 64 in WebAssembly (about 1.1 MP), no bound natively.",
    unit: "MB",
    shownDefault: "64 in WebAssembly, none natively",
    profile: "sandbox",
  }),
  IMAGE_NEGOTIATE: v(z.enum(["off", "on"]).default("off"), {
    description:
      "on: a record's display_url is its image at ?format=auto (AVIF or WebP where the browser takes them, Vary: Accept); off: the file as uploaded, as ImgBB's.",
  }),
  IMAGE_SIGNING_KEY: v(z.string().min(16).optional(), {
    description:
      "The secret signed transform URLs are made with (deno task sign-url); unset: only listed values work.",
    unit: "secret, ≥ 16 characters",
  }),
  IMAGE_VARIANTS_MB: v(int(2048, 1, 1_048_576), {
    description:
      "Bytes the made variants may take in the store, all images together; past it the oldest made are removed hourly (and made again when asked for).",
    unit: "MB",
  }),
  IMAGE_MAKES_PER_MINUTE: v(int(120, 0, 1_000_000), {
    description:
      "Variants one client address may have made per minute (all instances); past it 170 with Retry-After. Stored variants are served without counting. 0: off.",
    unit: "per minute",
  }),
};

/** Who sees what: password pages, and guests' uploads. */
const PRIVACY = {
  PASSWORD_URL_SECONDS: v(int(1800, 60, 86_400), {
    description:
      "How long the signed file URLs of a password image's page work: long enough to view and download, short enough that a copied URL dies.",
    unit: "s",
  }),
  PASSWORD_UNLOCK_SECONDS: v(int(43_200, 60, 2_592_000), {
    description:
      "How long a page unlocked with its password stays unlocked in that browser.",
    unit: "s",
  }),
  PASSWORD_ATTEMPTS_PER_MINUTE: v(int(10, 0, 10_000), {
    description:
      "Password attempts one client address may make per minute, all images and albums together (all instances); past it 170 with Retry-After. 0: off.",
    unit: "per minute",
  }),
  GUEST_UPLOADS: v(z.enum(["off", "on"]).default("off"), {
    description:
      "on: the home page uploads without an account (as that browser's guest) under the GUEST_* limits, every image expiring; signing up there claims them.",
  }),
  GUEST_EXPIRATION: v(int(2_592_000, 60, 15_552_000), {
    description:
      "The lifetime of a guest's upload (asked for longer or never: this).",
    unit: "s",
  }),
  GUEST_MAX_FILE_BYTES: v(int(10_485_760, 1024), {
    description: "The largest file a guest may upload; past it 130.",
    unit: "bytes",
  }),
  GUEST_UPLOADS_PER_MINUTE: v(int(10, 1, 10_000), {
    description:
      "Guest upload requests one client address may make per minute (all instances); past it 170.",
    unit: "per minute",
  }),
};

/** Screenshots: the browser, its network guard, and the bounds of a capture. */
const SCREENSHOTS = {
  SCREENSHOTS: v(z.enum(["on", "off"]).default("on"), {
    description: "off: no browser is started and screenshot calls answer 240.",
  }),
  CHROMIUM_PATH: v(z.string().optional(), {
    description:
      "The local Chromium to launch; unset: chromium-headless-shell or chromium where Debian puts them (installed at first start as root).",
    unit: "path",
    profile: "embedded",
  }),
  BROWSER_WS_ENDPOINT: v(
    z.string().regex(
      /^\s*(wss?|https?):\/\/[^/\s,]+[^\s,]*(\s*,\s*(wss?|https?):\/\/[^/\s,]+[^\s,]*)*\s*$/,
      "must be a ws:// DevTools URL or the http://host:port of one (several: comma-separated)",
    ).optional(),
    {
      description:
        "A remote Chromium: its ws://…/devtools/browser/<id> URL, or the http://host:port of its DevTools (looked up at every connect). Several, comma-separated: captures spread over them, one that is down skipped until back.",
      unit: "URL list",
      profile: "sandbox",
    },
  ),
  BROWSER_TOKEN: v(
    z.string().min(16, "must be at least 16 characters").optional(),
    {
      description:
        "The shared secret of the browser services in BROWSER_WS_ENDPOINT (deno task browser). With it each capture's network guard runs on the browser's host and this instance opens no port; without it the guard runs here.",
      unit: "secret, ≥ 16 characters",
      profile: "sandbox",
    },
  ),
  SCREENSHOT_PROXY_LISTEN: v(
    z.string().regex(
      /^[0-9A-Za-z.:\[\]-]+$/,
      "must be an address such as 0.0.0.0 or 10.0.0.5",
    ).default("127.0.0.1"),
    {
      description:
        "The address each capture's network guard listens on (a free port each time): one the browser can reach. Off loopback the guard asks for per-capture credentials.",
      unit: "address",
      profile: "embedded",
    },
  ),
  SCREENSHOT_PROXY_ADVERTISE: v(
    z.string().regex(/^[0-9A-Za-z.:\[\]-]+$/, "must be a host name or address")
      .optional(),
    {
      description:
        "The host the browser is told to use for the guard (required when SCREENSHOT_PROXY_LISTEN is a wildcard). Unset: the listen address.",
      unit: "host",
      profile: "embedded",
    },
  ),
  SCREENSHOT_TIMEOUT_MS: v(int(30_000, 100, 600_000), {
    description:
      "One capture, waiting for a browser included; past it 230 (HTTP 504).",
    unit: "ms",
  }),
  SCREENSHOT_CONCURRENCY: v(int(2, 1, 64), {
    description: "Captures at once on one browser.",
    unit: "captures",
  }),
  SCREENSHOT_PER_KEY: v(int(0, 0, 64), {
    description:
      "Captures one account may run at once on a browser; 0: one less than SCREENSHOT_CONCURRENCY, at least one, so one account never holds every slot.",
    unit: "captures",
  }),
  SCREENSHOT_BATCH_MAX: v(int(100, 1, 1_000), {
    description:
      "Captures one POST /api/1/screenshot/batch may queue; more is 160.",
    unit: "captures",
  }),
  SCREENSHOT_SCHEDULE_MIN_MINUTES: v(int(5, 1, 10_080), {
    description:
      "The shortest time between two runs of one scheduled capture (its cron expression's closest runs); closer is 160.",
    unit: "minutes",
  }),
  SCREENSHOT_SCHEDULES_MAX: v(int(20, 0, 10_000), {
    description:
      "Scheduled captures one account may have; past it 160. 0: none allowed.",
    unit: "schedules",
  }),
  WEBHOOK_RETRY_S: v(int(10, 1, 3_600), {
    description:
      "An asynchronous capture's webhook not answered 2xx is tried again after this long, doubling each time, 6 tries in all; every try is listed with its job.",
    unit: "s",
  }),
  SCREENSHOT_MAX_PIXELS: v(int(40_000_000, 1_000_000, 1_000_000_000), {
    description:
      "Device pixels one capture may have (width × height × ratio², viewport or clip; a full page is cut to it); over it 160 before anything is launched.",
    unit: "pixels",
  }),
  SCREENSHOT_PDF_MAX_PAGES: v(int(50, 1, 1000), {
    description:
      "Pages a full-page PDF capture prints at most; the rest is left out.",
    unit: "pages",
  }),
  SCREENSHOT_HEAVY_LANE: v(z.enum(["on", "off"]).default("on"), {
    description:
      "on: with a local Chromium, heavy captures (a full page, a PDF, or more than SCREENSHOT_HEAVY_PIXELS device pixels) run in a second Chromium of their own, one at a time, so a flood of them never slows anyone's light captures (one browser: 9–17× at p95). Costs the second browser's memory.",
  }),
  SCREENSHOT_HEAVY_PIXELS: v(int(4_000_000, 100_000, 1_000_000_000), {
    description:
      "Device pixels (viewport or clip × ratio²) past which a capture is heavy (see SCREENSHOT_HEAVY_LANE).",
    unit: "pixels",
  }),
  SCREENSHOT_QUEUE: v(int(32, 0, 10_000), {
    description:
      "Captures that may wait for a browser slot; past it 240 (HTTP 503) at once.",
    unit: "captures",
  }),
  SCREENSHOT_RECYCLE_AFTER: v(int(200, 1), {
    description:
      "Captures after which a local browser is replaced (memory a long-lived Chromium gathers).",
    unit: "captures",
  }),
};

/** Outbound fetches: screenshots' pages and URL imports, through the same guard. */
const FETCHES = {
  FETCH_ALLOW_PRIVATE: v(allowList, {
    description:
      "Non-public addresses screenshots and URL imports may reach anyway: empty in production, fixture ports in tests.",
    unit: "CIDRs or host:port, comma-separated",
  }),
  SCREENSHOT_ALLOW_PRIVATE: v(allowList, {
    description:
      "The older name of FETCH_ALLOW_PRIVATE, still read (both lists apply).",
    unit: "CIDRs or host:port, comma-separated",
  }),
  URL_IMPORT_TIMEOUT_MS: v(int(20_000, 100, 600_000), {
    description:
      "URL imports of one request: the whole fetch (every redirect and the body) ends within this; 231 for what is left unfinished.",
    unit: "ms",
  }),
  URL_IMPORTS_AT_ONCE: v(int(4, 1, 64), {
    description: "URL imports of one request fetched at once.",
    unit: "fetches",
  }),
};

/** Accounts and the API's limits per caller and per address. */
const LIMITS = {
  LOGIN_MAX_FAILURES: v(int(5, 1), {
    description:
      "Login attempts per account in 15 minutes; past it 170 with Retry-After without a password being checked (counted atomically across instances).",
    unit: "attempts",
  }),
  ACCOUNT_ATTEMPTS_PER_MINUTE: v(int(20, 0), {
    description:
      "Login and sign-up attempts per client address (IPv6: per /64) per minute, on top of LOGIN_MAX_FAILURES; past it 429. 0: off.",
    unit: "per minute",
  }),
  API_KEY_FAILURES_PER_MINUTE: v(int(30, 0), {
    description:
      "Requests with a wrong API key per client address per minute; past it every keyed request from it gets 170 until the minute ends, refused without a look-up. 0: off.",
    unit: "per minute",
  }),
  RATE_LIMIT_PER_MINUTE: v(int(600, 0), {
    description:
      "API calls per key (or signed-in session) per minute; past it 170 with Retry-After. 0: off.",
    unit: "per minute",
  }),
};

/** The operator: who may sign up, per-account quotas, reports and metrics. */
const OPERATOR = {
  SIGNUP: v(z.enum(["open", "invite", "closed"]).default("open"), {
    description:
      "Who may make an account at /signup: anyone (open), holders of an admin's invite link (invite), or nobody (closed; admins still use deno task user:create). The first account of an empty instance is always allowed: it is the admin.",
  }),
  USER_STORAGE_MB: v(int(0, 0, 1_073_741_824), {
    description:
      "Each account's storage of originals; past it 180. 0: no limit; admins override it per account.",
    unit: "MB",
  }),
  USER_IMAGES_MAX: v(int(0, 0, 1_000_000_000), {
    description:
      "Each account's live images; past it 180. 0: no limit; admins override it per account.",
    unit: "images",
  }),
  SCREENSHOTS_PER_MONTH: v(int(0, 0, 1_000_000_000), {
    description:
      "Each account's captures per calendar month (UTC); past it 180. 0: no limit; admins override it per account.",
    unit: "captures",
  }),
  REPORTS_PER_MINUTE: v(int(5, 1, 10_000), {
    description:
      "Reports one client address may send a minute (POST /api/1/reports, /report).",
    unit: "per minute",
  }),
  METRICS: v(z.enum(["on", "off"]).default("on"), {
    description:
      "off records no metric at all (and /metrics is 404): for measuring what the instrumentation costs.",
  }),
  METRICS_TOKEN: v(
    z.string().min(16, "must be at least 16 characters").optional(),
    {
      description:
        "The Bearer token Prometheus sends to read /metrics on the service's own port; unset, /metrics is 404 there.",
      unit: "secret, ≥ 16 characters",
    },
  ),
  METRICS_LISTEN: v(
    z.string().regex(
      /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/,
      "must be host:port",
    ).optional(),
    {
      description:
        "A separate host:port serving only /metrics, without a token (bind it to a private address); unset, none.",
      unit: "host:port",
    },
  ),
};

/**
 * The configuration's variables by concern, in the order docs/configuration.md lists
 * them (generated from this table by `deno task docs`).
 */
export const CONFIG_GROUPS = {
  "Server": SERVER,
  "Database": DATABASE,
  "Storage": STORAGE,
  "Upload bodies": BODIES,
  "Image processing": PROCESSING,
  "Serving and transforms": SERVING,
  "Privacy and guests": PRIVACY,
  "Screenshots": SCREENSHOTS,
  "Outbound fetches": FETCHES,
  "Accounts and rate limits": LIMITS,
  "Operator": OPERATOR,
} as const;

/** Every variable of the service, as one object (CONFIG_GROUPS joined). */
export const ConfigFields = z.object({
  ...SERVER,
  ...DATABASE,
  ...STORAGE,
  ...BODIES,
  ...PROCESSING,
  ...SERVING,
  ...PRIVACY,
  ...SCREENSHOTS,
  ...FETCHES,
  ...LIMITS,
  ...OPERATOR,
});

/**
 * The one schema over the environment (DESIGN.md "Configuration"). Only main.ts reads the
 * environment; tests build a Config through {@link loadConfig} with their own values.
 */
export const ConfigSchema = ConfigFields.transform((c) => {
  const base = c.BASE_URL ?? `http://localhost:${c.PORT}`;
  return {
    ...c,
    BASE_URL: base,
    /**
     * Whether BASE_URL was given: unset, the links follow each request's origin
     * (services/runtime/link_base.ts) and BASE_URL is only the start-up default.
     */
    BASE_URL_SET: c.BASE_URL !== undefined,
    /** Whether IMAGE_HOST_URL was given (then image links never follow the request). */
    IMAGE_HOST_URL_SET: c.IMAGE_HOST_URL !== undefined,
    IMAGE_HOST_URL: c.IMAGE_HOST_URL ?? c.S3_PUBLIC_URL ?? base,
    /**
     * Where what only the service can answer is linked: thumbnails and mediums (made at
     * their first request), transform URLs, and the files of private and password images.
     * IMAGE_HOST_URL when set (a CDN before the service), else BASE_URL; never
     * S3_PUBLIC_URL, whose bucket holds originals and ignores `?w=&format=` (issue #49).
     */
    SERVICE_IMAGE_URL: c.IMAGE_HOST_URL ?? base,
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
  BROWSER_TOKEN: v(z.string().min(16, "must be at least 16 characters"), {
    description:
      "Required: the secret every request to the service carries (Authorization: Bearer); the app instances set the same BROWSER_TOKEN.",
    unit: "secret, ≥ 16 characters",
  }),
  BROWSER_LISTEN: v(z.string().default("0.0.0.0"), {
    description: "The address the browser service listens on.",
    unit: "address",
  }),
  BROWSER_PORT: v(int(9222, 0, 65535), {
    description: "The port the browser service listens on.",
    unit: "port",
  }),
  CHROMIUM_PATH: SCREENSHOTS.CHROMIUM_PATH,
  BROWSER_GUARD_MAX_AGE_S: v(int(600, 1, 86_400), {
    description:
      "How long a capture's guard lives before the service closes it (a guard its instance forgot). Instances learn it with each guard and never start a capture on one that would end first.",
    unit: "s",
  }),
  FETCH_ALLOW_PRIVATE: v(allowList, {
    description:
      "Non-public addresses the pages may reach (as the app's; empty in production).",
    unit: "CIDRs or host:port, comma-separated",
  }),
  SCREENSHOT_ALLOW_PRIVATE: FETCHES.SCREENSHOT_ALLOW_PRIVATE,
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
