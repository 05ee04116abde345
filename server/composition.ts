/**
 * server/ — the process around the app, at the top of the house: composing the
 * dependencies from the config (this file), SIGTERM's drain (lifecycle.ts) and what the
 * platform lets the process do (profile.ts). It imports every capability; nothing below
 * imports it (scripts/import_cycles.ts checks). What createApp is given is routes/deps.ts;
 * what every layer may use (clock, logger, scratch, work slots, timeouts) is
 * services/runtime/.
 */
import { LaneScreenshotter } from "../services/screenshots/lanes.ts";
import { join, resolve } from "node:path";
import type { Config } from "../schemas/config.ts";
import {
  type Database,
  migrate,
  openDatabase,
} from "../services/db/database.ts";
import type { AppDeps } from "../routes/deps.ts";
import type { Logger } from "../services/runtime/logger.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import { FsStore } from "../services/store/fs_store.ts";
import { S3Store } from "../services/store/s3_store.ts";
import { allowRulesOf } from "../schemas/allow_list.ts";
import type { Screenshotter } from "../services/screenshots/screenshotter.ts";
import { installChromium } from "../services/screenshots/install.ts";
import { ImagePipeline } from "../services/images/pipeline.ts";
import { engineThreads, imageEngine } from "../services/images/engine.ts";
import { sweepExpired } from "../services/images/records.ts";
import { sweepRateLimits } from "../services/accounts/rate_limit.ts";
import { sweepGuests } from "../services/accounts/guests.ts";
import { sweepShotCache } from "../services/screenshots/shot_cache.ts";
import { sweepMissing, sweepOrphans } from "../services/images/orphans.ts";
import { trimVariants } from "../services/images/variant_rows.ts";
import { ApiError } from "../schemas/errors.ts";
import { systemClock } from "../services/runtime/clock.ts";
import type { PostgresTimeouts } from "../services/db/postgres.ts";

/** The PostgreSQL bounds the config names. */
export function postgresTimeouts(config: Config): PostgresTimeouts {
  return {
    connectMs: config.DB_CONNECT_TIMEOUT_MS,
    statementMs: config.DB_STATEMENT_TIMEOUT_MS,
    poolMax: config.DB_POOL_MAX,
  };
}

/** Chooses and opens the store named by the config. */
export async function openStore(config: Config): Promise<BlobStore> {
  if (config.STORE === "s3") {
    const s3 = new S3Store({
      endpoint: config.S3_ENDPOINT!,
      bucket: config.S3_BUCKET!,
      region: config.S3_REGION,
      accessKeyId: config.S3_ACCESS_KEY_ID ?? "",
      secretAccessKey: config.S3_SECRET_ACCESS_KEY ?? "",
      timeoutMs: config.S3_TIMEOUT_MS,
    });
    await s3.ensureBucket().catch(() => {});
    return s3;
  }
  return await new FsStore(join(config.DATA_DIR, "images")).init();
}

/** Each started screenshotter's warm-up (browser, first spare page), for the start order. */
const warming = new WeakMap<Screenshotter, Promise<void>>();

/**
 * The screenshotter for this config: a remote browser, a local Chromium, or none (logged;
 * screenshot calls then answer 240).
 */
