import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  keyedErrorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import {
  ALBUM_EXAMPLE,
  AlbumCreateSchema,
  AlbumDeleteQuerySchema,
  AlbumIdParamSchema,
  AlbumImagesSchema,
  AlbumListSchema,
  AlbumPatchSchema,
  AlbumSchema,
} from "../schemas/album.ts";
import {
  DeletedSchema,
  IMAGE_RECORD_EXAMPLE,
  ImageIdParamSchema,
  ImageListQuerySchema,
  ImagePatchSchema,
  ImageRecordSchema,
} from "../schemas/image.ts";
import {
  albumForImages,
  createAlbum,
  deleteAlbum,
  listAlbums,
  ownAlbum,
  pageAlbumImages,
  toAlbumRecord,
  updateAlbum,
  viewOf,
} from "../services/albums/albums.ts";
import {
  editImage,
  findLiveImage,
  type ImageEdit,
  imagePageOf,
  toImageRecord,
} from "../services/images/records.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { ApiError } from "../schemas/errors.ts";
import { passwordEdit } from "../services/privacy/password_access.ts";
import { API_SECURITY } from "./upload.ts";

const json = <T>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

const createAlbumRoute = createRoute({
  method: "post",
  path: "/api/1/albums",
  operationId: "createAlbum",
  tags: ["Albums"],
  summary: "Create an album",
  description:
    "A named group of your images with one link to share (`url_viewer`). Upload into " +
    "it with `album_id` (Chevereto's name; `album` in a JSON body), or move images in " +
    "with PATCH /api/1/images/{id}.",
  security: API_SECURITY,
  request: { body: json(AlbumCreateSchema) },
  responses: {
    200: okResponse("The new album", AlbumSchema, {
      ...ALBUM_EXAMPLE,
      image_count: 0,
      cover_url: null,
    }, { rateLimited: true }),
    ...keyedErrorResponses(160, 413, 415),
  },
});

const listAlbumsRoute = createRoute({
  method: "get",
  path: "/api/1/albums",
  operationId: "listAlbums",
  tags: ["Albums"],
  summary: "List your albums",
  description:
    "Your albums by `position`, then newest first, each with its image count and cover.",
  security: API_SECURITY,
  responses: {
    200: okResponse("Your albums", AlbumListSchema, {
      kind: "albums",
      albums: [ALBUM_EXAMPLE],
    }, { rateLimited: true }),
    ...keyedErrorResponses(),
  },
});

const getAlbumRoute = createRoute({
  method: "get",
  path: "/api/1/albums/{id}",
  operationId: "getAlbum",
  tags: ["Albums"],
  summary: "Get one of your albums",
  description: "Someone else's album, or one deleted, is 404.",
  security: API_SECURITY,
  request: { params: AlbumIdParamSchema },
  responses: {
    200: okResponse("The album", AlbumSchema, ALBUM_EXAMPLE, {
      rateLimited: true,
    }),
    ...keyedErrorResponses(160, 404),
  },
});

const patchAlbumRoute = createRoute({
  method: "patch",
  path: "/api/1/albums/{id}",
  operationId: "updateAlbum",
  tags: ["Albums"],
  summary: "Change one of your albums",
  description:
    "Title, description, privacy, cover (one of its images, or null for its newest) " +
    "and position: what the body gives changes, the rest stays.",
  security: API_SECURITY,
  request: { params: AlbumIdParamSchema, body: json(AlbumPatchSchema) },
  responses: {
    200: okResponse("The album as it is now", AlbumSchema, ALBUM_EXAMPLE, {
      rateLimited: true,
    }),
    ...keyedErrorResponses(160, 404, 413, 415),
  },
});

const deleteAlbumRoute = createRoute({
  method: "delete",
  path: "/api/1/albums/{id}",
  operationId: "deleteAlbum",
  tags: ["Albums"],
  summary: "Delete one of your albums",
  description:
    "The album goes; its images stay, in no album, unless `with_images=true`: then " +
    "they are deleted too, their files 404 at once on every instance.",
  security: API_SECURITY,
  request: { params: AlbumIdParamSchema, query: AlbumDeleteQuerySchema },
  responses: {
    200: okResponse("Deleted", DeletedSchema, {
      id: "Ab12Cd34Ef",
      deleted: true,
    }, { rateLimited: true }),
    ...keyedErrorResponses(160, 404),
  },
});

