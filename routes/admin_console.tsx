/**
 * The operator's console's shared parts (routes/admin_pages.tsx and
 * admin_moderation.tsx): its frame, tables, one-button forms and pager, and the guards
 * every page and form passes (a signed-in admin, or 404; a posted form's token).
 */
import type { Context } from "hono";
import { PageLinks } from "./pages/pager.tsx";
import type { Child } from "hono/jsx";
import type { AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { Layout } from "./pages/layout.tsx";
import { sessionUser } from "./session.ts";
import { ApiError } from "../schemas/errors.ts";
import { adminOf } from "../services/operator/roles.ts";
import type { Actor } from "../services/operator/audit.ts";
import { clientAddress } from "./client_address.ts";
import type { SessionUser } from "../services/accounts/accounts.ts";

export const PER_PAGE = 50;

export const SECTIONS: [string, string][] = [
  ["/admin", "Overview"],
  ["/admin/users", "Users"],
  ["/admin/images", "Images"],
  ["/admin/reports", "Reports"],
  ["/admin/invites", "Invites"],
  ["/admin/audit", "Audit log"],
];

/** The console's frame: the site's layout, a heading and the sections' navigation. */
export function AdminFrame(
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
export function AdminTable(props: { headings: string[]; children?: Child }) {
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
export function ActionForm(
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
export const Csrf = (props: { user: SessionUser }) => (
  <input type="hidden" name="_csrf" value={props.user.csrfToken} />
);

/** Previous/next links of a console list, PER_PAGE rows a page. */
export function Pager(
  props: { page: number; total: number; href: (page: number) => string },
) {
  return (
    <PageLinks
      page={props.page}
      pages={Math.max(1, Math.ceil(props.total / PER_PAGE))}
      href={props.href}
    />
  );
}

export const pageOf = (c: Context) =>
  Math.min(100_000, Math.max(1, Number(c.req.query("page")) || 1));

/** A quota field's value: empty is the default (null), else a whole number ≥ 0. */
export function quotaField(v: string | undefined): number | null | undefined {
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

/** A posted admin form: the admin, its fields, and the actor for the audit log. */
export type AdminForm = Awaited<ReturnType<ConsoleGuards["adminForm"]>>;

/** The guards and helpers every console page and form uses. */
export type ConsoleGuards = ReturnType<typeof consoleGuards>;

/** The console's guards over this app's deps (see ConsoleGuards). */
export function consoleGuards(deps: AppDeps) {
  const { db } = deps.database;
  const { config } = deps;
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
  return { admin, adminForm, back, noticeOf };
}
