/**
 * The operator's API (issue #47): reports anyone may file, and what admins read and do
 * under /api/1/admin/…
 */
import { z } from "@hono/zod-openapi";

/** Why someone reports an image: the list the report form and the API offer. */
export const REPORT_REASONS = [
  "illegal",
  "copyright",
  "abuse",
  "sexual",
  "violence",
  "spam",
  "other",
] as const;

/** One of {@link REPORT_REASONS}. */
export type ReportReason = typeof REPORT_REASONS[number];

/** The words the report form shows for each reason. */
export const REPORT_REASON_LABELS: Record<ReportReason, string> = {
  illegal: "Illegal content",
  copyright: "Copyright infringement",
  abuse: "Harassment or abuse",
  sexual: "Sexual content involving minors or without consent",
  violence: "Violence or gore",
  spam: "Spam or scam",
  other: "Something else",
};

/** POST /api/1/reports: no account needed. */
export const ReportCreateSchema = z.object({
  image_id: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/).openapi({
    example: "aB3dE5fG7hJ9",
  }),
  reason: z.enum(REPORT_REASONS).openapi({ example: "copyright" }),
  note: z.string().max(1000).optional().openapi({
    description: "Anything the admin should know (at most 1000 characters)",
    example: "This is my photo, posted without my permission.",
  }),
}).openapi("ReportRequest");

/** The answer to a filed report. */
export const ReportFiledSchema = z.object({
  id: z.string().openapi({ example: "Rk2mPq9x" }),
}).openapi("ReportFiled");

const page = z.coerce.number().int().min(1).max(100_000).default(1).openapi({
  param: { name: "page", in: "query" },
  example: 1,
});
const perPage = z.coerce.number().int().min(1).max(100).default(50).openapi({
  param: { name: "per_page", in: "query" },
  example: 50,
});

/** GET /api/1/admin/users */
export const AdminUserQuerySchema = z.object({
  q: z.string().max(200).optional().openapi({
    param: { name: "q", in: "query" },
    description: "A piece of the e-mail, or an account id",
    example: "example.com",
  }),
  state: z.enum(["all", "active", "disabled", "admin"]).default("all")
    .openapi({ param: { name: "state", in: "query" } }),
  page,
  per_page: perPage,
});

const quotaValue = z.number().int().min(0).max(1_000_000_000).nullable();

/** One account, as admins see it. */
export const AdminUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(["admin", "user"]),
  state: z.enum(["active", "disabled"]),
  created: z.number().int().openapi({ description: "Unix seconds" }),
  images: z.number().int(),
  bytes: z.number().int().openapi({ description: "Stored originals, bytes" }),
  screenshots_this_month: z.number().int(),
  last_active: z.number().int().nullable().openapi({
    description: "Newest upload, key use or sign-in (Unix seconds)",
  }),
  quota: z.object({
    storage_mb: quotaValue,
    images: quotaValue,
    screenshots_per_month: quotaValue,
  }).openapi({
    description: "Per-account overrides: null is the instance default, 0 none",
  }),
}).openapi("AdminUser");

/** A page of accounts. */
export const AdminUserListSchema = z.object({
  users: z.array(AdminUserSchema),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
}).openapi("AdminUserList");

/** PATCH /api/1/admin/users/{id} */
export const AdminUserPatchSchema = z.object({
  disabled: z.boolean().optional().openapi({
    description:
      "true disables the account (sessions end, keys answer 120, uploads and captures " +
      "refused; its images stay online); false enables it",
  }),
  role: z.enum(["admin", "user"]).optional(),
  quota_storage_mb: quotaValue.optional(),
  quota_images: quotaValue.optional(),
  quota_screenshots: quotaValue.optional(),
}).strict().openapi("AdminUserPatch");

/** An id in the path of an admin operation. */
export const AdminIdParamSchema = z.object({
  id: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/).openapi({
    param: { name: "id", in: "path" },
    example: "aB3dE5fG7",
  }),
});

/** A reason an admin gives for a takedown or a ban (kept in the audit log). */
export const AdminReasonSchema = z.object({
  reason: z.string().max(500).default("").openapi({
    example: "DMCA notice 2026-118",
  }),
}).openapi("AdminReason");

/** What a takedown did. */
export const TakedownSchema = z.object({
  image_id: z.string(),
  sha256: z.string().openapi({
    description: "Blocked from now on, for everyone",
  }),
  owner_id: z.string(),
  reports_closed: z.number().int(),
  changed: z.boolean().openapi({
    description: "false when the image had been taken down before",
  }),
}).openapi("Takedown");

