import { linkBases } from "../services/runtime/link_base.ts";
import {
  registerAccountWebhooks,
  WebhookSection,
} from "./account_webhooks.tsx";
import { webhookAccount } from "./screenshot_jobs.ts";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import {
  AccountError,
  createSession,
  createUser,
  deleteSession,
  hasNoAdmin,
  NotFirstAdmin,
  type SessionUser,
  verifyLogin,
} from "../services/accounts/accounts.ts";
import {
  authenticateKey,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from "../services/accounts/api_keys.ts";
import {
  CopyField,
  formCsrf,
  humanDate,
  humanSize,
  Layout,
  pageSecurity,
} from "./pages/layout.tsx";
import { ApiError } from "../schemas/errors.ts";
import { AddressThrottle } from "../services/accounts/address_throttle.ts";
import { clientAddress } from "./client_address.ts";
import { authOf, GUEST_COOKIE } from "./api_auth.ts";
import { claimGuestImages } from "../services/accounts/guests.ts";
import {
  giveBackInvite,
  inviteProblem,
  InviteRefused,
  useInvite,
} from "../services/operator/invites.ts";
import { wantsHtml } from "./pages/errors.tsx";
import { standingOf } from "../services/accounts/quotas.ts";
import {
  accountDone,
  registerAccountSecurity,
  SignInSection,
} from "./account_security.tsx";
import {
  localPath,
  requireSessionForm as sessionForm,
  SESSION_COOKIE,
  sessionUser,
} from "./session.ts";

/** A wait for people: "45 seconds", "1 minute", "15 minutes" (rounded up). */
export function waitText(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 60) return `${s} second${s === 1 ? "" : "s"}`;
  const m = Math.ceil(s / 60);
  return `${m} minute${m === 1 ? "" : "s"}`;
}

/** Cookie carrying a just-created key from the POST to the one GET that shows it. */
const NEW_KEY_COOKIE = "ih_new_key";

/**
 * The .sxcu file's name: the host with anything Windows refuses in a file name (the colon
 * of a port, say) made a dash, e.g. `localhost-18301.sxcu`.
 */
export function sharexFileName(baseUrl: string): string {
  return `${new URL(baseUrl).host.replace(/[^A-Za-z0-9._-]/g, "-")}.sxcu`;
}

/** A ShareX custom uploader (.sxcu) for this service and one key. */
export function sharexConfig(baseUrl: string, key: string) {
  return {
    Version: "17.0.0",
    Name: `Image host (${new URL(baseUrl).host})`,
    DestinationType: "ImageUploader",
    RequestMethod: "POST",
    RequestURL: `${baseUrl}/api/1/upload`,
    Headers: { Authorization: `Bearer ${key}` },
    Body: "MultipartFormData",
    FileFormName: "images",
    URL: "{json:data.url}",
    ThumbnailURL: "{json:data.thumb.url}",
    DeletionURL: "{json:data.delete_url}",
    ErrorMessage: "{json:error.message}",
  };
}

function fmtDate(d: Date | string | null) {
  return d ? humanDate(d) : "never";
}

