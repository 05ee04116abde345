/**
 * Creates a user without a browser and prints an API key for it.
 * Usage: deno task user:create <email> [password]   (a random password is printed if omitted)
 */
import { createUser } from "../services/accounts/accounts.ts";
import { createApiKey } from "../services/accounts/api_keys.ts";
import { randomToken } from "../services/accounts/crypto.ts";
import { withDatabase } from "./operator.ts";

const [email, given] = Deno.args;
if (!email) {
  console.error("usage: deno task user:create <email> [password]");
  Deno.exit(2);
}
await withDatabase(async (db) => {
  const password = given ?? randomToken(12);
  const user = await createUser(db, email, password);
  const { key } = await createApiKey(db, user.id, "cli");
  console.log(JSON.stringify({
    user_id: user.id,
    email: user.email,
    ...(given ? {} : { password }),
    api_key: key,
  }));
});
