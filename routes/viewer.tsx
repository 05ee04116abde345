import { secureHeaders } from "hono/secure-headers";
import type { App } from "./env.ts";
import type { AppDeps } from "../services/deps.ts";
import {
  deleteImage,
  findLiveImage,
  toImageRecord,
} from "../services/images.ts";
import { CopyField, formCsrf, Layout } from "./pages/layout.tsx";
import type { ImageRowCache } from "../services/image_cache.ts";
import { safeEqual } from "../services/crypto.ts";
import { ApiError } from "../schemas/errors.ts";
// The one embed-code implementation, shared with the widget (a pure leaf module).
import { embedCodes } from "../sdk/src/embed_codes.ts";

function humanSize(n: number) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

/**
 * Shapes of an image id and a delete token in a path: anything else (a NUL, a slash, an
 * over-long string) is a plain 404 without a database lookup.
 */
const ID = "[A-Za-z0-9_-]{6,64}";
const TOKEN = "[A-Za-z0-9_-]{1,128}";

/** Viewer page `/i/<id>` and the secret delete link `/delete/<id>/<token>`. */
export function registerViewerRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;
  const imgOrigin = new URL(deps.config.IMAGE_HOST_URL).origin;
  app.use(
    "/i/*",
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        imgSrc: ["'self'", imgOrigin],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
      },
    }),
  );
  app.use("/delete/*", secureHeaders(), formCsrf(deps.config));

  app.get(`/i/:id{${ID}}`, async (c) => {
    const row = await findLiveImage(db, c.req.param("id"), deps.clock);
    if (!row) throw new ApiError(404);
    const rec = toImageRecord(deps.config, row);
    const shown = rec.medium?.url ?? rec.url;
    const embeds = embedCodes(rec);
    const uploaded = new Date(rec.time * 1000).toISOString();
    return c.html(
      <Layout
        title={rec.title}
        head={
          <>
            <meta property="og:type" content="website" />
            <meta property="og:title" content={rec.title} />
            <meta property="og:url" content={rec.url_viewer} />
            <meta property="og:image" content={rec.url} />
            <meta property="og:image:type" content={rec.image.mime} />
            <meta property="og:image:width" content={String(rec.width)} />
            <meta property="og:image:height" content={String(rec.height)} />
            <meta name="twitter:card" content="summary_large_image" />
            <meta name="twitter:title" content={rec.title} />
            <meta name="twitter:image" content={rec.url} />
            <link rel="alternate" type={rec.image.mime} href={rec.url} />
          </>
        }
      >
        <h1>{rec.title}</h1>
        <p>
          <a href={rec.url}>
            <img
              src={shown}
              alt={rec.title}
              width={rec.medium ? undefined : rec.width}
              style="max-width:100%;height:auto"
            />
          </a>
        </p>
        <p class="muted">
          {rec.width}×{rec.height} · {humanSize(rec.size)} ·{" "}
          {rec.image.extension.toUpperCase()} · uploaded{" "}
          <time datetime={uploaded}>
            {uploaded.replace("T", " ").slice(0, 16)} UTC
          </time>
          {rec.expiration ? ` · expires after ${rec.expiration} s` : ""}
        </p>
        <h2>Share</h2>
        {Object.entries(embeds).map(([label, value], i) => (
          <CopyField id={`embed-${i}`} label={label} value={value} />
        ))}
      </Layout>,
    );
  });

  const findForDelete = async (id: string, token: string) => {
    const row = await findLiveImage(db, id, deps.clock);
    if (!row || !safeEqual(row.delete_token, token)) throw new ApiError(404);
    return row;
  };

  app.get(`/delete/:id{${ID}}/:token{${TOKEN}}`, async (c) => {
    const row = await findForDelete(c.req.param("id"), c.req.param("token"));
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    return c.html(
      <Layout title="Delete image">
        <h1>Delete “{row.title}”?</h1>
        <p>This removes the image and its links for good.</p>
        <form method="post">
          <button class="danger" type="submit">Delete image</button>
        </form>
      </Layout>,
    );
  });

  app.post(`/delete/:id{${ID}}/:token{${TOKEN}}`, async (c) => {
    const row = await findForDelete(c.req.param("id"), c.req.param("token"));
    await deleteImage(db, deps.store, row, deps.clock);
    rowCache.invalidate(row.id);
    c.header("Cache-Control", "no-store");
    return c.html(
      <Layout title="Image deleted">
        <h1>Image deleted</h1>
        <p>“{row.title}” is gone.</p>
      </Layout>,
    );
  });
}
