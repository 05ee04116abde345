import type { Context } from "hono";
import { deleteCookie, getCookie } from "hono/cookie";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { Layout } from "./pages/layout.tsx";
import { authOf } from "./api_auth.ts";
import { SESSION_COOKIE, type SessionForm } from "./session.ts";
import { exportAnswer } from "./account_api.ts";
import {
  changeEmail,
  changePassword,
  confirmPassword,
  deleteAccount,
  endOtherSessions,
} from "../services/accounts/self_service.ts";

/**
 * The account page's sign-in section (issue #52): change the password, change the e-mail,
 * sign out everywhere else, export everything as a zip, delete the account. Each form asks the password again where
 * it matters; a refusal goes back to /account beside its field (form_errors.ts).
 */
export function SignInSection(props: { csrfToken: string }) {
  const csrfField = (
    <input
      type="hidden"
      name="_csrf"
      value={props.csrfToken}
    />
  );
  return (
    <section aria-labelledby="security">
      <h2 id="security">Sign-in</h2>
      <details class="edit">
        <summary>Change your password</summary>
        <form method="post" action="/account/password">
          {csrfField}
          <label for="current_password">Current password</label>
          <input
            id="current_password"
            name="current_password"
            type="password"
            required
            autocomplete="current-password"
          />
          <label for="new_password">New password</label>
          <input
            id="new_password"
            name="new_password"
            type="password"
            required
            minlength={10}
            autocomplete="new-password"
          />
          <p class="muted">
            Every other browser signed in to this account is signed out.
          </p>
          <button type="submit">Change password</button>
        </form>
      </details>
      <details class="edit">
        <summary>Change your e-mail</summary>
        <form method="post" action="/account/email">
          {csrfField}
          <label for="email">New e-mail</label>
          <input
            id="email"
            name="email"
            type="email"
            required
            autocomplete="email"
          />
          <label for="email_password">Your password</label>
          <input
            id="email_password"
            name="password"
            type="password"
            required
            autocomplete="current-password"
          />
          <button type="submit">Change e-mail</button>
        </form>
      </details>
      <form method="post" action="/account/sessions" class="toolbar">
        {csrfField}
        <button type="submit" class="secondary">
          Sign out everywhere else
        </button>
      </form>
      <form method="post" action="/account/export" class="toolbar">
        {csrfField}
        <button type="submit" class="secondary">Export my data (zip)</button>
        <span class="muted">
          Every original with a manifest of its titles, albums and links.
        </span>
      </form>
      <details class="edit">
        <summary>Delete your account</summary>
        <form
          method="post"
          action="/account/delete"
          data-confirm="Delete your account, every image, album and key, for good?"
        >
          {csrfField}
          <p>
            Every image (and its links), album and key goes, for good.
          </p>
          <label for="delete_password">Your password</label>
          <input
            id="delete_password"
            name="password"
            type="password"
            required
            autocomplete="current-password"
          />
          <button type="submit" class="danger">Delete my account</button>
        </form>
      </details>
    </section>
  );
}

/** The notice /account shows for `?done=` (what a form of the section just did). */
export function accountDone(done: string | undefined, n: number) {
  return done ? DONE[done]?.(n) : undefined;
}

/** What a self-service form did, said on the account page it goes back to. */
const DONE: Record<string, (n: number) => string> = {
  password: (n) =>
    `Your password is changed${
      n ? `; ${n} other sign-in${n === 1 ? "" : "s"} ended` : ""
    }.`,
  email: () => "Your e-mail is changed.",
  webhook: () =>
    "A new webhook secret is made: calls are signed with it from now on.",
  sessions: (n) =>
    n
      ? `Signed out ${n} other sign-in${n === 1 ? "" : "s"}.`
      : "No other browser was signed in.",
};

/**
 * The section's forms: POST /account/password, /account/email, /account/export,
 * /account/delete and /account/sessions.
 */
export function registerAccountSecurity(
  app: App,
  deps: AppDeps,
  requireSessionForm: (c: Context<AppEnv>) => Promise<SessionForm | Response>,
  secure: boolean,
) {
  const { db } = deps.database;
  const noStore = (c: Context) => c.header("Cache-Control", "no-store");
  app.post("/account/password", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    const ended = await changePassword(
      db,
      r.user.userId,
      r.form.current_password ?? "",
      r.form.new_password ?? "",
      getCookie(c, SESSION_COOKIE),
    );
    return c.redirect(`/account?done=password&n=${ended}`, 303);
  });

  app.post("/account/email", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    await changeEmail(
      db,
      r.user.userId,
      r.form.password ?? "",
      r.form.email ?? "",
    );
    return c.redirect("/account?done=email", 303);
  });

  app.post("/account/delete", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    await confirmPassword(db, r.user.userId, r.form.password ?? "");
    const images = await deleteAccount(
      db,
      deps.store,
      deps.clock,
      r.user.userId,
    );
    authOf(deps).keys.clear();
    deleteCookie(c, SESSION_COOKIE, { path: "/", secure });
    noStore(c);
    return c.html(
      <Layout title="Account deleted">
        <h1>Your account is deleted</h1>
        <p role="status">
          It is gone with its {images}{" "}
          image{images === 1 ? "" : "s"}, its albums and its keys.
        </p>
        <p>
          <a class="button" href="/">Go to the home page</a>
        </p>
      </Layout>,
    );
  });

  // The same zip as GET /api/1/account/export, from a form (a download link would carry
  // no CSRF token).
  app.post("/account/export", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    return await exportAnswer(deps, r.user.userId);
  });

  app.post("/account/sessions", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    const ended = await endOtherSessions(
      db,
      r.user.userId,
      getCookie(c, SESSION_COOKIE),
    );
    return c.redirect(`/account?done=sessions&n=${ended}`, 303);
  });
}
