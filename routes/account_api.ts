import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AUTH_ERRORS,
  errorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import { AccountDeletedSchema, AccountSchema } from "../schemas/account.ts";
import { deleteAccount } from "../services/accounts/self_service.ts";
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

const deleteAccountRoute = createRoute({
  method: "delete",
  path: "/api/1/account",
  operationId: "deleteAccount",
  tags: ["Account"],
  summary: "Delete your account and everything it holds",
  description:
    "Deletes the account of the key (or session) that asks: every image (its " +
    "original, thumbnail, medium and every variant leave the store), every album, " +
    "every key and every sign-in. The key answers 401 (110) from then on. The only admin " +
    "cannot (160): make another account admin first. There is no undo.",
  security: API_SECURITY,
  responses: {
    200: okResponse("Deleted", AccountDeletedSchema, {
      deleted: true,
      images: 12,
    }, { rateLimited: true }),
    ...errorResponses(...AUTH_ERRORS, 160),
  },
});

/** GET and DELETE /api/1/account. */
export function registerAccountApi(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.openapi(deleteAccountRoute, async (c) => {
    const images = await deleteAccount(
      db,
      deps.store,
      deps.clock,
      c.get("userId"),
    );
    return c.json(okBody({ deleted: true as const, images }), 200);
  });
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
