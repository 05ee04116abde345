import { shownOnSite } from "./pages/site_links.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  CodesBox,
  DeleteImageForm,
  humanDate,
  humanSize,
  Layout,
  type PageUser,
} from "./pages/layout.tsx";
import { CardPicture } from "./pages/picture.tsx";
import { PageLinks } from "./pages/pager.tsx";
import { ExpirySelect, ImageEditForm } from "./pages/fields.tsx";
import { expiryText } from "./pages/expiry.ts";
import { requireSessionForm, sessionUser } from "./session.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageSource,
  pageUserImages,
  toImageRecord,
} from "../services/images/records.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { ImageListQuerySchema } from "../schemas/image.ts";
import { albumTitles } from "../services/albums/albums.ts";
// The one embed-code implementation, shared with the widget (a pure leaf module).
import { embedCodes } from "../sdk/src/embed_codes.ts";
import { type ImageListOptions, orderOf } from "../services/images/records.ts";

/** What My images is narrowed to and sorted by (the image list API's own options). */
type Find = Pick<ImageListOptions, "q" | "sort" | "order" | "album" | "type">;

/** Images per page of My images. */
const PER_PAGE = 24;

/**
 * My images (/images): the signed-in user's images, found, sorted and paged, with the
 * edit, move and delete-several forms (/images/delete).
 */
