import { type Kysely, type Selectable, sql } from "kysely";
import { ApiError } from "../../schemas/errors.ts";
import type { Config } from "../../schemas/config.ts";
import type { Privacy } from "../../schemas/image.ts";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { deleteVariants } from "./variant_rows.ts";
import { isRestricted } from "../privacy/password_access.ts";
import { linkBases } from "../runtime/link_base.ts";

/** A row of the images table. */
export type ImageRow = Selectable<DB["images"]>;

/** Media type per stored extension. */
export const MIME_BY_EXT: Record<string, string> = {
  jpg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  bmp: "image/bmp",
  tiff: "image/tiff",
};

/** Store keys of an image: the original and whichever variants exist. */
export function blobKeys(
  row: Pick<ImageRow, "id" | "ext" | "thumb_ext" | "medium_ext">,
) {
  return {
    original: `${row.id}.${row.ext}`,
    thumb: row.thumb_ext ? `${row.id}.th.${row.thumb_ext}` : undefined,
    medium: row.medium_ext ? `${row.id}.md.${row.medium_ext}` : undefined,
  };
}

function fileInfo(host: string, filename: string, ext: string) {
  return {
    filename,
    name: filename.slice(0, filename.indexOf(".")),
    mime: MIME_BY_EXT[ext],
    extension: ext,
    url: `${host}/${filename}`,
  };
}

/** The API's image record (SPEC.md 2.2 plus extras) for a row. */
export function toImageRecord(config: Config, row: ImageRow) {
  const keys = blobKeys(row);
  const privacy = (row.privacy ?? "public") as Privacy;
  // A bucket (S3_PUBLIC_URL) can hold a public original, but only the service makes
  // variants, reads transform URLs and decides who sees a non-public image.
  const { base, imageHost, service } = linkBases(config);
  const shown = isRestricted(privacy) ? service : imageHost;
  const image = fileInfo(shown, keys.original, row.ext);
  const transformUrl = `${service}/${keys.original}`;
  const created = new Date(row.created_at);
  return {
    kind: "image" as const,
    id: row.id,
    title: row.title,
    url_viewer: `${base}/i/${row.id}`,
    url: image.url,
    display_url: config.IMAGE_NEGOTIATE === "on"
      ? `${transformUrl}?format=auto`
      : image.url,
    transform_url: transformUrl,
    width: row.width,
    height: row.height,
    size: Number(row.size),
    time: Math.floor(created.getTime() / 1000),
    expiration: row.expires_at
      ? Math.round(
        (new Date(row.expires_at).getTime() - created.getTime()) / 1000,
      )
      : 0,
    image,
    thumb: keys.thumb ? fileInfo(service, keys.thumb, row.thumb_ext!) : image,
    // ImgBB's record always has both: an image already small enough is its own variant.
    medium: keys.medium
      ? fileInfo(service, keys.medium, row.medium_ext!)
      : image,
    description: row.description ?? "",
    album_id: row.album_id ?? null,
    privacy,
    delete_url: `${base}/delete/${row.id}/${row.delete_token}`,
  };
}

/** The API's image record type. */
export type ImageRecord = ReturnType<typeof toImageRecord>;

/** A page of image records as the list routes answer it (`kind: "list"`). */
export function imagePageOf(
  config: Config,
  rows: ImageRow[],
  total: number,
  q: { page: number; per_page: number },
) {
  return {
    kind: "list" as const,
    images: rows.map((r) => toImageRecord(config, r)),
    page: q.page,
    per_page: q.per_page,
    total,
    pages: Math.ceil(total / q.per_page),
  };
}

/**
 * The live images (not deleted, not expired at the clock's now): the query every list of
 * images starts from, its narrowing left to the caller.
 */
export function liveImages(db: Kysely<DB>, clock: Clock) {
  const now = clock.now();
  return db.selectFrom("images").where("deleted_at", "is", null)
    .where((eb) =>
      eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)])
    );
}

/**
 * A live (not deleted, not expired) image by id. One taken down by an admin throws 451
 * (every URL form of it answers that), unless `quiet` asks for undefined as for any
 * missing image. The row is read whatever its state, so telling the two costs nothing.
 */
export async function findLiveImage(
  db: Kysely<DB>,
  id: string,
  clock: Clock,
  opts: { quiet?: boolean } = {},
): Promise<ImageRow | undefined> {
  const row = await db.selectFrom("images").selectAll().where("id", "=", id)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.deleted_at) {
    if (row.taken_down_at && !opts.quiet) throw new ApiError(451);
    return undefined;
  }
  if (row.expires_at && new Date(row.expires_at) <= clock.now()) {
    return undefined;
  }
  return row;
}

/** Where an image came from: the upload API (files and URL imports) or a screenshot. */
export type ImageSource = "upload" | "screenshot";

/** How a list of images may be sorted. */
export type ImageSort = "date" | "size" | "name";

/** What a list of a user's images is narrowed to and ordered by. */
export interface ImageListOptions {
  page: number;
  perPage: number;
  source?: ImageSource;
  /** Case-insensitive words of the title, all of them, anywhere in it. */
  q?: string;
  /** Only this album's images, or (`none`) those in no album. */
  album?: string;
  /** Only this stored type (its extension: jpg, png…). */
  type?: string;
  sort?: ImageSort;
  order?: "asc" | "desc";
  /** Only what may be listed to others: public images (not unlisted or private). */
  publicOnly?: boolean;
}

