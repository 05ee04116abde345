/**
 * Writes openapi.yaml from the zod-openapi routes. `--check` exits 1 when the committed
 * file differs from a fresh generation.
 */
import { openApiYaml } from "../routes/docs.ts";
import { documentApp } from "./document_app.ts";
import { writeOrCheck } from "./generated_file.ts";

const path = new URL("../openapi.yaml", import.meta.url);
const { app, close } = await documentApp();
const text = await openApiYaml(app);
await close();
await writeOrCheck(path, text, {
  name: "openapi.yaml",
  task: "deno task openapi",
});
