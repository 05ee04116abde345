import { z } from "@hono/zod-openapi";
import {
  ScreenshotRequestSchema,
  ScreenshotResultSchema,
} from "./screenshot.ts";

/** Where an asynchronous capture is. */
export const JOB_STATUSES = [
  "queued",
  "running",
  "done",
  "failed",
  "cancelled",
] as const;

/** One try of a webhook. */
export const WebhookDeliverySchema = z.object({
  job_id: z.string(),
  url: z.string(),
  attempt: z.number().int().openapi({ example: 1 }),
  ok: z.boolean().openapi({ description: "Answered 2xx" }),
  status_code: z.number().int().nullable().openapi({ example: 200 }),
  error: z.string().nullable().openapi({
    description:
      "Why it did not count: HTTP <status>, a refused or unreachable address, no answer in time, a redirect",
  }),
  at: z.string(),
}).openapi("WebhookDelivery");

/** GET /api/1/account/webhook: the signing secret and the latest tries. */
export const WebhookAccountSchema = z.object({
  secret: z.string().openapi({ example: "whsec_3q2-8dFz…" }),
  signature_header: z.string().openapi({ example: "X-Webhook-Signature" }),
  deliveries: z.array(WebhookDeliverySchema),
}).openapi("WebhookAccount");

/** An asynchronous capture (issue #50). */
export const ScreenshotJobSchema = z.object({
  id: z.string().openapi({ example: "0b6f8a52-3c1e-4f5e-9d5a-2f1c8e7b9a10" }),
  status: z.enum(JOB_STATUSES).openapi({
    description:
      "queued (waiting for a browser), running, done (`result` is the capture, as the " +
      "synchronous call answers it), failed (`error` is the code and message the " +
      "synchronous call would have answered) or cancelled",
  }),
  status_url: z.string().openapi({
    description: "Where to follow it: GET answers this record",
    example:
      "https://example.com/api/1/screenshot/jobs/0b6f8a52-3c1e-4f5e-9d5a-2f1c8e7b9a10",
  }),
  request: ScreenshotRequestSchema.openapi({
    description: "What was asked (without the key)",
  }),
  attempts: z.number().int().openapi({
    description:
      "Captures tried: more than 1 after a busy browser (250, 240) or an instance that died mid-capture",
  }),
  created_at: z.string().openapi({ example: "2026-11-27T17:00:00.000Z" }),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  // A union, not .nullable(): that writes allOf [$ref, object|null], which no null meets.
  result: z.union([ScreenshotResultSchema, z.null()]).openapi({
    description: "done: the capture, as the synchronous call answers it",
  }),
  error: z.object({
    code: z.number().int().openapi({ example: 220 }),
    message: z.string(),
  }).nullable(),
  schedule_id: z.string().nullable().openapi({
    description: "The schedule whose run it is, if any",
  }),
  changed: z.number().nullable().openapi({
    description:
      "A scheduled run with notify_on_change: the share of pixels unlike the run before (null for the first)",
    example: 0.0132,
  }),
  webhook: z.object({
    url: z.string(),
    deliveries: z.array(WebhookDeliverySchema),
  }).nullable().openapi({
    description: "With `webhook_url`: where it goes and every try so far",
  }),
}).openapi("ScreenshotJob");

/** The answer of an asynchronous capture request: its job. */
export const ScreenshotJobAcceptedSchema = z.object({
  job: ScreenshotJobSchema,
}).openapi("ScreenshotJobAccepted");

/** GET /api/1/screenshot/jobs: the account's jobs, newest first, a page at a time. */
export const ScreenshotJobListSchema = z.object({
  jobs: z.array(ScreenshotJobSchema),
  page: z.number().int(),
  per_page: z.number().int(),
}).openapi("ScreenshotJobList");

/** The list's query. */
export const ScreenshotJobQuerySchema = z.object({
  page: z.coerce.number().int().min(1).max(10_000).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
  status: z.enum(JOB_STATUSES).optional(),
});

