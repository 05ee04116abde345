import { cors } from "hono/cors";
import { createHash } from "node:crypto";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import { Layout, pageSecurity } from "./pages/layout.tsx";
import { serveAsset } from "./pages/static_assets.ts";
import { ApiError } from "../schemas/errors.ts";
import { sessionUser } from "./session.ts";
import { type NpmPackage, packSdk } from "../services/sdk/npm_package.ts";

const DIST = new URL("../sdk/dist/", import.meta.url);
const PACKAGE_DIR = new URL("../sdk/", import.meta.url);

/** Script of the demo page: opens the widget with the key the visitor pastes. */
const DEMO_JS = `
const form = document.getElementById("demo-form");
const log = document.getElementById("demo-log");
const write = (line) => { const li = document.createElement("li"); li.textContent = line; log.prepend(li); };
form.addEventListener("submit", (e) => {
  e.preventDefault();
  const key = document.getElementById("demo-key").value.trim();
  const multiple = document.getElementById("demo-multiple").checked;
  // Signed in and no key given: the widget uploads to this account with the session.
  const token = document.querySelector('meta[name="csrf-token"]')?.content;
  const app = !key && token ? ServiceApp.forSession(token) : new ServiceApp(key);
  app.createUploadWidget({
    multiple,
    onStart: (files) => write("Uploading " + files.length + " file(s)…"),
    onProgress: (p) => { document.getElementById("demo-progress").value = p; },
    onSuccess: (res) => write("Done: " + (res.url || res.data.images.map((i) => i.url).join(", "))),
    onError: (err) => write("Error " + (err.code ?? "") + ": " + err.message),
  });
});
`;

/** The answer headers a page on another origin may read (CORS). */
const EXPOSED_HEADERS = [
  "Location",
  "Tus-Resumable",
  "Tus-Version",
  "Tus-Max-Size",
  "Tus-Extension",
  "Upload-Offset",
  "Upload-Length",
  "Upload-Expires",
  "Upload-Metadata",
  "X-Request-Id",
  "Retry-After",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
];

/**
 * Serves the browser SDK (minified, source map, cacheable, loadable from any site) and the
 * demo page, and lets browsers on other origins call /api/1 (keys travel in headers, never
 * cookies, so CORS with `*` is safe).
 */
