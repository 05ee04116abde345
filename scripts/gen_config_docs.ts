/**
 * Writes docs/configuration.md from schemas/config.ts (`deno task docs`): every variable
 * of the service and of the browser service, by concern, with its default, type or unit,
 * what it bounds and which profile uses it. `--check` exits 1 when the committed file
 * differs from a fresh generation (CI runs it through tests/docs_test.ts).
 */
import { z } from "zod";
import {
  BrowserServiceConfigSchema,
  CONFIG_GROUPS,
  type VarDoc,
} from "../schemas/config.ts";
import { writeOrCheck } from "./generated_file.ts";

/** Where the reference is written. */
export const CONFIGURATION_MD = new URL(
  "../docs/configuration.md",
  import.meta.url,
);

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  format?: string;
}

/** A table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

/** The type column: the enum's values, an integer's range and unit, or the unit. */
function typeOf(schema: JsonSchema, doc: VarDoc): string {
  if (schema.enum) return schema.enum.map((e) => `\`${e}\``).join(" or ");
  if (schema.type === "integer" || schema.type === "number") {
    const max = schema.maximum !== undefined &&
        schema.maximum < Number.MAX_SAFE_INTEGER
      ? schema.maximum.toLocaleString("en-US")
      : "";
    const range = `${(schema.minimum ?? 0).toLocaleString("en-US")}–${max}`;
    return doc.unit ? `${doc.unit}, ${range}` : `integer, ${range}`;
  }
  return doc.unit ?? "string";
}

/** The default column: the reference's own words where the machine decides it. */
function defaultOf(schema: JsonSchema, doc: VarDoc): string {
  if (doc.shownDefault) return doc.shownDefault;
  if (schema.default === undefined) return "unset";
  if (schema.default === "") return "empty";
  return `\`${schema.default}\``;
}

/** One concern's table. */
function table(fields: Record<string, z.ZodType>, withProfile: boolean) {
  const head = withProfile
    ? "| Variable | Default | Type or unit | Profile | What it is and bounds |\n| --- | --- | --- | --- | --- |"
    : "| Variable | Default | Type or unit | What it is and bounds |\n| --- | --- | --- | --- |";
  const rows = Object.entries(fields).map(([name, field]) => {
    const doc = field.meta() as VarDoc | undefined;
    if (!doc?.description) {
      throw new Error(`${name} has no description in schemas/config.ts`);
    }
    const schema = z.toJSONSchema(field, {
      io: "input",
      unrepresentable: "any",
    }) as JsonSchema;
    const cols = [
      `\`${name}\``,
      defaultOf(schema, doc),
      typeOf(schema, doc),
      ...(withProfile ? [doc.profile ?? "both"] : []),
      doc.description,
    ];
    return `| ${cols.map(cell).join(" | ")} |`;
  });
  return [head, ...rows].join("\n");
}

/** The whole reference, as docs/configuration.md holds it. */
export function configurationReference(): string {
  const parts = [
    "# Configuration reference",
    "",
    "<!-- Generated from schemas/config.ts by `deno task docs`; edit the schema, not this file. -->",
    "",
    "Everything is set through environment variables, validated at start: a bad value stops start-up with a line naming the variable and its rule (the value is quoted, except for secrets). An empty value counts as unset. Sizes in MB are MiB (1,048,576 bytes).",
    "",
    "**Profile** says where a variable matters: `both` the embedded box and the sandbox; `embedded` the box alone (a writable DATA_DIR, a local Chromium, nginx beside it); `sandbox` what the sandbox profile (Deno Deploy: no FFI, no subprocess, no disk) sets, optional on the box. See [deploy.md](deploy.md).",
    "",
  ];
  for (const [group, fields] of Object.entries(CONFIG_GROUPS)) {
    parts.push(`## ${group}`, "", table(fields, true), "");
  }
  parts.push(
    "## Browser service (`deno task browser`)",
    "",
    "The browser service (scripts/browser.ts) runs Chromium, its DevTools and each capture's network guard on a host of its own, for instances that cannot start a browser (the sandbox profile). Its own environment:",
    "",
    table(BrowserServiceConfigSchema.shape, false),
    "",
    "## Runtime knobs",
    "",
    "`deno task start` and the Dockerfile also set two knobs of the runtime itself (a test checks that both agree); set them yourself when you run `main.ts` another way: `MALLOC_ARENA_MAX=1` (one glibc arena, so libvips' buffers are reused) and `--v8-flags=--max-semi-space-size=1,--heap-growing-percent=50` (a small young generation, and an old one collected once it has grown by half). Together they keep a 15 × 32 MB upload within ~32–55 MB of extra memory ([benchmarks.md](benchmarks.md)).",
    "",
    '`deno task start:sandbox` sets one instead: `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144:glibc.malloc.arena_max=1` (buffers of 256 KB or more mapped on their own and given back when freed, however large the ones freed before; one arena). Without it glibc keeps what the runtime\'s and the image engine\'s buffers grew its heap to, and a warmed sandbox instance holds ~50 MB more ([deploy.md](deploy.md#deno-deploy)). Set it yourself when you start the sandbox profile another way; glibc reads it only at the process\'s start. Every start logs what glibc was given (`"msg":"allocator"`, with `mmap_threshold` and `arena_max`); with the WebAssembly engine and no threshold set, that line is a warning naming the value to set.',
    "",
  );
  return parts.join("\n");
}

/** The reference as `deno fmt` leaves it (tables aligned), so fmt --check agrees. */
export async function formattedReference(): Promise<string> {
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = fmt.stdin.getWriter();
  await w.write(new TextEncoder().encode(configurationReference()));
  await w.close();
  const out = await fmt.output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

if (import.meta.main) {
  await writeOrCheck(CONFIGURATION_MD, await formattedReference(), {
    name: "docs/configuration.md",
    task: "deno task docs",
  });
}
