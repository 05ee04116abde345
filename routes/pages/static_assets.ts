import type { App } from "../env.ts";

/**
 * Serves a small text asset the service holds in memory (a stylesheet, a page script, the
 * icon), cacheable for an hour and never sniffed as anything else.
 */
export function serveAsset(
  app: App,
  path: string,
  body: string,
  type: string,
): void {
  app.get(path, (c) =>
    c.body(body, 200, {
      "content-type": type,
      "cache-control": "public, max-age=3600",
      "x-content-type-options": "nosniff",
    }));
}

/**
 * The pages' own scripts, read once from routes/pages/assets/ (plain files, so deno lint
 * and fmt check them) and served under /assets/.
 */
const read = (name: string) =>
  Deno.readTextFile(new URL(`./assets/${name}`, import.meta.url));

/** The home page's uploader (the SDK widget with the session). */
export const HOME_JS = await read("home.js");
/** The screenshot page's form → API call → result. */
export const SCREENSHOT_JS = await read("screenshot.js");
