import { z } from "@hono/zod-openapi";
import { ErrorCodeSchema } from "./envelope.ts";

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

/**
 * Who may see an album or an image: `public` (anyone with the link, and listed), `unlisted`
 * (anyone with the link, never listed to others), `private` (its owner alone) or
 * `password` (whoever gives its password on its page; never listed to others).
 */
export const PRIVACY = ["public", "unlisted", "private", "password"] as const;

/** One of {@link PRIVACY}. */
export type Privacy = typeof PRIVACY[number];

export const PrivacySchema = z.enum(PRIVACY).openapi({
  description:
    "`public`: anyone with the link, and listed (an album's page lists it); " +
    "`unlisted`: anyone with the link, never listed to others; `private`: its owner " +
    "alone (signed in or with a key); everyone else gets 404 on every route; " +
    "`password`: its page asks for the password (set with `password`), and its files " +
    "are served to others only through the short-lived signed URLs that page carries " +
    "(`?access=`); never listed to others",
  example: "public",
});

/** The image record of SPEC.md 2.2, with ImgBB-like extras. */
export const ImageRecordSchema = z.object({
  kind: z.literal("image").openapi({
    description:
      "Tells a record from a batch (`batch`) in an upload's answer without looking at " +
      "its shape",
  }),
  id: z.string().openapi({ example: "aB3xK9pQ2m" }),
  title: z.string().openapi({ example: "holiday.png" }),
  url_viewer: z.string().url().openapi({
    example: "https://example.com/i/aB3xK9pQ2m",
  }),
  url: z.string().url().openapi({
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
  display_url: z.string().url().openapi({
    description:
      "The image to show: the file as uploaded, or with IMAGE_NEGOTIATE=on its " +
      "`?format=auto` transform URL (AVIF or WebP where the browser takes them)",
    example: "https://img.example.com/aB3xK9pQ2m.png",
  }),
  transform_url: z.string().url().openapi({
    description: "The image at the address that takes transform parameters " +
      "(`?w=&h=&fit=&format=&q=`): the service's, also where `url` points at a bucket " +
      "(S3_PUBLIC_URL), which ignores them",
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
      "Thumbnail (longest side 320 px; the original's size when it is no larger), made at its first request and kept",
  }),
  medium: ImageFileSchema.openapi({
    description:
      "Medium size (longest side 1024 px), made at its first request and kept; the original when it is no larger",
  }),
  description: z.string().openapi({
    description: "The owner's description (empty when none)",
    example: "",
  }),
  album_id: z.string().nullable().openapi({
    description: "The album it is in, if any",
    example: null,
  }),
  privacy: PrivacySchema,
  delete_url: z.string().url().openapi({
    description: "Secret link that deletes the image",
    example: "https://example.com/delete/aB3xK9pQ2m/Zk2...",
  }),
  duplicate: z.boolean().optional().openapi({
    description:
      "Only in an upload's answer: true when the same user had already uploaded these " +
      "bytes (the existing record is returned with its title; its expiration becomes this " +
      "upload's, counted from now, or none when this upload gave none)",
  }),
}).openapi("ImageRecord");

/** One failed file of a multi-file upload. */
export const UploadFileErrorSchema = z.object({
  index: z.number().int().openapi({ example: 1 }),
  filename: z.string().openapi({ example: "notes.txt" }),
  code: ErrorCodeSchema,
  message: z.string().openapi({ example: "Unsupported image type" }),
}).openapi("UploadFileError");

/** SPEC.md 2.3: several files. */
export const MultiUploadSchema = z.object({
  kind: z.literal("batch").openapi({
    description: "Several images were sent (a record has `image`)",
  }),
  images: z.array(ImageRecordSchema),
  count: z.number().int().openapi({ example: 2 }),
  errors: z.array(UploadFileErrorSchema).optional(),
}).openapi("MultiUpload");

/** Path parameter of the image API routes. */
export const ImageIdParamSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).openapi({
    param: { name: "id", in: "path" },
    description: "The image's id (`id` of its record)",
    example: "aB3xK9pQ2m",
  }),
});

/**
 * The password of a `password` image or album: given with `privacy: "password"` (or to
 * change the one it has), stored only as a scrypt hash, never answered.
 */
export const PasswordSchema = z.string().min(4, "at least 4 characters").max(
  128,
  "at most 128 characters",
).openapi({
  description:
    'The password of `privacy: "password"` (4–128 characters): required when the ' +
    "privacy becomes `password`, allowed only with it. Stored as a hash; a new one " +
    "ends every signed URL and unlocked page of the old",
  example: "correct horse",
});

/** Shortest and longest `expiration` (seconds): one minute to 180 days, as ImgBB. */
export const EXPIRATION_MIN = 60;
export const EXPIRATION_MAX = 15_552_000;

/**
 * Text the database can keep: PostgreSQL's text holds no U+0000, and a title with one
 * was a 500 (the fuzzer's `?name=%00`); such text is refused (160) instead.
 */
function noNul(s: string): boolean {
  return !s.includes("\0");
}
const NO_NUL = "no NUL character (U+0000)";

/** A title of an image or an album: 1–255 characters once trimmed. */
export const TitleSchema = z.string().trim().min(1, "give a title").max(
  255,
  "at most 255 characters",
).refine(noNul, NO_NUL);

