import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  acceptedBody,
  keyedErrorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import { linkBases } from "../services/runtime/link_base.ts";
import {
  JobIdParamSchema,
  ScreenshotBatchAnswerSchema,
  ScreenshotBatchRequestSchema,
  ScreenshotJobAcceptedSchema,
  ScreenshotJobListSchema,
  ScreenshotJobQuerySchema,
  ScreenshotJobSchema,
  WebhookAccountSchema,
} from "../schemas/screenshot_jobs.ts";
import {
  deliveryRecord,
  recentDeliveries,
  rotateWebhookSecret,
  SIGNATURE_HEADER,
  webhookSecret,
} from "../services/screenshots/webhooks.ts";
import { ApiError, invalidField } from "../schemas/errors.ts";
import {
  jobRecords,
  type JobRow,
  type ScreenshotJobs,
} from "../services/screenshots/jobs.ts";
import { API_SECURITY } from "./upload.ts";

const EXAMPLE_JOB = {
  id: "0b6f8a52-3c1e-4f5e-9d5a-2f1c8e7b9a10",
  status: "queued" as const,
  status_url:
    "https://example.com/api/1/screenshot/jobs/0b6f8a52-3c1e-4f5e-9d5a-2f1c8e7b9a10",
  request: { url: "https://example.com", async: true },
  attempts: 0,
  created_at: "2026-11-27T17:00:00.000Z",
  started_at: null,
  finished_at: null,
  result: null,
  error: null,
  schedule_id: null,
  changed: null,
  webhook: null,
};

const EXAMPLE_BATCH = {
  id: "5d0c7e1a-8f3b-4c2e-a6d9-1b2c3d4e5f60",
  status_url:
    "https://example.com/api/1/screenshot/batches/5d0c7e1a-8f3b-4c2e-a6d9-1b2c3d4e5f60",
  total: 1,
  counts: { queued: 1, running: 0, done: 0, failed: 0, cancelled: 0 },
  jobs: [EXAMPLE_JOB],
};

/** The example job, cancelled. */
const CANCELLED_JOB = {
  ...EXAMPLE_JOB,
  status: "cancelled" as const,
  finished_at: "2026-11-27T17:00:01.000Z",
};

/** The 202 of `POST /api/1/screenshot` with `async: true`. */
export const acceptedJobResponse = okResponse(
  "Queued (`async: true`): the job, to follow at its status_url",
  ScreenshotJobAcceptedSchema,
  { job: EXAMPLE_JOB },
  { rateLimited: true, status: 202 },
);

const getJobRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/jobs/{id}",
  operationId: "getScreenshotJob",
  tags: ["Screenshots"],
  summary: "Follow an asynchronous capture",
  description:
    "queued → running → done (with `result`, as the synchronous call answers it) or " +
    "failed (with `error`: the code the synchronous call would have answered). A job " +
    "met by a busy browser, or whose instance died mid-capture, is tried again " +
    "(`attempts`). Someone else's job is 404.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse("The job", ScreenshotJobSchema, EXAMPLE_JOB, {
      rateLimited: true,
    }),
    ...keyedErrorResponses(404),
  },
});

const listJobsRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/jobs",
  operationId: "listScreenshotJobs",
  tags: ["Screenshots"],
  summary: "Your asynchronous captures",
  description: "Newest first, a page at a time; `status` narrows the list.",
  security: API_SECURITY,
  request: { query: ScreenshotJobQuerySchema },
  responses: {
    200: okResponse("A page of jobs", ScreenshotJobListSchema, {
      jobs: [EXAMPLE_JOB],
      page: 1,
      per_page: 20,
    }, { rateLimited: true }),
    ...keyedErrorResponses(160),
  },
});

const cancelJobRoute = createRoute({
  method: "delete",
  path: "/api/1/screenshot/jobs/{id}",
  operationId: "cancelScreenshotJob",
  tags: ["Screenshots"],
  summary: "Cancel a queued or running capture",
  description:
    "A queued job is cancelled and never runs. A running one is stopped: its browser " +
    "page is closed within about a second, wherever it runs, and nothing is stored " +
    "(a capture stored in the instant before keeps its image, shown in the job's " +
    "result). No webhook is called for a cancelled job. A finished one cannot be " +
    "cancelled (160); someone else's is 404.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse("The cancelled job", ScreenshotJobSchema, CANCELLED_JOB, {
      rateLimited: true,
    }),
    ...keyedErrorResponses(160, 404),
  },
});