const albumImagesRoute = createRoute({
  method: "get",
  path: "/api/1/albums/{id}/images",
  operationId: "listAlbumImages",
  tags: ["Albums"],
  summary: "List the images of one of your albums",
  description:
    "The album's live images, newest first, a page at a time. A page past the end is " +
    "empty, with the right `total`.",
  security: API_SECURITY,
  request: {
    params: AlbumIdParamSchema,
    query: ImageListQuerySchema.pick({ page: true, per_page: true }),
  },
  responses: {
    200: okResponse("A page of the album's images", AlbumImagesSchema, {
      kind: "list",
      album: ALBUM_EXAMPLE,
      images: [IMAGE_RECORD_EXAMPLE],
      page: 1,
      per_page: 30,
      total: 1,
      pages: 1,
    }, { rateLimited: true }),
    ...keyedErrorResponses(160, 404),
  },
});

const patchImageRoute = createRoute({
  method: "patch",
  path: "/api/1/images/{id}",
  operationId: "updateImage",
  tags: ["Images"],
  summary: "Change one of your images",
  description:
    "Title, description, album (one of yours, or null for none), privacy (`private`: " +
    "its files, variants and page are 404 to everyone but you; `password`: its page " +
    "asks for `password`, and its files work for others only through that page's " +
    "short-lived signed URLs) and expiration " +
    "(seconds from now, or 0 to keep it for good): what the body gives changes, the " +
    "rest stays. Its links and files do not change.",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema, body: json(ImagePatchSchema) },
  responses: {
    200: okResponse(
      "The image record as it is now",
      ImageRecordSchema,
      IMAGE_RECORD_EXAMPLE,
      { rateLimited: true },
    ),
    ...keyedErrorResponses(160, 404, 413, 415),
  },
});

/** Registers the album API and image editing. */
export function registerAlbumRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;
  const { config, clock } = deps;

  app.openapi(createAlbumRoute, async (c) => {
    const row = await createAlbum(db, c.get("userId"), c.req.valid("json"));
    return c.json(okBody(toAlbumRecord(config, { row, count: 0 })), 200);
  });

  app.openapi(listAlbumsRoute, async (c) => {
    const views = await listAlbums(db, c.get("userId"), clock);
    return c.json(
      okBody({
        kind: "albums" as const,
        albums: views.map((v) => toAlbumRecord(config, v)),
      }),
      200,
    );
  });

  app.openapi(getAlbumRoute, async (c) => {
    const row = await ownAlbum(db, c.get("userId"), c.req.valid("param").id);
    return c.json(
      okBody(toAlbumRecord(config, await viewOf(db, row, clock))),
      200,
    );
  });

  app.openapi(patchAlbumRoute, async (c) => {
    const row = await updateAlbum(
      db,
      c.get("userId"),
      c.req.valid("param").id,
      c.req.valid("json"),
      clock,
    );
    return c.json(
      okBody(toAlbumRecord(config, await viewOf(db, row, clock))),
      200,
    );
  });

  app.openapi(deleteAlbumRoute, async (c) => {
    const id = c.req.valid("param").id;
    const deleted = await deleteAlbum(
      db,
      deps.store,
      clock,
      c.get("userId"),
      id,
      c.req.valid("query").with_images === "true",
    );
    for (const imageId of deleted) rowCache.invalidate(imageId);
    return c.json(okBody({ id, deleted: true as const }), 200);
  });

  app.openapi(albumImagesRoute, async (c) => {
    const row = await ownAlbum(db, c.get("userId"), c.req.valid("param").id);
    const q = c.req.valid("query");
    const { rows, total } = await pageAlbumImages(db, row, clock, {
      page: q.page,
      perPage: q.per_page,
    });
    return c.json(
      okBody({
        ...imagePageOf(config, rows, total, q),
        album: toAlbumRecord(config, await viewOf(db, row, clock)),
      }),
      200,
    );
  });

  app.openapi(patchImageRoute, async (c) => {
    const userId = c.get("userId");
    const id = c.req.valid("param").id;
    const row = await findLiveImage(db, id, clock);
    if (!row || row.user_id !== userId) throw new ApiError(404);
    const body = c.req.valid("json");
    const edit: ImageEdit = {};
    if (body.title !== undefined) edit.title = body.title;
    if (body.description !== undefined) edit.description = body.description;
    Object.assign(edit, await passwordEdit(row, body.privacy, body.password));
    if (body.album_id !== undefined) {
      // Only into an album of the image's owner.
      if (body.album_id !== null) {
        await albumForImages(db, userId, body.album_id);
      }
      edit.album_id = body.album_id;
    }
    if (body.expiration !== undefined) {
      edit.expires_at = body.expiration === 0
        ? null
        : new Date(clock.now().getTime() + body.expiration * 1000);
    }
    const changed = Object.keys(edit).length
      ? await editImage(db, id, edit)
      : row;
    rowCache.invalidate(id);
    return c.json(okBody(toImageRecord(config, changed)), 200);
  });
}
