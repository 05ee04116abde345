/**
 * The operator's console at /admin (issue #47): totals, accounts, images with their
 * owners, the reports queue, invitations and the audit log, with forms for every admin
 * action. Every page and form answers 404 to anyone but a signed-in admin; forms carry
 * the session's token and pass the same-origin check every site form has.
 */
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  formCsrf,
  humanDate,
  humanSize,
  pageSecurity,
} from "./pages/layout.tsx";
import {
  deleteUserWithImages,
  listUsers,
  patchUser,
  setDisabled,
  totals,
} from "../services/operator/users.ts";
import { banUser } from "../services/operator/takedown.ts";
import type { Quotas } from "../services/accounts/quotas.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";

import {
  ActionForm,
  type AdminForm,
  AdminFrame,
  AdminTable,
  consoleGuards,
  Csrf,
  pageOf,
  Pager,
  PER_PAGE,
  quotaField,
} from "./admin_console.tsx";
import { registerModerationPages } from "./admin_moderation.tsx";

/** Registers /admin and its forms: the overview and the accounts here, the rest in admin_moderation.tsx. */
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
  const guards = consoleGuards(deps);
  const { admin, adminForm, back, noticeOf } = guards;

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
      f: AdminForm,
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

  registerModerationPages(app, deps, rows, guards);
}