const getWebhookRoute = createRoute({
  method: "get",
  path: "/api/1/account/webhook",
  operationId: "getWebhookAccount",
  tags: ["Screenshots"],
  summary: "Your webhook secret and latest deliveries",
  description:
    "The secret your webhooks are signed with (made at first ask) and the latest 20 " +
    "tries of any of your jobs' webhooks. Verify a call: HMAC-SHA256 of " +
    '`"<t>.<body>"` under the secret, hex, equals `v1` of X-Webhook-Signature ' +
    "(`t=<unix seconds>,v1=<hex>`), and `t` is recent.",
  security: API_SECURITY,
  responses: {
    200: okResponse("The secret and the latest tries", WebhookAccountSchema, {
      secret: "whsec_3q2-8dFzExampleOnly",
      signature_header: SIGNATURE_HEADER,
      deliveries: [],
    }, { rateLimited: true }),
    ...keyedErrorResponses(),
  },
});

const rotateWebhookRoute = createRoute({
  method: "post",
  path: "/api/1/account/webhook/secret",
  operationId: "rotateWebhookSecret",
  tags: ["Screenshots"],
  summary: "Make a new webhook secret",
  description:
    "Calls signed from now on use the new secret (tries already queued included).",
  security: API_SECURITY,
  responses: {
    200: okResponse("The new secret", WebhookAccountSchema, {
      secret: "whsec_9Zk-1aBcExampleOnly",
      signature_header: SIGNATURE_HEADER,
      deliveries: [],
    }, { rateLimited: true }),
    ...keyedErrorResponses(),
  },
});

/** The account's webhook secret and latest deliveries, as the API answers them. */
export async function webhookAccount(
  deps: AppDeps,
  userId: string,
  secret?: string,
) {
  const db = deps.database.db;
  return {
    secret: secret ?? await webhookSecret(db, userId),
    signature_header: SIGNATURE_HEADER,
    deliveries: (await recentDeliveries(db, userId)).map(deliveryRecord),
  };
}

const postBatchRoute = createRoute({
  method: "post",
  path: "/api/1/screenshot/batch",
  operationId: "postScreenshotBatch",
  tags: ["Screenshots"],
  summary: "Queue many captures at once",
  description:
    "Up to SCREENSHOT_BATCH_MAX captures, each as `POST /api/1/screenshot` takes it, " +
    "queued together (all or none) and answered 202 with one batch id; follow it at " +
    "`GET /api/1/screenshot/batches/{id}` (progress per item) or each job on its own. " +
    "Jobs of one account run at most SCREENSHOT_PER_KEY at a time, so a batch never " +
    "holds back other accounts' captures.",
  security: API_SECURITY,
  request: {
    body: {
      required: true,
      content: {
        "application/json": { schema: ScreenshotBatchRequestSchema },
      },
    },
  },
  responses: {
    202: okResponse("Queued", ScreenshotBatchAnswerSchema, {
      batch: EXAMPLE_BATCH,
    }, { rateLimited: true, status: 202 }),
    ...keyedErrorResponses(160, 200, 210, 220, 240),
  },
});

const getBatchRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/batches/{id}",
  operationId: "getScreenshotBatch",
  tags: ["Screenshots"],
  summary: "Follow a batch",
  description:
    "Its counts by status and every job in the order of the requests.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse("The batch", ScreenshotBatchAnswerSchema, {
      batch: EXAMPLE_BATCH,
    }, { rateLimited: true }),
    ...keyedErrorResponses(404),
  },
});

