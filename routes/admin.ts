/**
 * The admin API (issue #47) under /api/1/admin/…, and POST /api/1/reports. Every admin
 * operation answers 404 to anyone who is not an admin (a guest, a user, a disabled
 * account, a user's key), as if it did not exist (DESIGN.md "Operating in public").
 */
import { linkBases } from "../services/runtime/link_base.ts";
import { API_SECURITY } from "./upload_routes.ts";
import { createRoute } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { errorResponses, okBody, okResponse } from "../schemas/envelope.ts";
import { ApiError } from "../schemas/errors.ts";
import {
  AdminIdParamSchema,
  AdminImageListSchema,
  AdminImageQuerySchema,
  AdminReasonSchema,
  AdminReportListSchema,
  AdminReportQuerySchema,
  AdminUserListSchema,
  AdminUserPatchSchema,
  AdminUserQuerySchema,
  AuditListSchema,
  AuditQuerySchema,
  BanSchema,
  InviteCreateSchema,
  InviteListSchema,
  NewInviteSchema,
  ReportCreateSchema,
  ReportFiledSchema,
  TakedownSchema,
  TotalsSchema,
  UserDeletedSchema,
} from "../schemas/operator.ts";
import { adminOf } from "../services/operator/roles.ts";
import { type Actor, listAudit } from "../services/operator/audit.ts";
import {
  deleteUserWithImages,
  listAllImages,
  listUsers,
  patchUser,
  setDisabled,
  totals,
} from "../services/operator/users.ts";
import { banUser, takeDown } from "../services/operator/takedown.ts";
import {
  dismissReport,
  fileReport,
  listReports,
} from "../services/operator/reports.ts";
import {
  createInvite,
  listInvites,
  revokeInvite,
} from "../services/operator/invites.ts";
import { quietCaller, throttleOf } from "./api_auth.ts";
import { clientAddress } from "./client_address.ts";
import type { Quotas } from "../services/accounts/quotas.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";

/**
 * Admin operations take a key (Bearer, X-API-Key, `?key=`), as every /api/1 route, or the
 * site's session with its token.
 */
const ADMIN_SECURITY = API_SECURITY;

/** What every admin operation may answer besides its own: 404 to all but admins. */
const ADMIN_ERRORS = [404, 160, 170, 250] as const;

/** ... and those that read a JSON body: 415 for another Content-Type. */
const ADMIN_BODY_ERRORS = [...ADMIN_ERRORS, 415] as const;

const USER_EXAMPLE = {
  id: "aB3dE5fG7",
  email: "you@example.com",
  role: "user",
  state: "active",
  created: 1_764_200_000,
  images: 12,
  bytes: 5_242_880,
  screenshots_this_month: 3,
  last_active: 1_764_230_000,
  quota: { storage_mb: 1024, images: null, screenshots_per_month: null },
};

const INVITE_EXAMPLE = {
  id: "Zq8wE1",
  max_uses: 1,
  uses: 0,
  expires: 1_764_804_800,
  created: 1_764_200_000,
  created_by: "aB3dE5fG7",
  state: "active",
};

const json = <T>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

const NOT_ADMIN =
  "Answers 404 to anyone who is not an admin (no key, a user's key or session, a " +
  "disabled account), as for a path that does not exist.";

const adminRoute = <
  R extends Parameters<typeof createRoute>[0],
>(r: R) =>
  createRoute({
    ...r,
    tags: ["Admin"],
    security: ADMIN_SECURITY,
    description: `${r.description ?? ""}\n\n${NOT_ADMIN}`.trim(),
  });

const getTotalsRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/stats",
  operationId: "getAdminStats",
  summary: "The instance at a glance",
  description: "Accounts, images, stored bytes, takedowns, open reports, " +
    "captures this month, and the sign-up mode.",
  responses: {
    200: okResponse("Totals", TotalsSchema, {
      users: 12,
      disabled_users: 1,
      images: 340,
      bytes: 81_234_567,
      taken_down: 2,
      open_reports: 1,
      screenshots_this_month: 55,
      signup: "invite",
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const listUsersRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/users",
  operationId: "listAdminUsers",
  summary: "List and search accounts",
  description:
    "Newest first, with images, bytes stored, captures this month and " +
    "last activity; `q` matches a piece of the e-mail or an id.",
  request: { query: AdminUserQuerySchema },
  responses: {
    200: okResponse("A page of accounts", AdminUserListSchema, {
      users: [USER_EXAMPLE],
      total: 0,
      page: 1,
      per_page: 50,
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const patchUserRoute = adminRoute({
  method: "patch",
  path: "/api/1/admin/users/{id}",
  operationId: "updateAdminUser",
  summary: "Disable, enable, change the role or the quotas of an account",
  description:
    "`disabled: true` ends the account's sessions and refuses its keys on every " +
    "instance within the key cache's bound (so its uploads and captures), its images " +
    "staying online; its capture jobs end failed 120 (a running one stopped) and its schedules make no " +
    "job while it stays disabled. `false` enables it. Quotas: null is the instance default, 0 none. " +
    "An admin cannot disable or demote themselves (160).",
  request: { params: AdminIdParamSchema, body: json(AdminUserPatchSchema) },
  responses: {
    200: okResponse(
      "The account as it is now",
      AdminUserListSchema.shape.users.element,
      USER_EXAMPLE,
    ),
    ...errorResponses(...ADMIN_BODY_ERRORS),
  },
});

const deleteUserRoute = adminRoute({
  method: "delete",
  path: "/api/1/admin/users/{id}",
  operationId: "deleteAdminUser",
  summary: "Delete an account with all its images",
  description:
    "Every image's original and variants leave the store; albums, keys " +
    "and sessions go.",
  request: { params: AdminIdParamSchema },
  responses: {
    200: okResponse("Deleted", UserDeletedSchema, {
      user_id: "aB3dE5fG7",
      images_deleted: 12,
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const banUserRoute = adminRoute({
  method: "post",
  path: "/api/1/admin/users/{id}/ban",
  operationId: "banAdminUser",
  summary: "Ban: disable the account and take down all its images",
  request: { params: AdminIdParamSchema, body: json(AdminReasonSchema) },
  responses: {
    200: okResponse("Banned", BanSchema, {
      user_id: "aB3dE5fG7",
      images_taken_down: 12,
    }),
    ...errorResponses(...ADMIN_BODY_ERRORS),
  },
});

const listImagesRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/images",
  operationId: "listAdminImages",
  summary: "Every account's images, newest first, with their owners",
  request: { query: AdminImageQuerySchema },
  responses: {
    200: okResponse("A page of images", AdminImageListSchema, {
      images: [],
      total: 0,
      page: 1,
      per_page: 50,
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const takedownRoute = adminRoute({
  method: "post",
  path: "/api/1/admin/images/{id}/takedown",
  operationId: "takedownImage",
  summary: "Take an image down",
  description:
    "Every URL form of the image answers 451 from now on (original, thumbnail, " +
    "medium, transforms, viewer, record), its bytes and variants leave the store, its " +
    "open reports close, and its SHA-256 is blocked: the same bytes uploaded again by " +
    "anyone are refused with 182. Taking down an image already taken down changes " +
    "nothing (`changed: false`).",
  request: { params: AdminIdParamSchema, body: json(AdminReasonSchema) },
  responses: {
    200: okResponse("Taken down", TakedownSchema, {
      image_id: "aB3dE5fG7hJ9",
      sha256: "9f86d081884c7d65…",
      owner_id: "xY2zW4vU6",
      reports_closed: 1,
      changed: true,
    }),
    ...errorResponses(...ADMIN_BODY_ERRORS),
  },
});

const listReportsRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/reports",
  operationId: "listAdminReports",
  summary: "The reports queue",
  description:
    "Open reports oldest first (`state=open`, the default), or any " +
    "state newest first. Never says who reported.",
  request: { query: AdminReportQuerySchema },
  responses: {
    200: okResponse("A page of reports", AdminReportListSchema, {
      reports: [],
      total: 0,
      page: 1,
      per_page: 50,
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const dismissReportRoute = adminRoute({
  method: "post",
  path: "/api/1/admin/reports/{id}/dismiss",
  operationId: "dismissAdminReport",
  summary: "Dismiss an open report (the image stays)",
  request: { params: AdminIdParamSchema },
  responses: {
    200: okResponse("Dismissed", ReportFiledSchema, { id: "Rk2mPq9x" }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const listInvitesRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/invites",
  operationId: "listAdminInvites",
  summary: "Sign-up invitations",
  responses: {
    200: okResponse("Every invitation", InviteListSchema, {
      invites: [INVITE_EXAMPLE],
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const createInviteRoute = adminRoute({
  method: "post",
  path: "/api/1/admin/invites",
  operationId: "createAdminInvite",
  summary: "Make an invitation link",
  description:
    "With SIGNUP=invite, /signup takes only these links. The link (`url`) is shown " +
    "this once; a used, expired or revoked one is refused with 181.",
  request: { body: json(InviteCreateSchema) },
  responses: {
    200: okResponse("The new invitation", NewInviteSchema, {
      ...INVITE_EXAMPLE,
      token: "q1w2e3r4t5y6u7i8o9p0a1s2",
      url: "https://img.example.com/signup?invite=q1w2e3r4t5y6u7i8o9p0a1s2",
    }),
    ...errorResponses(...ADMIN_BODY_ERRORS),
  },
});

const revokeInviteRoute = adminRoute({
  method: "delete",
  path: "/api/1/admin/invites/{id}",
  operationId: "revokeAdminInvite",
  summary: "Revoke an invitation",
  request: { params: AdminIdParamSchema },
  responses: {
    200: okResponse("Revoked", ReportFiledSchema, { id: "Zq8wE1" }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const auditRoute = adminRoute({
  method: "get",
  path: "/api/1/admin/audit",
  operationId: "listAdminAudit",
  summary: "The audit log",
  description:
    "Every admin action: who, what, on which target, when and from " +
    "which address; newest first.",
  request: { query: AuditQuerySchema },
  responses: {
    200: okResponse("A page of the log", AuditListSchema, {
      entries: [],
      total: 0,
      page: 1,
      per_page: 50,
    }),
    ...errorResponses(...ADMIN_ERRORS),
  },
});

const reportRoute = createRoute({
  method: "post",
  path: "/api/1/reports",
  operationId: "reportImage",
  tags: ["Reports"],
  summary: "Report an image",
  description:
    "No account needed: anyone who can see an image may report it to the admins. " +
    "REPORTS_PER_MINUTE per client address (170 past it). The image's owner never " +
    "sees who reported; the reporter is kept only as a hash. An image a stranger " +
    "cannot see is 404.",
  security: [],
  request: { body: json(ReportCreateSchema) },
  responses: {
    200: okResponse("Filed", ReportFiledSchema, { id: "Rk2mPq9x" }),
    ...errorResponses(160, 170, 250, 404, 415),
  },
});

/**
 * The admin gate: finds who calls (quietly) and lets only an admin through; everyone
 * else gets the same 404 as an unknown path.
 */
export function adminGate(deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const admin = await adminOf(deps.database.db, await quietCaller(c, deps));
    if (!admin) throw new ApiError(404);
    c.set("admin", admin);
    c.set("userId", admin.id);
    c.set("apiKeyId", "");
    await next();
  };
}

/** The admin behind this request, with its address, for the audit log. */
export function actorOf(c: Context<AppEnv>, deps: AppDeps): Actor {
  const admin = c.get("admin");
  if (!admin) throw new ApiError(404); // the gate let nobody else through
  return {
    ...admin,
    address: clientAddress(c, deps.config.TRUST_PROXY) ?? "",
  };
}

/** Registers the admin API and the report endpoint. */
export function registerAdminRoutes(
  app: App,
  deps: AppDeps,
  quotas: Quotas,
  rows: ImageRowCache,
) {
  const { db } = deps.database;
  const { clock, store } = deps;
  app.use("/api/1/admin/*", adminGate(deps));
  app.use("/api/1/admin", adminGate(deps));

  app.openapi(getTotalsRoute, async (c) =>
    c.json(
      okBody({ ...await totals(db, clock), signup: deps.config.SIGNUP }),
      200,
    ));

  app.openapi(listUsersRoute, async (c) => {
    const q = c.req.valid("query");
    const { users, total } = await listUsers(db, clock, {
      page: q.page,
      perPage: q.per_page,
      q: q.q,
      state: q.state,
    });
    return c.json(
      okBody({ users, total, page: q.page, per_page: q.per_page }),
      200,
    );
  });

  app.openapi(patchUserRoute, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const actor = actorOf(c, deps);
    const { disabled, ...rest } = body;
    if (disabled !== undefined) {
      await setDisabled(db, clock, actor, id, disabled);
    }
    await patchUser(db, clock, actor, id, rest);
    quotas.forget(id);
    const { users } = await listUsers(db, clock, {
      page: 1,
      perPage: 1,
      id,
    });
    if (!users.length) throw new ApiError(404);
    return c.json(okBody(users[0]), 200);
  });

  app.openapi(deleteUserRoute, async (c) => {
    const { id } = c.req.valid("param");
    const done = await deleteUserWithImages(
      db,
      store,
      clock,
      actorOf(c, deps),
      id,
    );
    return c.json(okBody(done), 200);
  });

  app.openapi(banUserRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { reason } = c.req.valid("json");
    const done = await banUser(db, store, clock, actorOf(c, deps), id, reason);
    return c.json(okBody(done), 200);
  });

  app.openapi(listImagesRoute, async (c) => {
    const q = c.req.valid("query");
    const { images, total } = await listAllImages(db, {
      page: q.page,
      perPage: q.per_page,
      owner: q.owner,
    });
    return c.json(
      okBody({ images, total, page: q.page, per_page: q.per_page }),
      200,
    );
  });

  app.openapi(takedownRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { reason } = c.req.valid("json");
    const done = await takeDown(db, store, clock, actorOf(c, deps), id, reason);
    rows.invalidate(id);
    return c.json(okBody(done), 200);
  });

  app.openapi(listReportsRoute, async (c) => {
    const q = c.req.valid("query");
    const { reports, total } = await listReports(db, {
      page: q.page,
      perPage: q.per_page,
      state: q.state,
    });
    return c.json(
      okBody({ reports, total, page: q.page, per_page: q.per_page }),
      200,
    );
  });

  app.openapi(dismissReportRoute, async (c) => {
    const { id } = c.req.valid("param");
    await dismissReport(db, clock, actorOf(c, deps), id);
    return c.json(okBody({ id }), 200);
  });

  app.openapi(
    listInvitesRoute,
    async (c) => c.json(okBody({ invites: await listInvites(db, clock) }), 200),
  );

  app.openapi(createInviteRoute, async (c) => {
    const body = c.req.valid("json");
    const invite = await createInvite(db, clock, actorOf(c, deps), body);
    return c.json(
      okBody({
        ...invite,
        url: inviteUrl(linkBases(deps.config).base, invite.token),
      }),
      200,
    );
  });

  app.openapi(revokeInviteRoute, async (c) => {
    const { id } = c.req.valid("param");
    await revokeInvite(db, clock, actorOf(c, deps), id);
    return c.json(okBody({ id }), 200);
  });

  app.openapi(auditRoute, async (c) => {
    const q = c.req.valid("query");
    const { entries, total } = await listAudit(db, {
      page: q.page,
      perPage: q.per_page,
      action: q.action,
      target: q.target,
    });
    return c.json(
      okBody({ entries, total, page: q.page, per_page: q.per_page }),
      200,
    );
  });

  const reporters = throttleOf(deps, "report", deps.config.REPORTS_PER_MINUTE);
  app.openapi(reportRoute, async (c) => {
    const body = c.req.valid("json");
    const addr = clientAddress(c, deps.config.TRUST_PROXY);
    await reporters.count(addr);
    const filed = await fileReport(db, clock, body, addr ?? "");
    return c.json(okBody(filed), 200);
  });
}

/** The sign-up link an invitation's token makes. */
export function inviteUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/signup?invite=${encodeURIComponent(token)}`;
}
