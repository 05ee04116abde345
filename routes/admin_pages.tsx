/**
 * The operator's console at /admin (issue #47): totals, accounts, images with their
 * owners, the reports queue, invitations and the audit log, with forms for every admin
 * action. Every page and form answers 404 to anyone but a signed-in admin; forms carry
 * the session's token and pass the same-origin check every site form has.
 */
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  formCsrf,
  humanDate,
  humanSize,
  Layout,
  pageSecurity,
} from "./pages/layout.tsx";
import { sessionUser } from "./session.ts";
import { ApiError } from "../schemas/errors.ts";
import { adminOf } from "../services/operator/roles.ts";
import type { Actor } from "../services/operator/audit.ts";
import { listAudit } from "../services/operator/audit.ts";
import {
  deleteUserWithImages,
  listAllImages,
  listUsers,
  patchUser,
  setDisabled,
  totals,
} from "../services/operator/users.ts";
import { banUser, takeDown } from "../services/operator/takedown.ts";
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
import { clientAddress } from "./client_address.ts";
import type { SessionUser } from "../services/accounts/accounts.ts";
import type { Quotas } from "../services/accounts/quotas.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import { inviteUrl } from "./admin.ts";

const PER_PAGE = 50;

const SECTIONS: [string, string][] = [
  ["/admin", "Overview"],
  ["/admin/users", "Users"],
  ["/admin/images", "Images"],
  ["/admin/reports", "Reports"],
  ["/admin/invites", "Invites"],
  ["/admin/audit", "Audit log"],
];

