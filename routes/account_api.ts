import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AUTH_ERRORS,
  errorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import { AccountSchema } from "../schemas/account.ts";
import { ApiError } from "../schemas/errors.ts";
import { standingOf } from "../services/accounts/quotas.ts";
import { API_SECURITY } from "./upload.ts";

const getAccountRoute = createRoute({
  method: "get",
  path: "/api/1/account",
  operationId: "getAccount",
  tags: ["Account"],
  summary: "Your account: usage and limits",
  description:
    "What the account stores and captured this month beside its quotas " +
    "(USER_STORAGE_MB, USER_IMAGES_MAX, SCREENSHOTS_PER_MONTH, or an admin's " +
    "override; 0 is no limit). An upload or capture past a limit answers 180.",
  security: API_SECURITY,
  responses: {
    200: okResponse("The account", AccountSchema, {
      id: "aB3dE5fG7",
      email: "you@example.com",
      role: "user",
      usage: { bytes: 5_242_880, images: 12, screenshots_this_month: 3 },
      limits: {
        storage_bytes: 1_073_741_824,
        images: 0,
        screenshots_per_month: 100,
      },
    }, { rateLimited: true }),
    ...errorResponses(...AUTH_ERRORS),
  },
});

/** GET /api/1/account. */
export function registerAccountApi(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.openapi(getAccountRoute, async (c) => {
    const userId = c.get("userId");
    const row = await db.selectFrom("users").select(["id", "email", "role"])
      .where("id", "=", userId).executeTakeFirst();
    if (!row) throw new ApiError(120);
    const { usage, limits } = await standingOf(
      db,
      deps.config,
      deps.clock,
      userId,
    );
    return c.json(
      okBody({
        id: row.id,
        email: row.email,
        role: row.role === "admin" ? "admin" as const : "user" as const,
        usage: {
          bytes: usage.bytes,
          images: usage.images,
          screenshots_this_month: usage.screenshotsThisMonth,
        },
        limits: {
          storage_bytes: limits.storageBytes,
          images: limits.images,
          screenshots_per_month: limits.screenshotsPerMonth,
        },
      }),
      200,
    );
  });
}