export function registerSdkRoutes(app: App, deps: AppDeps) {
  const preflight = cors({
    origin: "*",
    allowMethods: ["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"],
    allowHeaders: [
      "Authorization",
      "X-API-Key",
      "Content-Type",
      // Resumable uploads (tus 1.0).
      "Tus-Resumable",
      "Upload-Length",
      "Upload-Offset",
      "Upload-Metadata",
      "Upload-Defer-Length",
      "Upload-Concat",
      "X-HTTP-Method-Override",
      "X-Requested-With",
    ],
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: 86400,
  });
  app.use("/api/1/*", async (c, next) => {
    // Hono's cors answers every OPTIONS as a preflight. One without
    // Access-Control-Request-Method is none: it is tus's discovery request (its version,
    // extensions and Tus-Max-Size), answered by its route, with the CORS headers of an
    // actual request.
    if (
      c.req.method !== "OPTIONS" ||
      c.req.header("access-control-request-method")
    ) return await preflight(c, next);
    await next();
    c.res.headers.set("Access-Control-Allow-Origin", "*");
    c.res.headers.set(
      "Access-Control-Expose-Headers",
      EXPOSED_HEADERS.join(","),
    );
  });

  const files = new Map<
    string,
    Promise<{ body: Uint8Array; etag: string } | null>
  >();
  const load = (name: string) => {
    if (!files.has(name)) {
      files.set(
        name,
        Deno.readFile(new URL(name, DIST)).then((body) => ({
          body,
          etag: `"${
            createHash("sha256").update(body).digest("base64url").slice(0, 22)
          }"`,
        }), () => null),
      );
    }
    return files.get(name)!;
  };
  const serve = (name: string, type: string) =>
    app.get(`/${name}`, async (c) => {
      const f = await load(name);
      if (!f) {
        throw new ApiError(404, {
          message: "SDK not built: run `deno task sdk`",
        });
      }
      const headers: Record<string, string> = {
        "Content-Type": type,
        "Cache-Control": "public, max-age=86400, stale-while-revalidate=604800",
        "ETag": f.etag,
        "Access-Control-Allow-Origin": "*",
        "Cross-Origin-Resource-Policy": "cross-origin",
        "X-Content-Type-Options": "nosniff",
      };
      if (/\.m?js$/.test(name)) headers["SourceMap"] = `/${name}.map`;
      if (c.req.header("if-none-match") === f.etag) {
        return c.body(null, 304, headers);
      }
      return c.body(f.body as Uint8Array<ArrayBuffer>, 200, headers);
    });
  serve("service-sdk.min.js", "text/javascript; charset=utf-8");
  serve("service-sdk.min.js.map", "application/json; charset=utf-8");
  serve("service-sdk-resumable.mjs", "text/javascript; charset=utf-8");
  serve("service-sdk-resumable.mjs.map", "application/json; charset=utf-8");

  // The npm package, packed at first request: `npm install <BASE_URL>/sdk/<name>.tgz`
  // (or the versioned file name npm pack would give it).
  let packed: Promise<{ pkg: NpmPackage; etag: string }> | undefined;
  app.get("/sdk/:file{[a-z0-9.-]+\\.tgz}", async (c) => {
    packed ??= packSdk(PACKAGE_DIR).then((pkg) => ({
      pkg,
      etag: `"${
        createHash("sha256").update(pkg.bytes).digest("base64url").slice(0, 22)
      }"`,
    }));
    const { pkg, etag } = await packed.catch(() => {
      packed = undefined;
      throw new ApiError(404, {
        message: "SDK not built: run `deno task sdk`",
      });
    });
    const file = c.req.param("file");
    if (
      file !== `${pkg.name}.tgz` && file !== `${pkg.name}-${pkg.version}.tgz`
    ) {
      throw new ApiError(404);
    }
    const headers = {
      "Content-Type": "application/gzip",
      "Cache-Control": "public, max-age=300",
      "ETag": etag,
      "Access-Control-Allow-Origin": "*",
      "Cross-Origin-Resource-Policy": "cross-origin",
    };
    if (c.req.header("if-none-match") === etag) {
      return c.body(null, 304, headers);
    }
    return c.body(pkg.bytes as Uint8Array<ArrayBuffer>, 200, headers);
  });

  serveAsset(app, "/assets/demo.js", DEMO_JS, "text/javascript; charset=utf-8");
  app.use("/demo", pageSecurity(deps.config));
  app.get("/demo", async (c) => {
    const user = await sessionUser(c, deps);
    return c.html(
      <Layout
        title="Upload widget demo"
        user={user}
        head={
          <>
            <script src="/service-sdk.min.js"></script>
            <script src="/assets/demo.js" defer></script>
          </>
        }
      >
        <h1>Upload widget demo</h1>
        {user
          ? (
            <p>
              You are signed in: the widget uploads to your account as it is. To
              try it as another site would, paste an API key from{" "}
              <a href="/account">your account</a>. Any page can do the same with
              three lines:
            </p>
          )
          : (
            <p>
              Paste an API key from <a href="/account">your account</a>{" "}
              and open the widget. Any page can do the same with three lines:
            </p>
          )}
        <pre
          tabindex={0}
          aria-label="Example code"
        ><code>{`<script src="${new URL(c.req.url).origin}/service-sdk.min.js"></script>
<script>
  new ServiceApp("YOUR_API_KEY").createUploadWidget({ onSuccess: (r) => console.log(r.url) });
</script>`}</code></pre>
        <form id="demo-form">
          <label for="demo-key">
            API key{user ? " (optional: you are signed in)" : ""}
          </label>
          <input
            id="demo-key"
            type="password"
            required={!user}
            autocomplete="off"
          />
          <label>
            <input id="demo-multiple" type="checkbox" checked /> Several files
          </label>
          <p>
            <button type="submit">Open the upload widget</button>
          </p>
        </form>
        <progress
          id="demo-progress"
          max="100"
          value="0"
          aria-label="Upload progress"
        >
        </progress>
        <ul id="demo-log" aria-live="polite"></ul>
      </Layout>,
    );
  });
}
