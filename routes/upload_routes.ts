/**
 * The upload API's declarations: its security schemes, query and body fields, answers
 * and error codes as OpenAPI routes (POST/GET /api/1/upload, the base64 and JSON bodies,
 * GET/DELETE /api/1/images/{id}). Their handlers are in upload.ts.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  envelopeOf,
  header,
  keyedErrorResponses,
  okResponse,
  RATE_LIMIT_HEADERS,
  REQUEST_ID_HEADER,
} from "../schemas/envelope.ts";
import {
  BATCH_EXAMPLE,
  DeletedSchema,
  EXPIRATION_MAX,
  EXPIRATION_MIN,
  IMAGE_RECORD_EXAMPLE,
  ImageIdParamSchema,
  ImageRecordSchema,
  MultiUploadSchema,
  PRIVACY,
} from "../schemas/image.ts";
import type { ErrorCode } from "../schemas/errors.ts";
import { CHEVERETO_FIELDS } from "../schemas/chevereto.ts";

/**
 * Security requirement of every /api/1 route: the key in any one of the places the
 * service reads it (alternatives, in precedence order; docs.ts names the schemes).
 * hey-api's client puts a key given as a string in every listed place, so its users give
 * `auth` as a function of the scheme (docs/api.md); the site's session is the site's own,
 * not an API scheme.
 */
export const API_SECURITY: Record<string, string[]>[] = [
  { bearer: [] },
  { apiKeyHeader: [] },
  { apiKeyQuery: [] },
];

/**
 * Routes whose body may carry the key (`key` field or property): OpenAPI has no security
 * scheme for a body, so the empty requirement says a request may come without a header or
 * query key; the body's `key` property documents the fourth place.
 */
export const API_SECURITY_OR_BODY_KEY: Record<string, string[]>[] = [
  ...API_SECURITY,
  {},
];

/** Codes an upload (POST or GET) can answer with besides AUTH_ERRORS: files, images and URL imports. */
const UPLOAD_ERRORS: ErrorCode[] = [
  130,
  131,
  140,
  141,
  142,
  143,
  150,
  160,
  200,
  210,
  221,
  231,
];

/** What an upload answers with (Chevereto's `format`). */
export const UPLOAD_FORMATS = ["json", "txt", "redirect"] as const;

/** Allowed range of `expiration`, seconds (one minute to 180 days, as ImgBB). */
export { EXPIRATION_MAX, EXPIRATION_MIN };

/** What `privacy` on an upload does, for the query and the bodies alike. */
const PRIVACY_FIELD =
  "Who may see the images, from their first moment (as PATCH sets it: public, " +
  "unlisted, private, or password with `password`); sending the same bytes again " +
  "puts the stored image in the album named and applies this privacy only where it " +
  "hides the image more";

/** Query parameters of an upload (all optional; body fields take precedence). */
const UploadQuerySchema = z.object({
  source: z.union([z.string(), z.array(z.string())]).optional().openapi({
    param: { style: "form", explode: true },
    type: "array",
    items: { type: "string", format: "uri" },
    description:
      "Address of an image to import (Chevereto's `?source=`); repeat for several. The " +
      "server downloads it through the same network guard as screenshots: public " +
      "http(s) addresses only, at most 5 redirects, every hop re-checked. For example " +
      "`?source=https://example.com/cat.png`.",
  }),
  expiration: z.string().regex(/^[0-9]{1,9}$/).optional().openapi({
    type: "integer",
    minimum: EXPIRATION_MIN,
    maximum: EXPIRATION_MAX,
    description:
      "Seconds until the image is deleted, e.g. 86400 for a day (none: kept for good)",
  }),
  format: z.enum(UPLOAD_FORMATS).optional().openapi({
    description:
      "json (default): the envelope; txt: the direct URL as text/plain; redirect: 303 " +
      "to the viewer page",
  }),
  name: z.string().max(255).optional().openapi({
    description: "Title of the image (ImgBB); `title` is taken too",
  }),
  title: z.string().max(255).optional().openapi({
    description: "Title of the image (Chevereto)",
  }),
  album_id: z.string().max(64).optional().openapi({
    description:
      "One of your albums to put the images in (Chevereto's name; body fields win)",
  }),
  privacy: z.enum(PRIVACY).optional().openapi({
    description: PRIVACY_FIELD +
      " (body fields win; `password` only in the body)",
  }),
});

