import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { secureHeaders } from "hono/secure-headers";
// Imported (not only resolved) so the package is always fetched with the others; its
// version names the asset paths, so a new one is never mixed with a cached old one.
import swaggerUiPackage from "swagger-ui-dist/package.json" with {
  type: "json",
};
import type { Context } from "hono";
import { originOfRequest } from "../services/runtime/link_base.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { errorCodeTable } from "../schemas/envelope.ts";
import { SESSION_COOKIE, SESSION_TOKEN_HEADER } from "./session.ts";
import { serveAsset } from "./pages/static_assets.ts";

/** The OpenAPI document of an app, as served and as written to openapi.yaml. */
export function openApiDocument(app: App, serverUrl?: string) {
  // Every place the service reads a key is a scheme, listed as alternatives on each
  // operation (upload_routes.ts API_SECURITY), so a validating proxy accepts Chevereto's
  // `X-API-Key` and ImgBB's `?key=` as the service does. The body's `key` is a property
  // of the bodies that take it; the site's session is the site's own, not an API scheme.
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description:
      "Authorization: Bearer <API_KEY>. The first place the key is read " +
      "from; use it unless a client was written for ImgBB or Chevereto. The site's " +
      `own pages call the API with their session instead (the \`${SESSION_COOKIE}\` ` +
      `cookie with its token in \`${SESSION_TOKEN_HEADER}\`, same origin only).`,
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description:
      "X-API-Key: <API_KEY> (Chevereto V4's header), read when no Authorization is sent.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKeyQuery", {
    type: "apiKey",
    in: "query",
    name: "key",
    description:
      "?key=<API_KEY> (ImgBB's and Chevereto's query), read last: after " +
      "the headers and the body's `key`. A key in a URL ends up in logs and " +
      "histories; prefer a header.",
  });
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Image hosting and screenshot API",
      version: "1.0.0",
      description: [
        "Upload images and capture website screenshots. Every answer of the API uses " +
        "the `{status, success, data}` envelope, every failure " +
        "`{status, success: false, error: {code, message, details?}}` with the HTTP " +
        "status of its code. ImgBB and Chevereto clients work as they are: the same " +
        "record, Chevereto's path, `X-API-Key` and `format`, ImgBB's base64 `image`.",
        "",
        "**Authentication**: an API key as `Authorization: Bearer <key>`, " +
        "`X-API-Key: <key>`, a `key` field or property of the body (anywhere in it: what " +
        "comes before it is held within UNAUTH_HOLD_MB), " +
        "or `?key=`, in that precedence. Each authenticated call counts against the " +
        "key's per-minute limit (X-RateLimit-* headers; 170 with Retry-After past it).",
        "",
        "**Every error code**:",
        "",
        errorCodeTable(),
        "",
        "Every answer carries `X-Request-Id`. A path answered by other methods answers " +
        "405 with `Allow`; an unknown path 404; a bug 500 (an envelope, never a trace).",
      ].join("\n"),
      // Self-hosted: whoever runs this server is the contact, at its own address.
      contact: {
        name: "The operator of this server",
        url: serverUrl ?? "http://localhost:8080",
      },
      license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
    },
    // The committed document cannot know where it will be served: it names the address
    // as variables; the document a server serves names its own BASE_URL.
    servers: serverUrl
      ? [{ url: serverUrl, description: "This server (BASE_URL)" }]
      : [{
        url: "{scheme}://{host}",
        description: "Your server (its BASE_URL)",
        variables: {
          scheme: { default: "http", enum: ["http", "https"] },
          host: {
            default: "localhost:8080",
            description: "Host and port of BASE_URL",
          },
        },
      }],
    tags: [
      { name: "Images", description: "Upload, read and delete images" },
      { name: "Screenshots", description: "Capture web pages" },
      {
        name: "Files",
        description: "The image files records point at (no key: shared links)",
      },
      { name: "Pages", description: "Viewer and delete-link pages" },
      { name: "System", description: "Health and readiness" },
    ],
  });
}

