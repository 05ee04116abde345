import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import { ApiError } from "../../schemas/errors.ts";
import { randomToken, sha256Hex } from "../accounts/crypto.ts";
import { type Actor, recordAudit } from "./audit.ts";

/** One invitation as the admin lists it (the token itself is shown once, at creation). */
export interface InviteView {
  id: string;
  max_uses: number;
  uses: number;
  /** Unix seconds, or null for none. */
  expires: number | null;
  created: number;
  created_by: string;
  /** `active`, `used` (every use taken), `expired` or `revoked`. */
  state: "active" | "used" | "expired" | "revoked";
}

/** Why an invite was refused, for the sign-up page and the 181 answer. */
export class InviteRefused extends Error {}

/** The columns an invitation's view is made of. */
const INVITE_COLUMNS = [
  "id",
  "max_uses",
  "uses",
  "expires_at",
  "revoked_at",
  "created_at",
  "created_by",
] as const;

type InviteRow = {
  id: string;
  max_uses: number;
  uses: number;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  created_by: string;
};

function stateOf(r: InviteRow, now: Date): InviteView["state"] {
  if (r.revoked_at) return "revoked";
  if (r.uses >= r.max_uses) return "used";
  if (r.expires_at && new Date(r.expires_at) <= now) return "expired";
  return "active";
}

function viewOf(r: InviteRow, now: Date): InviteView {
  const s = (d: Date) => Math.floor(new Date(d).getTime() / 1000);
  return {
    id: r.id,
    max_uses: r.max_uses,
    uses: r.uses,
    expires: r.expires_at ? s(r.expires_at) : null,
    created: s(r.created_at),
    created_by: r.created_by,
    state: stateOf(r, now),
  };
}

/** Makes an invitation; returns it with its token (shown once, stored only hashed). */
export async function createInvite(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  opts: { max_uses: number; expires_in?: number },
): Promise<InviteView & { token: string }> {
  const token = randomToken(18);
  const now = clock.now();
  const row: InviteRow = {
    id: randomToken(6),
    max_uses: opts.max_uses,
    uses: 0,
    expires_at: opts.expires_in
      ? new Date(now.getTime() + opts.expires_in * 1000)
      : null,
    revoked_at: null,
    created_at: now,
    created_by: actor.id,
  };
  await db.transaction().execute(async (tx) => {
    await tx.insertInto("invites").values({
      ...row,
      token_hash: sha256Hex(token),
    }).execute();
    await recordAudit(tx, clock, actor, "invite.create", row.id, {
      max_uses: row.max_uses,
      ...(opts.expires_in ? { expires_in: opts.expires_in } : {}),
    });
  });
  return { ...viewOf(row, now), token };
}

/** Every invitation, newest first. */
export async function listInvites(
  db: Kysely<DB>,
  clock: Clock,
): Promise<InviteView[]> {
  const rows = await db.selectFrom("invites")
    .select(INVITE_COLUMNS).orderBy("created_at", "desc").limit(500).execute();
  const now = clock.now();
  return rows.map((r) => viewOf(r, now));
}

/** Revokes an invitation: its link is refused from now on. */
export async function revokeInvite(
  db: Kysely<DB>,
  clock: Clock,
  actor: Actor,
  id: string,
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const done = await tx.updateTable("invites").set({
      revoked_at: clock.now(),
    })
      .where("id", "=", id).where("revoked_at", "is", null).executeTakeFirst();
    if (!Number(done.numUpdatedRows)) throw new ApiError(404);
    await recordAudit(tx, clock, actor, "invite.revoke", id);
  });
}

/**
 * Why a token may not be used now, or null when it may (for the sign-up page, before the
 * form is filled in).
 */
export async function inviteProblem(
  db: Kysely<DB>,
  clock: Clock,
  token: string | undefined,
): Promise<string | null> {
  if (!token) return "Sign-up here is by invitation: ask an admin for a link.";
  const row = await db.selectFrom("invites")
    .select(INVITE_COLUMNS).where("token_hash", "=", sha256Hex(token))
    .executeTakeFirst();
  if (!row) return "This invitation link is not valid.";
  return problemText(stateOf(row, clock.now()));
}

function problemText(state: InviteView["state"]): string | null {
  switch (state) {
    case "revoked":
      return "This invitation was withdrawn by an admin.";
    case "used":
      return "This invitation has been used already.";
    case "expired":
      return "This invitation has expired.";
    default:
      return null;
  }
}

/**
 * Takes one use of an invitation, atomically (two sign-ups racing for its last use get
 * one account), inside the sign-up's transaction; throws InviteRefused with the reason.
 */
export async function useInvite(
  db: Kysely<DB>,
  clock: Clock,
  token: string | undefined,
): Promise<void> {
  const problem = await inviteProblem(db, clock, token);
  if (problem) throw new InviteRefused(problem);
  const now = clock.now();
  const taken = await db.updateTable("invites").set((eb) => ({
    uses: eb("uses", "+", 1),
  }))
    .where("token_hash", "=", sha256Hex(token!))
    .where("revoked_at", "is", null)
    .whereRef("uses", "<", "max_uses")
    .where((eb) =>
      eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)])
    )
    .executeTakeFirst();
  if (!Number(taken.numUpdatedRows)) {
    throw new InviteRefused(
      (await inviteProblem(db, clock, token)) ??
        "This invitation has been used already.",
    );
  }
}

/** Gives back a use taken by {@link useInvite} for a sign-up that then failed. */
export async function giveBackInvite(
  db: Kysely<DB>,
  token: string,
): Promise<void> {
  await db.updateTable("invites")
    .set((eb) => ({ uses: eb("uses", "-", 1) }))
    .where("token_hash", "=", sha256Hex(token)).where("uses", ">", 0)
    .execute();
}
