import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  acceptedBody,
  keyedErrorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import {
  JobIdParamSchema,
  ScheduleCreateSchema,
  ScheduleListSchema,
  SchedulePatchSchema,
  ScheduleSchema,
} from "../schemas/screenshot_jobs.ts";
import { acceptedJobResponse } from "./screenshot_jobs.ts";
import { ApiError, invalidField } from "../schemas/errors.ts";
import { jobRecords } from "../services/screenshots/jobs.ts";
import type {
  ScheduleRow,
  ScreenshotSchedules,
} from "../services/screenshots/schedules.ts";
import type { ScreenshotRequest } from "../services/screenshots/screenshot_service.ts";
import { API_SECURITY } from "./upload.ts";
import { jsonValue } from "../services/db/json_value.ts";

const EXAMPLE = {
  id: "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
  cron: "0 */6 * * *",
  request: { url: "https://example.com", async: true },
  paused: false,
  notify_on_change: true,
  change_threshold: 0.001,
  runs: 0,
  last_run_at: null,
  next_runs: ["2026-11-27T18:00:00.000Z", "2026-11-28T00:00:00.000Z"],
  last_image_id: null,
  created_at: "2026-11-27T17:00:00.000Z",
};

const one = (description: string) =>
  okResponse(description, ScheduleSchema, EXAMPLE, { rateLimited: true });

const createScheduleRoute = createRoute({
  method: "post",
  path: "/api/1/screenshot/schedules",
  operationId: "createScreenshotSchedule",
  tags: ["Screenshots"],
  summary: "Capture a page on a schedule",
  description:
    "Runs `request` at the times of `cron` (UTC), each run a job like any other, its " +
    "image kept with your images. With `notify_on_change` the request's webhook_url is " +
    "called only when a run's image differs from the previous run's. At most " +
    "SCREENSHOT_SCHEDULES_MAX an account, runs at least " +
    "SCREENSHOT_SCHEDULE_MIN_MINUTES apart (160 otherwise).",
  security: API_SECURITY,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: ScheduleCreateSchema } },
    },
  },
  responses: {
    200: one("The schedule"),
    ...keyedErrorResponses(160, 200, 210, 240),
  },
});

const listSchedulesRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/schedules",
  operationId: "listScreenshotSchedules",
  tags: ["Screenshots"],
  summary: "Your scheduled captures",
  security: API_SECURITY,
  responses: {
    200: okResponse("Newest first", ScheduleListSchema, {
      schedules: [EXAMPLE],
    }, { rateLimited: true }),
    ...keyedErrorResponses(),
  },
});

const getScheduleRoute = createRoute({
  method: "get",
  path: "/api/1/screenshot/schedules/{id}",
  operationId: "getScreenshotSchedule",
  tags: ["Screenshots"],
  summary: "One scheduled capture",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: one("The schedule"),
    ...keyedErrorResponses(404),
  },
});

const patchScheduleRoute = createRoute({
  method: "patch",
  path: "/api/1/screenshot/schedules/{id}",
  operationId: "updateScreenshotSchedule",
  tags: ["Screenshots"],
  summary: "Pause or resume a scheduled capture",
  security: API_SECURITY,
  request: {
    params: JobIdParamSchema,
    body: {
      required: true,
      content: { "application/json": { schema: SchedulePatchSchema } },
    },
  },
  responses: {
    200: one("The schedule"),
    ...keyedErrorResponses(160, 404),
  },
});

const deleteScheduleRoute = createRoute({
  method: "delete",
  path: "/api/1/screenshot/schedules/{id}",
  operationId: "deleteScreenshotSchedule",
  tags: ["Screenshots"],
  summary: "Remove a scheduled capture",
  description: "No more runs; the images of past runs stay.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    200: okResponse(
      "Removed",
      z.object({ deleted: z.literal(true) }),
      { deleted: true },
      { rateLimited: true },
    ),
    ...keyedErrorResponses(404),
  },
});

const runScheduleRoute = createRoute({
  method: "post",
  path: "/api/1/screenshot/schedules/{id}/run",
  operationId: "runScreenshotSchedule",
  tags: ["Screenshots"],
  summary: "Run a scheduled capture now",
  description:
    "One run now, as its cron would make it (paused or not): answered 202 with the job.",
  security: API_SECURITY,
  request: { params: JobIdParamSchema },
  responses: {
    202: acceptedJobResponse,
    ...keyedErrorResponses(404),
  },
});

/** /api/1/screenshot/schedules and its items. */
export function registerScheduleRoutes(
  app: App,
  deps: AppDeps,
  schedules: ScreenshotSchedules,
) {
  const record = async (row: ScheduleRow) => {
    const { async: _async, ...request } = jsonValue<ScreenshotRequest>(
      row.request,
    );
    const next = row.paused ? [] : await schedules.preview(row.cron, 3);
    const iso = (d: Date | null) => d ? new Date(d).toISOString() : null;
    return {
      id: row.id,
      cron: row.cron,
      request: { ...request, async: true },
      paused: row.paused,
      notify_on_change: row.notify_on_change,
      change_threshold: row.change_threshold,
      runs: row.runs,
      last_run_at: iso(row.last_run_at),
      next_runs: next.map((d) => d.toISOString()),
      last_image_id: row.last_image_id,
      created_at: iso(row.created_at)!,
    };
  };
  app.openapi(createScheduleRoute, async (c) => {
    if (!deps.screenshotter) throw new ApiError(240);
    const body = c.req.valid("json");
    const { key: _key, ...request } = body.request;
    if (!request.share) {
      throw invalidField("request.share", "a run's capture is stored");
    }
    const row = await schedules.create(c.get("userId"), {
      cron: body.cron,
      request,
      notify_on_change: body.notify_on_change,
      change_threshold: body.change_threshold,
    });
    return c.json(okBody(await record(row)), 200);
  });
  app.openapi(listSchedulesRoute, async (c) => {
    const rows = await schedules.list(c.get("userId"));
    return c.json(
      okBody({ schedules: await Promise.all(rows.map(record)) }),
      200,
    );
  });
  app.openapi(getScheduleRoute, async (c) => {
    const row = await schedules.get(c.get("userId"), c.req.valid("param").id);
    return c.json(okBody(await record(row)), 200);
  });
  app.openapi(patchScheduleRoute, async (c) => {
    const row = await schedules.setPaused(
      c.get("userId"),
      c.req.valid("param").id,
      c.req.valid("json").paused,
    );
    return c.json(okBody(await record(row)), 200);
  });
  app.openapi(deleteScheduleRoute, async (c) => {
    await schedules.remove(c.get("userId"), c.req.valid("param").id);
    return c.json(okBody({ deleted: true as const }), 200);
  });
  app.openapi(runScheduleRoute, async (c) => {
    if (!deps.screenshotter) throw new ApiError(240);
    const row = await schedules.runNow(
      c.get("userId"),
      c.req.valid("param").id,
    );
    const [job] = await jobRecords(deps.database.db, deps.config, [row]);
    return c.json(acceptedBody({ job }), 202) as never;
  });
}
