import type { Kysely, Selectable } from "kysely";
import sharp from "../images/sharp_module.ts";
import pixelmatch from "pixelmatch";
import type { JobWithMetadata, PgBoss } from "pg-boss";
import { queueDb } from "./pg_boss.ts";
import type { DB } from "../db/schema.ts";
import type { Config } from "../../schemas/config.ts";
import type { Clock } from "../runtime/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import { blobKeys } from "../images/records.ts";
import { activeUserIds } from "../accounts/accounts.ts";
import { jsonValue } from "../db/json_value.ts";
import { wholeBody } from "../runtime/file_io.ts";
import type {
  ScreenshotRequest,
  ScreenshotResult,
} from "./screenshot_service.ts";
import type { JobRow, ScreenshotJobs } from "./jobs.ts";

/**
 * services/screenshots/schedules.ts — captures on a cron expression (issue #50), through
 * pg-boss's scheduler (one timer for every instance: a run is sent once, whichever
 * instance's clock fires). Each run is a job like any other, kept with the account's
 * images. With notify_on_change, a run's image is compared with the previous run's
 * (pixelmatch over the decoded pixels) and the webhook is called only when more than
 * change_threshold of the pixels differ.
 */

/** pg-boss's queue the scheduler sends each run to. */
const SCHEDULES = "screenshot-schedules";

/** A row of screenshot_schedules. */
export type ScheduleRow = Selectable<DB["screenshot_schedules"]>;

/** What the schedules need. */
export interface ScheduleDeps {
  db: Kysely<DB>;
  store: BlobStore;
  config: Config;
  clock: Clock;
  log: Logger;
}

/** A new schedule's fields, as the API takes them. */
export interface ScheduleInput {
  cron: string;
  request: ScreenshotRequest;
  notify_on_change: boolean;
  change_threshold: number;
}

/** Scheduled captures: made, listed, paused, removed, run. */
export class ScreenshotSchedules {
  constructor(
    private readonly deps: ScheduleDeps,
    private readonly jobs: ScreenshotJobs,
  ) {
    // This instance's worker of scheduled runs, started and stopped with the queue's.
    jobs.alsoWork(async (boss) => {
      await boss.createQueue(SCHEDULES, { retryLimit: 2, retryDelay: 5 });
      await boss.work(
        SCHEDULES,
        { pollingIntervalSeconds: 2, includeMetadata: true },
        async ([job]: JobWithMetadata<{ scheduleId: string }>[]) => {
          await this.#run(job.data.scheduleId);
        },
      );
    });
  }

  /** Starts the queue with this instance's workers (idempotent: the queue's start). */
  start(): Promise<PgBoss> {
    return this.jobs.start();
  }

