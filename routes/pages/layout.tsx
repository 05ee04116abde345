import type { Child } from "hono/jsx";
import { csrf } from "hono/csrf";
import { raw } from "hono/html";
import { secureHeaders } from "hono/secure-headers";
import type { Config } from "../../schemas/config.ts";
import type { MiddlewareHandler } from "hono";
import { FORM_ERROR_JS, formErrorNotice } from "./form_errors.ts";

/**
 * Our own origins: BASE_URL's, or the one the request was addressed to (behind no proxy,
 * a LAN name or address). The one rule for the site's forms and its session API calls.
 */
export function ownOrigin(
  config: Pick<Config, "BASE_URL">,
): (origin: string, requestUrl: string) => boolean {
  const baseOrigin = new URL(config.BASE_URL).origin;
  return (origin, requestUrl) =>
    origin === baseOrigin || origin === new URL(requestUrl).origin;
}

/** CSRF guard of every HTML form: a form post must come from our own origin. */
export function formCsrf(config: Config) {
  const own = ownOrigin(config);
  return csrf({
    origin: (origin, c) => own(origin, c.req.url),
    secFetchSite: ["same-origin"],
  });
}

/**
 * Security headers of the site's pages: scripts and styles from our own origin only (no
 * inline ones anywhere), images also from the image host and data: (previews of inline
 * screenshots), nothing may frame us, forms post only to us, referrers only to ourselves.
 */
export function pageSecurity(config: Config): MiddlewareHandler {
  const headers = secureHeaders({
    // Not secureHeaders' no-referrer: under it Chromium posts our own forms with
    // `Origin: null`, and over plain http on any host but localhost (no Sec-Fetch-Site
    // there) the form check could only refuse them. same-origin sends our origin to
    // ourselves and nothing to anyone else.
    referrerPolicy: "same-origin",
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      imgSrc: [
        "'self'",
        "data:",
        "blob:",
        new URL(config.IMAGE_HOST_URL).origin,
      ],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      frameAncestors: ["'none'"],
      formAction: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
    },
  });
  // Inside the headers: a form's refusal shown on its page (form_errors.ts) gets them too.
  return (c, next) =>
    headers(c, async () => {
      await formErrorNotice(c, next);
    });
}

/**
 * Shared CSS of the server-rendered pages: small, no framework, light and dark. Colours
 * are chosen for contrast: text ≥ 4.5:1 and control borders ≥ 3:1 on both backgrounds.
 * Inputs take the page's font at 16 px, so phones do not zoom on focus.
 */
