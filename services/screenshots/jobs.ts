import type { Kysely, Selectable, Updateable } from "kysely";
import type { z } from "@hono/zod-openapi";
import type { JobWithMetadata, PgBoss } from "pg-boss";
import { loadPgBoss, queueDb } from "./pg_boss.ts";
import type { DB } from "../db/schema.ts";
import type { Config } from "../../schemas/config.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import { setTimeout as delay } from "node:timers/promises";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import { activeUserIds } from "../accounts/accounts.ts";
import type {
  ScreenshotRequest,
  ScreenshotResult,
} from "./screenshot_service.ts";
import type { ScreenshotJobSchema } from "../../schemas/screenshot_jobs.ts";
import { toImageRecord } from "../images/records.ts";
import { linkBases } from "../runtime/link_base.ts";
import { jsonValue } from "../db/json_value.ts";
import { type AllowRule, allowRulesOf } from "../../schemas/allow_list.ts";
import { checkTarget, parseTargetUrl } from "../net/target.ts";
import { deliverWebhook, deliveryRecord } from "./webhooks.ts";

/**
 * services/screenshots/jobs.ts — asynchronous captures (issue #50) on pg-boss, a
 * maintained PostgreSQL job queue (chosen over graphile-worker: it runs over any SQL
 * executor, here the app's own Kysely, so the embedded profile's PGlite carries it with
 * the same locking and durable commits as every other statement, and PostgreSQL with
 * the same pool). The account's view of a job is a row of `screenshot_jobs`; pg-boss
 * holds the queue: fetching with SKIP LOCKED, retries with backoff, and a job whose
 * instance died mid-capture expiring back to the queue for another.
 */

/** The queue's name in pg-boss. */
const QUEUE = "screenshots";

/** pg-boss's own tables live in this schema. */
const SCHEMA = "pgboss";

/** Tries of a job whose capture met a busy browser or a dead instance. */
const RETRY_LIMIT = 4;

/** The webhooks' queue: one entry per job that ended with a webhook_url. */
const WEBHOOKS = "webhooks";

/** Retries of a webhook after its first try (6 tries in all). */
const WEBHOOK_RETRIES = 5;

/** One webhook try's bound. */
const WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * How often a running job's row is read for a cancel made on another instance (one made
 * on this one stops it at once) or its account disabled.
 */
const CANCEL_POLL_MS = 1000;

/** A row of screenshot_jobs. */
export type JobRow = Selectable<DB["screenshot_jobs"]>;

/** What the job service needs. */
export interface JobDeps {
  db: Kysely<DB>;
  kind: "pglite" | "postgres";
  config: Config;
  clock: Clock;
  log: Logger;
  /**
   * Whether this instance runs captures (it has a browser). Without, it queues, follows
   * and cancels, and calls webhooks, but takes no capture job: a cancel on a browserless
   * instance once made it a worker whose every capture failed 240.
   */
  runs: boolean;
  /**
   * The capture itself, as the synchronous call makes it (stored and shared); an
   * aborted `signal` (the job cancelled) stops it before anything is stored.
   */
  capture(
    userId: string,
    req: ScreenshotRequest,
    signal?: AbortSignal,
  ): Promise<ScreenshotResult>;
  /**
   * Whether a finished job's webhook is called, and how much its image changed (a
   * scheduled run with notify_on_change); absent: always called.
   */
  decide?(
    row: JobRow,
    result: ScreenshotResult,
  ): Promise<{ notify: boolean; changed: number | null }>;
}

/** Codes worth another try later: a busy or unreachable browser, a busy account. */
function retryable(e: ApiError): boolean {
  return e.status === 503 || e.code === 170;
}

/** Asynchronous captures: enqueue, follow, list, cancel; and the worker that runs them. */
export class ScreenshotJobs {
  #boss?: PgBoss;
  #starting?: Promise<PgBoss>;
  #stopped = false;
  /** This instance's running jobs, to stop one at once when it is cancelled here. */
  readonly #running = new Map<string, AbortController>();

