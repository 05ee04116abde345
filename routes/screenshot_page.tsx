import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { Layout } from "./pages/layout.tsx";
import { sessionUser } from "./session.ts";
import { QueueForm, registerQueuePage } from "./screenshot_queue_page.tsx";
import type { ScreenshotJobs } from "../services/screenshots/jobs.ts";
import { PRESETS } from "../schemas/presets.ts";
import {
  MAX_CACHE_S,
  MAX_DELAY_MS,
  SCREENSHOT_FORMATS,
  WAIT_UNTIL,
} from "../schemas/screenshot.ts";

/**
 * The screenshot page (/screenshot): a form over every capture option of the API, which
 * its script posts with the session (ServiceApp.forSession).
 */
export function registerScreenshotPage(
  app: App,
  deps: AppDeps,
  jobs: ScreenshotJobs,
) {
  const { config } = deps;
  registerQueuePage(app, deps, jobs);
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
        <QueueForm
          csrfToken={user.csrfToken}
          max={config.SCREENSHOT_BATCH_MAX}
        />
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
}
