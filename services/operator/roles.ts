import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";

/** An account's role: admins run the service (/admin, /api/1/admin/…), users use it. */
export type Role = "admin" | "user";

/**
 * The admin behind a user id, or null: the account must exist, be neither deleted nor
 * disabled, and carry the admin role. Read from the database at every call (no cache),
 * so a role taken away or an account disabled is refused at once on every instance.
 */
export async function adminOf(
  db: Kysely<DB>,
  userId: string | undefined,
): Promise<{ id: string; email: string } | null> {
  if (!userId) return null;
  const row = await db.selectFrom("users").select(["id", "email", "role"])
    .where("id", "=", userId).where("deleted_at", "is", null)
    .where("disabled_at", "is", null).executeTakeFirst();
  return row?.role === "admin" ? { id: row.id, email: row.email } : null;
}
