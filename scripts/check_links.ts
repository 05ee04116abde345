/**
 * Checks that every link of the project's Markdown leads somewhere: a relative link to a
 * file or folder that exists, and a `#fragment` to a heading of that file (GitHub's
 * anchors). Web links are checked for their form only: tests and CI talk to loopback
 * alone, so no address outside this machine is ever asked for.
 * `deno run -A scripts/check_links.ts` prints each broken link and exits 1 when there is
 * any (tests/docs_test.ts runs the same check in CI).
 */
import { dirname, join, relative, resolve } from "node:path";
import { Parser } from "commonmark";
import { filesUnder } from "./files_under.ts";

/** The Markdown files whose links are checked: the top-level ones, docs/, bench/, sdk/. */
export async function markdownFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(root)) {
    if (e.isFile && e.name.endsWith(".md")) out.push(join(root, e.name));
  }
  for (const d of ["docs", "bench", "sdk"]) {
    out.push(
      ...await filesUnder(join(root, d), (name) => name.endsWith(".md"))
        .catch(() => []),
    );
  }
  return out.sort();
}

/**
 * The anchor GitHub gives a heading: lower case, everything but letters, digits,
 * spaces, hyphens and underscores dropped, spaces made hyphens.
 */
export function slugOf(heading: string): string {
  return heading.trim().toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** A document's headings' anchors (a repeated heading gets -1, -2, … as on GitHub). */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const walker = new Parser().parse(markdown).walker();
  for (let ev = walker.next(); ev; ev = walker.next()) {
    if (!ev.entering || ev.node.type !== "heading") continue;
    let text = "";
    const inner = ev.node.walker();
    for (let e = inner.next(); e; e = inner.next()) {
      if (e.entering && (e.node.type === "text" || e.node.type === "code")) {
        text += e.node.literal ?? "";
      }
    }
    const base = slugOf(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

/** Every link and image destination of a document. */
export function linksOf(markdown: string): string[] {
  const out: string[] = [];
  const walker = new Parser().parse(markdown).walker();
  for (let ev = walker.next(); ev; ev = walker.next()) {
    const t = ev.node.type;
    if (ev.entering && (t === "link" || t === "image") && ev.node.destination) {
      out.push(ev.node.destination);
    }
  }
  return out;
}

/** One link that leads nowhere, and why. */
export interface BrokenLink {
  file: string;
  link: string;
  why: string;
}

/** The broken links of `files` (paths in the answer relative to `root`). */
export async function brokenLinks(
  root: string,
  files: string[],
): Promise<BrokenLink[]> {
  const broken: BrokenLink[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = async (path: string) => {
    let a = anchorCache.get(path);
    if (!a) {
      a = anchorsOf(await Deno.readTextFile(path));
      anchorCache.set(path, a);
    }
    return a;
  };
  for (const file of files) {
    const text = await Deno.readTextFile(file);
    for (const link of linksOf(text)) {
      const report = (why: string) =>
        broken.push({ file: relative(root, file), link, why });
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) {
        // A web or mail address: its form only (see the header).
        if (/^https?:/i.test(link) && !URL.canParse(link)) {
          report("not a valid URL");
        }
        continue;
      }
      const [pathPart, fragment] = link.split("#", 2) as [string, string?];
      const target = pathPart === ""
        ? file
        : resolve(dirname(file), decodeURIComponent(pathPart));
      let info: Deno.FileInfo;
      try {
        info = await Deno.stat(target);
      } catch {
        report("no such file");
        continue;
      }
      if (fragment !== undefined && fragment !== "") {
        if (!info.isFile || !target.endsWith(".md")) {
          report("a fragment on something that is not a Markdown file");
        } else if (!(await anchors(target)).has(fragment)) {
          report(`no heading #${fragment} in ${relative(root, target)}`);
        }
      }
    }
  }
  return broken;
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const files = await markdownFiles(root);
  const broken = await brokenLinks(root, files);
  for (const b of broken) console.error(`${b.file}: ${b.link} (${b.why})`);
  if (broken.length) {
    console.error(`${broken.length} broken link(s)`);
    Deno.exit(1);
  }
  console.log(`every link of ${files.length} Markdown files leads somewhere`);
}
