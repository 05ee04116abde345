import type { Context, MiddlewareHandler } from "hono";
import type { ApiError } from "../../schemas/errors.ts";
import { escapeHtml } from "../../sdk/src/embed_codes.ts";

/**
 * A site form's refusal, shown on the page it came from (issue #52). A session form that
 * breaks a rule (a 3-letter password, an empty title) used to answer the API's JSON
 * envelope as the whole page. Now the answer goes back (303) to the form's page with the
 * message in the address; that page shows it at the top (formErrorNotice), and the page
 * script puts it beside the field it names, marks the field invalid and focuses it.
 */

/** The query parameters that carry a form's refusal back to its page. */
const PARAMS = ["form_error", "form_field", "form_action", "form_id"] as const;

/** Statuses a form's page takes back with a message: the request's own content was wrong. */
const SHOWN_BACK = new Set([400, 413, 415]);

/**
 * Whether a refused request is a site form that goes back to its page: a POST of an
 * urlencoded form (as the site's forms are) outside the API, refused for its content.
 * Asked before the form is read again: an upload's multipart body is never parsed here.
 */
export function isSiteForm(
  method: string,
  path: string,
  status: number,
  contentType: string | undefined,
): boolean {
  return method === "POST" && !path.startsWith("/api/") &&
    SHOWN_BACK.has(status) &&
    (contentType ?? "").startsWith("application/x-www-form-urlencoded");
}

/**
 * Where a refused site form (one {@link isSiteForm} took) goes back to, with its message;
 * undefined when its page is not of this site. `fields` are the posted form's (its
 * `back` and `id` name the page and the form).
 */
export function formErrorTarget(
  req: {
    url: string;
    path: string;
    referer?: string;
    /** Whether an origin is this site's (layout.tsx ownOrigin: the forms' own rule). */
    own: (origin: string) => boolean;
  },
  e: Pick<ApiError, "message" | "details">,
  fields: Record<string, unknown>,
): string | undefined {
  const self = new URL(req.url);
  const back = typeof fields.back === "string" && fields.back.startsWith("/") &&
      !fields.back.startsWith("//")
    ? new URL(fields.back, self)
    : req.referer
    ? safeUrl(req.referer)
    : undefined;
  // Only back to a page of this site, as the form's own page is.
  if (!back || (back.origin !== self.origin && !req.own(back.origin))) {
    return undefined;
  }
  for (const p of PARAMS) back.searchParams.delete(p);
  const detail = e.details?.[0];
  back.searchParams.set("form_error", messageOf(e));
  if (detail?.path) back.searchParams.set("form_field", detail.path);
  back.searchParams.set("form_action", req.path);
  if (typeof fields.id === "string") {
    back.searchParams.set("form_id", fields.id);
  }
  return `${back.pathname}${back.search}`;
}

/** "Password: at least 4 characters", from the refusal's first detail, else its message. */
export function messageOf(e: Pick<ApiError, "message" | "details">): string {
  const d = e.details?.[0];
  if (!d?.message) return e.message;
  const field = d.path ? d.path.replace(/[._]/g, " ") : "";
  const label = field ? field[0].toUpperCase() + field.slice(1) + ": " : "";
  return `${label}${d.message}`.slice(0, 300);
}

function safeUrl(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

/**
 * Shows a form's refusal (the `form_error` of the address) at the top of the page's main
 * content, as an alert the page script moves beside its field. Escaped; pages without a
 * heading are left as they are.
 */
export const formErrorNotice: MiddlewareHandler = async (c, next) => {
  await next();
  const message = c.req.query("form_error");
  if (!message || c.req.method !== "GET") return;
  if (!(c.res.headers.get("content-type") ?? "").includes("text/html")) return;
  const html = await c.res.text();
  // Once: a page may pass two of the site's middleware chains ("/images" and "/images/*").
  const at = html.includes('id="form-error"') ? -1 : html.indexOf("</h1>");
  const notice = noticeHtml(c, message);
  const body = at < 0
    ? html
    : html.slice(0, at + 5) + notice + html.slice(at + 5);
  c.res = new Response(body, c.res);
};

function noticeHtml(c: Context, message: string): string {
  const data = [
    ["field", c.req.query("form_field")],
    ["action", c.req.query("form_action")],
    ["id", c.req.query("form_id")],
  ].filter(([, v]) => v).map(([k, v]) => ` data-${k}="${escapeHtml(v!)}"`).join(
    "",
  );
  return `<p class="notice error" role="alert" id="form-error"${data}>${
    escapeHtml(message)
  }</p>`;
}

/**
 * The page script's part: puts the notice beside its field (in the form that posted it:
 * its action, and its image's `id` where several forms share the action), marks the field
 * invalid and focuses it, opening the <details> it is folded in.
 */
export const FORM_ERROR_JS =
  `(f=>document.readyState==="loading"?document.addEventListener("DOMContentLoaded",f):f())(()=>{const n=document.getElementById("form-error");if(!n||!n.dataset.field)return;const a=n.dataset.action,id=n.dataset.id;const forms=[...document.forms].filter(f=>f.getAttribute("action")===a||f.querySelector('[formaction="'+a+'"]')||[...f.elements].some(e=>e.getAttribute&&e.getAttribute("formaction")===a));const form=forms.find(f=>!id||[...f.elements].some(e=>e.name==="id"&&e.value===id))||forms[0];const field=form&&[...form.elements].find(e=>e.name===n.dataset.field);if(!field)return;const d=field.closest("details");if(d)d.open=true;field.setAttribute("aria-invalid","true");field.setAttribute("aria-describedby","form-error");field.insertAdjacentElement("afterend",n);field.focus()});`;