/**
 * The upload's body fields besides the images, as each body type documents them. In a
 * form every value is text, so the form bodies say so, with an empty example: Swagger
 * UI's "Try it out" fills each field from its example, and would otherwise send
 * `key=string`, `title=string` and the minimum `expiration` (60 s), deleting the image a
 * minute later.
 */
function bodyFields(form: boolean) {
  const text = (description: string, maxLength?: number) => ({
    type: "string" as const,
    ...(maxLength ? { maxLength } : {}),
    description,
    ...(form ? { example: "" } : {}),
  });
  return {
    key: text(
      "API key, when none is sent in a header or the query. It may come anywhere in the " +
        "body: what precedes it (files too) is held within UNAUTH_HOLD_MB while the " +
        "client keeps sending at least 64 KB/s after a 2 s grace; past that it is " +
        "answered at once. Without a valid one the rest of the body is not read (100/110).",
    ),
    rest: {
      expiration: form
        ? {
          type: "string" as const,
          pattern: "^([0-9]{1,9})?$",
          description:
            `Seconds until the image is deleted (${EXPIRATION_MIN}–${EXPIRATION_MAX}), ` +
            "e.g. 86400 for a day; empty or absent: kept for good",
          example: "",
        }
        : {
          type: "integer" as const,
          minimum: EXPIRATION_MIN,
          maximum: EXPIRATION_MAX,
          description:
            "Seconds until the image is deleted, e.g. 86400 for a day; absent: kept " +
            "for good (digits in a string are taken too)",
        },
      format: {
        type: "string" as const,
        enum: [...UPLOAD_FORMATS],
        description: "json (default), txt or redirect",
      },
      name: text("Title of the image (ImgBB)", 255),
      title: text(
        "Title of the image (Chevereto); `name` wins when both are sent",
        255,
      ),
      album_id: text(
        "One of your albums to put the images in (Chevereto's name; `album` is taken " +
          "too); someone else's or none is 160",
        64,
      ),
      privacy: form
        ? {
          type: "string" as const,
          pattern: `^(${PRIVACY.join("|")})?$`,
          description: PRIVACY_FIELD + "; empty or absent: public",
          example: "",
        }
        : {
          type: "string" as const,
          enum: [...PRIVACY],
          description: PRIVACY_FIELD + "; absent: public",
        },
      password: text(
        'The password of `privacy: "password"` (4–128 characters): required with it, ' +
          "allowed only with it; stored as a hash",
        128,
      ),
    },
  };
}
const FORM_FIELDS = bodyFields(true);
const JSON_FIELDS = bodyFields(false);