/** The console's frame: the site's layout, a heading and the sections' navigation. */
function AdminFrame(
  props: {
    user: SessionUser;
    title: string;
    current: string;
    notice?: string;
    children?: Child;
  },
) {
  return (
    <Layout title={`Admin · ${props.title}`} user={props.user} current="/admin">
      <h1>{props.title}</h1>
      <nav aria-label="Admin sections">
        <ul class="subnav">
          {SECTIONS.map(([href, label]) => (
            <li>
              <a
                href={href}
                aria-current={props.current === href ? "page" : undefined}
              >
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {props.notice && <p class="notice" role="status">{props.notice}</p>}
      {props.children}
    </Layout>
  );
}

/**
 * A table of the console: stacked on a phone, scrolled sideways if need be; an empty
 * heading is an actions column (named for screen readers).
 */
function AdminTable(props: { headings: string[]; children?: Child }) {
  return (
    <div class="table-wrap">
      <table class="stack admin">
        <thead>
          <tr>
            {props.headings.map((h) => (
              <th key={h || "actions"}>
                {h || <span class="sr-only">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/**
 * One admin action as a form of one button: the session's token, the button's words and
 * what screen readers hear, and for what cannot be undone a question asked first
 * (`data-confirm`, page.js).
 */
function ActionForm(
  props: {
    user: SessionUser;
    action: string;
    kind: "secondary" | "danger";
    label: string;
    confirm?: string;
    children?: Child;
  },
) {
  return (
    <form
      class="inline"
      method="post"
      action={props.action}
      data-confirm={props.confirm}
    >
      <Csrf user={props.user} />
      <button type="submit" class={props.kind} aria-label={props.label}>
        {props.children}
      </button>
    </form>
  );
}

/** A hidden `_csrf` field of the session. */
const Csrf = (props: { user: SessionUser }) => (
  <input type="hidden" name="_csrf" value={props.user.csrfToken} />
);

/** Newer/older links of a paged list. */
function Pager(
  props: { page: number; total: number; href: (page: number) => string },
) {
  const pages = Math.max(1, Math.ceil(props.total / PER_PAGE));
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {props.page > 1 && (
        <a
          class="button secondary"
          rel="prev"
          href={props.href(props.page - 1)}
        >
          ← Previous
        </a>
      )}
      <span>
        Page {props.page} of {pages}
      </span>
      {props.page < pages && (
        <a
          class="button secondary"
          rel="next"
          href={props.href(props.page + 1)}
        >
          Next →
        </a>
      )}
    </nav>
  );
}

const pageOf = (c: Context) =>
  Math.min(100_000, Math.max(1, Number(c.req.query("page")) || 1));

/** A quota field's value: empty is the default (null), else a whole number ≥ 0. */
function quotaField(v: string | undefined): number | null | undefined {
  if (v === undefined) return undefined;
  const t = v.trim();
  if (t === "") return null;
  const n = Number(t);
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000_000) {
    throw new ApiError(160, {
      details: [{
        message: "a quota is a whole number, 0 for none, empty for the default",
      }],
    });
  }
  return n;
}

/** Registers /admin and its forms. */
export function registerAdminPages(
  app: App,
  deps: AppDeps,
  quotas: Quotas,
  rows: ImageRowCache,
) {
  const { db } = deps.database;
  const { clock, store, config } = deps;
  app.use("/admin", pageSecurity(config), formCsrf(config));
  app.use("/admin/*", pageSecurity(config), formCsrf(config));

  /** The signed-in admin, or 404 for anyone else (as for a page that does not exist). */
  const admin = async (c: Context<AppEnv>) => {
    const user = await sessionUser(c, deps);
    if (!user || !await adminOf(db, user.userId)) throw new ApiError(404);
    c.header("Cache-Control", "no-store");
    return user;
  };

  /** A posted admin form: the admin, its fields, and the actor for the audit log. */
  const adminForm = async (c: Context<AppEnv>) => {
    const user = await admin(c);
    const body = await c.req.parseBody();
    const form = Object.fromEntries(
      Object.entries(body).filter(([, v]) => typeof v === "string"),
    ) as Record<string, string>;
    if (form._csrf !== user.csrfToken) {
      throw new ApiError(403, {
        message: "Invalid form token; reload the page",
      });
    }
    const actor: Actor = {
      id: user.userId,
      email: user.email,
      address: clientAddress(c, config.TRUST_PROXY) ?? "",
    };
    return { user, form, actor };
  };

  /** Back to a page of the console with a message (one GET, no resubmission). */
  const back = (c: Context, to: string, notice: string) => {
    const u = new URL(to, "http://x");
    u.searchParams.set("done", notice);
    return c.redirect(`${u.pathname}${u.search}`, 303);
  };
  const noticeOf = (c: Context) => c.req.query("done")?.slice(0, 200);

  app.get("/admin", async (c) => {
    const user = await admin(c);
    const t = await totals(db, clock);
    const figures: [string, string][] = [
      ["Accounts", String(t.users)],
      ["Disabled", String(t.disabled_users)],
      ["Images", String(t.images)],
      ["Stored", humanSize(t.bytes)],
      ["Open reports", String(t.open_reports)],
      ["Taken down", String(t.taken_down)],
      ["Screenshots this month", String(t.screenshots_this_month)],
    ];
    return c.html(
      <AdminFrame
        user={user}
        title="Admin"
        current="/admin"
        notice={noticeOf(c)}
      >
        <ul class="stats">
          {figures.map(([label, value]) => (
            <li>
              <strong>{value}</strong>
              {label}
            </li>
          ))}
        </ul>
        <p>
          Sign-up is <strong>{config.SIGNUP}</strong>{" "}
          <span class="muted">(SIGNUP=open, invite or closed)</span>. Default
          quotas:{" "}
          {config.USER_STORAGE_MB
            ? `${config.USER_STORAGE_MB} MB`
            : "no storage limit"},{" "}
          {config.USER_IMAGES_MAX
            ? `${config.USER_IMAGES_MAX} images`
            : "no image limit"},{" "}
          {config.SCREENSHOTS_PER_MONTH
            ? `${config.SCREENSHOTS_PER_MONTH} screenshots a month`
            : "no screenshot limit"}.
        </p>
        {t.open_reports > 0 && (
          <p>
            <a href="/admin/reports">
              {t.open_reports} report{t.open_reports === 1 ? "" : "s"} to review
            </a>
          </p>
        )}
      </AdminFrame>,
    );
  });

  app.get("/admin/users", async (c) => {
    const user = await admin(c);
    const q = c.req.query("q")?.slice(0, 200) ?? "";
    const page = pageOf(c);
    const { users, total } = await listUsers(db, clock, {
      page,
      perPage: PER_PAGE,
      q,
    });
    return c.html(
      <AdminFrame
        user={user}
        title="Users"
        current="/admin/users"
        notice={noticeOf(c)}
      >
        <form class="find" method="get" action="/admin/users" role="search">
          <div>
            <label for="q">E-mail or id</label>
            <input id="q" name="q" type="search" value={q} />
          </div>
          <button type="submit" class="secondary">Search</button>
        </form>
        <p class="muted">
          {total}{" "}
          account{total === 1 ? "" : "s"}. Quotas: empty is the instance
          default, 0 no limit. Disabling ends sessions and refuses keys; images
          stay online. A ban also takes down every image.
        </p>
        <AdminTable
          headings={[
            "Account",
            "Images",
            "Stored",
            "Shots",
            "Last active",
            "Quotas",
            "",
          ]}
        >
          {users.map((u) => (
            <tr>
              <td data-label="Account">
                <strong>{u.email}</strong>
                <br />
                <span class="muted">
                  {u.role}
                  {u.state === "disabled" ? " · disabled" : ""} · since{" "}
                  {humanDate(u.created * 1000).slice(0, 10)}
                </span>
              </td>
              <td data-label="Images">
                <a href={`/admin/images?owner=${u.id}`}>{u.images}</a>
              </td>
              <td data-label="Stored">{humanSize(u.bytes)}</td>
              <td data-label="Shots">{u.screenshots_this_month}</td>
              <td data-label="Last active">
                {u.last_active ? humanDate(u.last_active * 1000) : "never"}
              </td>
              <td data-label="Quotas">
                <form
                  class="quota"
                  method="post"
                  action={`/admin/users/${u.id}/quota`}
                >
                  <Csrf user={user} />
                  <label>
                    MB
                    <input
                      type="number"
                      min="0"
                      name="quota_storage_mb"
                      value={u.quota.storage_mb ?? ""}
                      aria-label={`Storage quota of ${u.email}, MB`}
                    />
                  </label>
                  <label>
                    Images
                    <input
                      type="number"
                      min="0"
                      name="quota_images"
                      value={u.quota.images ?? ""}
                      aria-label={`Image quota of ${u.email}`}
                    />
                  </label>
                  <label>
                    Shots/month
                    <input
                      type="number"
                      min="0"
                      name="quota_screenshots"
                      value={u.quota.screenshots_per_month ?? ""}
                      aria-label={`Screenshot quota of ${u.email}`}
                    />
                  </label>
                  <button type="submit" class="secondary">Set</button>
                </form>
              </td>
              <td data-label="">
                {u.id !== user.userId && (
                  <div class="row-actions">
                    <ActionForm
                      user={user}
                      action={`/admin/users/${u.id}/${
                        u.state === "disabled" ? "enable" : "disable"
                      }`}
                      kind="secondary"
                      label={`${
                        u.state === "disabled" ? "Enable" : "Disable"
                      } ${u.email}`}
                    >
                      {u.state === "disabled" ? "Enable" : "Disable"}
                    </ActionForm>
                    <ActionForm
                      user={user}
                      action={`/admin/users/${u.id}/ban`}
                      kind="danger"
                      label={`Ban ${u.email}`}
                      confirm={`Ban ${u.email}? The account is disabled and every image of it taken down.`}
                    >
                      Ban
                    </ActionForm>
                    <ActionForm
                      user={user}
                      action={`/admin/users/${u.id}/delete`}
                      kind="danger"
                      label={`Delete ${u.email}`}
                      confirm={`Delete ${u.email} with all ${u.images} images? This cannot be undone.`}
                    >
                      Delete
                    </ActionForm>
                  </div>
                )}
              </td>
            </tr>
          ))}
        </AdminTable>
        <Pager
          page={page}
          total={total}
          href={(p) => `/admin/users?q=${encodeURIComponent(q)}&page=${p}`}
        />
      </AdminFrame>,
    );
  });

  const userAction = (
    action: string,
    run: (
      f: Awaited<ReturnType<typeof adminForm>>,
      id: string,
    ) => Promise<string>,
  ) =>
    app.post(`/admin/users/:id{[A-Za-z0-9_-]{1,64}}/${action}`, async (c) => {
      const f = await adminForm(c);
      const id = c.req.param("id");
      const notice = await run(f, id);
      quotas.forget(id);
      return back(c, "/admin/users", notice);
    });
  userAction("disable", async (f, id) => {
    await setDisabled(db, clock, f.actor, id, true);
    return "Account disabled.";
  });
  userAction("enable", async (f, id) => {
    await setDisabled(db, clock, f.actor, id, false);
    return "Account enabled.";
  });
  userAction("ban", async (f, id) => {
    const done = await banUser(
      db,
      store,
      clock,
      f.actor,
      id,
      f.form.reason ?? "",
    );
    return `Banned; ${done.images_taken_down} images taken down.`;
  });
  userAction("delete", async (f, id) => {
    const done = await deleteUserWithImages(db, store, clock, f.actor, id);
    return `Account deleted with ${done.images_deleted} images.`;
  });
  userAction("quota", async (f, id) => {
    await patchUser(db, clock, f.actor, id, {
      quota_storage_mb: quotaField(f.form.quota_storage_mb),
      quota_images: quotaField(f.form.quota_images),
      quota_screenshots: quotaField(f.form.quota_screenshots),
    });
    return "Quotas saved.";
  });

  app.get("/admin/images", async (c) => {
    const user = await admin(c);
    const page = pageOf(c);
    const owner = c.req.query("owner")?.slice(0, 64) || undefined;
    const { images, total } = await listAllImages(db, {
      page,
      perPage: PER_PAGE,
      owner,
    });
    const host = config.IMAGE_HOST_URL;
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
                        src={`${host}/${i.id}.th.${i.thumb_ext ?? i.ext}`}
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
    const link = inviteUrl(config.BASE_URL, invite.token);
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
