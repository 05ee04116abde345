import { z } from "@hono/zod-openapi";
import type { App } from "./env.ts";
import {
  errorResponses,
  type Header,
  header,
  REQUEST_ID_HEADER,
} from "../schemas/envelope.ts";

const IMAGE_HEADERS: Record<string, Header> = {
  ...REQUEST_ID_HEADER,
  "ETag": header(
    'The file\'s key in quotes ("aB3xK9pQ2m.jpg"): bytes under a key never change',
  ),
  "Cache-Control": header(
    "public, max-age=31536000, immutable; for an expiring image, max-age is the " +
      "seconds it has left",
  ),
  "Accept-Ranges": header("bytes"),
  "Content-Length": header("Bytes of this answer's body", "integer"),
  "X-Content-Type-Options": header("nosniff"),
  "Content-Security-Policy": header(
    "default-src 'none'; …; sandbox: a served file never runs as a page",
  ),
  "Vary": header(
    "`Accept` on a transform URL whose type Accept chose (`format=auto`)",
  ),
};

const idParam = z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).openapi({
  param: { name: "id", in: "path" },
  description: "The image's id (`id` of its record)",
  example: "aB3xK9pQ2m",
});
const fileParam = z.string().regex(
  /^[A-Za-z0-9_-]{6,64}(\.(th|md))?\.[a-z0-9]{2,5}$/,
).openapi({
  param: { name: "file", in: "path" },
  description:
    "A file name of a record: `<id>.<ext>` the image as uploaded (`image.url`), " +
    "`<id>.th.<ext>` its thumbnail, longest side 320 px (`thumb.url`), " +
    "`<id>.md.<ext>` its medium size, longest side 1024 px (`medium.url`)",
  example: "aB3xK9pQ2m.jpg",
});

/** Transform URLs (services/images/transforms.ts): a size and type made on demand. */
const TransformQuery = z.object({
  w: z.string().regex(/^[1-9][0-9]{0,5}$/).optional().openapi({
    description:
      "Width in px, one of IMAGE_WIDTHS (default 160, 320, 640, 1024, 1600, 2048; any " +
      "other needs `s`); never larger than the original",
    example: "640",
  }),
  h: z.string().regex(/^[1-9][0-9]{0,5}$/).optional().openapi({
    description: "Height in px, from the same list as `w`",
  }),
  fit: z.enum(["inside", "cover", "contain"]).optional().openapi({
    description:
      "With w and h: `inside` (default) keeps the whole image within the box, " +
      "`cover` fills it and crops, `contain` fits it and pads with transparency",
  }),
  format: z.enum(["auto", "avif", "webp", "jpeg", "png"]).optional().openapi({
    description:
      "Output type; absent: the original's. `auto` picks AVIF, then WebP, then the " +
      "original's type from the request's Accept, and answers `Vary: Accept`; an " +
      "animated image stays animated (WebP, or its own type). An animated image asked " +
      "for as avif, jpeg or png gets its first frame",
  }),
  q: z.string().regex(/^[1-9][0-9]{0,2}$/).optional().openapi({
    description:
      "Quality 1–100, one of IMAGE_QUALITIES (default 50, 75, 90; any other needs " +
      "`s`); absent: AVIF 50, WebP 75, JPEG 80",
  }),
  access: z.string().optional().openapi({
    description:
      "A `password` image's signed file URL, as its unlocked viewer page links it: " +
      "valid while the password is unchanged, for a limited time (the unlock's). " +
      "Without it (or the owner's key or session) such a file is 404",
  }),
  s: z.string().optional().openapi({
    description:
      "Signature for values off the lists: base64url of the first 16 bytes of " +
      "HMAC-SHA256(IMAGE_SIGNING_KEY, `/<id>.<ext>?` + the parameters in the order " +
      "fit, format, h, q, w, without defaults); `deno task sign-url` makes one",
  }),
});

const binary = {
  "image/*": {
    schema: z.string().openapi({ type: "string", format: "binary" }),
  },
};

