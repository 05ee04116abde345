/**
 * services/operator/ — what an admin does to run the service in public: the audit log
 * (this file), accounts (users.ts), takedown and bans (takedown.ts), reports (reports.ts)
 * and invitations (invites.ts). Routes check the role (roles.ts) before any of it runs.
 */
import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";

/** The admin who acts, and from where: every admin action is recorded with these. */
export interface Actor {
  id: string;
  email: string;
  /** The client address the action came from ("" when not over HTTP, e.g. a CLI). */
  address: string;
}

/** One line of the audit log as the API and /admin list it. */
export interface AuditEntry {
  id: number;
  actor_id: string;
  actor_email: string;
  action: string;
  target: string;
  details: string;
  address: string;
  time: number;
}

/**
 * Records one admin action. Called inside the action's own transaction where it has one,
 * so an action is never done without its line, nor a line written for an undone action.
 */
export async function recordAudit(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  action: string,
  target: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await db.insertInto("audit_log").values({
    actor_id: actor.id,
    actor_email: actor.email,
    action,
    target,
    details: Object.keys(details).length ? JSON.stringify(details) : "",
    address: actor.address.slice(0, 100),
    at: clock.now(),
  }).execute();
}

/** A page of the audit log, newest first, optionally one action's or one target's. */
export async function listAudit(
  db: Kysely<DB>,
  opts: { page: number; perPage: number; action?: string; target?: string },
): Promise<{ entries: AuditEntry[]; total: number }> {
  let q = db.selectFrom("audit_log");
  if (opts.action) q = q.where("action", "=", opts.action);
  if (opts.target) q = q.where("target", "=", opts.target);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy("at", "desc").orderBy("id", "desc")
      .limit(opts.perPage).offset((opts.page - 1) * opts.perPage).execute(),
    q.select((eb) => eb.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    entries: rows.map((r) => ({
      id: Number(r.id),
      actor_id: r.actor_id,
      actor_email: r.actor_email,
      action: r.action,
      target: r.target,
      details: r.details,
      address: r.address,
      time: Math.floor(new Date(r.at).getTime() / 1000),
    })),
    total: Number(count.n),
  };
}
