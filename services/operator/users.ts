import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import { announceAuthChange } from "../accounts/api_keys.ts";
import { deleteImage } from "../images/records.ts";
import { monthOf } from "../accounts/quotas.ts";
import { type Actor, recordAudit } from "./audit.ts";
import type { Role } from "./roles.ts";

/** One account as the operator's list shows it. */
export interface UserSummary {
  id: string;
  email: string;
  role: Role;
  /** `active` or `disabled`. */
  state: "active" | "disabled";
  created: number;
  images: number;
  bytes: number;
  screenshots_this_month: number;
  /** The newest upload, key use or sign-in (Unix seconds), or null. */
  last_active: number | null;
  quota: {
    storage_mb: number | null;
    images: number | null;
    screenshots_per_month: number | null;
  };
}

const seconds = (d: Date | string | null) =>
  d ? Math.floor(new Date(d).getTime() / 1000) : null;

/**
 * A page of accounts (guests left out), newest first, narrowed by a piece of their e-mail
 * or their id, with what each stores and did. The figures are subqueries on indexed
 * columns per listed account, so a page costs its own accounts only.
 */
export async function listUsers(
  db: Kysely<DB>,
  clock: Clock,
  opts: {
    page: number;
    perPage: number;
    q?: string;
    state?: string;
    /** Exactly this account (an admin's edit answers with it). */
    id?: string;
  },
): Promise<{ users: UserSummary[]; total: number }> {
  const month = monthOf(clock.now());
  let q = db.selectFrom("users as u").where("u.deleted_at", "is", null)
    .where("u.guest_token_hash", "is", null);
  const text = opts.q?.trim().toLowerCase();
  if (text) {
    const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((eb) =>
      eb.or([
        eb(sql<string>`lower(u.email)`, "like", like),
        eb("u.id", "=", opts.q!.trim()),
      ])
    );
  }
  if (opts.id) q = q.where("u.id", "=", opts.id);
  if (opts.state === "disabled") q = q.where("u.disabled_at", "is not", null);
  if (opts.state === "active") q = q.where("u.disabled_at", "is", null);
  if (opts.state === "admin") q = q.where("u.role", "=", "admin");
  const [rows, count] = await Promise.all([
    q.select([
      "u.id",
      "u.email",
      "u.role",
      "u.created_at",
      "u.disabled_at",
      "u.quota_storage_mb",
      "u.quota_images",
      "u.quota_screenshots",
      sql<string>`(select count(*) from images i
        where i.user_id = u.id and i.deleted_at is null)`.as("images"),
      sql<string>`(select coalesce(sum(i.size), 0) from images i
        where i.user_id = u.id and i.deleted_at is null)`.as("bytes"),
      sql<number | null>`(select s.count from screenshot_usage s
        where s.user_id = u.id and s.month = ${month})`.as("shots"),
      sql<Date | null>`greatest(
        (select max(i.created_at) from images i where i.user_id = u.id),
        (select max(k.last_used_at) from api_keys k where k.user_id = u.id),
        (select max(s.created_at) from sessions s where s.user_id = u.id))`
        .as("last_active"),
    ]).orderBy("u.created_at", "desc").orderBy("u.id")
      .limit(opts.perPage).offset((opts.page - 1) * opts.perPage).execute(),
    q.select((eb) => eb.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    users: rows.map((r) => ({
      id: r.id,
      email: r.email,
      role: r.role === "admin" ? "admin" : "user",
      state: r.disabled_at ? "disabled" : "active",
      created: seconds(r.created_at)!,
      images: Number(r.images),
      bytes: Number(r.bytes),
      screenshots_this_month: Number(r.shots ?? 0),
      last_active: seconds(r.last_active),
      quota: {
        storage_mb: r.quota_storage_mb,
        images: r.quota_images,
        screenshots_per_month: r.quota_screenshots,
      },
    })),
    total: Number(count.n),
  };
}

/** The account an admin acts on: live, not a guest; 404 otherwise. */
async function targetOf(db: Kysely<DB>, userId: string) {
  const row = await db.selectFrom("users").select(["id", "email", "role"])
    .where("id", "=", userId).where("deleted_at", "is", null)
    .where("guest_token_hash", "is", null).executeTakeFirst();
  if (!row) throw new ApiError(404);
  return row;
}

/** An admin may not lock themselves out: their own account is refused (160). */
function notSelf(actor: Actor, userId: string, what: string) {
  if (actor.id === userId) {
    throw invalidField("id", `an admin cannot ${what} themselves`);
  }
}

/**
 * Disables an account (its sessions end, its keys are refused on every instance within
 * the key cache's bound, so its uploads and captures are refused; its images stay online
 * until taken down or deleted) or enables it again.
 */
export async function setDisabled(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  userId: string,
  disabled: boolean,
  action = disabled ? "user.disable" : "user.enable",
): Promise<void> {
  if (disabled) notSelf(actor, userId, "disable");
  await targetOf(db, userId);
  await db.transaction().execute(async (tx) => {
    await tx.updateTable("users")
      .set({ disabled_at: disabled ? clock.now() : null })
      .where("id", "=", userId).execute();
    if (disabled) {
      await tx.deleteFrom("sessions").where("user_id", "=", userId).execute();
    }
    await recordAudit(tx, clock, actor, action, userId);
  });
  await announceAuthChange(db);
}

/** What an admin may change of an account's limits and role. */
export interface UserPatch {
  role?: Role;
  /** null: back to the instance default; 0: no limit. */
  quota_storage_mb?: number | null;
  quota_images?: number | null;
  quota_screenshots?: number | null;
}

/** Changes an account's role and quota overrides, recorded in the audit log. */
export async function patchUser(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  userId: string,
  patch: UserPatch,
): Promise<void> {
  if (patch.role === "user") notSelf(actor, userId, "demote");
  await targetOf(db, userId);
  const set = Object.fromEntries(
    Object.entries(patch).filter(([, v]) => v !== undefined),
  ) as UserPatch;
  if (!Object.keys(set).length) return;
  await db.transaction().execute(async (tx) => {
    await tx.updateTable("users").set(set).where("id", "=", userId).execute();
    await recordAudit(tx, clock, actor, "user.update", userId, { ...set });
  });
}

/**
 * Deletes an account with everything it stored: each image as the owner's own delete
 * does it (files 404 at once everywhere; original, fixed and made variants leave the
 * store), its albums, its keys (refused at once) and sessions.
 */
export async function deleteUserWithImages(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  actor: Actor,
  userId: string,
): Promise<{ user_id: string; images_deleted: number }> {
  notSelf(actor, userId, "delete");
  await targetOf(db, userId);
  // Refused from now on: no upload lands while its images are being removed.
  await db.updateTable("users").set({ disabled_at: clock.now() })
    .where("id", "=", userId).execute();
  await announceAuthChange(db);
  let count = 0;
  for (;;) {
    const rows = await db.selectFrom("images").selectAll()
      .where("user_id", "=", userId).where("deleted_at", "is", null)
      .limit(200).execute();
    if (!rows.length) break;
    for (const row of rows) {
      await deleteImage(db, store, row, clock);
      count++;
    }
  }
  await db.transaction().execute(async (tx) => {
    await tx.updateTable("images").set({ album_id: null })
      .where("user_id", "=", userId).execute();
    await tx.deleteFrom("albums").where("user_id", "=", userId).execute();
    await tx.deleteFrom("sessions").where("user_id", "=", userId).execute();
    await tx.updateTable("api_keys").set({ revoked_at: clock.now() })
      .where("user_id", "=", userId).where("revoked_at", "is", null).execute();
    await tx.updateTable("users").set({ deleted_at: clock.now() })
      .where("id", "=", userId).execute();
    await recordAudit(tx, clock, actor, "user.delete", userId, {
      images_deleted: count,
    });
  });
  await announceAuthChange(db);
  return { user_id: userId, images_deleted: count };
}

/** One image as the operator's list shows it: with its owner. */
export interface AdminImage {
  id: string;
  title: string;
  owner_id: string;
  owner_email: string;
  ext: string;
  /** The thumbnail's extension (its format may differ from the original's). */
  thumb_ext: string | null;
  size: number;
  width: number;
  height: number;
  privacy: string;
  source: string;
  time: number;
}

/** A page of every account's live images, newest first (optionally one owner's). */
export async function listAllImages(
  db: Kysely<DB>,
  opts: { page: number; perPage: number; owner?: string },
): Promise<{ images: AdminImage[]; total: number }> {
  let q = db.selectFrom("images as i").innerJoin(
    "users as u",
    "u.id",
    "i.user_id",
  )
    .where("i.deleted_at", "is", null);
  if (opts.owner) q = q.where("i.user_id", "=", opts.owner);
  const [rows, count] = await Promise.all([
    q.select([
      "i.id",
      "i.title",
      "i.user_id",
      "u.email",
      "i.ext",
      "i.thumb_ext",
      "i.size",
      "i.width",
      "i.height",
      "i.privacy",
      "i.source",
      "i.created_at",
    ]).orderBy("i.created_at", "desc").orderBy("i.id", "desc")
      .limit(opts.perPage).offset((opts.page - 1) * opts.perPage).execute(),
    q.select((eb) => eb.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    images: rows.map((r) => ({
      id: r.id,
      title: r.title,
      owner_id: r.user_id,
      owner_email: r.email,
      ext: r.ext,
      thumb_ext: r.thumb_ext,
      size: Number(r.size),
      width: r.width,
      height: r.height,
      privacy: r.privacy,
      source: r.source,
      time: seconds(r.created_at)!,
    })),
    total: Number(count.n),
  };
}

/** The instance at a glance, for the top of /admin. */
export interface Totals {
  users: number;
  disabled_users: number;
  images: number;
  bytes: number;
  taken_down: number;
  open_reports: number;
  screenshots_this_month: number;
}

/** Counts for the console's header. */
export async function totals(db: Kysely<DB>, clock: Clock): Promise<Totals> {
  const r = await sql<Record<keyof Totals, string>>`select
    (select count(*) from users where deleted_at is null
      and guest_token_hash is null) as users,
    (select count(*) from users where deleted_at is null
      and guest_token_hash is null and disabled_at is not null) as disabled_users,
    (select count(*) from images where deleted_at is null) as images,
    (select coalesce(sum(size), 0) from images where deleted_at is null) as bytes,
    (select count(*) from images where taken_down_at is not null) as taken_down,
    (select count(*) from reports where state = 'open') as open_reports,
    (select coalesce(sum(count), 0) from screenshot_usage
      where month = ${monthOf(clock.now())}) as screenshots_this_month`
    .execute(db);
  const row = r.rows[0];
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, Number(v)]),
  ) as unknown as Totals;
}