/** Sign-up, log-in, log-out and the account page (keys, ShareX config, images). */
export function registerAccountRoutes(app: App, deps: AppDeps) {
  const { db } = deps.database;
  const secure = deps.config.BASE_URL.startsWith("https:");
  const pageHeaders = pageSecurity(deps.config);
  const forms = formCsrf(deps.config);
  for (const p of ["/signup", "/login", "/logout", "/account", "/account/*"]) {
    app.use(p, pageHeaders, forms);
  }

  const currentUser = (c: Context<AppEnv>) => sessionUser(c, deps);

  const requireSessionForm = (c: Context<AppEnv>) => sessionForm(c, deps);

  function startSession(c: Context<AppEnv>, sid: string) {
    setCookie(c, SESSION_COOKIE, sid, {
      httpOnly: true,
      sameSite: "Lax",
      secure,
      path: "/",
      maxAge: 30 * 86400,
    });
  }

  /**
   * The images this browser uploaded as a guest become the account's (sign-up or log-in
   * in the same browser), and the guest cookie goes.
   */
  async function claimGuest(c: Context<AppEnv>, userId: string) {
    const token = getCookie(c, GUEST_COOKIE);
    if (!token) return;
    try {
      await claimGuestImages(
        db,
        token,
        userId,
        deps.clock,
        deps.config.GUEST_EXPIRATION,
      );
    } catch (e) {
      // The account is made and signed in: a claim that failed (the database away) does
      // not undo that. The cookie stays, so the next log-in in this browser claims them.
      deps.log.error({
        msg: "claiming a guest's images failed",
        error: e instanceof Error ? e.message : String(e),
      });
      return;
    }
    deleteCookie(c, GUEST_COOKIE, { path: "/", secure });
  }

  const AuthForm = (
    props: {
      mode: "signup" | "login";
      error?: string;
      email?: string;
      /** Sign-up on an instance with no admin yet: this account will be it. */
      firstAdmin?: boolean;
      /** The invitation the sign-up form carries (SIGNUP=invite). */
      invite?: string;
      /** Where a log-in goes on to (a path of this site). */
      next?: string;
      /** Why the page is shown (a form posted after signing out). */
      notice?: string;
    },
  ) => (
    <Layout title={props.mode === "signup" ? "Sign up" : "Log in"}>
      <h1>{props.mode === "signup" ? "Create an account" : "Log in"}</h1>
      {props.error && <p class="error" role="alert">{props.error}</p>}
      {props.notice && <p class="notice" role="status">{props.notice}</p>}
      {props.firstAdmin && (
        <p class="notice">
          This instance has no account yet: the first account made here is its
          admin, who can manage users, reports and sign-up at /admin.
        </p>
      )}
      <form method="post" action={`/${props.mode}`}>
        {props.invite && (
          <input type="hidden" name="invite" value={props.invite} />
        )}
        {props.next && <input type="hidden" name="next" value={props.next} />}
        <label for="email">E-mail</label>
        <input
          id="email"
          name="email"
          type="email"
          required
          autocomplete="email"
          value={props.email ?? ""}
        />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          required
          minlength={props.mode === "signup" ? 10 : undefined}
          autocomplete={props.mode === "signup"
            ? "new-password"
            : "current-password"}
        />
        <p>
          <button type="submit">
            {props.mode === "signup" ? "Sign up" : "Log in"}
          </button>
        </p>
      </form>
      {props.mode === "signup"
        ? (
          <p>
            Have an account? <a href="/login">Log in</a>
          </p>
        )
        : (
          <p>
            New here? <a href="/signup">Create an account</a>
          </p>
        )}
    </Layout>
  );

  /**
   * Whether /signup may make an account now (SIGNUP and the invitation): the form's
   * props, or the reason it may not (answered 403 with the page, 181 as an envelope).
   * An instance without an admin always takes its first account, who becomes it.
   */
  const signupGate = async (
    invite: string | undefined,
  ): Promise<
    { firstAdmin: boolean; invite?: string } | { refused: string }
  > => {
    if (await hasNoAdmin(db)) return { firstAdmin: true };
    if (deps.config.SIGNUP === "closed") {
      return {
        refused:
          "Sign-up is closed on this instance: an admin makes accounts here.",
      };
    }
    if (deps.config.SIGNUP === "invite") {
      const problem = await inviteProblem(db, deps.clock, invite);
      return problem ? { refused: problem } : { firstAdmin: false, invite };
    }
    return { firstAdmin: false };
  };

  const SignupRefused = (props: { reason: string }) => (
    <Layout title="Sign-up closed">
      <h1>You cannot sign up here</h1>
      <p class="error" role="alert" data-code="181">{props.reason}</p>
      <p>
        Have an account? <a href="/login">Log in</a>
      </p>
    </Layout>
  );

  const refuseSignup = (c: Context<AppEnv>, reason: string) => {
    if (!wantsHtml(c)) throw new ApiError(181, { message: reason });
    return c.html(<SignupRefused reason={reason} />, 403);
  };

  app.get("/signup", async (c) => {
    const gate = await signupGate(c.req.query("invite"));
    if ("refused" in gate) return refuseSignup(c, gate.refused);
    return c.html(<AuthForm mode="signup" {...gate} />);
  });
  app.get("/login", (c) => {
    const next = localPath(c.req.query("next") ?? "");
    return c.html(
      <AuthForm
        mode="login"
        next={next}
        notice={c.req.query("signed_out")
          ? "You were signed out (in another tab, or your session ended), so that change was not saved. Log in, then make it again."
          : undefined}
      />,
    );
  });

  // Login and sign-up attempts per client address: a flood from one place is refused
  // before any password is hashed (LOGIN_MAX_FAILURES covers one account from anywhere).
  const attempts = new AddressThrottle(
    db,
    deps.clock,
    "account",
    deps.config.ACCOUNT_ATTEMPTS_PER_MINUTE,
  );
  /**
   * Too many attempts, as the form page with 429 and Retry-After. (An outage or a busy
   * password hasher stays the 250 envelope, as on every route.)
   */
  const refused = (
    c: Context,
    mode: "login" | "signup",
    email: string,
    e: unknown,
  ) => {
    if (!(e instanceof ApiError) || e.code !== 170) return undefined;
    const wait = e.headers?.["Retry-After"] ?? "60";
    c.header("Retry-After", wait);
    return c.html(
      <AuthForm
        mode={mode}
        error={`Too many attempts. Try again in ${waitText(Number(wait))}.`}
        email={email}
      />,
      429,
    );
  };

  app.post("/signup", async (c) => {
    const body = await c.req.parseBody();
    const email = String(body.email ?? ""),
      password = String(body.password ?? "");
    const invite = typeof body.invite === "string" && body.invite
      ? body.invite
      : undefined;
    let inviteTaken = false;
    try {
      await attempts.count(clientAddress(c, deps.config.TRUST_PROXY));
      let gate = await signupGate(invite);
      if ("refused" in gate) return refuseSignup(c, gate.refused);
      let user;
      if (gate.firstAdmin && deps.config.SIGNUP !== "open") {
        // Let in only as the instance's first account: one that lost the race to be it
        // is judged again, as a late sign-up (refused where SIGNUP=closed).
        try {
          user = await createUser(db, email, password, "first-admin-only");
        } catch (e) {
          if (!(e instanceof NotFirstAdmin)) throw e;
          gate = await signupGate(invite);
          if ("refused" in gate) return refuseSignup(c, gate.refused);
        }
      }
      if (gate.invite) {
        await useInvite(db, deps.clock, gate.invite);
        inviteTaken = true;
      }
      user ??= await createUser(db, email, password, "first-admin");
      startSession(c, await createSession(db, user.id, deps.clock));
      await claimGuest(c, user.id);
      // To the uploader: what people came to do (keys are one click away, on /account).
      return c.redirect("/", 303);
    } catch (e) {
      // A use taken for an account that was not made goes back to the invitation.
      if (inviteTaken) await giveBackInvite(db, invite!).catch(() => {});
      if (e instanceof InviteRefused) return refuseSignup(c, e.message);
      if (e instanceof AccountError) {
        return c.html(
          <AuthForm
            mode="signup"
            error={e.message}
            email={email}
            invite={invite}
          />,
          400,
        );
      }
      const page = refused(c, "signup", email, e);
      if (page) return page;
      throw e;
    }
  });

  app.post("/login", async (c) => {
    const body = await c.req.parseBody();
    const email = String(body.email ?? ""),
      password = String(body.password ?? "");
    try {
      await attempts.count(clientAddress(c, deps.config.TRUST_PROXY));
      const user = await verifyLogin(
        db,
        email,
        password,
        deps.clock,
        deps.config.LOGIN_MAX_FAILURES,
      );
      startSession(c, await createSession(db, user.id, deps.clock));
      await claimGuest(c, user.id);
      // Back to the page a signed-out form was on, else home.
      return c.redirect(localPath(String(body.next ?? "")) ?? "/", 303);
    } catch (e) {
      if (e instanceof AccountError) {
        return c.html(
          <AuthForm
            mode="login"
            error={e.message}
            email={email}
            next={localPath(String(body.next ?? ""))}
          />,
          401,
        );
      }
      const page = refused(c, "login", email, e);
      if (page) return page;
      throw e;
    }
  });

  app.post("/logout", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    await deleteSession(db, getCookie(c, SESSION_COOKIE)!);
    deleteCookie(c, SESSION_COOKIE, { path: "/", secure });
    return c.redirect("/", 303);
  });

  const AccountPage = async (
    props: { user: SessionUser; newKey?: string; notice?: string },
  ) => {
    const [keys, standing, hooks] = await Promise.all([
      listApiKeys(db, props.user.userId),
      standingOf(db, deps.config, deps.clock, props.user.userId),
      webhookAccount(deps, props.user.userId),
    ]);
    const { usage, limits } = standing;
    const of = (used: string, limit: number, shown: string) =>
      limit ? `${used} of ${shown}` : used;
    const csrfField = (
      <input type="hidden" name="_csrf" value={props.user.csrfToken} />
    );
    return (
      <Layout title="Your account" user={props.user} current="/account">
        <h1>Your account</h1>
        <p>
          Signed in as <strong>{props.user.email}</strong>.
        </p>
        {props.notice && <p role="status">{props.notice}</p>}
        <section aria-labelledby="usage">
          <h2 id="usage">Usage</h2>
          <dl class="usage">
            <dt>Storage</dt>
            <dd data-usage="bytes">
              {of(
                humanSize(usage.bytes),
                limits.storageBytes,
                humanSize(limits.storageBytes),
              )}
            </dd>
            <dt>Images</dt>
            <dd data-usage="images">
              {of(String(usage.images), limits.images, String(limits.images))}
            </dd>
            <dt>Screenshots this month</dt>
            <dd data-usage="screenshots">
              {of(
                String(usage.screenshotsThisMonth),
                limits.screenshotsPerMonth,
                String(limits.screenshotsPerMonth),
              )}
            </dd>
          </dl>
          {!(limits.storageBytes || limits.images ||
            limits.screenshotsPerMonth) && (
            <p class="muted">No limits apply to this account.</p>
          )}
        </section>
        {props.newKey && (
          <section aria-labelledby="newkey">
            <h2 id="newkey">Your new API key</h2>
            <p>Copy it now: it is shown only once and stored only as a hash.</p>
            <CopyField id="new-key" label="API key" value={props.newKey} />
            <p class="muted">
              Try it:{" "}
              <code>
                curl -H "Authorization: Bearer{" "}
                {props.newKey}" -F "images=@photo.jpg"{" "}
                {linkBases(deps.config).base}/api/1/upload
              </code>
            </p>
            <form method="post" action="/account/sharex">
              {csrfField}
              <input type="hidden" name="key" value={props.newKey} />
              <button type="submit" class="secondary">
                Download ShareX config (.sxcu)
              </button>
            </form>
          </section>
        )}
        <section aria-labelledby="keys">
          <h2 id="keys">API keys</h2>
          <form method="post" action="/account/keys">
            {csrfField}
            <label for="label">Label</label>
            <input
              id="label"
              name="label"
              type="text"
              maxlength={80}
              placeholder="e.g. laptop, ShareX"
            />
            <p>
              <button type="submit">Generate a new key</button>
            </p>
          </form>
          {keys.length === 0
            ? <p class="muted">No keys yet.</p>
            : (
              <div class="table-wrap">
                <table class="stack">
                  <thead>
                    <tr>
                      <th>Label</th>
                      <th>Key</th>
                      <th>Created</th>
                      <th>Last used</th>
                      <th>
                        <span class="sr-only">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {keys.map((k) => (
                      <tr>
                        <td data-label="Label">{k.label}</td>
                        <td data-label="Key">
                          <code>…{k.last4}</code>
                        </td>
                        <td data-label="Created">{fmtDate(k.created_at)}</td>
                        <td data-label="Last used">
                          {fmtDate(k.last_used_at)}
                        </td>
                        <td data-label="">
                          {k.revoked_at
                            ? <span class="muted">revoked</span>
                            : (
                              <form
                                class="inline"
                                method="post"
                                action={`/account/keys/${k.id}/revoke`}
                                data-confirm={`Revoke the key “${
                                  k.label ||
                                  "…" + k.last4
                                }”? Programs using it stop working at once.`}
                              >
                                {csrfField}
                                <button
                                  class="danger"
                                  type="submit"
                                  aria-label={`Revoke key ${k.label}`}
                                >
                                  Revoke
                                </button>
                              </form>
                            )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          <h3>ShareX</h3>
          <form method="post" action="/account/sharex">
            {csrfField}
            <label for="sxkey">
              Paste one of your keys to download a ShareX uploader for it
            </label>
            <input
              id="sxkey"
              name="key"
              type="password"
              required
              autocomplete="off"
            />
            <p>
              <button type="submit" class="secondary">Download .sxcu</button>
            </p>
          </form>
        </section>
        <WebhookSection csrfToken={props.user.csrfToken} account={hooks} />
        <SignInSection csrfToken={props.user.csrfToken} />
        <p>
          Your images are on <a href="/images">My images</a>.
        </p>
      </Layout>
    );
  };

  registerAccountSecurity(app, deps, requireSessionForm, secure);
  registerAccountWebhooks(app, deps, requireSessionForm);

  const noStore = (c: Context) => c.header("Cache-Control", "no-store");

  app.get("/account", async (c) => {
    const user = await currentUser(c);
    if (!user) return c.redirect("/login", 303);
    noStore(c);
    // A key just created is shown on this one GET, then forgotten: a reload shows the
    // list, and never creates another key (the POST redirected here).
    const fresh = getCookie(c, NEW_KEY_COOKIE);
    let newKey: string | undefined;
    if (fresh) {
      deleteCookie(c, NEW_KEY_COOKIE, { path: "/account", secure });
      const owner = await authenticateKey(db, fresh, deps.clock, {
        touch: false,
      }).catch(() => null);
      if (owner?.userId === user.userId) newKey = fresh;
    }
    return c.html(
      await AccountPage({
        user,
        newKey,
        notice: accountDone(
          c.req.query("done"),
          Number.parseInt(c.req.query("n") ?? "") || 0,
        ),
      }),
    );
  });

  app.post("/account/keys", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    const { key } = await createApiKey(db, r.user.userId, r.form.label ?? "");
    // POST, then redirect, then GET: the key travels in a short-lived cookie only this
    // site's account page reads, and is dropped as soon as it has been shown.
    setCookie(c, NEW_KEY_COOKIE, key, {
      path: "/account",
      httpOnly: true,
      sameSite: "Strict",
      secure,
      maxAge: 120,
    });
    noStore(c);
    return c.redirect("/account", 303);
  });

  app.post("/account/keys/:id/revoke", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    await revokeApiKey(db, r.user.userId, c.req.param("id"), deps.clock);
    // This instance forgets at once; the others when the notice reaches them.
    authOf(deps).keys.clear();
    return c.redirect("/account", 303);
  });

  app.post("/account/sharex", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    // Packaging a key for ShareX is not using it: last_used_at stays as it was.
    const owner = await authenticateKey(db, r.form.key, deps.clock, {
      touch: false,
    }).catch(() => null);
    if (!owner || owner.userId !== r.user.userId) {
      noStore(c);
      return c.html(
        await AccountPage({
          user: r.user,
          notice: "That is not one of your active keys.",
        }),
        400,
      );
    }
    noStore(c);
    c.header(
      "Content-Disposition",
      `attachment; filename="${sharexFileName(linkBases(deps.config).base)}"`,
    );
    return c.body(
      JSON.stringify(
        sharexConfig(linkBases(deps.config).base, r.form.key),
        null,
        2,
      ),
      200,
      {
        "content-type": "application/json; charset=utf-8",
      },
    );
  });
}