/** A job's id in a path. */
export const JobIdParamSchema = z.object({
  id: z.string().uuid().openapi({
    param: { name: "id", in: "path" },
    example: "0b6f8a52-3c1e-4f5e-9d5a-2f1c8e7b9a10",
  }),
});

/** POST /api/1/screenshot/batch's body. */
export const ScreenshotBatchRequestSchema = z.object({
  requests: z.array(ScreenshotRequestSchema).min(1).max(1_000).openapi({
    description:
      "Captures to queue, each as POST /api/1/screenshot takes it (all asynchronous and " +
      "stored; each may have its own webhook_url), at most SCREENSHOT_BATCH_MAX",
  }),
}).strict().openapi("ScreenshotBatchRequest", {
  example: {
    requests: [
      { url: "https://example.com" },
      { url: "https://example.org", preset: "iphone-14-pro" },
    ],
  },
});

/** A batch with its progress. */
export const ScreenshotBatchSchema = z.object({
  id: z.string().openapi({ example: "5d0c7e1a-8f3b-4c2e-a6d9-1b2c3d4e5f60" }),
  status_url: z.string(),
  total: z.number().int(),
  counts: z.object({
    queued: z.number().int(),
    running: z.number().int(),
    done: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int(),
  }).openapi({ description: "How many of its jobs are where" }),
  jobs: z.array(ScreenshotJobSchema).openapi({
    description: "Its jobs, in the order of the requests",
  }),
}).openapi("ScreenshotBatch");

/** The answer of a batch: the batch. */
export const ScreenshotBatchAnswerSchema = z.object({
  batch: ScreenshotBatchSchema,
}).openapi("ScreenshotBatchAnswer");

/** POST /api/1/screenshot/schedules' body. */
export const ScheduleCreateSchema = z.object({
  cron: z.string().min(9).max(200).openapi({
    description:
      "When to run, in UTC: a cron expression (minute hour day month weekday), its runs at " +
      "least SCREENSHOT_SCHEDULE_MIN_MINUTES apart",
    example: "0 */6 * * *",
  }),
  request: ScreenshotRequestSchema.openapi({
    description:
      "The capture each run makes, as POST /api/1/screenshot takes it",
  }),
  notify_on_change: z.boolean().default(false).openapi({
    description:
      "Call the request's webhook_url only when a run's image differs from the previous " +
      "run's by more than change_threshold of its pixels (pixelmatch); the first run sets " +
      "the mark",
  }),
  change_threshold: z.number().min(0).max(1).default(0.001).openapi({
    description: "The share of pixels that must differ (0–1)",
  }),
}).strict().openapi("ScheduleCreate", {
  example: {
    cron: "0 */6 * * *",
    request: {
      url: "https://example.com",
      webhook_url: "https://example.com/hooks/changed",
    },
    notify_on_change: true,
  },
});

/** PATCH /api/1/screenshot/schedules/{id}'s body. */
export const SchedulePatchSchema = z.object({
  paused: z.boolean().openapi({
    description: "true: no runs until false again",
  }),
}).strict().openapi("SchedulePatch");

/** A schedule as the API answers it. */
export const ScheduleSchema = z.object({
  id: z.string(),
  cron: z.string(),
  request: ScreenshotRequestSchema,
  paused: z.boolean(),
  notify_on_change: z.boolean(),
  change_threshold: z.number(),
  runs: z.number().int(),
  last_run_at: z.string().nullable(),
  next_runs: z.array(z.string()).openapi({
    description: "Its next three runs (none while paused)",
  }),
  last_image_id: z.string().nullable(),
  created_at: z.string(),
}).openapi("Schedule");

/** A list of schedules. */
export const ScheduleListSchema = z.object({
  schedules: z.array(ScheduleSchema),
}).openapi("ScheduleList");
