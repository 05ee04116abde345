import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "./helpers.ts";
import { CONFIG_GROUPS, ConfigFields, type VarDoc } from "../schemas/config.ts";
import {
  CONFIGURATION_MD,
  configurationReference,
  formattedReference,
} from "../scripts/gen_config_docs.ts";
import {
  anchorsOf,
  brokenLinks,
  markdownFiles,
  slugOf,
} from "../scripts/check_links.ts";
import { filesUnder } from "../scripts/files_under.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

test("the committed docs/configuration.md equals a fresh generation from schemas/config.ts", async () => {
  const committed = await Deno.readTextFile(CONFIGURATION_MD);
  assert.equal(
    committed,
    await formattedReference(),
    "docs/configuration.md is stale: run `deno task docs`",
  );
});

test("every variable of the config schema sits in exactly one group, with a description, and the reference lists it with its default", () => {
  const grouped = Object.values(CONFIG_GROUPS).flatMap((g) => Object.keys(g));
  // A variable in two groups would be spread twice into the schema, the later silently
  // winning: each name once.
  assert.equal(new Set(grouped).size, grouped.length);
  assert.deepEqual(
    [...grouped].sort(),
    Object.keys(ConfigFields.shape).sort(),
  );
  const reference = configurationReference();
  const defaults = ConfigFields.parse({});
  for (const [name, field] of Object.entries(ConfigFields.shape)) {
    const doc = field.meta() as VarDoc | undefined;
    assert.ok(doc?.description && doc.description.length > 10, name);
    const row = reference.split("\n").find((l) =>
      l.startsWith(`| \`${name}\``)
    );
    assert.ok(row, `${name} is not in the reference`);
    // A fixed number default is printed as it is (machine-decided ones in words).
    const value = defaults[name as keyof typeof defaults];
    if (typeof value === "number" && !doc.shownDefault) {
      assert.ok(row.includes(`\`${value}\``), `${name}: ${row}`);
    }
  }
  // The groups are the reference's sections, in the schema's order.
  const sections = reference.split("\n").filter((l) => l.startsWith("## "))
    .map((l) => l.slice(3));
  assert.deepEqual(
    sections.slice(0, Object.keys(CONFIG_GROUPS).length),
    Object.keys(CONFIG_GROUPS),
  );
});

test("every link in README.md and docs/ leads to a file, and every fragment to a heading, that exists", async () => {
  const files = await markdownFiles(root);
  for (const f of ["README.md", "docs/api.md", "docs/configuration.md"]) {
    assert.ok(files.includes(join(root, f)), f);
  }
  assert.deepEqual(await brokenLinks(root, files), []);
});

test("the link check finds a missing file, a missing heading and a bad URL, and passes good ones", async () => {
  const dir = await Deno.makeTempDir({ prefix: "links-" });
  try {
    await Deno.mkdir(join(dir, "docs"));
    await Deno.writeTextFile(
      join(dir, "docs", "a.md"),
      "# A page\n\n## Its `code` part (1.5 × faster)\n\n## Twice\n\n## Twice\n",
    );
    await Deno.writeTextFile(
      join(dir, "README.md"),
      [
        "[ok](docs/a.md) [ok](docs/a.md#a-page) [ok](docs/a.md#its-code-part-15--faster)",
        "[ok](docs/a.md#twice-1) [ok](docs/) [ok](#top) [ok](https://example.com/x)",
        "![ok](docs/a.md)",
        "# Top",
        "[gone](docs/b.md) [no heading](docs/a.md#nothing) ![gone](pic.png)",
        "[bad](http://exa%zz.com) [fragment on a folder](docs/#x)",
      ].join("\n\n"),
    );
    const found = await brokenLinks(dir, await markdownFiles(dir));
    assert.deepEqual(
      found.map((b) => `${b.file} ${b.link}`),
      [
        "README.md docs/b.md",
        "README.md docs/a.md#nothing",
        "README.md pic.png",
        "README.md http://exa%25zz.com",
        "README.md docs/#x",
      ],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert.equal(
    slugOf("9. Cold start (`bench/cold.ts`, issue #33)"),
    "9-cold-start-benchcoldts-issue-33",
  );
  assert.deepEqual(
    [...anchorsOf("# X\n\n# X\n\n# X\n")],
    ["x", "x-1", "x-2"],
  );
});

test("README.md is a page (at most 250 lines) and no module in routes/ or services/ is over 700 lines", async () => {
  const readme = (await Deno.readTextFile(join(root, "README.md"))).split("\n");
  assert.ok(readme.length <= 250, `README.md has ${readme.length} lines`);
  const long: string[] = [];
  for (const dir of ["routes", "services"]) {
    for (
      const p of await filesUnder(join(root, dir), (n) => /\.tsx?$/.test(n))
    ) {
      const lines = (await Deno.readTextFile(p)).split("\n").length;
      if (lines > 700) long.push(`${p.slice(root.length + 1)}: ${lines}`);
    }
  }
  assert.deepEqual(long, []);
});
