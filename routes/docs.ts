import { swaggerUI } from "@hono/swagger-ui";
import { stringify } from "yaml";
import type { App } from "./env.ts";
import type { AppDeps } from "../services/deps.ts";
import { errorCodeTable } from "../schemas/envelope.ts";

/** The OpenAPI document of an app, as served and as written to openapi.yaml. */
export function openApiDocument(app: App, serverUrl?: string) {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "Authorization: Bearer <API_KEY>",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: "X-API-Key: <API_KEY> (Chevereto V4; after Authorization)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "queryKey", {
    type: "apiKey",
    in: "query",
    name: "key",
    description: "?key=<API_KEY> (lowest precedence)",
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
        "`X-API-Key: <key>`, a `key` field or property of the body (before the image), " +
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

/** YAML text of the document, deterministic so the committed copy can be compared. */
export function openApiYaml(app: App): string {
  return stringify(openApiDocument(app), { lineWidth: 0 });
}

/** Registers /openapi.json, /openapi.yaml and the Swagger UI at /docs. */
export function registerDocsRoutes(app: App, deps: AppDeps) {
  let cached: ReturnType<typeof openApiDocument> | undefined;
  const doc = () => cached ??= openApiDocument(app, deps.config.BASE_URL);
  app.get("/openapi.json", (c) => c.json(doc()));
  app.get(
    "/openapi.yaml",
    (c) =>
      c.body(stringify(doc(), { lineWidth: 0 }), 200, {
        "content-type": "application/yaml; charset=utf-8",
      }),
  );
  app.get("/docs", swaggerUI({ url: "/openapi.json", title: "API docs" }));
}