export const PAGE_CSS = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#57606a;--line:#d0d7de;--control:#6e7781;--accent:#0969da;--button:#0969da;--bad:#cf222e;--good:#1a7f37;--panel:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8d96a0;--line:#30363d;--control:#8b949e;--accent:#4493f8;--button:#1f6feb;--bad:#da3633;--good:#3fb950;--panel:#161b22}}
*{box-sizing:border-box}
[hidden]{display:none!important}
fieldset{border:1px solid var(--line);border-radius:8px;margin:1rem 0;padding:.25rem 1rem .75rem}
legend{font-weight:600;padding:0 .25rem}
html{-webkit-text-size-adjust:100%}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
a{color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
.skip{position:absolute;left:-9999px;top:0;background:var(--bg);padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem}
.site{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center;padding:.6rem 1rem;border-bottom:1px solid var(--line)}
.site .brand{font-weight:700;margin-right:auto;color:inherit;text-decoration:none;white-space:nowrap}
.site nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;margin:0;padding:0;align-items:center}
.site nav a{color:inherit;white-space:nowrap;text-decoration:none;padding:.25rem 0;display:inline-block}
.site nav a:hover,.site nav a[aria-current=page]{text-decoration:underline}
main{max-width:1040px;margin:1.5rem auto;padding:0 1rem}
h1{font-size:1.6rem;line-height:1.25}
form.inline{display:inline}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}
label.check{display:flex;gap:.5rem;align-items:center;font-weight:400;margin:.4rem 0}
.check input{flex:none}.check>span{min-width:0}
input,select,textarea,button{font:inherit;font-size:16px}
input[type=text],input[type=search],input[type=email],input[type=password],input[type=url],input[type=number],select,textarea{width:100%;max-width:32rem;padding:.45rem .5rem;line-height:1.5;border:1px solid var(--control);border-radius:6px;background:var(--bg);color:inherit}
input[type=checkbox]{width:1.1rem;height:1.1rem;accent-color:var(--button)}
textarea{min-height:4.5rem;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.toolbar select{width:auto;max-width:16rem}
.toolbar input[type=password]{width:auto;max-width:12rem}
.find{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin:0 0 1rem}.find>div{min-width:12rem}
.codes-box{display:grid;gap:.4rem;max-width:40rem}.codes-box textarea{max-width:none;min-height:8rem}.codes-box button{justify-self:start}
button,.button{padding:.45rem .9rem;border:1px solid var(--button);border-radius:6px;background:var(--button);color:#fff;cursor:pointer;text-decoration:none;display:inline-block;line-height:1.5}
button.secondary,.button.secondary{background:transparent;color:inherit;border-color:var(--control)}
button.danger{background:var(--bad);border-color:var(--bad)}
button:disabled{opacity:.6;cursor:progress}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line)}
.table-wrap{overflow-x:auto}
@media (max-width:600px){table.stack thead{position:absolute;left:-9999px}table.stack tr{display:block;border-bottom:1px solid var(--line);padding:.5rem 0}table.stack td{display:flex;gap:.75rem;align-items:center;border:0;padding:.15rem 0;overflow-wrap:normal}table.stack td::before{content:attr(data-label);font-weight:600;min-width:6rem}}
.error{color:var(--bad);font-weight:600}.muted{color:var(--muted)}.ok{color:var(--good)}
.secret{font-family:ui-monospace,monospace;padding:.5rem;border:1px dashed var(--accent);border-radius:6px;word-break:break-all}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
pre{overflow-x:auto;max-width:100%;padding:.75rem;background:var(--panel);border:1px solid var(--line);border-radius:6px}
.copy{display:flex;gap:.5rem;margin:.35rem 0;max-width:48rem}
.copy input{flex:1;min-width:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:14px;line-height:1.6;padding:.5rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.9rem;padding:0;list-style:none;align-items:start}
.card{border:1px solid var(--line);border-radius:8px;overflow:hidden;display:flex;flex-direction:column;background:var(--panel)}
.card img{width:100%;height:150px;object-fit:cover;display:block;background:var(--line)}
.card .body{padding:.5rem .6rem;font-size:14px;display:flex;flex-direction:column;gap:.25rem;flex:1}
.card .title{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.card .actions{display:flex;flex-wrap:wrap;gap:.35rem;align-items:center;margin-top:auto}
.card details{margin:.35rem 0 0;padding:.1rem .5rem .5rem}
.card details textarea{min-height:3rem}
.card .actions button,.card .actions .button{padding:.2rem .55rem;font-size:14px}
.toolbar{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;margin:1rem 0}
.toolbar form,.card .actions form{display:flex}
.pager{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:1.25rem 0}
.viewer-figure{margin:0}
.viewer-figure img{max-width:100%;max-height:80vh;height:auto;width:auto;display:block;border-radius:4px}
.fields{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:0 1.25rem}
details{margin:1rem 0;border:1px solid var(--line);border-radius:8px;padding:.25rem 1rem .75rem}
summary{cursor:pointer;font-weight:600;padding:.5rem 0}
.result img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:6px}
.notice{padding:.6rem .9rem;border-radius:6px;border:1px solid var(--line);background:var(--panel)}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:.75rem;padding:0;margin:1rem 0;list-style:none}
.stats li{border:1px solid var(--line);border-radius:8px;background:var(--panel);padding:.6rem .8rem}.stats strong{display:block;font-size:1.4rem}
.subnav{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;padding:0;margin:0 0 1rem;border-bottom:1px solid var(--line)}.subnav a{display:inline-block;padding:.35rem 0}.subnav a[aria-current=page]{font-weight:700}
dl.usage{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dl.usage dd{margin:0}
.row-actions{display:flex;flex-wrap:wrap;gap:.35rem}.row-actions button{padding:.2rem .55rem;font-size:14px}
.quota{display:flex;flex-wrap:wrap;gap:.35rem;align-items:end}.quota label{margin:0;font-weight:400;font-size:14px}.quota input[type=number]{width:5rem}table.admin th{white-space:nowrap}
td code.wrap,td .wrap{word-break:break-all;min-width:0}
td img.thumb{width:64px;height:48px;object-fit:cover;border-radius:4px;display:block;background:var(--line)}
.site-footer{max-width:1040px;margin:2rem auto;padding:1rem;border-top:1px solid var(--line);font-size:14px;color:var(--muted)}
`;

/**
 * Page script of every page: copy buttons (`data-copy` names an element whose value is
 * copied; `data-copy-text` carries the text itself; outside a secure context, where
 * browsers have no clipboard API (plain http on a LAN address), through a selected
 * textarea and the copy command, so a button never throws), forms that ask first
 * (`data-confirm`), and codes boxes (`data-codes`, see CodesBox). Inline handlers are off limits under our CSP, so everything is here.
 */
export const PAGE_JS = `
const copyText=async t=>{if(navigator.clipboard&&window.isSecureContext){try{await navigator.clipboard.writeText(t);return true}catch{}}const a=document.createElement("textarea");a.value=t;a.setAttribute("readonly","");a.style.cssText="position:fixed;top:0;left:0;opacity:0";document.body.append(a);a.select();let ok=false;try{ok=document.execCommand("copy")}catch{}a.remove();return ok};
document.addEventListener("click",async e=>{const b=e.target.closest("[data-copy],[data-copy-text]");if(!b)return;const el=b.dataset.copy&&document.getElementById(b.dataset.copy);const text=el?(el.value??el.textContent):b.dataset.copyText;const label=b.textContent;if(await copyText(text)){b.textContent="Copied";setTimeout(()=>b.textContent=label,1500)}else if(el&&el.select)el.select()});
document.addEventListener("submit",e=>{const f=e.target.closest("form[data-confirm]");if(!f||e.submitter?.hasAttribute("data-no-confirm"))return;let msg=f.dataset.confirm;const n=[...f.elements].filter(x=>x.name==="id"&&x.type==="checkbox"&&x.checked).length;if(f.dataset.confirmCount!==undefined){if(!n){e.preventDefault();alert("Select the images to delete first.");return}msg=msg.replace("{n}",n+(n===1?" image":" images"))}if(!confirm(msg))e.preventDefault()});
document.addEventListener("change",e=>{const a=e.target.closest("[data-select-all]");if(!a)return;for(const c of document.querySelectorAll("input[name=id][form='"+a.dataset.selectAll+"']"))c.checked=a.checked});
const fillCodes=box=>{const type=document.getElementById(box.id+"-type").value;const items=JSON.parse(document.getElementById(box.id+"-data").textContent)[type]??[];const form=box.dataset.selectFrom;const picked=new Set(form?[...document.querySelectorAll("input[name=id][form='"+form+"']:checked")].map(c=>c.value):[]);box.value=items.filter(([id])=>!picked.size||picked.has(id)).map(([,code])=>code).join("\\n")};
document.addEventListener("change",()=>{for(const box of document.querySelectorAll("textarea[data-codes]"))fillCodes(box)});
${FORM_ERROR_JS}
`;

/** The signed-in user as pages need them. */
export interface PageUser {
  email: string;
  csrfToken: string;
  /** `admin` shows the way to /admin. */
  role?: string;
}

const NAV: { href: string; label: string; signedIn?: boolean }[] = [
  { href: "/", label: "Upload" },
  { href: "/screenshot", label: "Screenshot", signedIn: true },
  { href: "/images", label: "My images", signedIn: true },
  { href: "/albums", label: "Albums", signedIn: true },
  { href: "/docs", label: "API docs" },
];

/** Page frame: skip link, site header with navigation, main region. */
export function Layout(
  props: {
    title: string;
    user?: PageUser | null;
    /** Path of the page, to mark its navigation link as current. */
    current?: string;
    head?: Child;
    children?: Child;
  },
) {
  const user = props.user;
  // The doctype keeps browsers out of quirks mode (where forms grow a bottom margin and
  // boxes size differently); JSX cannot write one itself.
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{props.title} · Image host</title>
          <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
          <link rel="stylesheet" href="/assets/page.css" />
          <script src="/assets/page.js" defer></script>
          {user && <meta name="csrf-token" content={user.csrfToken} />}
          {props.head}
        </head>
        <body>
          <a class="skip" href="#main">Skip to content</a>
          <header class="site">
            <a class="brand" href="/">Image host</a>
            <nav aria-label="Main">
              <ul>
                {NAV.filter((n) => !n.signedIn || user).map((n) => (
                  <li>
                    <a
                      href={n.href}
                      aria-current={props.current === n.href
                        ? "page"
                        : undefined}
                    >
                      {n.label}
                    </a>
                  </li>
                ))}
                {user?.role === "admin" && (
                  <li>
                    <a
                      href="/admin"
                      aria-current={props.current === "/admin"
                        ? "page"
                        : undefined}
                    >
                      Admin
                    </a>
                  </li>
                )}
                {user
                  ? (
                    <>
                      <li>
                        <a
                          href="/account"
                          aria-current={props.current === "/account"
                            ? "page"
                            : undefined}
                        >
                          Account
                        </a>
                      </li>
                      <li>
                        <form class="inline" method="post" action="/logout">
                          <input
                            type="hidden"
                            name="_csrf"
                            value={user.csrfToken}
                          />
                          <button class="secondary" type="submit">
                            Log out
                          </button>
                        </form>
                      </li>
                    </>
                  )
                  : (
                    <>
                      <li>
                        <a href="/login">Log in</a>
                      </li>
                      <li>
                        <a href="/signup">Sign up</a>
                      </li>
                    </>
                  )}
              </ul>
            </nav>
          </header>
          <main id="main" tabindex={-1}>{props.children}</main>
        </body>
      </html>
    </>
  );
}

/** A read-only text field with a copy button. */
export function CopyField(props: { id: string; label: string; value: string }) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <div class="copy">
        <input
          id={props.id}
          type="text"
          readonly
          value={props.value}
          spellcheck={false}
        />
        <button type="button" class="secondary" data-copy={props.id}>
          Copy
        </button>
      </div>
    </div>
  );
}

/**
 * Every link of several images in one box, with a picker of the code type (direct
 * links, viewer links, HTML, BBCode, Markdown, linked thumbnails…) and Copy all. Each
 * type's codes are in the page as JSON; without scripts the box shows the first type. An
 * image without a type's version (a small one has no medium) gives its plain type's code.
 * With `selectFrom` (a form's id), ticking images' `id` boxes of that form narrows the
 * box to them; none ticked is all of them.
 */
export function CodesBox(
  props: {
    id: string;
    label: string;
    items: { id: string; codes: Record<string, string> }[];
    selectFrom?: string;
  },
) {
  const types = [...new Set(props.items.flatMap((i) => Object.keys(i.codes)))];
  const byType: Record<string, [string, string][]> = {};
  for (const type of types) {
    byType[type] = props.items.map((item) => [
      item.id,
      item.codes[type] ?? item.codes[plainType(type)] ?? "",
    ]);
  }
  // JSON inside <script>: no "<" may close it early.
  const data = JSON.stringify(byType).replace(/</g, "\\u003c");
  return (
    <div class="codes-box">
      <label for={`${props.id}-type`}>{props.label}</label>
      <select id={`${props.id}-type`}>
        {types.map((t) => (
          <option value={t} selected={t === types[0]}>
            {t}
          </option>
        ))}
      </select>
      <textarea
        id={props.id}
        readonly
        rows={6}
        spellcheck={false}
        aria-label="Codes"
        data-codes=""
        data-select-from={props.selectFrom}
      >
        {(byType[types[0]] ?? []).map(([, code]) => code).join("\n")}
      </textarea>
      <button type="button" class="secondary" data-copy={props.id}>
        Copy all
      </button>
      <script
        type="application/json"
        id={`${props.id}-data`}
        dangerouslySetInnerHTML={{ __html: data }}
      />
    </div>
  );
}

/**
 * The code type a variant's type falls back to for an image without that variant: its
 * label without the parenthesis ("Markdown (medium, linked)" → "Markdown"). A small
 * image has no medium, and one ticked with a large one used to drop out of the box.
 */
export function plainType(type: string): string {
  return type.replace(/ \(.*\)$/, "");
}

/**
 * The owner's delete button for one image: a session form to /images/delete that asks
 * `confirm` first (page.js), and goes back to `back` (a My images page) afterwards.
 */
export function DeleteImageForm(
  props: {
    csrfToken: string;
    id: string;
    title: string;
    confirm: string;
    back?: string;
  },
) {
  return (
    <form
      class="inline"
      method="post"
      action="/images/delete"
      data-confirm={props.confirm}
    >
      <input type="hidden" name="_csrf" value={props.csrfToken} />
      <input type="hidden" name="id" value={props.id} />
      {props.back && <input type="hidden" name="back" value={props.back} />}
      <button
        type="submit"
        class="danger"
        aria-label={`Delete ${props.title}`}
      >
        Delete
      </button>
    </form>
  );
}

/** A size for people: "812 B", "48.2 KB", "3.10 MB". */
export function humanSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

/** A time span for people, rounded down to its largest unit: "59 min", "3 days". */
export function humanSpan(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const units: [number, string][] = [
    [365 * 86400, "year"],
    [30 * 86400, "month"],
    [7 * 86400, "week"],
    [86400, "day"],
    [3600, "hour"],
    [60, "min"],
  ];
  for (const [size, name] of units) {
    if (s >= size) {
      const n = Math.floor(s / size);
      return name === "min" ? `${n} min` : `${n} ${name}${n === 1 ? "" : "s"}`;
    }
  }
  return `${s} s`;
}

/** "2026-11-23 21:14 UTC". */
export function humanDate(d: Date | string | number): string {
  return new Date(d).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