/**
 * YAML text of a document, deterministic so the committed copy can be compared. The YAML
 * writer is loaded when first asked for, not at every start.
 */
async function yamlOf(doc: unknown): Promise<string> {
  const { stringify } = await import("yaml");
  // No anchors and aliases: the same schema object reused in many places would otherwise
  // be written once and aliased (397 of them), which the yaml package's own parser then
  // refuses by default ("Excessive alias count") and swagger-typescript-api cannot read.
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** YAML text of the app's document, as written to openapi.yaml. */
export function openApiYaml(app: App): Promise<string> {
  return yamlOf(openApiDocument(app));
}

/** Registers /openapi.json, /openapi.yaml and the Swagger UI at /docs. */
export function registerDocsRoutes(app: App, deps: AppDeps) {
  let cached: ReturnType<typeof openApiDocument> | undefined;
  // Swagger UI's "Try it out" calls the first server: the address this document was
  // fetched at (same origin, no CORS), then BASE_URL when that is another one.
  const doc = (c: Context) => {
    cached ??= openApiDocument(app, deps.config.BASE_URL);
    const here = originOfRequest(
      c.req.url,
      c.req.raw.headers,
      deps.config.TRUST_PROXY,
    );
    if (here === new URL(deps.config.BASE_URL).origin) return cached;
    const servers = [{ url: here, description: "This address" }];
    if (deps.config.BASE_URL_SET) {
      servers.push({ url: deps.config.BASE_URL, description: "BASE_URL" });
    }
    return { ...cached, servers };
  };
  app.get("/openapi.json", (c) => c.json(doc(c)));
  app.get(
    "/openapi.yaml",
    async (c) =>
      c.body(await yamlOf(doc(c)), 200, {
        "content-type": "application/yaml; charset=utf-8",
      }),
  );
  registerSwaggerUi(app);
}

/** Where Swagger UI's files are served from (its version in the path). */
const SWAGGER_BASE = `/docs/assets/${swaggerUiPackage.version}`;

/** Swagger UI's files we serve, from the npm package on disk (read once, when asked). */
const SWAGGER_FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
};

/** Our start-up script for Swagger UI: inline scripts are refused by our CSP. */
const DOCS_JS =
  `// Swagger UI's own dark theme (its html.dark-mode rules), following the system's choice.
const darkScheme = matchMedia("(prefers-color-scheme: dark)");
const applyScheme = () =>
  document.documentElement.classList.toggle("dark-mode", darkScheme.matches);
applyScheme();
darkScheme.addEventListener("change", applyScheme);
// Landmarks and headings: Swagger UI puts the operations in its own <main>, leaves the
// API's description and the server picker outside any landmark, and goes from the h1
// title to h3 tags. Each part outside <main> becomes a named region, and a heading for
// screen readers opens the operations.
const section = (label) => (Original, system) => (props) =>
  system.React.createElement("section", { "aria-label": label },
    system.React.createElement(Original, props));
const landmarks = () => ({
  wrapComponents: {
    InfoContainer: section("About this API"),
    ServersContainer: section("Server"),
    AuthorizeBtnContainer: section("Authorization"),
    operations: (Original, system) => (props) =>
      system.React.createElement(system.React.Fragment, null,
        system.React.createElement("h2", { className: "docs-sr-only" }, "Operations"),
        system.React.createElement(Original, props)),
  },
});
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  plugins: [landmarks],
  // Deep links put a link inside each operation's toggle button (a focusable element in
  // a button: axe's nested-interactive); without them the path is plain text.
  deepLinking: false,
  persistAuthorization: false,
  tryItOutEnabled: false,
  displayRequestDuration: true,
  defaultModelsExpandDepth: 0,
  validatorUrl: null,
});
// Swagger UI's server picker has a label without text: name it for screen readers.
new MutationObserver(() => {
  const s = document.getElementById("servers");
  if (s && !s.hasAttribute("aria-label")) s.setAttribute("aria-label", "Server");
}).observe(document.body, { childList: true, subtree: true });
`;

/**
 * Our corrections to Swagger UI's colours where they fall under 4.5:1 (the version
 * badges, the document's address), loaded after its stylesheet.
 */