export async function openScreenshotter(
  config: Config,
  log: Logger,
): Promise<Screenshotter | undefined> {
  if (config.SCREENSHOTS === "off") {
    log.info({ msg: "screenshots off (SCREENSHOTS=off): no browser started" });
    return undefined;
  }
  // Loaded here, not at start-up: puppeteer and the filter engine are ~0.25 s of imports
  // that an instance with screenshots off (and every operator script) never needs.
  const [{ ChromiumScreenshotter }, { findChromium }, { FilterEngines }] =
    await Promise.all([
      import("../services/screenshots/chromium.ts"),
      import("../services/screenshots/chromium_launch.ts"),
      import("../services/screenshots/filter_engine.ts"),
    ]);
  let executablePath = config.BROWSER_WS_ENDPOINT
    ? undefined
    : findChromium(config.CHROMIUM_PATH);
  if (!config.BROWSER_WS_ENDPOINT && !executablePath) {
    if (await installChromium(log)) {
      executablePath = findChromium(config.CHROMIUM_PATH);
    }
    if (!executablePath) return undefined;
  }
  // One pool for the local browser, or one per browser service listed; several are
  // spread over (SpreadScreenshotter), sharing one ad engine.
  // Built engines are cached on disk, where there is one to write (not with memory scratch).
  const filterEngines = new FilterEngines(
    config.SCRATCH === "memory" ? undefined : join(config.DATA_DIR, "cache"),
  );
  const endpoints = config.BROWSER_ENDPOINTS.length
    ? config.BROWSER_ENDPOINTS
    : [undefined];
  const pool = (wsEndpoint: string | undefined, concurrency: number) =>
    new ChromiumScreenshotter({
      executablePath,
      wsEndpoint,
      browserToken: config.BROWSER_TOKEN,
      concurrency,
      perOwner: config.SCREENSHOT_PER_KEY,
      queueMax: config.SCREENSHOT_QUEUE,
      maxPdfPages: config.SCREENSHOT_PDF_MAX_PAGES,
      recycleAfter: config.SCREENSHOT_RECYCLE_AFTER,
      timeoutMs: config.SCREENSHOT_TIMEOUT_MS,
      maxPixels: Math.min(
        config.MAX_IMAGE_PIXELS,
        config.SCREENSHOT_MAX_PIXELS,
      ),
      allowRules: allowRulesOf(config),
      proxyListen: config.SCREENSHOT_PROXY_LISTEN,
      proxyAdvertise: config.SCREENSHOT_PROXY_ADVERTISE,
      // A built ad engine is kept here, so only the first start pays for building it.
      filterEngines,
      home: resolve(config.DATA_DIR),
      log,
    });
  const pools = endpoints.map((e) => pool(e, config.SCREENSHOT_CONCURRENCY));
  const shooter = pools.length > 1
    ? new (await import("../services/screenshots/spread.ts"))
      .SpreadScreenshotter(pools)
    : config.SCREENSHOT_HEAVY_LANE === "on" && !config.BROWSER_ENDPOINTS.length
    // A local browser: heavy captures in a second one, one at a time (lanes.ts).
    ? new LaneScreenshotter(
      pools[0],
      pool(undefined, 1),
      config.SCREENSHOT_HEAVY_PIXELS,
    )
    : pools[0];
  // Started, not awaited here: a first capture waits for this same launch. A failed start
  // is logged, not fatal: the next capture tries again.
  warming.set(shooter, shooter.start().catch(() => {}));
  return shooter;
}

/**
 * What is wrong with an explicit CHROMIUM_PATH, when screenshots would use it: a path that
 * names no executable file must stop start-up with a message, not be passed over for the
 * system's Chromium.
 */
export function chromiumPathProblem(config: Config): string | undefined {
  const path = config.CHROMIUM_PATH;
  if (!path || config.SCREENSHOTS === "off" || config.BROWSER_WS_ENDPOINT) {
    return undefined;
  }
  try {
    const st = Deno.statSync(path);
    if (st.isFile && (st.mode === null || (st.mode & 0o111) !== 0)) {
      return undefined;
    }
    return `CHROMIUM_PATH: "${path}" is not an executable file`;
  } catch {
    return `CHROMIUM_PATH: no file at "${path}" (unset it to use the system's Chromium)`;
  }
}

/**
 * Composition root shared by main.ts and the operator scripts: database (migrated), store
 * and, when a browser can be had, the screenshotter.
 */
export async function buildRuntime(
  config: Config,
  log: Logger,
  opts: { pgliteDir: string; screenshots?: boolean },
): Promise<{ deps: Omit<AppDeps, "clock">; close(): Promise<void> }> {
  const shooting = opts.screenshots === false
    ? Promise.resolve(undefined)
    : openScreenshotter(config, log);
  try {
    if (!config.DATABASE_URL) {
      // PGlite's open holds this thread for ~0.5 s of WebAssembly, during which the
      // browser's DevTools handshake and its first page cannot move: they go first (for
      // at most 5 s), which made the first image ~0.6 s sooner than starting both at once.
      // PostgreSQL opens without holding the thread, so it opens beside the browser.
      await firstOf(
        shooting.then((s) => s && warming.get(s)).catch(() => {}),
        5000,
      );
    }
    return await buildRest(config, log, opts, shooting);
  } catch (e) {
    await (await shooting.catch(() => undefined))?.close();
    throw e;
  }
}

/** Resolves when `p` settles or after `ms`, whichever is first. */
async function firstOf(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p,
    new Promise((r) => timer = setTimeout(r, ms)),
  ]);
  clearTimeout(timer);
}

/**
 * The database, migrated. PostgreSQL may come up after us (a compose start, a restart of
 * both): it is waited for rather than died of, saying so every few seconds.
 */
