import { z } from "@hono/zod-openapi";

/** One file of a Chevereto V1.1 `image` object (its `thumb` and `medium`). */
const CheveretoFileSchema = z.object({
  filename: z.string().openapi({ example: "aB3xK9pQ2m.th.png" }),
  name: z.string().openapi({ example: "aB3xK9pQ2m.th" }),
  mime: z.string().openapi({ example: "image/png" }),
  extension: z.string().openapi({ example: "png" }),
  url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.th.png",
  }),
});

/**
 * The `image` object of Chevereto's API V1.1 answer, as its clients read it (ShareX's
 * `{json:image.url}`, the npm uploaders' `image.url` / `image.display_url`).
 */
export const CheveretoImageSchema = z.object({
  name: z.string().openapi({
    description: "The title without its extension",
    example: "holiday",
  }),
  extension: z.string().openapi({ example: "png" }),
  filename: z.string().openapi({ example: "aB3xK9pQ2m.png" }),
  original_filename: z.string().openapi({ example: "holiday.png" }),
  mime: z.string().openapi({ example: "image/png" }),
  size: z.number().int().openapi({ example: 48213 }),
  width: z.number().int().openapi({ example: 1920 }),
  height: z.number().int().openapi({ example: 1080 }),
  date: z.string().openapi({
    description: "Upload time, UTC, as Chevereto writes it",
    example: "2026-11-25 22:13:20",
  }),
  date_gmt: z.string().openapi({ example: "2026-11-25 22:13:20" }),
  id_encoded: z.string().openapi({ example: "aB3xK9pQ2m" }),
  url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
  url_viewer: z.string().url().openapi({
    example: "https://example.com/i/aB3xK9pQ2m",
  }),
  display_url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.md.png",
  }),
  thumb: CheveretoFileSchema,
  medium: CheveretoFileSchema,
  delete_url: z.string().url(),
  expiration: z.number().int().openapi({
    description: "Seconds the image lives after upload; 0 = forever",
  }),
}).openapi("CheveretoImage");

/**
 * Chevereto V1.1's answer fields, beside the envelope of a one-image upload when the
 * request is Chevereto's (an X-API-Key header, a `source` field, or `format=json`).
 * Chevereto's own `success` is an object (`{message, code}`); ours stays the boolean of
 * the envelope, since every client of ours reads it, and Chevereto's clients read
 * `status_code` and `image`.
 */
export const CHEVERETO_FIELDS = {
  status_code: z.literal(200).optional().openapi({
    description:
      "Chevereto's: the HTTP status (Chevereto-shaped requests only)",
  }),
  status_txt: z.literal("OK").optional().openapi({
    description: "Chevereto's: `OK` (Chevereto-shaped requests only)",
  }),
  image: CheveretoImageSchema.optional().openapi({
    description:
      "Chevereto's image object (Chevereto-shaped requests with one image only)",
  }),
};
