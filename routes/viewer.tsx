import { shownOnSite } from "./pages/site_links.ts";
import { secureHeaders } from "hono/secure-headers";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageRecord,
  type ImageRow,
  toImageRecord,
} from "../services/images/records.ts";
import {
  CopyField,
  DeleteImageForm,
  formCsrf,
  humanDate,
  humanSize,
  Layout,
  pageSecurity,
} from "./pages/layout.tsx";
import { expiryText } from "./pages/expiry.ts";
import { fitWithin, Picture, pictureOf } from "./pages/picture.tsx";
import { ImageEditForm } from "./pages/fields.tsx";
import { sessionUser } from "./session.ts";
import { requesterOf } from "./api_auth.ts";
import { MEDIUM_SIZE } from "../services/images/fixed_variants.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { safeEqual } from "../services/accounts/crypto.ts";
import { ApiError } from "../schemas/errors.ts";
// The one embed-code implementation, shared with the widget (a pure leaf module).
import { embedCodes } from "../sdk/src/embed_codes.ts";
import { albumTitles, findAlbum } from "../services/albums/albums.ts";
import {
  isRestricted,
  withAccess,
} from "../services/privacy/password_access.ts";
import type { Locked, PasswordGate } from "./pages/password_gate.tsx";

/**
 * Shapes of an image id and a delete token in a path: anything else (a NUL, a slash, an
 * over-long string) is a plain 404 without a database lookup.
 */
const ID = "[A-Za-z0-9_-]{6,64}";
const TOKEN = "[A-Za-z0-9_-]{1,128}";

const lockedImage = (row: ImageRow): Locked => ({
  kind: "image",
  id: row.id,
  hash: row.password_hash,
});

/** The record with every file URL signed for a password image's unlocked page. */
function signedRecord(rec: ImageRecord, token: string): ImageRecord {
  const sign = <T extends { url: string }>(f: T): T => ({
    ...f,
    url: withAccess(f.url, token),
  });
  return {
    ...rec,
    url: withAccess(rec.url, token),
    display_url: withAccess(rec.display_url, token),
    transform_url: withAccess(rec.transform_url, token),
    image: sign(rec.image),
    thumb: sign(rec.thumb),
    medium: sign(rec.medium),
  };
}

