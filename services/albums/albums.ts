import type { Kysely, Selectable } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Config } from "../../schemas/config.ts";
import type { Clock } from "../runtime/clock.ts";
import { linkBases } from "../runtime/link_base.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { ApiError, invalidField } from "../../schemas/errors.ts";
import type { Privacy } from "../../schemas/image.ts";
import { randomToken } from "../accounts/crypto.ts";
import { passwordEdit } from "../privacy/password_access.ts";
import {
  announceImageChange,
  blobKeys,
  deleteImage,
  findLiveImage,
  type ImageListOptions,
  type ImageRow,
  liveImages,
  pageUserImages,
} from "../images/records.ts";

/**
 * services/albums/ — a user's albums (issue #37): named groups of images with one link
 * to share. An image is in at most one album; its row says which (images.album_id).
 */

/** An album's row. */
export type AlbumRow = Selectable<DB["albums"]>;

/** What a user may set on an album (the API's create and patch bodies). */
export interface AlbumFields {
  title?: string;
  description?: string;
  privacy?: Privacy;
  /** The password of privacy `password` (hashed here; never stored as given). */
  password?: string;
  cover_image_id?: string | null;
  position?: number;
}

/** An album with what its record shows of its images. */
export interface AlbumView {
  row: AlbumRow;
  count: number;
  cover?: ImageRow;
}

function notFound(): ApiError {
  return new ApiError(404, {
    details: [{ path: "album", message: "no such album of yours" }],
  });
}

/** Creates an album for `userId`. */
export async function createAlbum(
  db: Kysely<DB>,
  userId: string,
  fields: AlbumFields & { title: string },
): Promise<AlbumRow> {
  const pw = await passwordEdit(
    { privacy: "public", password_hash: null },
    fields.privacy,
    fields.password,
  );
  return await db.insertInto("albums").values({
    id: randomToken(9),
    user_id: userId,
    title: fields.title,
    description: fields.description ?? "",
    privacy: pw.privacy ?? "public",
    password_hash: pw.password_hash ?? null,
    cover_image_id: null,
    position: fields.position ?? 0,
  }).returningAll().executeTakeFirstOrThrow();
}

/** An album by id, whoever owns it. */
export async function findAlbum(
  db: Kysely<DB>,
  id: string,
): Promise<AlbumRow | undefined> {
  return await db.selectFrom("albums").selectAll().where("id", "=", id)
    .executeTakeFirst();
}

/** The user's own album, or 404 (someone else's album is not told apart from none). */
export async function ownAlbum(
  db: Kysely<DB>,
  userId: string,
  id: string,
): Promise<AlbumRow> {
  const row = await findAlbum(db, id);
  if (!row || row.user_id !== userId) throw notFound();
  return row;
}

/**
 * The album an upload or an edit names for the user's images: theirs, or 160 (the
 * request is wrong; the image itself is fine).
 */
export async function albumForImages(
  db: Kysely<DB>,
  userId: string,
  id: string,
): Promise<AlbumRow> {
  const row = /^[A-Za-z0-9_-]{6,64}$/.test(id)
    ? await findAlbum(db, id)
    : undefined;
  if (!row || row.user_id !== userId) {
    throw invalidField("album_id", "no such album of yours");
  }
  return row;
}

/**
 * One page of an album's live images, newest first, and how many there are: its owner's
 * list narrowed to the album (only its owner's images can be put in it).
 */
export async function pageAlbumImages(
  db: Kysely<DB>,
  album: AlbumRow,
  clock: Clock,
  opts: Pick<ImageListOptions, "page" | "perPage" | "publicOnly">,
): Promise<{ rows: ImageRow[]; total: number }> {
  return await pageUserImages(db, album.user_id, clock, {
    ...opts,
    album: album.id,
  });
}

/**
 * How many live images an album has, and its cover: the one set, else its newest. With
 * `publicOnly`, as others see it: its public images only.
 */
export async function viewOf(
  db: Kysely<DB>,
  row: AlbumRow,
  clock: Clock,
  publicOnly = false,
): Promise<AlbumView> {
  const { rows, total } = await pageAlbumImages(db, row, clock, {
    page: 1,
    perPage: 1,
    publicOnly,
  });
  let cover = rows[0];
  if (row.cover_image_id) {
    const set = await liveImageIn(db, row.id, row.cover_image_id, clock);
    if (set && (!publicOnly || set.privacy === "public")) cover = set;
  }
  return { row, count: total, cover };
}

/** A live image of the album, by id. */
async function liveImageIn(
  db: Kysely<DB>,
  albumId: string,
  imageId: string,
  clock: Clock,
): Promise<ImageRow | undefined> {
  // A cover that was taken down is no cover (quiet: not the 451 its own URLs answer).
  const row = await findLiveImage(db, imageId, clock, { quiet: true });
  return row?.album_id === albumId ? row : undefined;
}

/**
 * The user's albums by position, then newest first: ids and titles only, for the
 * pickers of album forms (no counts or covers to look up).
 */
export async function albumTitles(
  db: Kysely<DB>,
  userId: string,
): Promise<{ id: string; title: string }[]> {
  return await db.selectFrom("albums").select(["id", "title"])
    .where("user_id", "=", userId)
    .orderBy("position").orderBy("created_at", "desc").orderBy("id")
    .execute();
}

/**
 * Moves one of the user's albums one place up or down among them, in the order
 * {@link albumTitles} gives: the albums are numbered as shown and the two swap places;
 * only the albums whose number changed are written. Past either end nothing moves; an
 * album not theirs is 404.
 */
