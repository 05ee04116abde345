/**
 * Prints a new API key for an existing user.
 * Usage: deno task key:create <email> [label]
 */
import { sql } from "kysely";
import { createApiKey } from "../services/accounts/api_keys.ts";
import { withDatabase } from "./operator.ts";

const [email, label = "cli"] = Deno.args;
if (!email) {
  console.error("usage: deno task key:create <email> [label]");
  Deno.exit(2);
}
await withDatabase(async (db) => {
  const user = await db.selectFrom("users").select("id")
    .where(sql`lower(email)`, "=", email.toLowerCase())
    .where("deleted_at", "is", null).executeTakeFirst();
  if (!user) throw new Error(`no user with e-mail ${email}`);
  const { key } = await createApiKey(db, user.id, label);
  console.log(key);
});