/** What a ban did. */
export const BanSchema = z.object({
  user_id: z.string(),
  images_taken_down: z.number().int(),
}).openapi("Ban");

/** What deleting an account did. */
export const UserDeletedSchema = z.object({
  user_id: z.string(),
  images_deleted: z.number().int(),
}).openapi("UserDeleted");

/** GET /api/1/admin/images */
export const AdminImageQuerySchema = z.object({
  owner: z.string().max(64).optional().openapi({
    param: { name: "owner", in: "query" },
    description: "Only this account's images",
  }),
  page,
  per_page: perPage,
});

/** One image with its owner. */
export const AdminImageSchema = z.object({
  id: z.string(),
  title: z.string(),
  owner_id: z.string(),
  owner_email: z.string(),
  ext: z.string(),
  thumb_ext: z.string().nullable(),
  size: z.number().int(),
  width: z.number().int(),
  height: z.number().int(),
  privacy: z.string(),
  source: z.string(),
  time: z.number().int(),
}).openapi("AdminImage");

/** A page of images. */
export const AdminImageListSchema = z.object({
  images: z.array(AdminImageSchema),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
}).openapi("AdminImageList");

/** GET /api/1/admin/reports */
export const AdminReportQuerySchema = z.object({
  state: z.enum(["open", "dismissed", "taken_down", "all"]).default("open")
    .openapi({ param: { name: "state", in: "query" } }),
  page,
  per_page: perPage,
});

/** One report, as admins see it (never who sent it). */
export const AdminReportSchema = z.object({
  id: z.string(),
  image_id: z.string(),
  reason: z.enum(REPORT_REASONS),
  note: z.string(),
  state: z.enum(["open", "dismissed", "taken_down"]),
  time: z.number().int(),
  image: z.object({
    owner_id: z.string(),
    owner_email: z.string(),
    title: z.string(),
  }).nullable(),
  others: z.number().int().openapi({
    description: "Other open reports of the same image",
  }),
}).openapi("AdminReport");

/** A page of reports. */
export const AdminReportListSchema = z.object({
  reports: z.array(AdminReportSchema),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
}).openapi("AdminReportList");

/** POST /api/1/admin/invites */
export const InviteCreateSchema = z.object({
  max_uses: z.number().int().min(1).max(10_000).default(1),
  expires_in: z.number().int().min(60).max(31_536_000).optional().openapi({
    description: "Seconds until the link stops working; none: never",
    example: 604800,
  }),
}).openapi("InviteRequest");

/** One invitation. */
export const InviteSchema = z.object({
  id: z.string(),
  max_uses: z.number().int(),
  uses: z.number().int(),
  expires: z.number().int().nullable(),
  created: z.number().int(),
  created_by: z.string(),
  state: z.enum(["active", "used", "expired", "revoked"]),
}).openapi("Invite");

/** A new invitation, with its link (shown once). */
export const NewInviteSchema = InviteSchema.extend({
  token: z.string(),
  url: z.string().openapi({
    example: "https://img.example.com/signup?invite=…",
  }),
}).openapi("NewInvite");

/** Every invitation. */
export const InviteListSchema = z.object({
  invites: z.array(InviteSchema),
}).openapi("InviteList");

/** GET /api/1/admin/audit */
export const AuditQuerySchema = z.object({
  action: z.string().max(64).optional().openapi({
    param: { name: "action", in: "query" },
    example: "image.takedown",
  }),
  target: z.string().max(64).optional().openapi({
    param: { name: "target", in: "query" },
  }),
  page,
  per_page: perPage,
});

/** One admin action. */
export const AuditEntrySchema = z.object({
  id: z.number().int(),
  actor_id: z.string(),
  actor_email: z.string(),
  action: z.string().openapi({ example: "image.takedown" }),
  target: z.string(),
  details: z.string().openapi({ description: "JSON, or empty" }),
  address: z.string(),
  time: z.number().int(),
}).openapi("AuditEntry");

/** A page of the audit log. */
export const AuditListSchema = z.object({
  entries: z.array(AuditEntrySchema),
  total: z.number().int(),
  page: z.number().int(),
  per_page: z.number().int(),
}).openapi("AuditList");

/** The instance at a glance. */
export const TotalsSchema = z.object({
  users: z.number().int(),
  disabled_users: z.number().int(),
  images: z.number().int(),
  bytes: z.number().int(),
  taken_down: z.number().int(),
  open_reports: z.number().int(),
  screenshots_this_month: z.number().int(),
  signup: z.enum(["open", "invite", "closed"]),
}).openapi("AdminTotals");
