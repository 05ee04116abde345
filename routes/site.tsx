import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  CodesBox,
  DeleteImageForm,
  formCsrf,
  humanDate,
  humanSize,
  Layout,
  PAGE_CSS,
  PAGE_JS,
  pageSecurity,
  type PageUser,
} from "./pages/layout.tsx";
import { CardPicture } from "./pages/picture.tsx";
import { ImageEditForm } from "./pages/fields.tsx";
import { expiryText } from "./pages/expiry.ts";
import { HOME_JS, SCREENSHOT_JS, serveAsset } from "./pages/static_assets.ts";
import { FAVICON_SVG, faviconIco } from "./pages/favicon.ts";
import { requireSessionForm, sessionUser } from "./session.ts";
import {
  deleteImage,
  findLiveImage,
  type ImageSource,
  pageUserImages,
  toImageRecord,
} from "../services/images/records.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { PRESETS } from "../schemas/presets.ts";
import { ImageListQuerySchema } from "../schemas/image.ts";
import { albumTitles } from "../services/albums/albums.ts";
// The one embed-code implementation, shared with the widget (a pure leaf module).
import { embedCodes } from "../sdk/src/embed_codes.ts";
import { type ImageListOptions, orderOf } from "../services/images/records.ts";

/** What My images is narrowed to and sorted by (the image list API's own options). */
type Find = Pick<ImageListOptions, "q" | "sort" | "order" | "album" | "type">;
import {
  MAX_CACHE_S,
  MAX_DELAY_MS,
  SCREENSHOT_FORMATS,
  WAIT_UNTIL,
} from "../schemas/screenshot.ts";

/** Images per page of My images. */
const PER_PAGE = 24;

/** Static assets of the pages: one stylesheet, the shared script and each page's own. */
const ASSETS: Record<string, [string, string]> = {
  "/assets/page.css": [PAGE_CSS, "text/css; charset=utf-8"],
  "/assets/page.js": [PAGE_JS, "text/javascript; charset=utf-8"],
  "/assets/home.js": [HOME_JS, "text/javascript; charset=utf-8"],
  "/assets/screenshot.js": [SCREENSHOT_JS, "text/javascript; charset=utf-8"],
  "/favicon.svg": [FAVICON_SVG, "image/svg+xml"],
};

/**
 * The site around the API: the home page's uploader, the screenshot page, My images
 * (list, page, delete several), and the static assets they use. Every page calls the API
 * with the session (ServiceApp.forSession), never with a key.
 */