  readonly #rules: AllowRule[];
  /** Other workers on the same queue engine (the schedules'), registered at its start. */
  readonly #more: ((boss: PgBoss) => Promise<void>)[] = [];

  constructor(private readonly deps: JobDeps) {
    this.#rules = allowRulesOf(deps.config);
  }

  /**
   * Has `register` run at start, before the engine counts as started: a stop can then
   * never come between the engine's start and a worker it would miss (and leave polling).
   */
  alsoWork(register: (boss: PgBoss) => Promise<void>): void {
    this.#more.push(register);
  }

  /**
   * Starts the queue and this instance's worker (idempotent; a failed start is tried
   * again at the next call). Jobs queued before a restart, or by an instance that died,
   * are picked up from here.
   */
  start(): Promise<PgBoss> {
    this.#starting ??= this.#start().catch((e) => {
      this.#starting = undefined;
      throw e;
    });
    return this.#starting;
  }

  async #start(): Promise<PgBoss> {
    const { config } = this.deps;
    const { PgBoss } = await loadPgBoss();
    const boss = new PgBoss({
      db: queueDb(this.deps.db),
      schema: SCHEMA,
      backend: this.deps.kind,
      // The supervisor hands a dead instance's jobs back (their heartbeat stopped):
      // checked every 10 s, a cheap query, so a kill costs its jobs ~20 s, not minutes.
      superviseIntervalSeconds: 10,
      monitorIntervalSeconds: 10,
    });
    boss.on(
      "error",
      (e) => this.deps.log.error({ msg: "job queue", error: String(e) }),
    );
    await boss.start();
    // A capture never takes longer than its timeout; a job still active well past it
    // belonged to an instance that died, and goes back to the queue.
    const expire = Math.ceil(config.SCREENSHOT_TIMEOUT_MS / 1000) * 2 + 30;
    await boss.createQueue(QUEUE, {
      retryLimit: RETRY_LIMIT,
      retryDelay: 2,
      retryBackoff: true,
      expireInSeconds: expire,
      // A running job's worker says it is alive every 5 s; 10 s of silence (a killed
      // instance) puts the job back for another.
      heartbeatSeconds: 10,
    });
    await boss.createQueue(WEBHOOKS, {
      retryLimit: WEBHOOK_RETRIES,
      retryDelay: config.WEBHOOK_RETRY_S,
      retryBackoff: true,
      expireInSeconds: Math.ceil(WEBHOOK_TIMEOUT_MS / 1000) * 2 + 30,
    });
    for (const register of this.#more) await register(boss);
    if (this.#stopped) {
      await boss.stop({ graceful: false, close: false });
      throw new Error("stopped");
    }
    if (this.deps.runs) {
      await boss.work(
        QUEUE,
        {
          localConcurrency: config.SCREENSHOT_CONCURRENCY,
          // Fair between accounts: at most SCREENSHOT_PER_KEY of one account's jobs run
          // at once on this instance (as its synchronous captures), so the next free slot
          // goes to the oldest job of an account below its share, not to the 99 others
          // of a flood.
          localGroupConcurrency: config.SCREENSHOT_PER_KEY,
          pollingIntervalSeconds: 0.5,
          includeMetadata: true,
        },
        async ([job]: JobWithMetadata<{ jobId: string }>[]) => {
          try {
            await this.#run(job.id, job.retryCount >= job.retryLimit);
          } finally {
            // A freed slot fetches the next job now, not after the rest of its poll
            // interval (measured: slots were idle 59 % of a 200-job batch without this).
            this.#wake();
          }
        },
      );
    }
    await boss.work(
      WEBHOOKS,
      {
        // Idle, every worker polls: two, every 2 s, are enough for calls that may wait.
        localConcurrency: 2,
        pollingIntervalSeconds: 2,
        includeMetadata: true,
      },
      async ([job]: JobWithMetadata<{ jobId: string }>[]) => {
        await this.#deliver(
          job.data.jobId,
          job.retryCount + 1,
          job.retryCount >= job.retryLimit,
        );
      },
    );
    this.#boss = boss;
    return boss;
  }

  /** Wakes this instance's capture workers from their poll wait: there is work. */
  #wake() {
    const boss = this.#boss;
    if (!boss) return;
    for (const w of boss.getWipData()) {
      if (w.name === QUEUE) boss.notifyWorker(w.id);
    }
  }

  /** Stops this instance's worker; running captures finish first (up to their timeout). */
  async stop(): Promise<void> {
    this.#stopped = true;
    const boss = await this.#starting?.catch(() => undefined);
    await boss?.stop({
      graceful: true,
      // The database is the app's: it closes it.
      close: false,
      timeout: this.deps.config.SCREENSHOT_TIMEOUT_MS + 5_000,
    });
  }

  /**
   * Queues a capture for `userId`. The job's row and its queue entry are written in one
   * transaction: answered 202, it is on disk and will run.
   */
  async enqueue(userId: string, req: ScreenshotRequest): Promise<JobRow> {
    return (await this.enqueueMany(userId, [req]))[0];
  }

  /**
   * Queues several captures for `userId`, in one transaction (all or none); with
   * `batchId` they are one batch. Each webhook_url is checked first (210 names its
   * index).
   */
  async enqueueMany(
    userId: string,
    reqs: ScreenshotRequest[],
    batchId?: string,
    scheduleId?: string,
  ): Promise<JobRow[]> {
    const boss = await this.start().catch((e) => {
      throw new ApiError(250, { cause: e });
    });
    for (const [i, req] of reqs.entries()) {
      // A target that is no web address is refused now (200), as the synchronous call
      // refuses it; whether it resolves is the capture's to find out.
      parseTargetUrl(req.url, batchId ? `requests.${i}.url` : "url");
      if (!req.webhook_url) continue;
      // Refused now (210) rather than at the first try: the guard checks again then.
      const path = batchId ? `requests.${i}.webhook_url` : "webhook_url";
      await checkTarget(
        parseTargetUrl(req.webhook_url, path),
        this.#rules,
        path,
        220,
      );
    }
    return await this.deps.db.transaction().execute(async (tx) => {
      const rows: JobRow[] = [];
      for (const [i, req] of reqs.entries()) {
        const id = crypto.randomUUID();
        rows.push(
          await tx.insertInto("screenshot_jobs").values({
            id,
            user_id: userId,
            batch_id: batchId ?? null,
            batch_index: batchId ? i : null,
            schedule_id: scheduleId ?? null,
            request: JSON.stringify({ ...req, async: true }),
          }).returningAll().executeTakeFirstOrThrow(),
        );
        await boss.send(QUEUE, { jobId: id }, {
          id,
          group: { id: userId },
          db: queueDb(tx),
        });
      }
      return rows;
    }).finally(() => this.#wake());
  }

  /** The account's batch `batchId`: its jobs in order, or undefined. */
  async batch(userId: string, batchId: string): Promise<JobRow[] | undefined> {
    const rows = await this.deps.db.selectFrom("screenshot_jobs").selectAll()
      .where("batch_id", "=", batchId).where("user_id", "=", userId)
      .orderBy("batch_index").execute();
    return rows.length ? rows : undefined;
  }

  /** The account's job `id`, or undefined (someone else's is none). */
  async get(userId: string, id: string): Promise<JobRow | undefined> {
    return await this.deps.db.selectFrom("screenshot_jobs").selectAll()
      .where("id", "=", id).where("user_id", "=", userId).executeTakeFirst();
  }

  /** The account's jobs, newest first. */
  async list(
    userId: string,
    q: { page: number; per_page: number; status?: string },
  ): Promise<JobRow[]> {
    let query = this.deps.db.selectFrom("screenshot_jobs").selectAll()
      .where("user_id", "=", userId);
    if (q.status) query = query.where("status", "=", q.status);
    return await query.orderBy("created_at", "desc").orderBy("id", "desc")
      .limit(q.per_page).offset((q.page - 1) * q.per_page).execute();
  }

  /**
   * Cancels a job of the account that has not ended: a queued one will not run, a
   * running one is stopped (at once on this instance, within CANCEL_POLL_MS on another)
   * and stores nothing. A finished one cannot be (160), someone else's is 404.
   */
  async cancel(userId: string, id: string): Promise<JobRow> {
    const row = await this.deps.db.updateTable("screenshot_jobs")
      .set({ status: "cancelled", finished_at: this.deps.clock.now() })
      .where("id", "=", id).where("user_id", "=", userId)
      .where("status", "in", ["queued", "running"]).returningAll()
      .executeTakeFirst();
    if (!row) {
      const existing = await this.get(userId, id);
      if (!existing) throw new ApiError(404);
      throw invalidField(
        "id",
        `only a queued or running job can be cancelled; this one is ${existing.status}`,
      );
    }
    await this.#stop([id]);
    return row;
  }

  /**
   * Cancels every job of the account's batch `batchId` that has not ended, as
   * {@link cancel} does one; the batch's jobs in order after it, or undefined when the
   * account has no such batch. Jobs that had ended are left as they are.
   */
  async cancelBatch(
    userId: string,
    batchId: string,
  ): Promise<JobRow[] | undefined> {
    const stopped = await this.deps.db.updateTable("screenshot_jobs")
      .set({ status: "cancelled", finished_at: this.deps.clock.now() })
      .where("batch_id", "=", batchId).where("user_id", "=", userId)
      .where("status", "in", ["queued", "running"]).returning("id").execute();
    if (stopped.length) await this.#stop(stopped.map((r) => r.id));
    return await this.batch(userId, batchId);
  }

  /**
   * The jobs `ids`, just marked cancelled: stopped at once where they run here (another
   * instance sees the row), and taken out of the queue.
   */
  async #stop(ids: string[]): Promise<void> {
    for (const id of ids) this.#running.get(id)?.abort(cancelled());
    const boss = await this.start().catch(() => undefined);
    // The row says cancelled, which the worker checks first; this only spares a fetch.
    await boss?.cancel(QUEUE, ids).catch(() => {});
  }

  /**
   * Runs job `id` once: a cancelled or finished one is left as it is (a retried
   * delivery after a kill), a busy browser is tried again later (pg-boss's backoff)
   * until `last`, any other refusal ends it failed with the synchronous call's code.
   */
  async #run(id: string, last: boolean): Promise<void> {
    const { db, clock } = this.deps;
    const row = await db.updateTable("screenshot_jobs")
      .set((eb) => ({
        status: "running",
        attempts: eb("attempts", "+", 1),
        started_at: clock.now(),
      }))
      .where("id", "=", id).where("status", "in", ["queued", "running"])
      .returningAll().executeTakeFirst();
    if (!row) return;
    const req = jsonValue<ScreenshotRequest>(row.request);
    // An account disabled (or deleted) since it queued the job: refused as its key now
    // is (120), without a capture or a webhook call.
    if (!await activeOwner(db, row.user_id)) return await this.#refuse(id, req);
    const stop = new AbortController();
    this.#running.set(id, stop);
    const watching = this.#watch(id, stop);
    try {
      const result = await this.deps.capture(row.user_id, {
        ...req,
        async: false,
      }, stop.signal);
      const decided = await this.deps.decide?.(row, result) ??
        { notify: true, changed: null };
      await this.#finish(id, req, {
        status: "done",
        result: JSON.stringify(result),
        image_id: result.id ?? null,
        changed: decided.changed,
        finished_at: clock.now(),
      }, decided.notify);
    } catch (e) {
      // Cancelled while it ran: the row already says so, and nothing was stored. Its
      // account disabled while it ran: refused as above.
      if (stop.signal.aborted) {
        if (stop.signal.reason instanceof OwnerDisabled) {
          await this.#refuse(id, req);
        }
        return;
      }
      // Anything but a refusal (a bug, a dropped connection) is tried again too, and
      // ends as 500 after the last try.
      const err = e instanceof ApiError ? e : new ApiError(500, { cause: e });
      if (!last && (retryable(err) || !(e instanceof ApiError))) {
        await db.updateTable("screenshot_jobs").set({ status: "queued" })
          .where("id", "=", id).where("status", "=", "running").execute();
        throw e;
      }
      await this.#finish(id, req, {
        status: "failed",
        error_code: err.code,
        error_message: err.message,
        finished_at: clock.now(),
      });
    } finally {
      this.#running.delete(id);
      stop.abort(new Error("the job's run ended"));
      await watching;
    }
  }

  /** Ends job `id` failed 120 (its account is disabled or deleted), calling nobody. */
  async #refuse(id: string, req: ScreenshotRequest): Promise<void> {
    const err = new ApiError(120);
    await this.#finish(id, req, {
      status: "failed",
      error_code: err.code,
      error_message: err.message,
      finished_at: this.deps.clock.now(),
    }, false);
  }

  /**
   * Reads job `id`'s row and its account every CANCEL_POLL_MS while it runs, and aborts
   * `stop` when a cancel (from any instance) has marked it or an admin has disabled the
   * account; ends when `stop` is aborted.
   */
  async #watch(id: string, stop: AbortController): Promise<void> {
    while (!stop.signal.aborted) {
      // Rejects at once when the run ends (or is stopped) meanwhile.
      const waited = await delay(CANCEL_POLL_MS, true, { signal: stop.signal })
        .catch(() => false);
      if (!waited) return;
      const { db } = this.deps;
      const row = await db.selectFrom("screenshot_jobs")
        .select((eb) => [
          "status",
          eb("user_id", "in", activeUserIds(db)).as("active"),
        ])
        .where("id", "=", id).executeTakeFirst()
        .catch(() => undefined);
      if (row?.status === "cancelled") stop.abort(cancelled());
      else if (row && !row.active) stop.abort(new OwnerDisabled());
    }
  }

  /**
   * Records how job `id` ended and, with a webhook_url, queues its webhook in the same
   * transaction: a job that ended has its call on the way.
   */
  async #finish(
    id: string,
    req: ScreenshotRequest,
    end: Updateable<DB["screenshot_jobs"]>,
    notify = true,
  ): Promise<void> {
    const boss = this.#boss;
    await this.deps.db.transaction().execute(async (tx) => {
      // Only a running job ends here: one cancelled meanwhile stays cancelled, and keeps
      // the image its capture had already stored (shown in its result), without a call.
      const ended = await tx.updateTable("screenshot_jobs").set(end)
        .where("id", "=", id).where("status", "=", "running")
        .executeTakeFirst();
      if (ended.numUpdatedRows === 0n) {
        if (end.status !== "done") return;
        await tx.updateTable("screenshot_jobs")
          .set({ result: end.result, image_id: end.image_id })
          .where("id", "=", id).where("status", "=", "cancelled").execute();
        return;
      }
      if (req.webhook_url && boss && notify) {
        await boss.send(WEBHOOKS, { jobId: id }, {
          db: queueDb(tx),
        });
      }
    });
  }

  /**
   * One try of job `jobId`'s webhook: the job as the API shows it, signed. Not answered
   * 2xx, it throws so that pg-boss tries again with backoff, unless it was the `last`.
   */
  async #deliver(jobId: string, attempt: number, last: boolean) {
    const { db, config, clock } = this.deps;
    const row = await db.selectFrom("screenshot_jobs").selectAll()
      .where("id", "=", jobId).executeTakeFirst();
    const req = row && jsonValue<ScreenshotRequest>(row.request);
    if (!row || !req?.webhook_url) return;
    const [job] = await jobRecords(db, config, [row]);
    const body = JSON.stringify({ type: `screenshot.job.${job.status}`, job });
    const outcome = await deliverWebhook(db, {
      jobId,
      userId: row.user_id,
      url: req.webhook_url,
      body,
      attempt,
      now: clock.now(),
      rules: this.#rules,
      timeoutMs: WEBHOOK_TIMEOUT_MS,
    });
    if (!outcome.ok && !last) {
      throw new Error(`webhook try ${attempt}: ${outcome.error}`);
    }
  }
}