export async function moveAlbum(
  db: Kysely<DB>,
  userId: string,
  id: string,
  dir: "up" | "down",
  clock: Clock,
): Promise<void> {
  const order = await db.selectFrom("albums").select(["id", "position"])
    .where("user_id", "=", userId)
    .orderBy("position").orderBy("created_at", "desc").orderBy("id")
    .execute();
  const at = order.findIndex((a) => a.id === id);
  if (at < 0) throw notFound();
  const to = dir === "up" ? at - 1 : at + 1;
  if (to < 0 || to >= order.length) return;
  [order[at], order[to]] = [order[to], order[at]];
  for (const [position, a] of order.entries()) {
    if (a.position === position) continue;
    await db.updateTable("albums").set({ position, updated_at: clock.now() })
      .where("id", "=", a.id).execute();
  }
}

/**
 * The user's albums by position, then newest first, each with its count and cover (as
 * {@link viewOf} gives them), in four statements however many albums there are: the
 * albums, their counts, their set covers and their newest images.
 */
export async function listAlbums(
  db: Kysely<DB>,
  userId: string,
  clock: Clock,
): Promise<AlbumView[]> {
  const rows = await db.selectFrom("albums").selectAll()
    .where("user_id", "=", userId)
    .orderBy("position").orderBy("created_at", "desc").orderBy("id")
    .execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const setIds = rows.flatMap((r) =>
    r.cover_image_id ? [r.cover_image_id] : []
  );
  const [counts, set, newest] = await Promise.all([
    liveImages(db, clock).where("album_id", "in", ids)
      .select(["album_id", (eb) => eb.fn.countAll<string>().as("n")])
      .groupBy("album_id").execute(),
    setIds.length
      ? liveImages(db, clock).where("id", "in", setIds).selectAll().execute()
      : [],
    liveImages(db, clock).where("album_id", "in", ids).selectAll()
      .distinctOn("album_id").orderBy("album_id")
      .orderBy("created_at", "desc").orderBy("id", "desc").execute(),
  ]);
  const countOf = new Map(counts.map((c) => [c.album_id, Number(c.n)]));
  const setById = new Map(set.map((i) => [i.id, i]));
  const newestOf = new Map(newest.map((i) => [i.album_id, i]));
  return rows.map((row) => {
    const chosen = row.cover_image_id
      ? setById.get(row.cover_image_id)
      : undefined;
    return {
      row,
      count: countOf.get(row.id) ?? 0,
      // The cover set, while it is a live image of the album; else its newest.
      cover: chosen?.album_id === row.id ? chosen : newestOf.get(row.id),
    };
  });
}

/**
 * Changes what `fields` gives of the user's album (404 when it is not theirs). A cover
 * must be one of the album's live images (160 otherwise); null goes back to the newest.
 */
export async function updateAlbum(
  db: Kysely<DB>,
  userId: string,
  id: string,
  fields: AlbumFields,
  clock: Clock,
): Promise<AlbumRow> {
  const current = await ownAlbum(db, userId, id);
  if (fields.cover_image_id) {
    if (!await liveImageIn(db, id, fields.cover_image_id, clock)) {
      throw invalidField("cover_image_id", "must be one of the album's images");
    }
  }
  const set: Partial<AlbumRow> = { updated_at: clock.now() };
  if (fields.title !== undefined) set.title = fields.title;
  if (fields.description !== undefined) set.description = fields.description;
  Object.assign(
    set,
    await passwordEdit(current, fields.privacy, fields.password),
  );
  if (fields.cover_image_id !== undefined) {
    set.cover_image_id = fields.cover_image_id;
  }
  if (fields.position !== undefined) set.position = fields.position;
  return await db.updateTable("albums").set(set).where("id", "=", id)
    .returningAll().executeTakeFirstOrThrow();
}

/**
 * Deletes the user's album. Its images stay, in no album, unless `withImages`: then each
 * is deleted as the image API deletes one (files 404 at once, on every instance).
 * Returns the ids of the images deleted.
 */
export async function deleteAlbum(
  db: Kysely<DB>,
  store: BlobStore,
  clock: Clock,
  userId: string,
  id: string,
  withImages: boolean,
): Promise<string[]> {
  await ownAlbum(db, userId, id);
  const deleted: string[] = [];
  if (withImages) {
    const rows = await db.selectFrom("images").selectAll()
      .where("album_id", "=", id).where("deleted_at", "is", null).execute();
    for (const row of rows) {
      await deleteImage(db, store, row, clock);
      deleted.push(row.id);
    }
  }
  const moved = await db.updateTable("images").set({ album_id: null })
    .where("album_id", "=", id).returning("id").execute();
  await Promise.all(moved.map((m) => announceImageChange(db, m.id)));
  await db.deleteFrom("albums").where("id", "=", id).execute();
  return deleted;
}

/** The album's record, as the API answers it. */
export function toAlbumRecord(config: Config, view: AlbumView) {
  const { row, count, cover } = view;
  const thumb = cover && blobKeys(cover).thumb;
  const { base, service } = linkBases(config);
  return {
    kind: "album" as const,
    id: row.id,
    title: row.title,
    description: row.description,
    privacy: row.privacy as Privacy,
    cover_image_id: row.cover_image_id,
    cover_url: thumb ? `${service}/${thumb}` : null,
    position: row.position,
    image_count: count,
    url_viewer: `${base}/a/${row.id}`,
    time: Math.floor(new Date(row.created_at).getTime() / 1000),
  };
}
