import { z } from "@hono/zod-openapi";

const limit = z.number().int().openapi({ description: "0: no limit" });

/** GET /api/1/account: who the key or session is, what it uses and may use. */
export const AccountSchema = z.object({
  id: z.string().openapi({ example: "aB3dE5fG7" }),
  email: z.string().openapi({ example: "you@example.com" }),
  role: z.enum(["admin", "user"]),
  usage: z.object({
    bytes: z.number().int().openapi({ description: "Stored originals, bytes" }),
    images: z.number().int(),
    screenshots_this_month: z.number().int().openapi({
      description: "Captures this calendar month (UTC)",
    }),
  }),
  limits: z.object({
    storage_bytes: limit,
    images: limit,
    screenshots_per_month: limit,
  }),
}).openapi("Account");

/** DELETE /api/1/account: the account is gone, with this many images. */
export const AccountDeletedSchema = z.object({
  deleted: z.literal(true),
  images: z.number().int().openapi({
    description: "How many images were deleted with it",
  }),
}).openapi("AccountDeleted");
