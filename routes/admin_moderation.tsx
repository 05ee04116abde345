/**
 * The console's moderation pages (/admin/images, /admin/reports, /admin/invites,
 * /admin/audit) and their forms; registered by registerAdminPages behind the same guards.
 */
import { linkBases } from "../services/runtime/link_base.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { humanDate, humanSize } from "./pages/layout.tsx";
import { ApiError } from "../schemas/errors.ts";
import { listAudit } from "../services/operator/audit.ts";
import { listAllImages } from "../services/operator/users.ts";
import { takeDown } from "../services/operator/takedown.ts";
import {
  dismissReport,
  listReports,
  reportedImage,
} from "../services/operator/reports.ts";
import {
  createInvite,
  listInvites,
  revokeInvite,
} from "../services/operator/invites.ts";
import { REPORT_REASON_LABELS } from "../schemas/operator.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { inviteUrl } from "./admin.ts";

import {
  ActionForm,
  AdminFrame,
  AdminTable,
  type ConsoleGuards,
  Csrf,
  pageOf,
  Pager,
  PER_PAGE,
} from "./admin_console.tsx";

/** Registers the images, reports, invitations and audit pages of the console. */
export function registerModerationPages(
  app: App,
  deps: AppDeps,
  rows: ImageRowCache,
  guards: ConsoleGuards,
) {
  const { db } = deps.database;
  const { clock, store, config } = deps;
  const { admin, adminForm, back, noticeOf } = guards;

  app.get("/admin/images", async (c) => {
    const user = await admin(c);
    const page = pageOf(c);
    const owner = c.req.query("owner")?.slice(0, 64) || undefined;
    const { images, total } = await listAllImages(db, {
      page,
      perPage: PER_PAGE,
      owner,
    });
    return c.html(
      <AdminFrame
        user={user}
        title="Images"
        current="/admin/images"
        notice={noticeOf(c)}
      >
        <p class="muted">
          Newest first{owner ? ", one account's" : ", every account's"}:{" "}
          {total}. Taking an image down removes its bytes, answers 451 at every
          address of it, and refuses the same bytes to anyone from then on.
        </p>
        <AdminTable
          headings={["Image", "Title", "Owner", "Size", "Uploaded", ""]}
        >
          {images.map((i) => (
            <tr>
              <td data-label="Image">
                {i.privacy === "public" || i.privacy === "unlisted"
                  ? (
                    <a href={`/i/${i.id}`}>
                      <img
                        class="thumb"
                        src={`/${i.id}.th.${i.thumb_ext ?? i.ext}`}
                        alt={i.title}
                        loading="lazy"
                        width="64"
                        height="48"
                      />
                    </a>
                  )
                  : <span class="muted">{i.privacy}</span>}
              </td>
              <td data-label="Title">{i.title}</td>
              <td data-label="Owner">
                <a href={`/admin/users?q=${i.owner_id}`}>{i.owner_email}</a>
              </td>
              <td data-label="Size">
                {i.width}×{i.height} · {humanSize(i.size)}
              </td>
              <td data-label="Uploaded">{humanDate(i.time * 1000)}</td>
              <td data-label="">
                <ActionForm
                  user={user}
                  action={`/admin/images/${i.id}/takedown`}
                  kind="danger"
                  label={`Take down ${i.title}`}
                  confirm={`Take down “${i.title}”? Its bytes are removed for good.`}
                >
                  Take down
                </ActionForm>
              </td>
            </tr>
          ))}
        </AdminTable>
        <Pager
          page={page}
          total={total}
          href={(p) =>
            `/admin/images?${owner ? `owner=${owner}&` : ""}page=${p}`}
        />
      </AdminFrame>,
    );
  });

  app.post("/admin/images/:id{[A-Za-z0-9_-]{1,64}}/takedown", async (c) => {
    const f = await adminForm(c);
    const id = c.req.param("id");
    await takeDown(db, store, clock, f.actor, id, f.form.reason ?? "");
    rows.invalidate(id);
    return back(
      c,
      f.form.back === "reports" ? "/admin/reports" : "/admin/images",
      "Image taken down.",
    );
  });

  app.get("/admin/reports", async (c) => {
    const user = await admin(c);
    const page = pageOf(c);
    const { reports, total } = await listReports(db, {
      page,
      perPage: PER_PAGE,
      state: "open",
    });
    return c.html(
      <AdminFrame
        user={user}
        title="Reports"
        current="/admin/reports"
        notice={noticeOf(c)}
      >
        {reports.length === 0
          ? <p>No open reports.</p>
          : (
            <AdminTable headings={["Image", "Reason", "Owner", "Reported", ""]}>
              {reports.map((r) => (
                <tr>
                  <td data-label="Image">
                    {r.image
                      ? (
                        <a href={`/i/${r.image_id}`}>
                          {r.image.title || r.image_id}
                        </a>
                      )
                      : <span class="muted">{r.image_id} (gone)</span>}
                  </td>
                  <td data-label="Reason">
                    {REPORT_REASON_LABELS[r.reason]}
                    {r.note && (
                      <>
                        <br />
                        <span class="muted">“{r.note}”</span>
                      </>
                    )}
                    {r.others > 0 && (
                      <>
                        <br />
                        <span class="muted">+{r.others} more</span>
                      </>
                    )}
                  </td>
                  <td data-label="Owner">{r.image?.owner_email ?? ""}</td>
                  <td data-label="Reported">{humanDate(r.time * 1000)}</td>
                  <td data-label="">
                    <div class="row-actions">
                      <ActionForm
                        user={user}
                        action={`/admin/reports/${r.id}/dismiss`}
                        kind="secondary"
                        label={`Dismiss report ${r.id}`}
                      >
                        Dismiss
                      </ActionForm>
                      {r.image && (
                        <ActionForm
                          user={user}
                          action={`/admin/reports/${r.id}/takedown`}
                          kind="danger"
                          label={`Take down the image of report ${r.id}`}
                          confirm="Take this image down? Its bytes are removed for good."
                        >
                          Take down
                        </ActionForm>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </AdminTable>
          )}
        <Pager
          page={page}
          total={total}
          href={(p) => `/admin/reports?page=${p}`}
        />
      </AdminFrame>,
    );
  });

  app.post("/admin/reports/:id{[A-Za-z0-9_-]{1,64}}/dismiss", async (c) => {
    const f = await adminForm(c);
    await dismissReport(db, clock, f.actor, c.req.param("id"));
    return back(c, "/admin/reports", "Report dismissed.");
  });

  app.post("/admin/reports/:id{[A-Za-z0-9_-]{1,64}}/takedown", async (c) => {
    const f = await adminForm(c);
    const imageId = await reportedImage(db, c.req.param("id"));
    await takeDown(
      db,
      store,
      clock,
      f.actor,
      imageId,
      `report ${c.req.param("id")}`,
    );
    rows.invalidate(imageId);
    return back(
      c,
      "/admin/reports",
      "Image taken down; its reports are closed.",
    );
  });

  app.get("/admin/invites", async (c) => {
    const user = await admin(c);
    const invites = await listInvites(db, clock);
    const fresh = c.req.query("link");
    return c.html(
      <AdminFrame
        user={user}
        title="Invites"
        current="/admin/invites"
        notice={noticeOf(c)}
      >
        {config.SIGNUP !== "invite" && (
          <p class="muted">
            Sign-up is {config.SIGNUP}{" "}
            here: invitations take effect with SIGNUP=invite.
          </p>
        )}
        {fresh && (
          <section aria-labelledby="new-invite">
            <h2 id="new-invite">New invitation link</h2>
            <p>Copy it now: it is shown only once.</p>
            <p class="secret">{fresh}</p>
          </section>
        )}
        <form method="post" action="/admin/invites" class="find">
          <Csrf user={user} />
          <div>
            <label for="max_uses">Uses</label>
            <input
              id="max_uses"
              name="max_uses"
              type="number"
              min="1"
              max="10000"
              value="1"
            />
          </div>
          <div>
            <label for="expires_in">Expires after</label>
            <select id="expires_in" name="expires_in">
              <option value="86400">1 day</option>
              <option value="604800" selected>7 days</option>
              <option value="2592000">30 days</option>
              <option value="">never</option>
            </select>
          </div>
          <button type="submit">Make a link</button>
        </form>
        <AdminTable headings={["Invite", "Uses", "Expires", "State", ""]}>
          {invites.map((i) => (
            <tr>
              <td data-label="Invite">
                <code>{i.id}</code>
              </td>
              <td data-label="Uses">{i.uses} of {i.max_uses}</td>
              <td data-label="Expires">
                {i.expires ? humanDate(i.expires * 1000) : "never"}
              </td>
              <td data-label="State">{i.state}</td>
              <td data-label="">
                {i.state === "active" && (
                  <ActionForm
                    user={user}
                    action={`/admin/invites/${i.id}/revoke`}
                    kind="secondary"
                    label={`Revoke invite ${i.id}`}
                  >
                    Revoke
                  </ActionForm>
                )}
              </td>
            </tr>
          ))}
        </AdminTable>
      </AdminFrame>,
    );
  });

  app.post("/admin/invites", async (c) => {
    const f = await adminForm(c);
    const uses = Number(f.form.max_uses || "1");
    const expires = f.form.expires_in ? Number(f.form.expires_in) : undefined;
    if (
      !Number.isInteger(uses) || uses < 1 || uses > 10_000 ||
      (expires !== undefined && (!Number.isInteger(expires) || expires < 60))
    ) {
      throw new ApiError(160, {
        details: [{ message: "uses 1 to 10000; a known expiry" }],
      });
    }
    const invite = await createInvite(db, clock, f.actor, {
      max_uses: uses,
      expires_in: expires,
    });
    const link = inviteUrl(linkBases(config).base, invite.token);
    return c.redirect(`/admin/invites?link=${encodeURIComponent(link)}`, 303);
  });

  app.post("/admin/invites/:id{[A-Za-z0-9_-]{1,64}}/revoke", async (c) => {
    const f = await adminForm(c);
    await revokeInvite(db, clock, f.actor, c.req.param("id"));
    return back(c, "/admin/invites", "Invitation revoked.");
  });

  app.get("/admin/audit", async (c) => {
    const user = await admin(c);
    const page = pageOf(c);
    const { entries, total } = await listAudit(db, { page, perPage: PER_PAGE });
    return c.html(
      <AdminFrame user={user} title="Audit log" current="/admin/audit">
        <AdminTable headings={["When", "Who", "Action", "Target", "From"]}>
          {entries.map((e) => (
            <tr>
              <td data-label="When">{humanDate(e.time * 1000)}</td>
              <td data-label="Who">{e.actor_email}</td>
              <td data-label="Action">
                {e.action}
                {e.details && (
                  <>
                    <br />
                    <code class="muted wrap">{e.details}</code>
                  </>
                )}
              </td>
              <td data-label="Target">
                <code class="wrap">{e.target}</code>
              </td>
              <td data-label="From">{e.address}</td>
            </tr>
          ))}
        </AdminTable>
        <Pager
          page={page}
          total={total}
          href={(p) => `/admin/audit?page=${p}`}
        />
      </AdminFrame>,
    );
  });
}
