/**
 * Creates a user without a browser and prints an API key for it.
 * Usage: deno task user:create <email> [password]   (a random password is printed if omitted)
 */
import { loadConfig } from "../schemas/config.ts";
import { jsonLogger } from "../services/deps.ts";
import { buildRuntime } from "../services/runtime.ts";
import { createUser } from "../services/accounts.ts";
import { createApiKey } from "../services/api_keys.ts";
import { randomToken } from "../services/crypto.ts";
import { join } from "node:path";

const [email, given] = Deno.args;
if (!email) {
  console.error("usage: deno task user:create <email> [password]");
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
  const password = given ?? randomToken(12);
  const user = await createUser(rt.deps.database.db, email, password);
  const { key } = await createApiKey(rt.deps.database.db, user.id, "cli");
  console.log(
    JSON.stringify({
      user_id: user.id,
      email: user.email,
      ...(given ? {} : { password }),
      api_key: key,
    }),
  );
} catch (e) {
  console.error((e as Error).message);
  Deno.exitCode = 1;
} finally {
  await rt.close();
}
