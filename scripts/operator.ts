import { join } from "node:path";
import type { Kysely } from "kysely";
import { ConfigError, loadConfig } from "../schemas/config.ts";
import type { DB } from "../services/db/schema.ts";
import { jsonLogger } from "../services/runtime/logger.ts";
import { buildRuntime } from "../server/composition.ts";

/**
 * Runs an operator command against the configured database (migrated, no browser, quiet
 * logs): prints its error message and exits 1 on failure, closes the database either way.
 */
export async function withDatabase(
  work: (db: Kysely<DB>) => Promise<void>,
): Promise<void> {
  try {
    const config = loadConfig(Deno.env.toObject());
    const rt = await buildRuntime(config, { ...jsonLogger, info: () => {} }, {
      pgliteDir: join(config.DATA_DIR, "pgdata"),
      screenshots: false,
    });
    try {
      await work(rt.deps.database.db);
    } finally {
      await rt.close();
    }
  } catch (e) {
    console.error(
      e instanceof ConfigError || e instanceof Error ? e.message : String(e),
    );
    Deno.exitCode = 1;
  }
}