/** A description of an image or an album: up to 5000 characters. */
export const DescriptionSchema = z.string().max(5000).refine(noNul, NO_NUL);

/** PATCH /api/1/images/{id}: what is given changes. */
export const ImagePatchSchema = z.object({
  title: TitleSchema.optional(),
  description: DescriptionSchema.optional(),
  album_id: z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).nullable().optional()
    .openapi({ description: "One of your albums, or null for none" }),
  privacy: PrivacySchema.optional(),
  password: PasswordSchema.optional(),
  expiration: z.number().int().refine(
    (n) => n === 0 || (n >= EXPIRATION_MIN && n <= EXPIRATION_MAX),
    `0 (kept for good) or ${EXPIRATION_MIN} to ${EXPIRATION_MAX} seconds`,
  ).optional().openapi({
    description:
      "Seconds from now until the image is deleted, or 0 to keep it for good",
    example: 86400,
  }),
}).strict().openapi("ImagePatch");

/** Result of a deletion. */
export const DeletedSchema = z.object({
  id: z.string(),
  deleted: z.literal(true),
}).openapi("Deleted");

const file = (filename: string) => ({
  filename,
  name: filename.slice(0, filename.indexOf(".")),
  mime: "image/jpeg",
  extension: "jpg",
  url: `https://img.example.com/${filename}`,
});

/** A whole image record, as the examples of openapi.yaml show it. */
export const IMAGE_RECORD_EXAMPLE = {
  kind: "image" as const,
  id: "aB3xK9pQ2m",
  title: "holiday.jpg",
  url_viewer: "https://example.com/i/aB3xK9pQ2m",
  url: "https://img.example.com/aB3xK9pQ2m.jpg",
  display_url: "https://img.example.com/aB3xK9pQ2m.jpg",
  transform_url: "https://img.example.com/aB3xK9pQ2m.jpg",
  width: 1920,
  height: 1080,
  size: 48213,
  time: 1795000000,
  expiration: 3600,
  image: file("aB3xK9pQ2m.jpg"),
  thumb: file("aB3xK9pQ2m.th.jpg"),
  medium: file("aB3xK9pQ2m.md.jpg"),
  description: "",
  album_id: null,
  privacy: "public" as const,
  delete_url: "https://example.com/delete/aB3xK9pQ2m/Zk2Qh7vR1xPzL0aY",
};

/** A batch answer (two images sent, one refused), as openapi.yaml shows it. */
export const BATCH_EXAMPLE = {
  kind: "batch" as const,
  images: [IMAGE_RECORD_EXAMPLE],
  count: 1,
  errors: [{
    index: 1,
    filename: "notes.txt",
    code: 141,
    message: "Unsupported image type",
  }],
};

/** Query of GET /api/1/images. */
export const ImageListQuerySchema = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1).openapi({
    param: { name: "page", in: "query" },
    description: "Page number, from 1",
    example: 1,
  }),
  per_page: z.coerce.number().int().min(1).max(100).default(30).openapi({
    param: { name: "per_page", in: "query" },
    description: "Images per page (1–100)",
    example: 30,
  }),
  source: z.enum(["upload", "screenshot"]).optional().openapi({
    param: { name: "source", in: "query" },
    description:
      "Only images that came from uploads (files and URL imports) or from screenshots",
    example: "upload",
  }),
  q: z.string().trim().max(200).optional().openapi({
    param: { name: "q", in: "query" },
    description:
      "Only images whose title holds every one of these words (any case, anywhere)",
    example: "beach",
  }),
  sort: z.enum(["date", "size", "name"]).optional().openapi({
    param: { name: "sort", in: "query" },
    description:
      "date (default: newest first), size (largest first), name (A–Z)",
    example: "date",
  }),
  order: z.enum(["asc", "desc"]).optional().openapi({
    param: { name: "order", in: "query" },
    description: "Turns the sort's own direction round when given",
    example: "desc",
  }),
  album: z.string().regex(/^(none|[A-Za-z0-9_-]{6,64})$/).optional().openapi({
    param: { name: "album", in: "query" },
    description: "Only this album's images, or `none` for those in no album",
    example: "Ab12Cd34Ef",
  }),
  type: z.enum(["jpg", "png", "gif", "webp", "avif", "bmp", "tiff"]).optional()
    .openapi({
      param: { name: "type", in: "query" },
      description: "Only images stored as this type",
      example: "png",
    }),
});

/** One page of the caller's images. */
export const ImageListSchema = z.object({
  kind: z.literal("list"),
  images: z.array(ImageRecordSchema).openapi({
    description: "Newest first; live images only (not deleted, not expired)",
  }),
  page: z.number().int().openapi({ example: 1 }),
  per_page: z.number().int().openapi({ example: 30 }),
  total: z.number().int().openapi({
    description: "How many images match, on all pages",
    example: 1,
  }),
  pages: z.number().int().openapi({
    description: "How many pages there are (0 when there are no images)",
    example: 1,
  }),
}).openapi("ImageList");

/** A one-image page, as openapi.yaml shows it. */
export const IMAGE_LIST_EXAMPLE = {
  kind: "list" as const,
  images: [IMAGE_RECORD_EXAMPLE],
  page: 1,
  per_page: 30,
  total: 1,
  pages: 1,
};