/** The direction a sort goes in unless asked: names A to Z, dates and sizes down. */
export function orderOf(
  sort: ImageSort | undefined,
  order: "asc" | "desc" | undefined,
): "asc" | "desc" {
  return order ?? (sort === "name" ? "asc" : "desc");
}

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * One page of a user's live images and how many there are in all: newest first unless
 * sorted by size (largest first) or name (A to Z), `order` turning it round; narrowed by
 * source, title words, album and type. Each sort has its index (migration 007), so a
 * page of 100,000 images costs what a page of a hundred does (BENCHMARKS §11).
 */
export async function pageUserImages(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
  opts: ImageListOptions,
): Promise<{ rows: ImageRow[]; total: number }> {
  let q = liveImages(db, clock).where("user_id", "=", userId);
  if (opts.source) q = q.where("source", "=", opts.source);
  if (opts.type) q = q.where("ext", "=", opts.type);
  if (opts.album === "none") q = q.where("album_id", "is", null);
  else if (opts.album) q = q.where("album_id", "=", opts.album);
  if (opts.publicOnly) q = q.where("privacy", "=", "public");
  for (
    const word of (opts.q ?? "").toLowerCase().split(/\s+/).filter(Boolean)
  ) {
    q = q.where(sql<string>`lower(title)`, "like", `%${likeLiteral(word)}%`);
  }
  const sort = opts.sort ?? "date";
  const dir = orderOf(sort, opts.order);
  // The page and the count as two statements side by side: a count riding on each row
  // (a window) made PostgreSQL compute and sort every matching row before the page, 58 to
  // 123 ms for an account of 100,000 images; alone, the page is a short walk of its index.
  const ordered = sort === "size"
    ? q.selectAll().orderBy("size", dir)
    : sort === "name"
    ? q.selectAll().orderBy(sql`lower(title)`, dir)
    : q.selectAll().orderBy("created_at", dir);
  const [rows, count] = await Promise.all([
    ordered.orderBy("id", dir).limit(opts.perPage)
      .offset((opts.page - 1) * opts.perPage).execute(),
    q.select((eb) => eb.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** What the owner may change of an image after its upload (PATCH /api/1/images/{id}). */
export interface ImageEdit {
  title?: string;
  description?: string;
  album_id?: string | null;
  privacy?: Privacy;
  /** The scrypt hash of a `password` image's password; null when it is not one. */
  password_hash?: string | null;
  expires_at?: Date | null;
}

/**
 * Changes a live image's editable fields, and tells every instance to drop its cached
 * row (the next request reads the new one). Returns the row as it is now.
 */
export async function editImage(
  db: Kysely<DB>,
  id: string,
  edit: ImageEdit,
): Promise<ImageRow> {
  const row = await db.updateTable("images").set(edit).where("id", "=", id)
    .where("deleted_at", "is", null).returningAll().executeTakeFirstOrThrow();
  await announceImageChange(db, id);
  return row;
}

/**
 * Deletes an image: the row is marked first (so it stops being served at once), then the
 * bytes go. A failed byte deletion leaves orphans the sweeper retries, never a dangling row.
 */
export async function deleteImage(
  db: Kysely<DB>,
  store: BlobStore,
  row: ImageRow,
  clock: Clock,
): Promise<void> {
  await db.updateTable("images").set({ deleted_at: clock.now() })
    .where("id", "=", row.id).execute();
  await announceImageChange(db, row.id);
  await removeImageBytes(db, store, row);
}

/**
 * Removes a row's bytes from the store: the original, the fixed variants and every made
 * variant (files and rows). The row must already be marked (deleted or taken down).
 */
export async function removeImageBytes(
  db: Kysely<DB>,
  store: BlobStore,
  row: ImageRow,
): Promise<void> {
  await removeBlobs(store, row);
  await deleteVariants(db, store, row.id);
}

/** NOTIFY channel carrying the id of each deleted (or otherwise changed) image. */
export const IMAGE_DELETED_CHANNEL = "imagehost_image_deleted";

/** Every instance drops its cached row and bytes of the image when it hears this. */
export async function announceImageChange(db: Kysely<DB>, id: string) {
  await sql`select pg_notify(${IMAGE_DELETED_CHANNEL}, ${id})`.execute(db);
}

async function removeBlobs(store: BlobStore, row: ImageRow) {
  const keys = blobKeys(row);
  await Promise.all(
    [keys.original, keys.thumb, keys.medium].filter((k): k is string => !!k)
      .map((k) => store.delete(k)),
  );
}

/** Deletes expired images' bytes and marks their rows; returns how many. */
export async function sweepExpired(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
): Promise<number> {
  const rows = await db.selectFrom("images").selectAll()
    .where("deleted_at", "is", null).where("expires_at", "<=", clock.now())
    .limit(500).execute();
  for (const row of rows) await deleteImage(db, store, row, clock);
  return rows.length;
}
