import { join } from "node:path";
import type { Config } from "../schemas/config.ts";
import { migrate, openDatabase } from "./db/database.ts";
import type { AppDeps, Logger } from "./deps.ts";
import type { BlobStore } from "./store/blob_store.ts";
import { FsStore } from "./store/fs_store.ts";
import { S3Store } from "./store/s3_store.ts";

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
  return {
    deps: { config, database, store, log },
    async close() {
      await store.close?.();
      await database.close();
    },
  };
}