const DOCS_CSS = `.swagger-ui .info .title small{background:#57606a}
.swagger-ui .info .title small.version-stamp{background:#1a7f37}
.swagger-ui .info .title small pre{color:#fff}
.swagger-ui .info .url,.swagger-ui .info a{color:#0969da}
.swagger-ui .opblock.opblock-post .opblock-summary-method{background:#1a7f37}
.swagger-ui .opblock.opblock-get .opblock-summary-method{background:#0969da}
.swagger-ui .opblock.opblock-delete .opblock-summary-method{background:#cf222e}
.swagger-ui .opblock.opblock-patch .opblock-summary-method{background:#9a6700}
.swagger-ui .opblock.opblock-head .opblock-summary-method{background:#0969da}
.swagger-ui .btn.authorize,.swagger-ui .btn.authorize span{color:#1a7f37;border-color:#1a7f37}
.swagger-ui .btn.authorize svg{fill:#1a7f37}
body{margin:0}
.docs-nav{margin:0;padding:.6rem 1rem;font:16px/1.5 system-ui,sans-serif;border-bottom:1px solid #d0d7de}
.docs-nav a{color:#0969da}
.docs-sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
@media (prefers-color-scheme:dark){html,body{background:#1c1c1c;color:#e6edf3}.docs-nav{border-color:#30363d}.docs-nav a,html.dark-mode .swagger-ui .info .url,html.dark-mode .swagger-ui .info a{color:#4493f8}html.dark-mode .swagger-ui .btn.authorize,html.dark-mode .swagger-ui .btn.authorize span{color:#3fb950;border-color:#3fb950}html.dark-mode .swagger-ui .btn.authorize svg{fill:#3fb950}}
`;

/**
 * /docs: Swagger UI served by us from the pinned `swagger-ui-dist` package, so the page
 * works offline and behind a strict CSP (no CDN, no inline script; Swagger UI sets styles
 * through the DOM, which style-src does not govern, and its icons are data: SVGs).
 */
function registerSwaggerUi(app: App) {
  const dir = dirname(
    createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"),
  );
  const loaded = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();
  const docsHeaders = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      imgSrc: ["'self'", "data:"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      connectSrc: ["'self'"],
      frameAncestors: ["'none'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
    },
  });
  app.use("/docs", docsHeaders);
  app.get("/docs", (c) =>
    c.html(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API docs · Image host</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${SWAGGER_BASE}/swagger-ui.css">
<script src="${SWAGGER_BASE}/swagger-ui-bundle.js" defer></script>
<link rel="stylesheet" href="${SWAGGER_BASE}/docs.css">
<script src="${SWAGGER_BASE}/docs.js" defer></script>
</head>
<body>
<nav class="docs-nav" aria-label="Site"><a href="/">← Image host</a> · <a href="/openapi.yaml">openapi.yaml</a> · <a href="/openapi.json">openapi.json</a></nav>
<div id="swagger-ui"><noscript>The interactive docs need JavaScript; the contract itself is <a href="/openapi.yaml">openapi.yaml</a>.</noscript></div>
</body>
</html>`));
  const immutable = "public, max-age=31536000, immutable";
  serveAsset(
    app,
    `${SWAGGER_BASE}/docs.js`,
    DOCS_JS,
    "text/javascript; charset=utf-8",
  );
  serveAsset(
    app,
    `${SWAGGER_BASE}/docs.css`,
    DOCS_CSS,
    "text/css; charset=utf-8",
  );
  for (const [name, type] of Object.entries(SWAGGER_FILES)) {
    app.get(`${SWAGGER_BASE}/${name}`, async (c) => {
      if (!loaded.has(name)) {
        loaded.set(
          name,
          Deno.readFile(join(dir, name)) as Promise<Uint8Array<ArrayBuffer>>,
        );
      }
      return c.body(await loaded.get(name)!, 200, {
        "content-type": type,
        "cache-control": immutable,
        "x-content-type-options": "nosniff",
      });
    });
  }
}