async function openMigrated(
  config: Config,
  log: Logger,
  opts: { pgliteDir: string },
): Promise<Database> {
  const database = await openDatabase(
    config.DATABASE_URL
      ? {
        url: config.DATABASE_URL,
        timeouts: postgresTimeouts(config),
        log: log.error,
      }
      : { dataDir: opts.pgliteDir },
  );
  for (let attempt = 1;; attempt++) {
    try {
      const applied = await migrate(database.db);
      log.info({
        msg: "database ready",
        // Since the process started: what a cold start spends where.
        uptime_ms: Math.round(performance.now()),
        kind: database.kind,
        migrations_applied: applied,
      });
      return database;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 250) || attempt >= 150) {
        await database.close();
        throw e;
      }
      log.error({ msg: "database not reachable yet; retrying", attempt });
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

async function buildRest(
  config: Config,
  log: Logger,
  opts: { pgliteDir: string },
  shooting: Promise<Screenshotter | undefined>,
): Promise<{ deps: Omit<AppDeps, "clock">; close(): Promise<void> }> {
  // Beside the database's start, not after it: the store's first request (an S3 bucket's
  // check) waits on the network. The image engine starts after listening (main.ts).
  const storing = openStore(config);
  let database: Database;
  try {
    database = await openMigrated(config, log, opts);
  } catch (e) {
    // The store opened meanwhile is closed too: nothing of a failed start is left open.
    await (await storing.catch(() => undefined))?.close?.();
    throw e;
  }
  const store = await storing.catch(async (e) => {
    await database.close();
    throw e;
  });
  await new ImagePipeline({ config, database, store, clock: systemClock })
    .init();
  // Which libvips runs (native, or WebAssembly where native code is refused) and how
  // image work is spread over it: the first thing to read when uploads are slow.
  const engine = imageEngine();
  log.info({
    msg: "image engine",
    engine,
    workers: config.IMAGE_WORKERS,
    threads_per_image: engineThreads(engine, config.IMAGE_THREADS),
  });
  const screenshotter = await shooting;
  // Expired images: rows are hidden at once by their expiry; this removes their bytes.
  const sweeper = setInterval(() => {
    Promise.all([
      sweepExpired(database.db, store, systemClock),
      sweepRateLimits(database.db, systemClock),
      sweepShotCache(database.db, systemClock),
      sweepGuests(database.db, systemClock, config.GUEST_EXPIRATION),
    ]).catch((e) => log.error({ msg: "sweep failed", error: String(e) }));
  }, 60_000);
  // Crash leftovers (bytes with no row): a full listing of the store, so once an hour.
  const orphanSweeper = setInterval(() => {
    sweepOrphans(database.db, store, systemClock, config.ORPHAN_GRACE_S)
      .then((keys) =>
        keys.length && log.info({ msg: "orphans removed", count: keys.length })
      )
      .catch((e) =>
        log.error({ msg: "orphan sweep failed", error: String(e) })
      );
    // Made variants past IMAGE_VARIANTS_MB: the oldest go (made again when asked for).
    trimVariants(database.db, store, config.IMAGE_VARIANTS_MB * 1024 * 1024)
      .then((keys) =>
        keys.length && log.info({ msg: "variants trimmed", count: keys.length })
      )
      .catch((e) =>
        log.error({ msg: "variant trim failed", error: String(e) })
      );
    // Rows whose bytes are gone, from the last two hours (each is looked at twice).
    sweepMissing(database.db, store, systemClock, {
      windowS: 7200,
      graceS: 60,
    })
      .then((ids) =>
        ids.length &&
        log.error({ msg: "records without their bytes removed", ids })
      )
      .catch((e) =>
        log.error({ msg: "missing-bytes sweep failed", error: String(e) })
      );
  }, 3_600_000);
  return {
    deps: { config, database, store, log, screenshotter },
    async close() {
      clearInterval(sweeper);
      clearInterval(orphanSweeper);
      await screenshotter?.close();
      await store.close?.();
      await database.close();
    },
  };
}

/**
 * The start-up line for people: where to open the site and where the server listens.
 * With BASE_URL set, that address (the links use it). Unset, the links follow whatever
 * address a request came to, so the line names one that reaches this listener (a
 * wildcard listener as localhost) and says to set BASE_URL for production.
 */
export function startupLine(
  config: Pick<Config, "BASE_URL" | "BASE_URL_SET" | "IMAGE_HOST_URL_SET">,
  hostname: string,
  port: number,
): string {
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  const listen = `http://${host}:${port}`;
  if (!config.BASE_URL_SET) {
    const wildcard = hostname === "0.0.0.0" || hostname === "::";
    const open = wildcard ? `http://localhost:${port}` : listen;
    return `Image host is up: open ${open}/ (API docs: ${open}/docs). ` +
      "Links follow the address each request is sent to; in production set BASE_URL" +
      (config.IMAGE_HOST_URL_SET ? "" : " (and IMAGE_HOST_URL for a CDN)") +
      " to the public address.";
  }
  const base = config.BASE_URL.replace(/\/+$/, "");
  return `Image host is up: open ${base}/ (API docs: ${base}/docs)` +
    (new URL(base).port === String(port) ? "" : `; listening on ${listen}`);
}
