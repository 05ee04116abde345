/**
 * Writes openapi.yaml from the zod-openapi routes. `--check` exits 1 when the committed
 * file differs from a fresh generation.
 */
import { openApiYaml } from "../routes/docs.ts";
import { documentApp } from "./document_app.ts";

const path = new URL("../openapi.yaml", import.meta.url);
const { app, close } = await documentApp();
const text = await openApiYaml(app);
await close();
if (Deno.args.includes("--check")) {
  const current = await Deno.readTextFile(path).catch(() => "");
  if (current !== text) {
    console.error(
      "openapi.yaml is stale: run `deno task openapi` and commit it",
    );
    Deno.exit(1);
  }
  console.log("openapi.yaml is up to date");
} else {
  await Deno.writeTextFile(path, text);
  console.log(`wrote ${path.pathname}`);
}