/** POST /api/1/upload (SPEC.md 4.1). */
export const postUploadRoute = createRoute({
  method: "post",
  path: "/api/1/upload",
  operationId: "postUpload",
  tags: ["Images"],
  summary: "Upload one or more images",
  description:
    "Images in `images` (also `images[]`, `image`, `source`), each a file part, a base64 " +
    "string or data: URI, or an http(s) URL the server downloads; bodies may be " +
    "multipart/form-data, application/x-www-form-urlencoded or application/json, and " +
    "`?source=<url>` works with or without a body (and by GET). Here the multipart body " +
    "is documented, which carries all three (a file part, or a text part with base64 or " +
    "a URL); the urlencoded and JSON bodies are documented under `POST /1/upload`, the " +
    "same operation at ImgBB's path, which answers every body too. One body type per " +
    "operation is what client generators can use: given several, hey-api sends JSON " +
    "only and orval JSON-encodes every body. URL imports go through " +
    "the same network guard as screenshots (public addresses only, every redirect and " +
    "resolved address re-checked, at most 5 redirects, MAX_FILE_BYTES; the URLs of one " +
    "request are fetched URL_IMPORTS_AT_ONCE at a time within one URL_IMPORT_TIMEOUT_MS): " +
    "210 not allowed, 221 could not fetch, 231 timed out. " +
    "One image returns the image record; several return `{images, count, errors?}`: files " +
    "that fail are listed in `errors` while the others are stored. Types are detected from " +
    "the bytes: JPEG, PNG, GIF, WebP, AVIF, BMP, TIFF. Uploading bytes you already uploaded " +
    "returns the existing record with `duplicate: true`. `format` (query or field) picks " +
    "the answer as Chevereto does: `json` (default), `txt` (the direct URL as text/plain, " +
    "one line per stored image) or `redirect` (303 to the first image's viewer page); " +
    "errors are always the JSON envelope. `name` (ImgBB) or `title` (Chevereto) sets the " +
    "title instead of the file name." +
    " The same operation answers at `/1/upload`, ImgBB's own path, so ImgBB clients " +
    "need only the host changed. A Chevereto-shaped request (an X-API-Key header, a " +
    "`source` field, or `format=json`) that stores one image also gets Chevereto V1.1's " +
    "`status_code`, `status_txt` and `image` (`image.url`, `image.display_url`, …) beside " +
    "the envelope; `success` stays the envelope's boolean." +
    " **Guests** (GUEST_UPLOADS=on): the site's home page uploads without a key, " +
    "sending `X-CSRF-Token: guest` from its own origin (403 from another); the answer " +
    "sets the `guest` cookie naming the browser's guest account, whose images expire " +
    "after GUEST_EXPIRATION unless claimed by signing up in that browser; at most " +
    "GUEST_UPLOADS_PER_MINUTE per client address (170), and guests may only upload " +
    "(100 elsewhere).",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    query: UploadQuerySchema,
    body: {
      required: false,
      description:
        "The images and fields; may be left out when `?source=` names the images",
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            properties: {
              key: FORM_FIELDS.key,
              // Files in `images` and text in `source`, each with one type, so that
              // Swagger UI offers a file picker and generated clients type a File or a
              // string without a cast. Either field takes either kind.
              images: {
                type: "array",
                items: { type: "string", format: "binary" },
                description:
                  "Image files (also `images[]`, `image`, `source`); a text value is " +
                  "read as base64 (streamed, any size) or an http(s) URL to import",
              },
              source: {
                type: "array",
                items: { type: "string" },
                // No "string" placeholder in Swagger UI's Try it out: nothing to import.
                example: [],
                description:
                  "Images as text (Chevereto's field; also `images`, `image`): base64, " +
                  "a data: URI or an http(s) URL the server downloads, one a part",
              },
              ...FORM_FIELDS.rest,
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description:
        "Stored: one image sent, its record (`kind` image); several, a batch (`kind` " +
        "batch: the records stored and the files refused)",
      headers: {
        ...REQUEST_ID_HEADER,
        ...RATE_LIMIT_HEADERS,
        "Set-Cookie": header(
          "A guest's upload only: `guest=…` (HttpOnly, SameSite=Lax), naming the " +
            "browser's guest for its next uploads and the claim at sign-up",
        ),
      },
      content: {
        "application/json": {
          schema: envelopeOf(
            z.discriminatedUnion("kind", [
              ImageRecordSchema,
              MultiUploadSchema,
            ]),
          ).extend(CHEVERETO_FIELDS),
          examples: {
            one: {
              summary: "One image",
              value: { status: 200, success: true, data: IMAGE_RECORD_EXAMPLE },
            },
            batch: {
              summary: "Several images, one refused",
              value: { status: 200, success: true, data: BATCH_EXAMPLE },
            },
          },
        },
        "text/plain": {
          schema: z.string().openapi({
            description:
              "format=txt: the direct URL of each stored image, one a line",
            example: "https://img.example.com/aB3xK9pQ2m.jpg\n",
          }),
        },
      },
    },
    303: {
      description: "format=redirect: to the first stored image's viewer page",
      headers: {
        ...REQUEST_ID_HEADER,
        ...RATE_LIMIT_HEADERS,
        Location: {
          description: "The viewer page (url_viewer)",
          schema: { type: "string" },
        },
      },
    },
    ...keyedErrorResponses(...UPLOAD_ERRORS, 413),
  },
});