export function registerSiteRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;
  const { config } = deps;
  for (const p of ["/", "/screenshot", "/images", "/images/*"]) {
    app.use(p, pageSecurity(config), formCsrf(config));
  }
  for (const [path, [body, type]] of Object.entries(ASSETS)) {
    serveAsset(app, path, body, type);
  }
  app.get("/favicon.ico", async (c) =>
    c.body(await faviconIco(), 200, {
      "content-type": "image/x-icon",
      "cache-control": "public, max-age=86400",
    }));

  const guests = config.GUEST_UPLOADS === "on";
  app.get("/", async (c) => {
    const user = await sessionUser(c, deps);
    return c.html(
      <Layout
        title="Upload images"
        user={user}
        current="/"
        head={(user || guests) && (
          <>
            <script src="/service-sdk.min.js" defer></script>
            <script src="/assets/home.js" defer></script>
          </>
        )}
      >
        {user ? <Uploader /> : guests ? <Uploader guest /> : <Welcome />}
      </Layout>,
    );
  });

  /**
   * The home page's uploader: the widget, inline, with every way in. A guest's (signed
   * out, GUEST_UPLOADS=on) says what the GUEST_* limits are and shows delete links.
   */
  function Uploader(props: { guest?: boolean }) {
    const days = Math.round(config.GUEST_EXPIRATION / 86400);
    return (
      <>
        <h1>Upload images</h1>
        <p class="muted">
          Drop images here, paste one (Ctrl+V or ⌘V), pick files, or give their
          web addresses. Each gets a direct link, a viewer page and embed codes.
        </p>
        {props.guest && (
          <p class="notice">
            You are uploading as a guest: each image is deleted after{" "}
            {days >= 1 ? `${days} days` : "a while"}{" "}
            at most, and its delete link is your only way to remove it sooner,
            so keep it. <a href="/signup">Sign up</a>{" "}
            in this browser to keep them in an account.
          </p>
        )}
        <div
          id="uploader"
          data-max-file-bytes={String(
            props.guest
              ? Math.min(config.MAX_FILE_BYTES, config.GUEST_MAX_FILE_BYTES)
              : config.MAX_FILE_BYTES,
          )}
          data-max-files={String(config.MAX_FILES)}
          data-guest={props.guest ? String(config.GUEST_EXPIRATION) : undefined}
        >
          <noscript>
            <p class="notice">
              The uploader needs JavaScript. Without it, upload with the{" "}
              <a href="/docs">API</a> and a key from your{" "}
              <a href="/account">account</a>.
            </p>
          </noscript>
        </div>
        {props.guest
          ? (
            <p>
              <a href="/login">Log in</a> · <a href="/docs">the API docs</a>
            </p>
          )
          : (
            <p>
              <a href="/images">See all your images</a> ·{" "}
              <a href="/screenshot">Capture a web page</a>
            </p>
          )}
      </>
    );
  }

  /** The signed-out home page: the same box, inviting sign-up. */
  function Welcome() {
    return (
      <>
        <h1>Host images and capture web pages</h1>
        <p>
          Upload images and get a direct link, a viewer page and embed codes for
          HTML, Markdown and forums. Capture any public web page as PNG, JPEG,
          WebP or PDF. Use it here, from ShareX, or through the API.
        </p>
        <section class="notice" aria-labelledby="start">
          <h2 id="start">Drop, paste or pick images to upload</h2>
          <p>Create a free account to start uploading.</p>
          <p>
            <a class="button" href="/signup">Sign up</a>{" "}
            <a class="button secondary" href="/login">Log in</a>
          </p>
        </section>
        <p>
          Developers: <a href="/docs">the API docs</a> ·{" "}
          <a href="/demo">the upload widget for your own site</a>
        </p>
      </>
    );
  }

  app.get("/screenshot", async (c) => {
    const user = await sessionUser(c, deps);
    if (!user) return c.redirect("/login", 303);
    return c.html(
      <Layout
        title="Capture a web page"
        user={user}
        current="/screenshot"
        head={<script src="/assets/screenshot.js" defer></script>}
      >
        <ScreenshotForm />
      </Layout>,
    );
  });

  const onOff = (name: string, label: string, checked = false) => (
    <label class="check">
      <input type="checkbox" name={name} data-kind="bool" checked={checked} />
      {label}
    </label>
  );
  const field = (
    name: string,
    label: string,
    attrs: Record<string, string | number | boolean> = {},
  ) => (
    <div>
      <label for={`f-${name}`}>{label}</label>
      <input id={`f-${name}`} name={name} type="text" {...attrs} />
    </div>
  );
  const number = (
    name: string,
    label: string,
    min: number,
    max: number,
    extra: Record<string, string | number> = {},
  ) =>
    field(name, label, {
      type: "number",
      min,
      max,
      "data-kind": "number",
      inputmode: "numeric",
      ...extra,
    });
  const choice = (
    name: string,
    label: string,
    options: readonly (string | [string, string])[],
  ) => (
    <div>
      <label for={`f-${name}`}>{label}</label>
      <select id={`f-${name}`} name={name}>
        {options.map((o) => typeof o === "string" ? [o, o] : o).map((
          [value, text],
        ) => (
          <option value={value}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
  const area = (name: string, label: string, kind: string, hint: string) => (
    <div>
      <label for={`f-${name}`}>{label}</label>
      <textarea
        id={`f-${name}`}
        name={name}
        data-kind={kind}
        placeholder={hint}
        spellcheck={false}
      >
      </textarea>
    </div>
  );

  /**
   * Every option of POST /api/1/screenshot, named as the API names them (screenshot.js
   * turns the form into the request body by those names and `data-kind`).
   */
  function ScreenshotForm() {
    return (
      <>
        <h1>Capture a web page</h1>
        <form id="shot-form" novalidate>
          <label for="f-url">Web address</label>
          <input
            id="f-url"
            name="url"
            type="url"
            required
            placeholder="https://example.com"
            autocomplete="url"
          />
          <div class="fields">
            {choice("preset", "Device", [
              ...PRESETS.map((p) => [p.id, p.label] as [string, string]),
              ["custom", "Custom viewport…"],
            ])}
            {choice("format", "Format", SCREENSHOT_FORMATS)}
            {number("quality", "Quality (jpeg, webp)", 1, 100, {
              placeholder: "85",
            })}
            {choice("pdfPaper", "Paper (pdf)", ["A4", "Letter"])}
          </div>
          <fieldset id="viewport" class="fields" hidden>
            <legend>Custom viewport</legend>
            {number("viewport.width", "Width (px)", 100, 3840, {
              value: 1366,
            })}
            {number("viewport.height", "Height (px)", 100, 10000, {
              value: 768,
            })}
            {number("viewport.deviceScaleFactor", "Pixel ratio", 1, 3, {
              value: 1,
              step: "0.25",
              inputmode: "decimal",
            })}
            <div>
              {onOff("viewport.isMobile", "Mobile")}
              {onOff("viewport.hasTouch", "Touch")}
            </div>
          </fieldset>
          <div class="fields">
            <div>
              {onOff("fullPage", "Whole page, not just the screen")}
              {onOff("share", "Keep it: store in My images with links", true)}
              {onOff("noAds", "Hide ads")}
              {onOff("noCookie", "Hide cookie banners")}
            </div>
            <div>
              {onOff("blockTrackers", "Block trackers")}
              {onOff("reducedMotion", "Reduce motion")}
              {choice("colorScheme", "Colour scheme", [
                "default",
                "light",
                "dark",
              ])}
            </div>
          </div>
          <details>
            <summary>More options</summary>
            <div class="fields">
              {choice("waitUntil", "Loaded when", WAIT_UNTIL)}
              {number("delay", "Then wait (ms)", 0, MAX_DELAY_MS, {
                placeholder: "0",
              })}
              {field("waitForSelector", "Wait for element (CSS selector)")}
              {number("timeout", "Timeout (ms)", 1000, 600000, {
                placeholder: String(config.SCREENSHOT_TIMEOUT_MS),
              })}
              {field("selector", "Only this element (CSS selector)")}
              {number("zoom", "Zoom", 0.5, 2, {
                step: "0.25",
                placeholder: "1",
                inputmode: "decimal",
              })}
              {field("userAgent", "User agent")}
              {number("cache", "Reuse a result for (s)", 0, MAX_CACHE_S, {
                placeholder: "0",
              })}
            </div>
            <fieldset class="fields">
              <legend>Only this rectangle (CSS px)</legend>
              {number("clip.x", "x", 0, 16384)}
              {number("clip.y", "y", 0, 100000)}
              {number("clip.width", "Width", 1, 16384)}
              {number("clip.height", "Height", 1, 16384)}
            </fieldset>
            <div class="fields">
              {area(
                "hideSelectors",
                "Hide elements (one selector per line)",
                "lines",
                ".chat-widget",
              )}
              {area(
                "headers",
                "Headers (Name: value per line)",
                "headers",
                "Accept-Language: de-DE",
              )}
              {area(
                "cookies",
                "Cookies (name=value per line)",
                "cookies",
                "consent=yes",
              )}
              {area("css", "Extra CSS", "text", "body { font-size: 20px }")}
              {area(
                "js",
                "Script to run first",
                "text",
                "document.title = 'x'",
              )}
            </div>
          </details>
          <p>
            <button type="submit">Capture</button>
          </p>
        </form>
        <p id="shot-status" role="status" aria-live="polite"></p>
        <section id="shot-result" class="result" hidden aria-label="Result">
        </section>
      </>
    );
  }

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
          <p class="notice" role="status">
            Moved {props.moved} image{props.moved === 1 ? "" : "s"}.
          </p>
        )}
        {props.edited && <p class="notice" role="status">Saved.</p>}
        {props.changed !== undefined && (
          <p class="notice" role="status">
            Changed who sees {props.changed}{" "}
            image{props.changed === 1 ? "" : "s"}.
          </p>
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
              </form>
              <ul class="grid">
                {props.records.map(({ rec, source, expiresAt }) => (
                  <li class="card">
                    <CardPicture rec={rec} widths={config.IMAGE_WIDTHS} />
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
                        <a class="button secondary" href={rec.url_viewer}>
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
        {pages > 1 && (
          <nav class="pager" aria-label="Pages">
            {props.page > 1 && (
              <a
                class="button secondary"
                href={link(props.page - 1, props.source)}
                rel="prev"
              >
                ← Newer
              </a>
            )}
            <span>
              Page {props.page} of {pages}
            </span>
            {props.page < pages && (
              <a
                class="button secondary"
                href={link(props.page + 1, props.source)}
                rel="next"
              >
                Older →
              </a>
            )}
          </nav>
        )}
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
