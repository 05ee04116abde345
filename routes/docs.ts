import { swaggerUI } from "@hono/swagger-ui";
import { stringify } from "yaml";
import type { App } from "./env.ts";
import type { AppDeps } from "../services/deps.ts";

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
      description:
        "Upload images and capture website screenshots; every response uses the " +
        "`{status, success, data}` envelope, every failure `{status, success:false, error}`.",
      license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
    },
    servers: [{ url: serverUrl ?? "http://localhost:8080" }],
    tags: [
      { name: "Images", description: "Upload, read and delete images" },
      { name: "Screenshots", description: "Capture web pages" },
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
