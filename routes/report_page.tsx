/**
 * The Report link of every viewer and album page (issue #47): a form anyone may send,
 * without an account or script, filing what POST /api/1/reports files, under the same
 * per-address limit (REPORTS_PER_MINUTE, counted in the database for every instance).
 */
import type { Context } from "hono";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { formCsrf, Layout, pageSecurity } from "./pages/layout.tsx";
import { sessionUser } from "./session.ts";
import { ApiError } from "../schemas/errors.ts";
import { fileReport } from "../services/operator/reports.ts";
import {
  REPORT_REASON_LABELS,
  REPORT_REASONS,
  type ReportReason,
} from "../schemas/operator.ts";
import { clientAddress } from "./client_address.ts";
import { waitText } from "./account.tsx";
import { throttleOf } from "./api_auth.ts";

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** GET and POST /report. */
export function registerReportPage(app: App, deps: AppDeps) {
  const { db } = deps.database;
  app.use("/report", pageSecurity(deps.config), formCsrf(deps.config));
  const reporters = throttleOf(deps, "report", deps.config.REPORTS_PER_MINUTE);

  const ReportForm = async (
    c: Context,
    props: { image: string; error?: string; reason?: string; note?: string },
  ) => (
    <Layout title="Report an image" user={await sessionUser(c, deps)}>
      <h1>Report an image</h1>
      <p>
        Tell the people who run this site what is wrong with{" "}
        <a href={`/i/${props.image}`}>this image</a>. Its owner is not told who
        reported it.
      </p>
      {props.error && <p class="error" role="alert">{props.error}</p>}
      <form method="post" action="/report">
        <input type="hidden" name="image_id" value={props.image} />
        <fieldset>
          <legend>Reason</legend>
          {REPORT_REASONS.map((r) => (
            <label class="check">
              <input
                type="radio"
                name="reason"
                value={r}
                required
                checked={props.reason === r}
              />
              {REPORT_REASON_LABELS[r]}
            </label>
          ))}
        </fieldset>
        <label for="note">Details (optional)</label>
        <textarea id="note" name="note" maxlength={1000}>
          {props.note ?? ""}
        </textarea>
        <p>
          <button type="submit">Send report</button>
        </p>
      </form>
    </Layout>
  );

  app.get("/report", async (c) => {
    const image = c.req.query("image") ?? "";
    if (!ID.test(image)) throw new ApiError(404);
    return c.html(await ReportForm(c, { image }));
  });

  app.post("/report", async (c) => {
    const body = await c.req.parseBody();
    const image = String(body.image_id ?? "");
    const reason = String(body.reason ?? "");
    const note = String(body.note ?? "").slice(0, 1000);
    if (!ID.test(image)) throw new ApiError(404);
    if (!(REPORT_REASONS as readonly string[]).includes(reason)) {
      return c.html(
        await ReportForm(c, { image, note, error: "Choose a reason." }),
        400,
      );
    }
    const addr = clientAddress(c, deps.config.TRUST_PROXY);
    try {
      await reporters.count(addr);
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 170) throw e;
      const wait = e.headers?.["Retry-After"] ?? "60";
      c.header("Retry-After", wait);
      return c.html(
        await ReportForm(c, {
          image,
          reason,
          note,
          error: `Too many reports from here. Try again in ${
            waitText(Number(wait))
          }.`,
        }),
        429,
      );
    }
    await fileReport(db, deps.clock, {
      image_id: image,
      reason: reason as ReportReason,
      note,
    }, addr ?? "");
    return c.html(
      <Layout title="Report sent" user={await sessionUser(c, deps)}>
        <h1>Thank you</h1>
        <p role="status">
          Your report was sent to the people who run this site.
        </p>
        <p>
          <a href={`/i/${image}`}>Back to the image</a>
        </p>
      </Layout>,
    );
  });
}
