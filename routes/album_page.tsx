import { shownOnSite } from "./pages/site_links.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { toImageRecord } from "../services/images/records.ts";
import {
  type AlbumRow,
  findAlbum,
  pageAlbumImages,
  toAlbumRecord,
  viewOf,
} from "../services/albums/albums.ts";
import { CodesBox, formCsrf, Layout, pageSecurity } from "./pages/layout.tsx";
import type { Locked, PasswordGate } from "./pages/password_gate.tsx";
import { CardPicture } from "./pages/picture.tsx";
import { PrivacySelect, TitleFields } from "./pages/fields.tsx";
import { sessionUser } from "./session.ts";
import { ApiError } from "../schemas/errors.ts";
// The one embed-code implementation, shared with the widget (a pure leaf module).
import { embedCodes } from "../sdk/src/embed_codes.ts";

const lockedAlbum = (row: AlbumRow): Locked => ({
  kind: "album",
  id: row.id,
  hash: row.password_hash,
});

/** An album page shows this many images at a time (`?page=` for the rest). */
const PER_PAGE = 60;

/**
 * The album page `/a/<id>`: its title, description and images (a grid of responsive
 * thumbnails, each to its viewer page), OpenGraph tags with its cover, and every link of
 * the page's images in one box with a code-type picker. Public and unlisted albums are
 * open to anyone with the link (an unlisted one asks search engines not to index it),
 * showing others only its public images; a private album is 404 to all but its owner.
 */
export function registerAlbumPage(
  app: App,
  deps: AppDeps,
  gate: PasswordGate,
) {
  const { db } = deps.database;
  const { config, clock } = deps;
  app.use("/a/*", pageSecurity(config));
  app.get("/a/:id{[A-Za-z0-9_-]{6,64}}", async (c) => {
    const row = await findAlbum(db, c.req.param("id"));
    if (!row) throw new ApiError(404);
    const page = Math.max(
      1,
      Math.min(100_000, Number(c.req.query("page")) || 1),
    );
    const user = await sessionUser(c, deps);
    const owner = user?.userId === row.user_id;
    // A private album is its owner's alone; others see only its public images, and
    // of a password album only once they gave its password.
    if (row.privacy === "private" && !owner) throw new ApiError(404);
    if (row.privacy === "password" && !owner) {
      const item = lockedAlbum(row);
      if (!await gate.unlocked(c, item)) return gate.ask(c, item);
      c.header("Cache-Control", "private, no-store");
    }
    const [view, { rows, total }] = await Promise.all([
      viewOf(db, row, clock, !owner),
      pageAlbumImages(db, row, clock, {
        page,
        perPage: PER_PAGE,
        publicOnly: !owner,
      }),
    ]);
    const album = toAlbumRecord(config, view);
    const records = rows.map((r) => toImageRecord(config, r));
    const cover = view.cover && toImageRecord(config, view.cover);
    const pages = Math.max(1, Math.ceil(total / PER_PAGE));
    if (owner) c.header("Cache-Control", "private, no-store");
    return c.html(
      <Layout
        title={album.title}
        user={user}
        head={
          <>
            {album.privacy !== "public" && (
              <meta name="robots" content="noindex" />
            )}
            <meta property="og:type" content="website" />
            <meta property="og:title" content={album.title} />
            {album.description && (
              <meta property="og:description" content={album.description} />
            )}
            <meta property="og:url" content={album.url_viewer} />
            {cover && <meta property="og:image" content={cover.medium.url} />}
            {cover && (
              <meta name="twitter:card" content="summary_large_image" />
            )}
          </>
        }
      >
        <h1>{album.title}</h1>
        {album.description && <p>{album.description}</p>}
        <p class="muted">
          {total === 1 ? "1 image" : `${total} images`}
          {pages > 1 ? ` · page ${page} of ${pages}` : ""}
        </p>
        {records.length > 0 && (
          <ul class="grid">
            {records.map((rec) => (
              <li class="card">
                <CardPicture
                  rec={shownOnSite(config, rec)}
                  widths={config.IMAGE_WIDTHS}
                />
                <div class="body">
                  <span class="title" title={rec.title}>{rec.title}</span>
                  {owner && (rec.id === cover?.id
                    ? <span class="muted">The album's cover</span>
                    : (
                      <form method="post" action="/albums/cover">
                        <input
                          type="hidden"
                          name="_csrf"
                          value={user!.csrfToken}
                        />
                        <input type="hidden" name="id" value={album.id} />
                        <input type="hidden" name="image" value={rec.id} />
                        <button
                          type="submit"
                          class="secondary"
                          aria-label={`Make ${rec.title} the cover`}
                        >
                          Make cover
                        </button>
                      </form>
                    ))}
                  <a
                    class="muted"
                    href={`/report?image=${rec.id}`}
                    aria-label={`Report ${rec.title}`}
                  >
                    Report
                  </a>
                </div>
              </li>
            ))}
          </ul>
        )}
        {pages > 1 && (
          <nav class="toolbar" aria-label="Pages">
            {page > 1 && (
              <a class="button secondary" href={`?page=${page - 1}`}>
                Newer
              </a>
            )}
            {page < pages && (
              <a class="button secondary" href={`?page=${page + 1}`}>
                Older
              </a>
            )}
          </nav>
        )}
        {records.length > 0 && (
          <>
            <h2>Share</h2>
            <CodesBox
              id="album-codes"
              label="Links of every image on this page"
              items={records.map((rec) => ({
                id: rec.id,
                codes: embedCodes(rec),
              }))}
            />
          </>
        )}
        {owner && (
          <>
            <h2>Manage</h2>
            <p>
              <a href={`/images?album=${album.id}`}>
                Its images on My images
              </a>{" "}
              (search, move, delete)
            </p>
            <details class="edit">
              <summary>Edit title, description and who sees it</summary>
              <form method="post" action="/albums/edit">
                <input type="hidden" name="_csrf" value={user!.csrfToken} />
                <input type="hidden" name="id" value={album.id} />
                <TitleFields
                  prefix="album"
                  title={album.title}
                  description={album.description}
                />
                <PrivacySelect id="album-privacy" value={album.privacy} />
                <button type="submit">Save</button>
              </form>
            </details>
            <form
              method="post"
              action="/albums/delete"
              data-confirm="Delete this album for good?"
              class="toolbar"
            >
              <input type="hidden" name="_csrf" value={user!.csrfToken} />
              <input type="hidden" name="id" value={album.id} />
              <label class="check">
                <input type="checkbox" name="with_images" />
                Delete its images too
              </label>
              <button type="submit" class="danger">Delete album</button>
            </form>
          </>
        )}
      </Layout>,
    );
  });

  // The gate's post: the password of a password album's page.
  app.post("/a/:id{[A-Za-z0-9_-]{6,64}}", formCsrf(config), async (c) => {
    const row = await findAlbum(db, c.req.param("id"));
    if (!row || row.privacy !== "password") throw new ApiError(404);
    return await gate.unlock(c, lockedAlbum(row));
  });
}