/** The answers of an image file route (original or a variant). */
function imageResponses(what: string) {
  return {
    200: {
      description: `The ${what}`,
      headers: IMAGE_HEADERS,
      content: binary,
    },
    206: {
      description:
        "One byte range (`Range: bytes=a-b`, a suffix or an open end)",
      headers: {
        ...IMAGE_HEADERS,
        "Content-Range": header("bytes a-b/size"),
      },
      content: binary,
    },
    304: {
      description:
        "If-None-Match named the ETag: the cached copy is current (ETag, " +
        "Cache-Control and the request's id only)",
      headers: {
        ...REQUEST_ID_HEADER,
        "ETag": IMAGE_HEADERS["ETag"],
        "Cache-Control": IMAGE_HEADERS["Cache-Control"],
      },
    },
    416: {
      description: "The range lies outside the file",
      headers: {
        ...REQUEST_ID_HEADER,
        "Content-Range": header("bytes */size"),
        "ETag": IMAGE_HEADERS["ETag"],
        "Cache-Control": IMAGE_HEADERS["Cache-Control"],
        "Accept-Ranges": IMAGE_HEADERS["Accept-Ranges"],
      },
    },
    ...errorResponses(404),
  };
}

/**
 * A page's answer: HTML, with the headers a page may carry (a locked page, or one showing
 * its owner's controls, is never cached or indexed).
 */
const html = (description: string) => ({
  description,
  headers: {
    ...REQUEST_ID_HEADER,
    "Cache-Control": header(
      "`private, no-store` on a password form and on a page shown to its owner; " +
        "`no-store` on a delete link's pages",
    ),
    "X-Robots-Tag": header("`noindex` on a password form"),
  },
  content: { "text/html": { schema: z.string() } },
});

/**
 * Documents, in openapi.yaml, the public routes every record points at (the files, the
 * viewer page and the delete link): they are served by plain Hono handlers, so they are
 * registered here for the document only. No key: these are the links users share.
 */