const cancelBatchRoute = createRoute({
  method: "delete",
  path: "/api/1/screenshot/batches/{id}",
  operationId: "cancelScreenshotBatch",
  tags: ["Screenshots"],
  summary: "Cancel what is left of a batch",
  description:
    "Every job of the batch still queued or running is cancelled, as " +
    "`DELETE /api/1/screenshot/jobs/{id}` cancels one; those that have ended keep " +
    "their results. Answers the batch as it is then (cancelling again changes " +
    "nothing). Someone else's is 404.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse("The batch", ScreenshotBatchAnswerSchema, {
      batch: {
        ...EXAMPLE_BATCH,
        counts: { queued: 0, running: 0, done: 0, failed: 0, cancelled: 1 },
        jobs: [CANCELLED_JOB],
      },
    }, { rateLimited: true }),
    ...keyedErrorResponses(404),
  },
});

/** The batch record of its jobs' rows. */
async function batchRecord(deps: AppDeps, id: string, rows: JobRow[]) {
  const jobs = await jobRecords(deps.database.db, deps.config, rows);
  const counts = { queued: 0, running: 0, done: 0, failed: 0, cancelled: 0 };
  for (const j of jobs) counts[j.status]++;
  return {
    id,
    status_url: `${linkBases(deps.config).base}/api/1/screenshot/batches/${id}`,
    total: jobs.length,
    counts,
    jobs,
  };
}

/** GET /api/1/screenshot/jobs[/{id}] and DELETE /api/1/screenshot/jobs/{id}. */
export function registerScreenshotJobRoutes(
  app: App,
  deps: AppDeps,
  jobs: ScreenshotJobs,
) {
  const { db } = deps.database;
  const one = async (row: Parameters<typeof jobRecords>[2][number]) =>
    (await jobRecords(db, deps.config, [row]))[0];
  app.openapi(getJobRoute, async (c) => {
    const row = await jobs.get(c.get("userId"), c.req.valid("param").id);
    if (!row) throw new ApiError(404);
    return c.json(okBody(await one(row)), 200);
  });
  app.openapi(listJobsRoute, async (c) => {
    const q = c.req.valid("query");
    const rows = await jobs.list(c.get("userId"), q);
    return c.json(
      okBody({
        jobs: await jobRecords(db, deps.config, rows),
        page: q.page,
        per_page: q.per_page,
      }),
      200,
    );
  });
  app.openapi(
    getWebhookRoute,
    async (c) =>
      c.json(okBody(await webhookAccount(deps, c.get("userId"))), 200),
  );
  app.openapi(rotateWebhookRoute, async (c) => {
    const userId = c.get("userId");
    const secret = await rotateWebhookSecret(db, userId);
    return c.json(okBody(await webhookAccount(deps, userId, secret)), 200);
  });
  app.openapi(postBatchRoute, async (c) => {
    if (!deps.screenshotter) throw new ApiError(240);
    const { requests } = c.req.valid("json");
    const max = deps.config.SCREENSHOT_BATCH_MAX;
    if (requests.length > max) {
      throw invalidField(
        "requests",
        `at most ${max} in one batch (SCREENSHOT_BATCH_MAX)`,
      );
    }
    const reqs = requests.map(({ key: _key, ...r }, i) => {
      if (!r.share) {
        throw invalidField(
          `requests.${i}.share`,
          "a batch's captures are stored",
        );
      }
      return { ...r, async: true };
    });
    const id = crypto.randomUUID();
    const rows = await jobs.enqueueMany(c.get("userId"), reqs, id);
    return c.json(
      acceptedBody({ batch: await batchRecord(deps, id, rows) }),
      202,
    );
  });
  app.openapi(getBatchRoute, async (c) => {
    const id = c.req.valid("param").id;
    const rows = await jobs.batch(c.get("userId"), id);
    if (!rows) throw new ApiError(404);
    return c.json(okBody({ batch: await batchRecord(deps, id, rows) }), 200);
  });
  app.openapi(cancelBatchRoute, async (c) => {
    const id = c.req.valid("param").id;
    const rows = await jobs.cancelBatch(c.get("userId"), id);
    if (!rows) throw new ApiError(404);
    return c.json(okBody({ batch: await batchRecord(deps, id, rows) }), 200);
  });
  app.openapi(cancelJobRoute, async (c) => {
    const row = await jobs.cancel(c.get("userId"), c.req.valid("param").id);
    return c.json(okBody(await one(row)), 200);
  });
}
