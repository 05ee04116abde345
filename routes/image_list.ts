import { createRoute } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  keyedErrorResponses,
  okBody,
  okResponse,
} from "../schemas/envelope.ts";
import {
  IMAGE_LIST_EXAMPLE,
  ImageListQuerySchema,
  ImageListSchema,
} from "../schemas/image.ts";
import { imagePageOf, pageUserImages } from "../services/images/records.ts";
import { API_SECURITY } from "./upload.ts";

/** GET /api/1/images: the caller's images, a page at a time. */
export const listImagesRoute = createRoute({
  method: "get",
  path: "/api/1/images",
  operationId: "listImages",
  tags: ["Images"],
  summary: "List your images",
  description:
    "The live images of the caller's account (uploaded with any of its keys, or from " +
    "the site), a page at a time: newest first, or by size or name; narrowed by title " +
    "words, album, type, or only uploads or only screenshots. A page past the end is " +
    "empty, with the right `total`.",
  security: API_SECURITY,
  request: { query: ImageListQuerySchema },
  responses: {
    200: okResponse("A page of images", ImageListSchema, IMAGE_LIST_EXAMPLE, {
      rateLimited: true,
    }),
    ...keyedErrorResponses(160),
  },
});

/** Registers the list operation. */
export function registerImageListRoutes(app: App, deps: AppDeps) {
  app.openapi(listImagesRoute, async (c) => {
    const q = c.req.valid("query");
    const { rows, total } = await pageUserImages(
      deps.database.db,
      c.get("userId"),
      deps.clock,
      {
        page: q.page,
        perPage: q.per_page,
        source: q.source,
        q: q.q,
        sort: q.sort,
        order: q.order,
        album: q.album,
        type: q.type,
      },
    );
    return c.json(okBody(imagePageOf(deps.config, rows, total, q)), 200);
  });
}
