import { createRoute, z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  header,
  keyedErrorResponses,
  okBody,
  okResponse,
  RATE_LIMIT_HEADERS,
  REQUEST_ID_HEADER,
} from "../schemas/envelope.ts";
import { exportAccount } from "../services/accounts/export.ts";
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
    ...keyedErrorResponses(),
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
    ...keyedErrorResponses(160),
  },
});

const exportAccountRoute = createRoute({
  method: "get",
  path: "/api/1/account/export",
  operationId: "exportAccount",
  tags: ["Account"],
  summary: "Everything the account holds, as one zip",
  description:
    "A zip, streamed: every original the account stores under `images/<id>.<ext>` " +
    "(its bytes as stored: metadata stripped at upload), and `manifest.json` with " +
    "the account (id, e-mail, role, created_at), its albums' records and every " +
    "image's record (title, description, privacy, album_id, expires_at, links) with " +
    "`file`, its path in the zip (null for one whose bytes are gone). Files are " +
    "stored, not deflated (images are compressed already); Zip64 past 4 GB. One " +
    "export of an account at a time per instance (170 while one runs). An error " +
    "after the first byte ends the download short: the zip is then unreadable, " +
    "never silently incomplete.",
  security: API_SECURITY,
  responses: {
    200: {
      description: "The zip",
      headers: {
        ...REQUEST_ID_HEADER,
        ...RATE_LIMIT_HEADERS,
        "Content-Disposition": header(
          'attachment; filename="image-host-export-<date>.zip"',
        ),
        "Cache-Control": header("no-store"),
      },
      content: {
        "application/zip": {
          schema: z.string().openapi({ format: "binary" }),
        },
      },
    },
    ...keyedErrorResponses(),
  },
});

/** The export's answer: the zip stream as an attachment, never stored by a cache. */
export async function exportAnswer(
  deps: AppDeps,
  userId: string,
): Promise<Response> {
  const { stream, filename } = await exportAccount({
    db: deps.database.db,
    store: deps.store,
    config: deps.config,
    clock: deps.clock,
    onError: (e) =>
      deps.log.error({
        msg: "an account export ended short",
        user_id: userId,
        error: String(e),
      }),
  }, userId);
  return new Response(stream, {
    status: 200,
    headers: {
      "content-type": "application/zip",
      "content-disposition": `attachment; filename="${filename}"`,
      "cache-control": "no-store",
    },
  });
}

/** GET and DELETE /api/1/account, GET /api/1/account/export. */
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
  app.openapi(
    exportAccountRoute,
    async (c) => await exportAnswer(deps, c.get("userId")) as never,
  );
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
