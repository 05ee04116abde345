import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AUTH_ERRORS,
  errorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import {
  JobIdParamSchema,
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
import { ApiError } from "../schemas/errors.ts";
import {
  jobRecords,
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
  webhook: null,
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
    ...errorResponses(...AUTH_ERRORS, 404),
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
    ...errorResponses(...AUTH_ERRORS, 160),
  },
});

const cancelJobRoute = createRoute({
  method: "delete",
  path: "/api/1/screenshot/jobs/{id}",
  operationId: "cancelScreenshotJob",
  tags: ["Screenshots"],
  summary: "Cancel a queued capture",
  description:
    "A queued job is cancelled and never runs. A running or finished one cannot be " +
    "(160); someone else's is 404.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse("The cancelled job", ScreenshotJobSchema, {
      ...EXAMPLE_JOB,
      status: "cancelled" as const,
      finished_at: "2026-11-27T17:00:01.000Z",
    }, { rateLimited: true }),
    ...errorResponses(...AUTH_ERRORS, 160, 404),
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
    ...errorResponses(...AUTH_ERRORS),
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
    ...errorResponses(...AUTH_ERRORS),
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
  app.openapi(cancelJobRoute, async (c) => {
    const row = await jobs.cancel(c.get("userId"), c.req.valid("param").id);
    return c.json(okBody(await one(row)), 200);
  });
}