/** Viewer page `/i/<id>` and the secret delete link `/delete/<id>/<token>`. */
export function registerViewerRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
  gate: PasswordGate,
) {
  const { db } = deps.database;
  app.use("/i/*", pageSecurity(deps.config));
  app.use("/delete/*", secureHeaders(), formCsrf(deps.config));

  app.get(`/i/:id{${ID}}`, async (c) => {
    const row = await findLiveImage(db, c.req.param("id"), deps.clock);
    if (!row) throw new ApiError(404);
    const user = await sessionUser(c, deps);
    const owner = user?.userId === row.user_id;
    // Its owner calling with a key in the headers sees a private or password image's
    // page as its files answer that key; the page's own controls are the session's.
    const ownerByKey = !owner && isRestricted(row.privacy) &&
      await requesterOf(c, deps) === row.user_id;
    // A private image's page is its owner's alone: others get the page for none.
    if (row.privacy === "private" && !owner && !ownerByKey) {
      throw new ApiError(404);
    }
    // A password image's page asks others for it; once unlocked, the page's file URLs
    // are signed for a short while (the files answer nothing else to others).
    const locked = row.privacy === "password" && !owner && !ownerByKey;
    const item = lockedImage(row);
    if (locked && !await gate.unlocked(c, item)) return gate.ask(c, item);
    let rec = toImageRecord(deps.config, row);
    if (locked) {
      rec = signedRecord(
        rec,
        await gate.access.fileToken(row.id, row.password_hash!),
      );
      c.header("Cache-Control", "private, no-store");
      c.header("X-Robots-Tag", "noindex");
    }
    const restricted = isRestricted(row.privacy);
    // A password image is shared by its viewer link and its password: its direct links
    // work for others only on its page, for PASSWORD_URL_SECONDS.
    const embeds = row.privacy === "password"
      ? { "Viewer link": rec.url_viewer }
      : embedCodes(rec, deps.config.IMAGE_WIDTHS);
    const uploaded = new Date(rec.time * 1000).toISOString();
    // The page's own images and buttons, at the address it was opened by.
    const here = shownOnSite(deps.config, rec);
    // What the page shows: the medium variant when there is one (a phone need not fetch a
    // 4000 px original), at its own size, never wider than the screen.
    const shown = here.medium.url !== here.url
      ? {
        url: here.medium.url,
        ...fitWithin(rec.width, rec.height, MEDIUM_SIZE),
      }
      : { url: here.url, width: rec.width, height: rec.height };
    if (owner || ownerByKey) c.header("Cache-Control", "private, no-store");
    const [album, albums] = await Promise.all([
      row.album_id ? findAlbum(db, row.album_id) : undefined,
      owner ? albumTitles(db, row.user_id) : [],
    ]);
    return c.html(
      <Layout
        title={rec.title}
        user={user}
        head={!restricted && (
          <>
            <meta property="og:type" content="website" />
            <meta property="og:title" content={rec.title} />
            <meta property="og:url" content={rec.url_viewer} />
            <meta property="og:image" content={rec.url} />
            <meta property="og:image:type" content={rec.image.mime} />
            <meta property="og:image:width" content={String(rec.width)} />
            <meta property="og:image:height" content={String(rec.height)} />
            <meta property="og:image:alt" content={rec.title} />
            <meta name="twitter:card" content="summary_large_image" />
            <meta name="twitter:title" content={rec.title} />
            <meta name="twitter:image" content={rec.url} />
            <meta name="twitter:image:alt" content={rec.title} />
            <link rel="alternate" type={rec.image.mime} href={rec.url} />
          </>
        )}
      >
        <h1>{rec.title}</h1>
        {rec.description && <p>{rec.description}</p>}
        {album && (
          <p>
            In the album <a href={`/a/${album.id}`}>{album.title}</a>
          </p>
        )}
        <figure class="viewer-figure">
          <a href={here.url} title="Open the full-size image">
            <Picture
              img={pictureOf(here)}
              widths={deps.config.IMAGE_WIDTHS}
              sizes="(max-width: 1072px) calc(100vw - 2rem), 1040px"
              shown={shown}
              src={shown.url}
            />
          </a>
        </figure>
        <p class="muted">
          {rec.width}×{rec.height} · {humanSize(rec.size)} ·{" "}
          {rec.image.extension.toUpperCase()} · uploaded{" "}
          <time datetime={uploaded}>{humanDate(uploaded)}</time> · {expiryText(
            row.expires_at ? new Date(row.expires_at) : null,
            deps.clock.now(),
          )}
        </p>
        <div class="toolbar">
          <a class="button secondary" href={here.url}>Full size</a>
          {!owner && (
            <a class="button secondary" href={`/report?image=${rec.id}`}>
              Report
            </a>
          )}
          {owner && (
            <>
              <a
                class="button secondary"
                href={here.url}
                download={rec.image.filename}
              >
                Download
              </a>
              <DeleteImageForm
                csrfToken={user!.csrfToken}
                id={rec.id}
                title={rec.title}
                confirm={`Delete “${rec.title}” for good? Its links stop working at once.`}
              />
            </>
          )}
        </div>
        {owner && (
          <details class="edit">
            <summary>Edit title, description and album</summary>
            <ImageEditForm
              csrfToken={user!.csrfToken}
              rec={rec}
              albums={albums}
              prefix="edit"
            />
          </details>
        )}
        <h2>Share</h2>
        {row.privacy === "password" && (
          <p class="muted">
            Password-protected: share the viewer link and the password. Its
            direct links work for others only from this page, for a short while.
          </p>
        )}
        {Object.entries(embeds).map(([label, value], i) => (
          <CopyField id={`embed-${i}`} label={label} value={value} />
        ))}
      </Layout>,
    );
  });

  // The gate's post: the password of a password image's page.
  app.post(`/i/:id{${ID}}`, formCsrf(deps.config), async (c) => {
    const row = await findLiveImage(db, c.req.param("id"), deps.clock);
    if (!row || row.privacy !== "password") throw new ApiError(404);
    return await gate.unlock(c, lockedImage(row));
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
