import type { App } from "./env.ts";
import { registerScreenshotPage } from "./screenshot_page.tsx";
import type { ScreenshotJobs } from "../services/screenshots/jobs.ts";
import { registerMyImages } from "./my_images.tsx";
import type { AppDeps } from "./deps.ts";
import {
  formCsrf,
  Layout,
  PAGE_CSS,
  PAGE_JS,
  pageSecurity,
} from "./pages/layout.tsx";
import { HOME_JS, SCREENSHOT_JS, serveAsset } from "./pages/static_assets.ts";
import { FAVICON_SVG, faviconIco } from "./pages/favicon.ts";
import { sessionUser } from "./session.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { albumTitles } from "../services/albums/albums.ts";
import { resumableLimit } from "../services/uploads/tus_path.ts";
/** Static assets of the pages: one stylesheet, the shared script and each page's own. */
const ASSETS: Record<string, [string, string]> = {
  "/assets/page.css": [PAGE_CSS, "text/css; charset=utf-8"],
  "/assets/page.js": [PAGE_JS, "text/javascript; charset=utf-8"],
  "/assets/home.js": [HOME_JS, "text/javascript; charset=utf-8"],
  "/assets/screenshot.js": [SCREENSHOT_JS, "text/javascript; charset=utf-8"],
  "/favicon.svg": [FAVICON_SVG, "image/svg+xml"],
};

/**
 * The site around the API: the home page's uploader (here), the screenshot page
 * (screenshot_page.tsx), My images (my_images.tsx: list, page, delete several), and the
 * static assets they use. Every page calls the API
 * with the session (ServiceApp.forSession), never with a key.
 */
export function registerSiteRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
  jobs: ScreenshotJobs,
) {
  const { config } = deps;
  for (
    const p of ["/", "/screenshot", "/screenshot/*", "/images", "/images/*"]
  ) {
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
    const albums = user ? await albumTitles(deps.database.db, user.userId) : [];
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
        {user
          ? <Uploader albums={albums} />
          : guests
          ? <Uploader guest />
          : <Welcome />}
      </Layout>,
    );
  });

  /**
   * The home page's uploader: the widget, inline, with every way in. A guest's (signed
   * out, GUEST_UPLOADS=on) says what the GUEST_* limits are and shows delete links.
   */
  function Uploader(
    props: { guest?: boolean; albums?: { id: string; title: string }[] },
  ) {
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
          // Resumable uploads are for accounts, and need a disk (DATA_DIR/tus).
          data-resumable-from-mb={props.guest ||
              (config.SCRATCH === "memory" && config.STORE !== "s3")
            ? "0"
            : String(config.RESUMABLE_FROM_MB)}
          data-max-resumable-bytes={String(resumableLimit(config).bytes)}
          // The user's albums, for the uploader's Album picker.
          data-albums={props.albums?.length
            ? JSON.stringify(props.albums)
            : undefined}
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

  registerScreenshotPage(app, deps, jobs);
  registerMyImages(app, deps, rowCache);
}
