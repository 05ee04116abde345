import { join } from "node:path";
import type { Config } from "../schemas/config.ts";
import { migrate, openDatabase } from "./db/database.ts";
import type { AppDeps, Logger } from "./deps.ts";
import type { BlobStore } from "./store/blob_store.ts";
import { FsStore } from "./store/fs_store.ts";
import { S3Store } from "./store/s3_store.ts";
import { ChromiumScreenshotter, findChromium } from "./screenshots/chromium.ts";
import { parseAllowList } from "./screenshots/address_guard.ts";
import type { Screenshotter } from "./screenshots/screenshotter.ts";
import { ImagePipeline } from "./image_pipeline.ts";
import { sweepExpired } from "./images.ts";
import { sweepRateLimits } from "./rate_limit.ts";
import { systemClock } from "./deps.ts";

/** Chooses and opens the store named by the config. */
export async function openStore(config: Config): Promise<BlobStore> {
  if (config.STORE === "s3") {
    return new S3Store({
      endpoint: config.S3_ENDPOINT!,
      bucket: config.S3_BUCKET!,
      region: config.S3_REGION,
      accessKeyId: config.S3_ACCESS_KEY_ID ?? "",
      secretAccessKey: config.S3_SECRET_ACCESS_KEY ?? "",
    });
  }
  return await new FsStore(join(config.DATA_DIR, "images")).init();
}

/**
 * The screenshotter for this config: a remote browser, a local Chromium, or none (logged;
 * screenshot calls then answer 240).
 */
export async function openScreenshotter(
  config: Config,
  log: Logger,
): Promise<Screenshotter | undefined> {
  const executablePath = config.BROWSER_WS_ENDPOINT
    ? undefined
    : findChromium(config.CHROMIUM_PATH);
  if (!config.BROWSER_WS_ENDPOINT && !executablePath) {
    log.info({
      msg:
        "screenshots disabled: no Chromium found (apt-get install chromium, or set CHROMIUM_PATH or BROWSER_WS_ENDPOINT)",
    });
    return undefined;
  }
  const shooter = new ChromiumScreenshotter({
    executablePath,
    wsEndpoint: config.BROWSER_WS_ENDPOINT,
    concurrency: config.SCREENSHOT_CONCURRENCY,
    queueMax: config.SCREENSHOT_QUEUE,
    recycleAfter: config.SCREENSHOT_RECYCLE_AFTER,
    timeoutMs: config.SCREENSHOT_TIMEOUT_MS,
    allowRules: parseAllowList(config.SCREENSHOT_ALLOW_PRIVATE),
    log,
  });
  // A failed first start is logged, not fatal: the next capture tries again.
  await shooter.start().catch(() => {});
  return shooter;
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
  const database = await openDatabase(
    config.DATABASE_URL
      ? { url: config.DATABASE_URL }
      : { dataDir: opts.pgliteDir },
  );
  const applied = await migrate(database.db);
  log.info({
    msg: "database ready",
    kind: database.kind,
    migrations_applied: applied,
  });
  const store = await openStore(config);
  await new ImagePipeline({ config, database, store, clock: systemClock })
    .init();
  const screenshotter = opts.screenshots === false
    ? undefined
    : await openScreenshotter(config, log);
  // Expired images: rows are hidden at once by their expiry; this removes their bytes.
  const sweeper = setInterval(() => {
    Promise.all([
      sweepExpired(database.db, store, systemClock),
      sweepRateLimits(database.db, systemClock),
    ]).catch((e) => log.error({ msg: "sweep failed", error: String(e) }));
  }, 60_000);
  return {
    deps: { config, database, store, log, screenshotter },
    async close() {
      clearInterval(sweeper);
      await screenshotter?.close();
      await store.close?.();
      await database.close();
    },
  };
}
