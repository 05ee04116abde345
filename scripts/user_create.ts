/**
 * Creates a user without a browser and prints an API key for it.
 * Usage: deno task user:create [--admin] <email> [password]
 * (a random password is printed if omitted; --admin makes an operator: /admin and the
 * admin API answer that account).
 */
import { createUser } from "../services/accounts/accounts.ts";
import { createApiKey } from "../services/accounts/api_keys.ts";
import { randomToken } from "../services/accounts/crypto.ts";
import { withDatabase } from "./operator.ts";

const admin = Deno.args.includes("--admin");
const [email, given] = Deno.args.filter((a) => a !== "--admin");
if (!email || email.startsWith("-")) {
  console.error("usage: deno task user:create [--admin] <email> [password]");
  Deno.exit(2);
}
await withDatabase(async (db) => {
  const password = given ?? randomToken(12);
  const user = await createUser(db, email, password, admin ? "admin" : "user");
  const { key } = await createApiKey(db, user.id, "cli");
  console.log(JSON.stringify({
    user_id: user.id,
    email: user.email,
    role: user.role,
    ...(given ? {} : { password }),
    api_key: key,
  }));
});