/** GET /api/1/upload?source=<url>: Chevereto's URL import by GET. */
export const getUploadRoute = createRoute({
  method: "get",
  path: "/api/1/upload",
  operationId: "getUpload",
  tags: ["Images"],
  summary: "Import images from URLs (GET)",
  description:
    "Chevereto's GET form of the upload: `?source=<url>` (repeatable) is downloaded " +
    "through the network guard and stored as if uploaded. Answers like POST.",
  security: API_SECURITY,
  request: {
    query: UploadQuerySchema.extend({
      source: UploadQuerySchema.shape.source.unwrap(),
    }),
  },
  responses: {
    200: postUploadRoute.responses[200],
    303: postUploadRoute.responses[303],
    ...keyedErrorResponses(...UPLOAD_ERRORS),
  },
});

/**
 * POST /1/upload, documented only: ImgBB's path for the same upload (app.ts maps it to
 * /api/1/upload), where the urlencoded and JSON bodies are written down, so that each
 * documented operation has one body a client generator can use (see postUploadRoute).
 */
export const postUploadEncodedRoute = createRoute({
  method: "post",
  path: "/1/upload",
  operationId: "postUploadEncoded",
  tags: ["Images"],
  summary: "Upload images as base64 or URLs in a urlencoded or JSON body",
  description:
    "The same operation as `POST /api/1/upload`, at ImgBB's own path (ImgBB's and " +
    "Chevereto's clients send these bodies: `key=…&image=<base64>` or " +
    '`{"key": "…", "image": "<base64 or URL>"}`); it answers a multipart body too. ' +
    "Answers, errors, `format` and the Chevereto fields are those of `POST /api/1/upload`.",
  security: API_SECURITY_OR_BODY_KEY,
  request: {
    query: UploadQuerySchema,
    body: {
      required: false,
      description:
        "The images and fields; may be left out when `?source=` names the images",
      content: {
        "application/x-www-form-urlencoded": {
          schema: {
            type: "object",
            properties: {
              key: FORM_FIELDS.key,
              image: {
                type: "string",
                description:
                  "The image as base64, a data: URI or an http(s) URL (also `images`, " +
                  "`source`; repeat for several); base64 is decoded as it arrives",
              },
              ...FORM_FIELDS.rest,
            },
          },
          example: { image: "https://example.com/cat.png" },
        },
        "application/json": {
          schema: {
            type: "object",
            properties: {
              key: JSON_FIELDS.key,
              image: {
                oneOf: [{ type: "string" }, {
                  type: "array",
                  items: { type: "string" },
                }],
                description:
                  "base64, a data: URI or an http(s) URL, or a list of them (also " +
                  "`images`, `source`)",
              },
              ...JSON_FIELDS.rest,
            },
          },
          example: { image: "https://example.com/cat.png" },
        },
      },
    },
  },
  responses: postUploadRoute.responses,
});

/** GET /api/1/images/{id}: the record of one of the caller's images. */
export const getImageRoute = createRoute({
  method: "get",
  path: "/api/1/images/{id}",
  operationId: "getImage",
  tags: ["Images"],
  summary: "Get one of your images",
  description:
    "The record of an image uploaded with any of your keys, as the upload returned it " +
    "(without `duplicate`). Someone else's image, a deleted or an expired one is 404.",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: okResponse(
      "The image record",
      ImageRecordSchema,
      IMAGE_RECORD_EXAMPLE,
      {
        rateLimited: true,
      },
    ),
    ...keyedErrorResponses(160, 404),
  },
});

/** DELETE /api/1/images/{id}: delete one of the caller's images. */
export const deleteImageRoute = createRoute({
  method: "delete",
  path: "/api/1/images/{id}",
  operationId: "deleteImage",
  tags: ["Images"],
  summary: "Delete one of your images",
  description:
    "Deletes the image and its variants at once: its files answer 404 from this moment " +
    "on, on every instance. The same as opening its `delete_url`.",
  security: API_SECURITY,
  request: { params: ImageIdParamSchema },
  responses: {
    200: okResponse("Deleted", DeletedSchema, {
      id: "aB3xK9pQ2m",
      deleted: true,
    }, { rateLimited: true }),
    ...keyedErrorResponses(160, 404),
  },
});