  /** The boss, started, or 250 when the queue cannot be reached. */
  async #boss(): Promise<PgBoss> {
    return await this.start().catch((e) => {
      throw new ApiError(250, { cause: e });
    });
  }

  /**
   * A new schedule of `userId`: its cron expression is refused (160) when two of its
   * runs come closer than SCREENSHOT_SCHEDULE_MIN_MINUTES, or when the account has
   * SCREENSHOT_SCHEDULES_MAX already.
   */
  async create(userId: string, input: ScheduleInput): Promise<ScheduleRow> {
    const boss = await this.#boss();
    this.#checkCron(boss, input.cron);
    const { db } = this.deps;
    const id = crypto.randomUUID();
    return await db.transaction().execute(async (tx) => {
      await this.#roomFor(tx, userId);
      const row = await tx.insertInto("screenshot_schedules").values({
        id,
        user_id: userId,
        cron: input.cron,
        request: JSON.stringify({ ...input.request, async: true }),
        notify_on_change: input.notify_on_change,
        change_threshold: input.change_threshold,
      }).returningAll().executeTakeFirstOrThrow();
      await this.#schedule(boss, row, tx);
      return row;
    });
  }

  /**
   * Refuses (160) a schedule past SCREENSHOT_SCHEDULES_MAX. Counted under the account's
   * row lock, in the insert's transaction: counted before it, six asked for at once
   * against a maximum of two were all made.
   */
  async #roomFor(tx: Kysely<DB>, userId: string): Promise<void> {
    const max = this.deps.config.SCREENSHOT_SCHEDULES_MAX;
    await tx.selectFrom("users").select("id").where("id", "=", userId)
      .forUpdate().executeTakeFirst();
    const count = await tx.selectFrom("screenshot_schedules")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("user_id", "=", userId).executeTakeFirstOrThrow();
    if (Number(count.n) >= max) {
      throw invalidField(
        "cron",
        `at most ${max} schedules an account (SCREENSHOT_SCHEDULES_MAX)`,
      );
    }
  }

  /** Refuses a cron expression pg-boss cannot read, or whose runs come too close. */
  #checkCron(boss: PgBoss, cron: string) {
    let next: Date[];
    try {
      next = boss.previewSchedule(cron, { count: 12, tz: "UTC" });
    } catch (e) {
      throw invalidField(
        "cron",
        `not a cron expression: ${(e as Error).message}`,
      );
    }
    const min = this.deps.config.SCREENSHOT_SCHEDULE_MIN_MINUTES;
    for (let i = 1; i < next.length; i++) {
      const gap = (next[i].getTime() - next[i - 1].getTime()) / 60_000;
      if (gap < min) {
        throw invalidField(
          "cron",
          `runs ${gap} minutes apart; at least ${min} (SCREENSHOT_SCHEDULE_MIN_MINUTES)`,
        );
      }
    }
  }

  async #schedule(boss: PgBoss, row: ScheduleRow, tx?: Kysely<DB>) {
    await boss.schedule(SCHEDULES, row.cron, { scheduleId: row.id }, {
      key: row.id,
      tz: "UTC",
      ...(tx ? { db: queueDb(tx) } : {}),
    });
  }

  /** The next `n` runs of `cron` (UTC); none when the queue cannot be reached. */
  async preview(cron: string, n: number): Promise<Date[]> {
    const boss = await this.start().catch(() => undefined);
    try {
      return boss?.previewSchedule(cron, { count: n, tz: "UTC" }) ?? [];
    } catch {
      return [];
    }
  }

  /** The account's schedules, newest first. */
  async list(userId: string): Promise<ScheduleRow[]> {
    return await this.deps.db.selectFrom("screenshot_schedules").selectAll()
      .where("user_id", "=", userId).orderBy("created_at", "desc")
      .orderBy("id").execute();
  }

  /** The account's schedule `id`; someone else's is 404. */
  async get(userId: string, id: string): Promise<ScheduleRow> {
    const row = await this.deps.db.selectFrom("screenshot_schedules")
      .selectAll().where("id", "=", id).where("user_id", "=", userId)
      .executeTakeFirst();
    if (!row) throw new ApiError(404);
    return row;
  }

  /** Pauses (no runs until resumed) or resumes the account's schedule `id`. */
  async setPaused(
    userId: string,
    id: string,
    paused: boolean,
  ): Promise<ScheduleRow> {
    const boss = await this.#boss();
    await this.get(userId, id);
    const row = await this.deps.db.updateTable("screenshot_schedules")
      .set({ paused }).where("id", "=", id).returningAll()
      .executeTakeFirstOrThrow();
    if (paused) await boss.unschedule(SCHEDULES, id);
    else await this.#schedule(boss, row);
    return row;
  }

  /** Removes the account's schedule `id`; its past runs' images stay. */
  async remove(userId: string, id: string): Promise<void> {
    const boss = await this.#boss();
    await this.get(userId, id);
    await boss.unschedule(SCHEDULES, id);
    await this.deps.db.deleteFrom("screenshot_schedules").where("id", "=", id)
      .execute();
  }

  /** Runs the account's schedule `id` now, as its cron would: the job. */
  async runNow(userId: string, id: string): Promise<JobRow> {
    await this.get(userId, id);
    const job = await this.#run(id, true);
    if (!job) throw new ApiError(404);
    return job;
  }

  /**
   * One run of schedule `id`: a job, unless it is gone, (from the timer) paused, or its
   * account is disabled (its timer keeps going, and runs again once it is enabled).
   */
  async #run(id: string, asked = false): Promise<JobRow | undefined> {
    const row = await this.deps.db.updateTable("screenshot_schedules")
      .set((eb) => ({
        runs: eb("runs", "+", 1),
        last_run_at: this.deps.clock.now(),
      }))
      .where("id", "=", id)
      .where((eb) => asked ? eb.val(true) : eb("paused", "=", false))
      .where("user_id", "in", activeUserIds(this.deps.db))
      .returningAll().executeTakeFirst();
    if (!row) return undefined;
    const req = jsonValue<ScreenshotRequest>(row.request);
    const [job] = await this.jobs.enqueueMany(
      row.user_id,
      [req],
      undefined,
      id,
    );
    return job;
  }

  /**
   * Whether a finished run's webhook is called: for a schedule with notify_on_change,
   * only when its image differs from the previous run's by more than the threshold (the
   * first run sets the mark and calls nobody). Any other job: always.
   */
  async decide(
    job: JobRow,
    result: ScreenshotResult,
  ): Promise<{ notify: boolean; changed: number | null }> {
    if (!job.schedule_id || !result.id) return { notify: true, changed: null };
    const { db } = this.deps;
    const schedule = await db.selectFrom("screenshot_schedules").selectAll()
      .where("id", "=", job.schedule_id).executeTakeFirst();
    if (!schedule) return { notify: true, changed: null };
    const previous = schedule.last_image_id;
    await db.updateTable("screenshot_schedules")
      .set({ last_image_id: result.id }).where("id", "=", schedule.id)
      .execute();
    if (!schedule.notify_on_change) return { notify: true, changed: null };
    if (!previous) return { notify: false, changed: null };
    // The same bytes are the same image (the account keeps one): nothing changed.
    if (previous === result.id) return { notify: false, changed: 0 };
    const changed = await this.#difference(previous, result.id);
    return { notify: changed > schedule.change_threshold, changed };
  }

  /** The share of pixels unlike between two stored images (1 when their sizes differ). */
  async #difference(a: string, b: string): Promise<number> {
    const [x, y] = await Promise.all([this.#pixels(a), this.#pixels(b)]);
    if (!x || !y) return 1;
    if (x.width !== y.width || x.height !== y.height) return 1;
    const differ = pixelmatch(x.data, y.data, undefined, x.width, x.height, {
      threshold: 0.1,
    });
    return differ / (x.width * x.height);
  }

  async #pixels(imageId: string) {
    const row = await this.deps.db.selectFrom("images")
      .select(["id", "ext", "thumb_ext", "medium_ext"])
      .where("id", "=", imageId).executeTakeFirst();
    if (!row) return undefined;
    const blob = await this.deps.store.get(blobKeys(row).original);
    if (!blob) return undefined;
    const bytes = await wholeBody(blob.body, blob.size);
    const { data, info } = await sharp(bytes).ensureAlpha().raw()
      .toBuffer({ resolveWithObject: true });
    return {
      data: new Uint8Array(data.buffer, data.byteOffset, data.length),
      width: info.width,
      height: info.height,
    };
  }
}
