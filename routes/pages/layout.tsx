import type { Child } from "hono/jsx";
import { csrf } from "hono/csrf";
import type { Config } from "../../schemas/config.ts";

/**
 * CSRF guard of every HTML form: a form post must come from our own origin (BASE_URL's,
 * or the origin the request was addressed to when behind no proxy).
 */
export function formCsrf(config: Config) {
  const baseOrigin = new URL(config.BASE_URL).origin;
  return csrf({
    origin: (origin, c) =>
      origin === baseOrigin || origin === new URL(c.req.url).origin,
    secFetchSite: ["same-origin"],
  });
}

/** Shared CSS of the server-rendered pages: small, no framework, readable in dark mode. */
export const PAGE_CSS = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#656d76;--line:#d0d7de;--accent:#0969da;--bad:#cf222e}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8d96a0;--line:#30363d;--accent:#4493f8;--bad:#f85149}}
*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;margin:0;color:var(--fg);background:var(--bg)}
header{display:flex;gap:1rem;align-items:center;padding:.75rem 1.5rem;border-bottom:1px solid var(--line)}
header a{color:inherit;text-decoration:none}header .brand{font-weight:700;margin-right:auto}
main{max-width:960px;margin:2rem auto;padding:0 1.5rem}
form.inline{display:inline}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input[type=text],input[type=email],input[type=password]{width:100%;max-width:28rem;padding:.5rem;border:1px solid var(--line);border-radius:6px;background:transparent;color:inherit}
button,.button{padding:.45rem .9rem;border:1px solid var(--line);border-radius:6px;background:var(--accent);color:#fff;cursor:pointer;font:inherit;text-decoration:none;display:inline-block}
button.secondary{background:transparent;color:inherit}button.danger{background:var(--bad)}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line)}
.error{color:var(--bad);font-weight:600}.muted{color:var(--muted)}
.secret{font-family:ui-monospace,monospace;padding:.5rem;border:1px dashed var(--accent);border-radius:6px;word-break:break-all}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:.75rem}
.grid a{display:block;border:1px solid var(--line);border-radius:6px;overflow:hidden}
.grid img{width:100%;height:140px;object-fit:cover;display:block}
.copy{display:flex;gap:.5rem;margin:.35rem 0}.copy input{flex:1;font-family:ui-monospace,monospace;font-size:.85rem}
`;

/** Tiny page script: copy buttons copy the value of the element named by data-copy. */
export const PAGE_JS =
  `document.addEventListener("click",e=>{const b=e.target.closest("[data-copy]");if(!b)return;const el=document.getElementById(b.dataset.copy);navigator.clipboard.writeText(el.value??el.textContent).then(()=>{b.textContent="Copied";setTimeout(()=>b.textContent="Copy",1500)})});`;

/** Page frame with navigation; `user` switches the links shown. */
export function Layout(
  props: {
    title: string;
    user?: { email: string; csrfToken: string } | null;
    head?: Child;
    children?: Child;
  },
) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title}</title>
        <link rel="stylesheet" href="/assets/page.css" />
        <script src="/assets/page.js" defer></script>
        {props.head}
      </head>
      <body>
        <header>
          <a class="brand" href="/">Image host</a>
          <a href="/docs">API docs</a>
          <a href="/demo">Demo</a>
          {props.user
            ? (
              <>
                <a href="/account">{props.user.email}</a>
                <form class="inline" method="post" action="/logout">
                  <input
                    type="hidden"
                    name="_csrf"
                    value={props.user.csrfToken}
                  />
                  <button class="secondary" type="submit">Log out</button>
                </form>
              </>
            )
            : (
              <>
                <a href="/login">Log in</a>
                <a href="/signup">Sign up</a>
              </>
            )}
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

/** A read-only text field with a copy button. */
export function CopyField(props: { id: string; label: string; value: string }) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <div class="copy">
        <input id={props.id} type="text" readonly value={props.value} />
        <button type="button" class="secondary" data-copy={props.id}>
          Copy
        </button>
      </div>
    </div>
  );
}
