import { z } from "@hono/zod-openapi";
import {
  DescriptionSchema,
  ImageRecordSchema,
  PasswordSchema,
  PrivacySchema,
  TitleSchema,
} from "./image.ts";

/** An album as the API answers it. */
export const AlbumSchema = z.object({
  kind: z.literal("album"),
  id: z.string().openapi({ example: "Ab12Cd34Ef" }),
  title: z.string().openapi({ example: "Holiday 2026" }),
  description: z.string().openapi({ example: "Two weeks by the sea" }),
  privacy: PrivacySchema,
  cover_image_id: z.string().nullable().openapi({
    description: "The image shown for the album; its newest image when unset",
    example: null,
  }),
  cover_url: z.string().url().nullable().openapi({
    description: "The cover's thumbnail (null for an empty album)",
    example: "https://img.example.com/aB3xK9pQ2m.th.jpg",
  }),
  position: z.number().int().openapi({
    description:
      "Where it comes among your albums (ascending, then newest first)",
    example: 0,
  }),
  image_count: z.number().int().openapi({ example: 12 }),
  url_viewer: z.string().url().openapi({
    description: "The album's page: its images, with links and embed codes",
    example: "https://example.com/a/Ab12Cd34Ef",
  }),
  time: z.number().int().openapi({
    description: "Creation time, Unix seconds",
    example: 1795000000,
  }),
}).openapi("Album");

/** POST /api/1/albums. */
export const AlbumCreateSchema = z.object({
  title: TitleSchema.openapi({ example: "Holiday 2026" }),
  description: DescriptionSchema.optional(),
  privacy: PrivacySchema.optional(),
  password: PasswordSchema.optional(),
  position: z.number().int().min(-1_000_000).max(1_000_000).optional(),
}).strict().openapi("AlbumCreate");

/** PATCH /api/1/albums/{id}: what is given changes. */
export const AlbumPatchSchema = z.object({
  title: TitleSchema.optional(),
  description: DescriptionSchema.optional(),
  privacy: PrivacySchema.optional(),
  password: PasswordSchema.optional(),
  cover_image_id: z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).nullable()
    .optional().openapi({
      description: "One of the album's images, or null for its newest",
    }),
  position: z.number().int().min(-1_000_000).max(1_000_000).optional(),
}).strict().openapi("AlbumPatch");

/** `{id}` of the album routes. */
export const AlbumIdParamSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).openapi({
    param: { name: "id", in: "path" },
    description: "The album's id",
    example: "Ab12Cd34Ef",
  }),
});

/** DELETE /api/1/albums/{id}?with_images=true. */
export const AlbumDeleteQuerySchema = z.object({
  with_images: z.enum(["true", "false"]).optional().openapi({
    param: { name: "with_images", in: "query" },
    description:
      "`true` deletes the album's images too; otherwise they stay, in no album",
    example: "false",
  }),
});

/** The caller's albums. */
export const AlbumListSchema = z.object({
  kind: z.literal("albums"),
  albums: z.array(AlbumSchema),
}).openapi("AlbumList");

/** One page of an album's images, newest first. */
export const AlbumImagesSchema = z.object({
  kind: z.literal("list"),
  album: AlbumSchema,
  images: z.array(ImageRecordSchema),
  page: z.number().int(),
  per_page: z.number().int(),
  total: z.number().int(),
  pages: z.number().int(),
}).openapi("AlbumImages");

/** An album, as the examples of openapi.yaml show it. */
export const ALBUM_EXAMPLE = {
  kind: "album" as const,
  id: "Ab12Cd34Ef",
  title: "Holiday 2026",
  description: "Two weeks by the sea",
  privacy: "public" as const,
  cover_image_id: null,
  cover_url: "https://img.example.com/aB3xK9pQ2m.th.jpg",
  position: 0,
  image_count: 12,
  url_viewer: "https://example.com/a/Ab12Cd34Ef",
  time: 1795000000,
};
