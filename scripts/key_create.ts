/**
 * Prints a new API key for an existing user.
 * Usage: deno task key:create <email> [label]
 */
import { sql } from "kysely";
import { join } from "node:path";
import { loadConfig } from "../schemas/config.ts";
import { jsonLogger } from "../services/deps.ts";
import { buildRuntime } from "../services/runtime.ts";
import { createApiKey } from "../services/api_keys.ts";

const [email, label = "cli"] = Deno.args;
if (!email) {
  console.error("usage: deno task key:create <email> [label]");
  Deno.exit(2);
}
const config = loadConfig(Deno.env.toObject());
const rt = await buildRuntime(config, { ...jsonLogger, info: () => {} }, {
  pgliteDir: join(config.DATA_DIR, "pgdata"),
  screenshots: false,
}).catch((e) => {
  console.error((e as Error).message);
  Deno.exit(1);
});
try {
  const db = rt.deps.database.db;
  const user = await db.selectFrom("users").select("id").where(
    sql`lower(email)`,
    "=",
    email.toLowerCase(),
  )
    .where("deleted_at", "is", null).executeTakeFirst();
  if (!user) throw new Error(`no user with e-mail ${email}`);
  const { key } = await createApiKey(db, user.id, label);
  console.log(key);
} catch (e) {
  console.error((e as Error).message);
  Deno.exitCode = 1;
} finally {
  await rt.close();
}
