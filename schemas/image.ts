import { z } from "@hono/zod-openapi";

/** File details of one stored file (original or a variant), SPEC.md 2.2 data.image. */
export const ImageFileSchema = z.object({
  filename: z.string().openapi({ example: "aB3xK9pQ2m.png" }),
  name: z.string().openapi({ example: "aB3xK9pQ2m" }),
  mime: z.string().openapi({ example: "image/png" }),
  extension: z.string().openapi({ example: "png" }),
  url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
}).openapi("ImageFile");

/** The image record of SPEC.md 2.2, with ImgBB-like extras. */
export const ImageRecordSchema = z.object({
  id: z.string().openapi({ example: "aB3xK9pQ2m" }),
  title: z.string().openapi({ example: "holiday.png" }),
  url_viewer: z.string().url().openapi({
    example: "https://example.com/i/aB3xK9pQ2m",
  }),
  url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
  display_url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
  width: z.number().int().openapi({ example: 1920 }),
  height: z.number().int().openapi({ example: 1080 }),
  size: z.number().int().openapi({
    description: "Bytes of the stored file",
    example: 48213,
  }),
  time: z.number().int().openapi({
    description: "Upload time, Unix seconds",
    example: 1795000000,
  }),
  expiration: z.number().int().openapi({
    description: "Seconds the image lives after upload; 0 = forever",
    example: 0,
  }),
  image: ImageFileSchema,
  thumb: ImageFileSchema.openapi({
    description:
      "Thumbnail (longest side 320 px); the original when it is no larger",
  }),
  medium: ImageFileSchema.openapi({
    description:
      "Medium size (longest side 1024 px); the original when it is no larger",
  }),
  delete_url: z.string().url().openapi({
    description: "Secret link that deletes the image",
    example: "https://example.com/delete/aB3xK9pQ2m/Zk2...",
  }),
  duplicate: z.boolean().optional().openapi({
    description: "true when the same user had already uploaded these bytes",
  }),
}).openapi("ImageRecord");

/** One failed file of a multi-file upload. */
export const UploadFileErrorSchema = z.object({
  index: z.number().int().openapi({ example: 1 }),
  filename: z.string().openapi({ example: "notes.txt" }),
  code: z.number().int().openapi({ example: 141 }),
  message: z.string().openapi({ example: "Unsupported image type" }),
}).openapi("UploadFileError");

/** SPEC.md 2.3: several files. */
export const MultiUploadSchema = z.object({
  images: z.array(ImageRecordSchema),
  count: z.number().int().openapi({ example: 2 }),
  errors: z.array(UploadFileErrorSchema).optional(),
}).openapi("MultiUpload");

/** Multipart request body of POST /api/1/upload (documentation of the streamed form). */
export const UploadFormSchema = z.object({
  key: z.string().optional().openapi({
    description:
      "API key (if not sent in a header), before the files: it is checked when the " +
      "first file begins, and without a valid one the rest is not read",
  }),
  images: z.union([z.string(), z.array(z.string())]).openapi({
    type: "array",
    items: { type: "string", format: "binary" },
    description:
      "One or more image files; `images[]`, `image` and `source` are accepted too",
  }),
  expiration: z.string().optional().openapi({
    description: "Seconds until the image is deleted, 60..15552000",
    example: "3600",
  }),
}).openapi("UploadForm");

/** Path parameter of the image API routes. */
export const ImageIdParamSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).openapi({
    param: { name: "id", in: "path" },
    example: "aB3xK9pQ2m",
  }),
});

/** Result of a deletion. */
export const DeletedSchema = z.object({
  id: z.string(),
  deleted: z.literal(true),
}).openapi("Deleted");