export function documentPublicRoutes(app: App) {
  const reg = app.openAPIRegistry;
  for (const method of ["get", "head"] as const) {
    reg.registerPath({
      method,
      path: "/{file}",
      operationId: method === "get" ? "getImageFile" : "headImageFile",
      tags: ["Files"],
      summary: method === "get"
        ? "An image file: original, thumbnail or medium"
        : "An image file's headers",
      description:
        "Served to anyone with the link, from IMAGE_HOST_URL, until the image is deleted " +
        "or expires (then 404). Conditional (If-None-Match) and range requests are " +
        "answered; CORS is open. With `w`, `h`, `fit`, `format` or `q` it is a " +
        "transform URL: that size and type of the image, made at first request (in " +
        "the image workers' slots, within IMAGE_TIMEOUT_MS: 143 past it, 250 when " +
        "they are all busy), stored beside the original and served like a file from " +
        "then on (its own ETag, ranges, 304), removed with the image. Values off the " +
        "lists are 160 unless the URL is signed (`s`); a client address may have " +
        "IMAGE_MAKES_PER_MINUTE variants made a minute (170 past it).",
      security: [],
      request: {
        params: z.object({ file: fileParam }),
        query: TransformQuery,
      },
      responses: {
        ...imageResponses("file"),
        ...errorResponses(404, 160, 141, 143, 170, 250),
      },
    });
  }
  reg.registerPath({
    method: "get",
    path: "/i/{id}",
    operationId: "getViewerPage",
    tags: ["Pages"],
    summary: "The image's viewer page (`url_viewer`)",
    description:
      "An HTML page showing the image, with share links, embed codes and OpenGraph and " +
      "Twitter card tags.",
    security: [],
    request: { params: z.object({ id: idParam }) },
    responses: {
      200: html(
        "The viewer page; a `password` image's asks for its password until this " +
          "browser unlocks it (then its file URLs carry `access`); a `private` or " +
          "`password` one opens to its owner's key or session",
      ),
      // A key sent to a private or password image's page is checked, and an address
      // past its failed-key allowance is answered as the API answers it.
      ...errorResponses(404, 170),
    },
  });
  const gateBody = {
    content: {
      "application/x-www-form-urlencoded": {
        schema: z.object({
          password: z.string().max(128).openapi({
            description: "The item's password",
          }),
        }),
      },
    },
  };
  const gateResponses = (what: string) => ({
    303: {
      description:
        `The right password: the unlock cookie (HttpOnly, SameSite=Lax, scoped to ` +
        `this ${what}'s page path) and back to the page`,
      headers: {
        ...REQUEST_ID_HEADER,
        "Location": header(`The ${what}'s page`),
        "Set-Cookie": header("`unlock=…`"),
        "Cache-Control": header("no-store"),
      },
    },
    403: {
      description:
        "A wrong password: the form again, saying so (text/html); or, as JSON, a " +
        "post from another site's page (the Origin check against CSRF)",
      headers: {
        ...REQUEST_ID_HEADER,
        "Cache-Control": header("private, no-store"),
        "X-Robots-Tag": header("noindex"),
      },
      content: {
        "text/html": { schema: z.string() },
        ...errorResponses(403)[403].content,
      },
    },
    429: {
      description:
        "Too many attempts from this address (PASSWORD_ATTEMPTS_PER_MINUTE, every " +
        "item together): the form again, with Retry-After",
      headers: {
        ...REQUEST_ID_HEADER,
        "Retry-After": header("Seconds to wait", "integer"),
        "Cache-Control": header("private, no-store"),
      },
      content: { "text/html": { schema: z.string() } },
    },
    ...errorResponses(404),
  });
  reg.registerPath({
    method: "post",
    path: "/i/{id}",
    operationId: "postViewerPassword",
    tags: ["Pages"],
    summary: "Unlocks a password image's viewer page (its form posts here)",
    description:
      "Only for a `password` image (404 otherwise, as for none). Attempts are counted " +
      "per client address.",
    security: [],
    request: { params: z.object({ id: idParam }), body: gateBody },
    responses: gateResponses("image"),
  });
  const albumParam = z.string().regex(/^[A-Za-z0-9_-]{6,64}$/).openapi({
    param: { name: "id", in: "path" },
    description: "The album's id (`id` of its record)",
  });
  reg.registerPath({
    method: "get",
    path: "/a/{id}",
    operationId: "getAlbumPage",
    tags: ["Pages"],
    summary: "An album's page (`url` of its record)",
    description:
      "Its images, newest first, with their links. A `password` album asks for its " +
      "password until this browser unlocks it; a `private` one is its owner's alone " +
      "(404 to others, as for none).",
    security: [],
    request: { params: z.object({ id: albumParam }) },
    responses: {
      200: html("The album's page, or its password form"),
      ...errorResponses(404),
    },
  });
  reg.registerPath({
    method: "post",
    path: "/a/{id}",
    operationId: "postAlbumPassword",
    tags: ["Pages"],
    summary: "Unlocks a password album's page (its form posts here)",
    description: "Only for a `password` album (404 otherwise, as for none).",
    security: [],
    request: { params: z.object({ id: albumParam }), body: gateBody },
    responses: gateResponses("album"),
  });
  const token = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/).openapi({
    param: { name: "token", in: "path" },
    description: "The secret of the record's `delete_url`",
  });
  const deleteParams = z.object({ id: idParam, token });
  reg.registerPath({
    method: "get",
    path: "/delete/{id}/{token}",
    operationId: "getDeletePage",
    tags: ["Pages"],
    summary: "The delete link (`delete_url`): asks to confirm",
    description:
      "Shows a confirmation form; nothing is deleted by opening the link (link " +
      "previewers and prefetchers open links).",
    security: [],
    request: { params: deleteParams },
    responses: {
      200: html("The confirmation page"),
      ...errorResponses(404),
    },
  });
  reg.registerPath({
    method: "post",
    path: "/delete/{id}/{token}",
    operationId: "postDeletePage",
    tags: ["Pages"],
    summary: "Confirms the delete link: deletes the image",
    security: [],
    request: { params: deleteParams },
    responses: {
      200: html("Deleted; the files answer 404 from now on"),
      // 403: a cross-site form post (the Origin check against CSRF).
      ...errorResponses(403, 404),
    },
  });
}
