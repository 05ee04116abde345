import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { Layout } from "./pages/layout.tsx";
import { requireSessionForm, sessionUser } from "./session.ts";
import { PRESETS } from "../schemas/presets.ts";
import { ScreenshotRequestSchema } from "../schemas/screenshot.ts";
import { ApiError, invalidField } from "../schemas/errors.ts";
import { parseTargetUrl } from "../services/net/target.ts";
import {
  jobRecords,
  type ScreenshotJobs,
} from "../services/screenshots/jobs.ts";
import type { ScreenshotRequest } from "../services/screenshots/screenshot_service.ts";

/**
 * The screenshot page's queue (issue #50): a list of addresses captured in the
 * background as one batch, and the batch's page, which shows each one's progress and
 * result and refreshes itself until every capture has ended.
 */

/** The form under the single capture: many addresses, one preset, queued. */
export function QueueForm(props: { csrfToken: string; max: number }) {
  return (
    <section aria-labelledby="queue">
      <h2 id="queue">Capture many pages</h2>
      <form method="post" action="/screenshot/batch">
        <input type="hidden" name="_csrf" value={props.csrfToken} />
        <label for="q-urls">
          Web addresses, one per line (at most {props.max})
        </label>
        <textarea
          id="q-urls"
          name="urls"
          rows={5}
          required
          spellcheck={false}
          placeholder="https://example.com"
        >
        </textarea>
        <label for="q-preset">Device</label>
        <select id="q-preset" name="preset">
          {PRESETS.map((p) => [p.id, p.label]).map(([id, label]) => (
            <option value={id}>{label}</option>
          ))}
        </select>
        <label class="check">
          <input type="checkbox" name="fullPage" /> Whole page
        </label>
        <p class="muted">
          They are captured in the background and kept with your images; the
          next page follows them.
        </p>
        <button type="submit">Queue them</button>
      </form>
    </section>
  );
}

/** The requests of the queue form's lines; a bad line is 160 naming it. */
export function queueRequests(
  form: Record<string, string>,
  max: number,
): ScreenshotRequest[] {
  const lines = (form.urls ?? "").split(/\r?\n/).map((l) => l.trim())
    .filter(Boolean);
  const bad = (message: string) => invalidField("urls", message);
  if (lines.length === 0) throw bad("give at least one web address");
  if (lines.length > max) {
    throw bad(
      `at most ${max} addresses at once; this list has ${lines.length}`,
    );
  }
  return lines.map((url, i) => {
    try {
      parseTargetUrl(url, "urls");
    } catch (e) {
      const why = e instanceof ApiError ? e.details?.[0]?.message : undefined;
      throw bad(
        `line ${i + 1} (${url.slice(0, 80)}): ${why ?? "not a web address"}`,
      );
    }
    const parsed = ScreenshotRequestSchema.safeParse({
      url,
      preset: form.preset || undefined,
      fullPage: form.fullPage === "on",
    });
    if (!parsed.success) {
      throw bad(
        `line ${i + 1} (${url.slice(0, 80)}): ${
          parsed.error.issues[0].message
        }`,
      );
    }
    const { key: _key, ...req } = parsed.data;
    return { ...req, async: true };
  });
}

/** POST /screenshot/batch and GET /screenshot/batches/:id. */
export function registerQueuePage(
  app: App,
  deps: AppDeps,
  jobs: ScreenshotJobs,
) {
  app.post("/screenshot/batch", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    if (!deps.screenshotter) throw new ApiError(240);
    const reqs = queueRequests(r.form, deps.config.SCREENSHOT_BATCH_MAX);
    const id = crypto.randomUUID();
    await jobs.enqueueMany(r.user.userId, reqs, id);
    return c.redirect(`/screenshot/batches/${id}`, 303);
  });

  // Stops what is left of the batch (queued and running captures), then shows it again.
  app.post("/screenshot/batches/:id{[0-9a-f-]{36}}/cancel", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const id = c.req.param("id");
    if (!await jobs.cancelBatch(r.user.userId, id)) throw new ApiError(404);
    return c.redirect(`/screenshot/batches/${id}`, 303);
  });

  app.get("/screenshot/batches/:id{[0-9a-f-]{36}}", async (c) => {
    const user = await sessionUser(c, deps);
    if (!user) return c.redirect("/login", 303);
    const rows = await jobs.batch(user.userId, c.req.param("id"));
    if (!rows) throw new ApiError(404);
    const list = await jobRecords(deps.database.db, deps.config, rows);
    const open = list.filter((j) =>
      j.status === "queued" || j.status === "running"
    ).length;
    const done = list.filter((j) => j.status === "done").length;
    c.header("Cache-Control", "no-store");
    return c.html(
      <Layout
        title="Captures"
        user={user}
        current="/screenshot"
        head={open > 0 && <meta http-equiv="refresh" content="3" />}
      >
        <h1>Captures</h1>
        <p role="status">
          {done} of {list.length} done
          {open > 0
            ? `, ${open} to go. This page refreshes every 3 seconds until they have all ended.`
            : "."}
        </p>
        <div class="table-wrap">
          <table class="stack">
            <thead>
              <tr>
                <th>Address</th>
                <th>State</th>
                <th>Result</th>
              </tr>
            </thead>
            <tbody>
              {list.map((j) => (
                <tr>
                  <td data-label="Address">
                    <code>{j.request.url}</code>
                  </td>
                  <td data-label="State">{STATE[j.status]}</td>
                  <td data-label="Result">
                    {j.result?.id
                      ? <a href={`/i/${j.result.id}`}>Open the image</a>
                      : j.error
                      ? `${j.error.message} (${j.error.code})`
                      : ""}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {open > 0 && (
          <form
            method="post"
            action={`/screenshot/batches/${c.req.param("id")}/cancel`}
          >
            <input type="hidden" name="_csrf" value={user.csrfToken} />
            <button type="submit">Cancel the rest</button>
          </form>
        )}
        <p>
          <a href="/screenshot#queue">Queue more</a> ·{" "}
          <a href="/images?source=screenshot">Your screenshots</a>
        </p>
      </Layout>,
    );
  });
}

/** A job's status in words. */
const STATE: Record<string, string> = {
  queued: "Waiting",
  running: "Capturing…",
  done: "Done",
  failed: "Failed",
  cancelled: "Cancelled",
};
