import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";
import { randomToken, sha256Hex } from "../accounts/crypto.ts";
import { type Actor, recordAudit } from "./audit.ts";
import { REPORT_REASONS, type ReportReason } from "../../schemas/operator.ts";

/** One report as the admin's queue shows it (never who sent it). */
export interface ReportView {
  id: string;
  image_id: string;
  reason: ReportReason;
  note: string;
  state: "open" | "dismissed" | "taken_down";
  time: number;
  /** The image's owner and title while the image is live (null once it is gone). */
  image: { owner_id: string; owner_email: string; title: string } | null;
  /** Other open reports of the same image. */
  others: number;
}

/**
 * Files a report of a live, visible image (404 for anything a stranger may not see, so a
 * report says nothing of private images). The reporter is kept only as a salted hash of
 * its address, for telling repeat reports apart; the owner never sees it, nor anyone.
 * One address reporting one image twice while the first is open files nothing new.
 */
export async function fileReport(
  db: Kysely<DB>,
  clock: Clock,
  input: { image_id: string; reason: ReportReason; note?: string },
  address: string,
): Promise<{ id: string }> {
  const image = await db.selectFrom("images").select(["id", "privacy"])
    .where("id", "=", input.image_id).where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!image || image.privacy === "private") throw new ApiError(404);
  const reporter = sha256Hex(`report:${input.image_id}:${address}`);
  const open = await db.selectFrom("reports").select("id")
    .where("image_id", "=", input.image_id)
    .where("reporter_hash", "=", reporter).where("state", "=", "open")
    .executeTakeFirst();
  if (open) return { id: open.id };
  const id = randomToken(9);
  await db.insertInto("reports").values({
    id,
    image_id: input.image_id,
    reason: input.reason,
    note: (input.note ?? "").slice(0, 1000),
    reporter_hash: reporter,
    created_at: clock.now(),
  }).execute();
  return { id };
}

/** A page of reports, oldest open first (the queue), or of one state newest first. */
export async function listReports(
  db: Kysely<DB>,
  opts: { page: number; perPage: number; state: string },
): Promise<{ reports: ReportView[]; total: number }> {
  let q = db.selectFrom("reports as r")
    .leftJoin(
      "images as i",
      (j) => j.onRef("i.id", "=", "r.image_id").on("i.deleted_at", "is", null),
    )
    .leftJoin("users as u", "u.id", "i.user_id");
  if (opts.state !== "all") q = q.where("r.state", "=", opts.state);
  const dir = opts.state === "open" ? "asc" : "desc";
  const [rows, count] = await Promise.all([
    q.select([
      "r.id",
      "r.image_id",
      "r.reason",
      "r.note",
      "r.state",
      "r.created_at",
      "i.title",
      "i.user_id",
      "u.email",
    ]).select((eb) =>
      eb.selectFrom("reports as o").select(eb.fn.countAll<string>().as("n"))
        .whereRef("o.image_id", "=", "r.image_id").where("o.state", "=", "open")
        .whereRef("o.id", "!=", "r.id").as("others")
    ).orderBy("r.created_at", dir).orderBy("r.id", dir)
      .limit(opts.perPage).offset((opts.page - 1) * opts.perPage).execute(),
    q.select((eb) => eb.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow(),
  ]);
  return {
    reports: rows.map((r) => ({
      id: r.id,
      image_id: r.image_id,
      reason: (REPORT_REASONS as readonly string[]).includes(r.reason)
        ? r.reason as ReportReason
        : "other",
      note: r.note,
      state: r.state as ReportView["state"],
      time: Math.floor(new Date(r.created_at).getTime() / 1000),
      image: r.user_id
        ? {
          owner_id: r.user_id,
          owner_email: r.email ?? "",
          title: r.title ?? "",
        }
        : null,
      others: Number(r.others ?? 0),
    })),
    total: Number(count.n),
  };
}

/** Dismisses an open report (the image stays); recorded in the audit log. */
export async function dismissReport(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  id: string,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const done = await tx.updateTable("reports")
      .set({
        state: "dismissed",
        resolved_at: clock.now(),
        resolved_by: actor.id,
      })
      .where("id", "=", id).where("state", "=", "open").executeTakeFirst();
    if (!Number(done.numUpdatedRows)) throw new ApiError(404);
    await recordAudit(tx, clock, actor, "report.dismiss", id);
  });
}

/** The image a report is about (404 for an unknown report). */
export async function reportedImage(
  db: Kysely<DB>,
  id: string,
): Promise<string> {
  const row = await db.selectFrom("reports").select("image_id")
    .where("id", "=", id).executeTakeFirst();
  if (!row) throw new ApiError(404);
  return row.image_id;
}