export function registerMyImages(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;
  const { config } = deps;
  app.get("/images", async (c) => {
    const user = await sessionUser(c, deps);
    if (!user) return c.redirect("/login", 303);
    const q = c.req.query();
    // The API's own bounds; a page falls back to the first page and all images instead of
    // answering 160.
    const shape = ImageListQuerySchema.shape;
    const page = shape.page.safeParse(q.page).data ?? 1;
    const source = shape.source.safeParse(q.source).data;
    // The form sends sort and direction as one choice (`size.asc`); links send both.
    const [sortPicked, orderPicked] = (q.sort_order ?? "").split(".");
    const find: Find = {
      q: shape.q.safeParse(q.q).data || undefined,
      sort: shape.sort.safeParse(q.sort ?? sortPicked).data,
      order: shape.order.safeParse(q.order ?? orderPicked).data,
      album: shape.album.safeParse(q.album).data,
      type: shape.type.safeParse(q.type).data,
    };
    const [{ rows, total }, albums] = await Promise.all([
      pageUserImages(db, user.userId, deps.clock, {
        page,
        perPage: PER_PAGE,
        source,
        ...find,
      }),
      albumTitles(db, user.userId),
    ]);
    c.header("Cache-Control", "no-store");
    return c.html(
      <ImagesPage
        user={user}
        page={page}
        total={total}
        source={source}
        find={find}
        albums={albums}
        deleted={Number.parseInt(q.deleted) || 0}
        moved={q.moved === undefined
          ? undefined
          : Number.parseInt(q.moved) || 0}
        changed={q.changed === undefined
          ? undefined
          : Number.parseInt(q.changed) || 0}
        expiry={q.expiry === undefined
          ? undefined
          : Number.parseInt(q.expiry) || 0}
        edited={q.edited !== undefined}
        records={rows.map((r) => ({
          rec: toImageRecord(config, r),
          source: r.source,
          expiresAt: r.expires_at ? new Date(r.expires_at) : null,
        }))}
      />,
    );
  });

  function ImagesPage(props: {
    user: PageUser;
    page: number;
    total: number;
    source?: ImageSource;
    find: Find;
    albums: { id: string; title: string }[];
    moved?: number;
    changed?: number;
    /** How many images' expiry was just set. */
    expiry?: number;
    /** Back from one image's inline edit. */
    edited?: boolean;
    deleted: number;
    records: {
      rec: ReturnType<typeof toImageRecord>;
      source: string;
      expiresAt: Date | null;
    }[];
  }) {
    const pages = Math.max(1, Math.ceil(props.total / PER_PAGE));
    // `source` is explicit: a default would also stand in for an undefined one, and the
    // "All" link (no source) kept the current filter.
    const { find } = props;
    const link = (page: number, source: string | undefined) =>
      `/images?${new URLSearchParams({
        ...(page > 1 ? { page: String(page) } : {}),
        ...(source ? { source } : {}),
        ...Object.fromEntries(
          Object.entries(find).filter(([, v]) => v !== undefined),
        ),
      })}`.replace(/\?$/, "");
    // Sort and direction as one choice, as people pick them.
    const sorts: [string, string][] = [
      ["date.desc", "Newest first"],
      ["date.asc", "Oldest first"],
      ["size.desc", "Largest first"],
      ["size.asc", "Smallest first"],
      ["name.asc", "Name, A to Z"],
      ["name.desc", "Name, Z to A"],
    ];
    const sortNow = `${find.sort ?? "date"}.${orderOf(find.sort, find.order)}`;
    const filters: [ImageSource | undefined, string][] = [
      [undefined, "All"],
      ["upload", "Uploads"],
      ["screenshot", "Screenshots"],
    ];
    const now = deps.clock.now();
    return (
      <Layout title="My images" user={props.user} current="/images">
        <h1>My images</h1>
        {props.deleted > 0 && (
          <p class="notice" role="status">
            Deleted {props.deleted} image{props.deleted === 1 ? "" : "s"}.
          </p>
        )}
        {props.moved !== undefined && (
          <Done n={props.moved}>
            Moved {props.moved} image{props.moved === 1 ? "" : "s"}.
          </Done>
        )}
        {props.edited && <p class="notice" role="status">Saved.</p>}
        {props.changed !== undefined && (
          <Done n={props.changed}>
            Changed who sees {props.changed}{" "}
            image{props.changed === 1 ? "" : "s"}.
          </Done>
        )}
        {props.expiry !== undefined && (
          <Done n={props.expiry}>
            Set when {props.expiry} image{props.expiry === 1 ? " is" : "s are"}
            {" "}
            deleted.
          </Done>
        )}
        <form method="get" action="/images" class="find" role="search">
          {props.source && (
            <input type="hidden" name="source" value={props.source} />
          )}
          <div>
            <label for="find-q">Search titles</label>
            <input
              id="find-q"
              type="search"
              name="q"
              value={find.q ?? ""}
              maxlength={200}
            />
          </div>
          <div>
            <label for="find-sort">Sort</label>
            <select id="find-sort" name="sort_order">
              {sorts.map(([value, label]) => (
                <option value={value} selected={value === sortNow}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="find-album">Album</label>
            <select id="find-album" name="album">
              <option value="" selected={!find.album}>All images</option>
              <option value="none" selected={find.album === "none"}>
                In no album
              </option>
              {props.albums.map((a) => (
                <option value={a.id} selected={find.album === a.id}>
                  {a.title}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="secondary">Show</button>
        </form>
        <div class="toolbar">
          <span>
            {props.total} image{props.total === 1 ? "" : "s"}
          </span>
          <nav aria-label="Show">
            {filters.map(([s, label], i) => (
              <>
                {i > 0 && " · "}
                <a
                  href={link(1, s)}
                  aria-current={s === props.source ? "page" : undefined}
                >
                  {label}
                </a>
              </>
            ))}
          </nav>
        </div>
        {props.records.length === 0
          ? (
            <p class="notice">
              {props.total > 0
                ? (
                  <>
                    This page is empty.{" "}
                    <a href={link(1, props.source)}>Go to page 1</a>.
                  </>
                )
                : (
                  <>
                    No images here yet. <a href="/">Upload some</a>,{" "}
                    <a href="/screenshot">capture a web page</a>, or use the
                    {" "}
                    <a href="/docs">API</a>.
                  </>
                )}
            </p>
          )
          : (
            <>
              <form
                id="bulk"
                method="post"
                action="/images/delete"
                data-confirm="Delete {n} for good? Their links stop working at once."
                data-confirm-count=""
                class="toolbar"
              >
                <input
                  type="hidden"
                  name="_csrf"
                  value={props.user.csrfToken}
                />
                <input
                  type="hidden"
                  name="back"
                  value={link(props.page, props.source)}
                />
                <label class="check">
                  <input type="checkbox" data-select-all="bulk" />
                  Select all on this page
                </label>
                <button type="submit" class="danger">Delete selected</button>
                <label for="move-album">Move selected to</label>
                <select id="move-album" name="album">
                  <option value="">No album</option>
                  {props.albums.map((a) => (
                    <option value={a.id} selected={find.album === a.id}>
                      {a.title}
                    </option>
                  ))}
                </select>
                <button
                  type="submit"
                  class="secondary"
                  formaction="/images/move"
                  data-no-confirm=""
                >
                  Move
                </button>
                <label for="set-privacy">Who sees them</label>
                <select id="set-privacy" name="privacy">
                  <option value="public">Public</option>
                  <option value="unlisted">Unlisted</option>
                  <option value="private">Private</option>
                  <option value="password">Password</option>
                </select>
                <label for="set-password">Password</label>
                <input
                  id="set-password"
                  name="password"
                  type="password"
                  maxlength={128}
                  autocomplete="new-password"
                  placeholder="for Password"
                />
                <button
                  type="submit"
                  class="secondary"
                  formaction="/images/privacy"
                  data-no-confirm=""
                >
                  Set
                </button>
                <ExpirySelect id="set-expiration" />
                <button
                  type="submit"
                  class="secondary"
                  formaction="/images/expiry"
                  data-no-confirm=""
                >
                  Set expiry
                </button>
              </form>
              <ul class="grid">
                {props.records.map(({ rec, source, expiresAt }) => (
                  <li class="card">
                    <CardPicture
                      rec={shownOnSite(config, rec)}
                      widths={config.IMAGE_WIDTHS}
                    />
                    <div class="body">
                      <label class="check title">
                        <input
                          type="checkbox"
                          name="id"
                          value={rec.id}
                          form="bulk"
                          aria-label={`Select ${rec.title}`}
                        />
                        <span class="title" title={rec.title}>
                          {rec.title}
                        </span>
                      </label>
                      <span class="muted">
                        {rec.width}×{rec.height} · {humanSize(rec.size)}
                        {source === "screenshot" ? " · screenshot" : ""}
                      </span>
                      <span class="muted">
                        <time
                          datetime={new Date(rec.time * 1000).toISOString()}
                        >
                          {humanDate(rec.time * 1000)}
                        </time>
                      </span>
                      <span class="muted">{expiryText(expiresAt, now)}</span>
                      <div class="actions">
                        <a class="button secondary" href={`/i/${rec.id}`}>
                          Open
                        </a>
                        <button
                          type="button"
                          class="secondary"
                          data-copy-text={rec.url}
                          aria-label={`Copy link of ${rec.title}`}
                        >
                          Copy link
                        </button>
                        <DeleteImageForm
                          csrfToken={props.user.csrfToken}
                          id={rec.id}
                          title={rec.title}
                          confirm={`Delete “${rec.title}” for good?`}
                          back={link(props.page, props.source)}
                        />
                      </div>
                      <details class="edit">
                        <summary aria-label={`Edit ${rec.title}`}>Edit</summary>
                        <ImageEditForm
                          csrfToken={props.user.csrfToken}
                          rec={rec}
                          albums={props.albums}
                          prefix={`edit-${rec.id}`}
                          back={link(props.page, props.source)}
                          compact
                        />
                      </details>
                    </div>
                  </li>
                ))}
              </ul>
              <h2>Links</h2>
              <CodesBox
                id="page-codes"
                label="Links of the images ticked above (none ticked: all on this page)"
                items={props.records.map(({ rec }) => ({
                  id: rec.id,
                  codes: embedCodes(rec),
                }))}
                selectFrom="bulk"
              />
            </>
          )}
        <PageLinks
          page={props.page}
          pages={pages}
          href={(p) => link(p, props.source)}
          prev="← Newer"
          next="Older →"
        />
      </Layout>
    );
  }

  /**
   * Deletes the posted images (`id`, repeatable) of the signed-in user, then goes back to
   * the page they were on. Ids that are not the user's live images are skipped.
   */
  app.post("/images/delete", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const ids = [...new Set(r.all("id"))].slice(0, 500);
    let deleted = 0;
    for (const id of ids) {
      // A ticked image taken down meanwhile is skipped like a deleted one.
      const row = await findLiveImage(db, id, deps.clock, { quiet: true });
      if (!row || row.user_id !== r.user.userId) continue;
      await deleteImage(db, deps.store, row, deps.clock);
      rowCache.invalidate(row.id);
      deleted++;
    }
    return c.redirect(backTo(r.form.back, deleted), 303);
  });
}

/** Where a delete goes back to: one of our own /images pages only (never elsewhere). */
function backTo(back: string | undefined, deleted: number): string {
  const u = new URL(
    back && /^\/images(\?|$)/.test(back) ? back : "/images",
    "http://x",
  );
  u.searchParams.set("deleted", String(deleted));
  return `${u.pathname}${u.search}`;
}

/**
 * What a bulk action did, or (when nothing was ticked, `n` 0) what to do first: "Moved 0
 * images." told nobody that the ticks were missing.
 */
function Done(props: { n: number; children?: unknown }) {
  return props.n > 0
    ? <p class="notice" role="status">{props.children}</p>
    : (
      <p class="notice error" role="alert">
        Nothing was changed: tick the images first, then choose the action.
      </p>
    );
}