/** A job as the API answers it. */
export type JobRecord = z.output<typeof ScreenshotJobSchema>;

/**
 * The API's records of `rows`. A finished capture's links are made again from its image
 * (at the address this request came to: the worker had none); an image deleted since
 * keeps the links it had, which answer 404.
 */
export async function jobRecords(
  db: Kysely<DB>,
  config: Config,
  rows: JobRow[],
): Promise<JobRecord[]> {
  const ids = rows.flatMap((r) => r.image_id ? [r.image_id] : []);
  const images = ids.length
    ? await db.selectFrom("images").selectAll().where("id", "in", ids)
      .where("deleted_at", "is", null).execute()
    : [];
  const byId = new Map(images.map((i) => [i.id, toImageRecord(config, i)]));
  const { base } = linkBases(config);
  const iso = (d: Date | null) => d ? new Date(d).toISOString() : null;
  // Each row's request, read once.
  const requests = rows.map((r) => jsonValue<ScreenshotRequest>(r.request));
  const hooked = rows.filter((_, i) => requests[i].webhook_url).map((r) =>
    r.id
  );
  const deliveries = hooked.length
    ? await db.selectFrom("webhook_deliveries").selectAll()
      .where("job_id", "in", hooked).orderBy("id").execute()
    : [];
  return rows.map((r, i) => {
    const { async: _async, ...request } = requests[i];
    let result = r.result ? jsonValue<ScreenshotResult>(r.result) : null;
    const image = r.image_id ? byId.get(r.image_id) : undefined;
    if (result && image) {
      result = {
        ...result,
        url_viewer: image.url_viewer,
        url: image.url,
        display_url: image.display_url,
      };
    }
    return {
      id: r.id,
      status: r.status as JobRecord["status"],
      status_url: `${base}/api/1/screenshot/jobs/${r.id}`,
      request: { ...request, async: true },
      attempts: r.attempts,
      created_at: iso(r.created_at)!,
      started_at: iso(r.started_at),
      finished_at: iso(r.finished_at),
      result,
      error: r.error_code === null
        ? null
        : { code: r.error_code, message: r.error_message ?? "" },
      schedule_id: r.schedule_id,
      changed: r.changed,
      webhook: request.webhook_url
        ? {
          url: request.webhook_url,
          deliveries: deliveries.filter((d) => d.job_id === r.id).map(
            deliveryRecord,
          ),
        }
        : null,
    };
  });
}

/** The reason a job's capture is stopped with when its account is disabled meanwhile. */
class OwnerDisabled extends Error {
  override name = "AbortError";
  constructor() {
    super("the account was disabled");
  }
}

/** The reason a cancelled job's capture is stopped with. */
function cancelled(): DOMException {
  return new DOMException("the job was cancelled", "AbortError");
}

/** Whether account `userId` may still capture: it exists and is neither disabled nor deleted. */
async function activeOwner(
  db: Kysely<DB>,
  userId: string,
): Promise<boolean> {
  const user = await activeUserIds(db).where("id", "=", userId)
    .executeTakeFirst();
  return user !== undefined;
}
