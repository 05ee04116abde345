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
