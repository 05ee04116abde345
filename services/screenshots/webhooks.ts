import type { Kysely, Selectable } from "kysely";
import type { DB } from "../db/schema.ts";
import { randomToken } from "../accounts/crypto.ts";
import { guardedPost, type PostOutcome } from "../net/guarded_post.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";

/**
 * services/screenshots/webhooks.ts — the signed calls that tell an integrator a job
 * ended (issue #50). The body is `{"type": "screenshot.job.done" | "…failed", "job": …}`,
 * the job as GET /api/1/screenshot/jobs/{id} answers it. `X-Webhook-Signature:
 * t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` under the account's secret:
 * the receiver recomputes it, and refuses a `t` too far from its clock (replays).
 */

/** The signature header's name. */
export const SIGNATURE_HEADER = "X-Webhook-Signature";

/** A row of webhook_deliveries. */
export type DeliveryRow = Selectable<DB["webhook_deliveries"]>;

/** The account's webhook secret, made at first use. */
export async function webhookSecret(
  db: Kysely<DB>,
  userId: string,
): Promise<string> {
  const row = await db.selectFrom("users").select("webhook_secret")
    .where("id", "=", userId).executeTakeFirst();
  if (row?.webhook_secret) return row.webhook_secret;
  // Two first uses at once agree on one: the update keeps the first written.
  await db.updateTable("users").set({ webhook_secret: newSecret() })
    .where("id", "=", userId).where("webhook_secret", "is", null).execute();
  const made = await db.selectFrom("users").select("webhook_secret")
    .where("id", "=", userId).executeTakeFirstOrThrow();
  return made.webhook_secret!;
}

/** Replaces the account's secret: calls signed from now on use the new one. */
export async function rotateWebhookSecret(
  db: Kysely<DB>,
  userId: string,
): Promise<string> {
  const secret = newSecret();
  await db.updateTable("users").set({ webhook_secret: secret })
    .where("id", "=", userId).execute();
  return secret;
}

function newSecret(): string {
  return `whsec_${randomToken(24)}`;
}

/** The signature header's value for `body` sent at `t` (unix seconds). */
export async function signWebhook(
  secret: string,
  t: number,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign(
      "HMAC",
      key,
      new TextEncoder().encode(`${t}.${body}`),
    ),
  );
  const hex = Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
  return `t=${t},v1=${hex}`;
}

/**
 * Sends one attempt of job `jobId`'s webhook and records it; the outcome says whether it
 * was delivered (a 2xx).
 */
export async function deliverWebhook(
  db: Kysely<DB>,
  opts: {
    jobId: string;
    userId: string;
    url: string;
    body: string;
    attempt: number;
    now: Date;
    rules: AllowRule[];
    timeoutMs: number;
  },
): Promise<PostOutcome> {
  const secret = await webhookSecret(db, opts.userId);
  const t = Math.floor(opts.now.getTime() / 1000);
  const outcome = await guardedPost(opts.url, opts.body, {
    [SIGNATURE_HEADER]: await signWebhook(secret, t, opts.body),
    "X-Webhook-Id": opts.jobId,
    "X-Webhook-Attempt": String(opts.attempt),
    "user-agent": "imagehost-webhook/1",
  }, { rules: opts.rules, timeoutMs: opts.timeoutMs });
  await db.insertInto("webhook_deliveries").values({
    job_id: opts.jobId,
    user_id: opts.userId,
    url: opts.url,
    attempt: opts.attempt,
    ok: outcome.ok,
    status_code: outcome.status ?? null,
    error: outcome.error ?? null,
  }).execute();
  return outcome;
}

/** The account's latest delivery attempts, newest first. */
export async function recentDeliveries(
  db: Kysely<DB>,
  userId: string,
  limit = 20,
): Promise<DeliveryRow[]> {
  return await db.selectFrom("webhook_deliveries").selectAll()
    .where("user_id", "=", userId).orderBy("id", "desc").limit(limit)
    .execute();
}

/** A delivery as the API shows it. */
export function deliveryRecord(d: DeliveryRow) {
  return {
    job_id: d.job_id,
    url: d.url,
    attempt: d.attempt,
    ok: d.ok,
    status_code: d.status_code,
    error: d.error,
    at: new Date(d.at).toISOString(),
  };
}
