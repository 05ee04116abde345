import assert from "node:assert/strict";
// @ts-types="@types/commonmark"
import { type Node as MdNode, Parser } from "commonmark";
import { parse, parseFragment } from "parse5";
import fc from "fast-check";
import {
  bbcodeEmbed,
  type EmbeddableImage,
  htmlEmbed,
  markdownEmbed,
  markdownImage,
  responsiveEmbed,
  safeUrl,
} from "../sdk/src/embed_codes.ts";
import { json, test, testEnv, userWithKey } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";

/** Titles an attacker would try: HTML breakouts, Markdown link injection, BBCode tags. */
const HOSTILE = [
  `"><img src=x onerror=alert(1)>`,
  `' onmouseover='alert(1)`,
  `](javascript:alert(1))`,
  `x](javascript:alert(1)) [y`,
  "a`b`c](javascript:alert(1))",
  `\\](javascript:alert(1))`,
  `<script>alert(1)</script>`,
  `&lt;b&gt; &amp;`,
  `[/img][/url][url=javascript:alert(1)]click`,
  `line one\nline two\r\n](javascript:1)`,
  `!!![[[]]]((()))***___`,
  `日本語 emoji 🎉 and ｢fullwidth｣`,
];

type P5Node = {
  nodeName: string;
  attrs?: { name: string; value: string }[];
  childNodes?: P5Node[];
};

/** Elements of a parse5 tree, depth first. */
function elements(n: P5Node): P5Node[] {
  const out: P5Node[] = [];
  for (const c of n.childNodes ?? []) {
    if (!c.nodeName.startsWith("#")) out.push(c);
    out.push(...elements(c));
  }
  return out;
}

const attrs = (n: P5Node) =>
  Object.fromEntries((n.attrs ?? []).map((a) => [a.name, a.value]));

/** Asserts the HTML embed is exactly <a href><img src alt></a> with these values. */
function checkHtml(code: string, img: EmbeddableImage) {
  const els = elements(parseFragment(code) as unknown as P5Node);
  assert.deepEqual(els.map((e) => e.nodeName), ["a", "img"], code);
  assert.deepEqual(attrs(els[0]), { href: img.url_viewer }, code);
  assert.deepEqual(attrs(els[1]), {
    src: img.url,
    alt: img.title.replace(/[\r\n]+/g, " "),
  }, code);
}

/** The nodes of a CommonMark document, depth first, with their text. */
function mdNodes(src: string) {
  const out: { type: string; destination: string | null; text: string }[] = [];
  const w = new Parser().parse(src).walker();
  for (let e = w.next(); e; e = w.next()) {
    if (!e.entering) continue;
    const n: MdNode = e.node;
    out.push({
      type: n.type,
      destination: n.destination,
      text: n.literal ?? "",
    });
  }
  return out;
}

/** Asserts a Markdown embed is one image (inside one link when linked) with the title as its text. */
function checkMarkdown(code: string, img: EmbeddableImage, linked: boolean) {
  const nodes = mdNodes(code);
  const structural = nodes.filter((n) => n.type !== "text");
  assert.deepEqual(
    structural.map((n) => [n.type, n.destination]),
    [
      ["document", null],
      ["paragraph", null],
      ...(linked ? [["link", img.url_viewer]] : []),
      ["image", img.url],
    ],
    code,
  );
  const alt = nodes.filter((n) => n.type === "text").map((n) => n.text).join(
    "",
  );
  assert.equal(alt, img.title.replace(/[\r\n]+/g, " "), code);
}

/** Asserts the BBCode embed is exactly [url=viewer][img]url[/img][/url]. */
function checkBbcode(code: string, img: EmbeddableImage) {
  const m = /^\[url=([^\]]*)\]\[img\]([^[]*)\[\/img\]\[\/url\]$/.exec(code);
  assert.ok(m, code);
  assert.deepEqual([m[1], m[2]], [img.url_viewer, img.url]);
}

const image = (title: string): EmbeddableImage => ({
  title,
  url: "https://img.example.com/aB3xK9pQ2m.png",
  url_viewer: "https://img.example.com/i/aB3xK9pQ2m",
});

test("every embed code keeps a hostile title inside its own place: HTML, Markdown and BBCode parse to exactly one image with the title as text", () => {
  for (const title of HOSTILE) {
    const img = image(title);
    checkHtml(htmlEmbed(img), img);
    checkMarkdown(markdownEmbed(img), img, true);
    checkMarkdown(markdownImage(img), img, false);
    checkBbcode(bbcodeEmbed(img), img);
  }
  // Any string at all, including every ASCII punctuation mark and control character.
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 60 }), (title) => {
      // Titles are file names: NUL never survives into one (multipart and the DB drop it).
      const img = image(title.replace(/\0/g, ""));
      checkHtml(htmlEmbed(img), img);
      checkMarkdown(markdownEmbed(img), img, true);
      checkBbcode(bbcodeEmbed(img), img);
    }),
    { numRuns: 500 },
  );
});

/**
 * Asserts the responsive embed is exactly a linked <picture> of an AVIF and a WebP source
 * and an <img>, whose srcsets are transform URLs of this image over the widths below 700.
 */
function checkResponsive(code: string, img: EmbeddableImage) {
  const els = elements(parseFragment(code) as unknown as P5Node);
  assert.deepEqual(
    els.map((e) => e.nodeName),
    ["a", "picture", "source", "source", "img"],
    code,
  );
  assert.deepEqual(attrs(els[0]), { href: img.url_viewer }, code);
  const set = (format?: string) =>
    [160, 320, 640].map((w) =>
      `${img.url}?w=${w}${format ? `&format=${format}` : ""} ${w}w`
    ).concat(`${format ? `${img.url}?format=${format}` : img.url} 700w`)
      .join(", ");
  const sizes = "(max-width: 640px) 100vw, 640px";
  assert.deepEqual(attrs(els[2]), {
    type: "image/avif",
    srcset: set("avif"),
    sizes,
  });
  assert.deepEqual(attrs(els[3]), {
    type: "image/webp",
    srcset: set("webp"),
    sizes,
  });
  assert.deepEqual(attrs(els[4]), {
    src: img.url,
    srcset: set(),
    sizes,
    width: "700",
    height: "400",
    alt: img.title.replace(/[\r\n]+/g, " "),
    loading: "lazy",
  }, code);
}

test("the responsive HTML code is a linked <picture> of AVIF and WebP srcsets over the listed widths, and a hostile title stays its alt text", () => {
  const widths = [160, 320, 640, 1024];
  for (const title of HOSTILE) {
    const img = {
      ...image(title),
      width: 700,
      height: 400,
      image: { extension: "png" },
    };
    checkResponsive(responsiveEmbed(img, widths), img);
  }
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 60 }), (title) => {
      const img = {
        ...image(title.replace(/\0/g, "")),
        width: 700,
        height: 400,
      };
      checkResponsive(responsiveEmbed(img, widths), img);
    }),
    { numRuns: 300 },
  );
  // A GIF may be animated: no AVIF source (it would be its first frame).
  const gif = responsiveEmbed({
    ...image("a"),
    url: "https://img.example.com/aB3xK9pQ2m.gif",
    width: 700,
    height: 400,
    image: { extension: "gif" },
  }, widths);
  assert.doesNotMatch(gif, /image\/avif/);
  assert.match(gif, /type="image\/webp"/);
});

test("addresses in embed codes are http(s) only and cannot close their Markdown, BBCode or HTML context", () => {
  assert.equal(safeUrl("javascript:alert(1)"), "about:blank");
  assert.equal(safeUrl("data:text/html,<b>"), "about:blank");
  assert.equal(safeUrl("not a url"), "about:blank");
  const odd = safeUrl("https://h.example/a b)(c]d[e<f>g\"h'i");
  assert.equal(odd, "https://h.example/a%20b%29%28c%5Dd%5Be%3Cf%3Eg%22h%27i");
  const img = {
    title: "t",
    url: "https://h.example/x).png",
    url_viewer: "https://h.example/i/x]",
  };
  const safe = {
    ...img,
    url: safeUrl(img.url),
    url_viewer: safeUrl(img.url_viewer),
  };
  checkHtml(htmlEmbed(img), safe);
  checkMarkdown(markdownEmbed(img), safe, true);
  checkBbcode(bbcodeEmbed(img), safe);
});

test("the viewer page's embed fields carry the escaped codes for an upload with a hostile file name, and the page gains no element from it", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 21 });
    const name = `"><img src=x onerror=alert(1)>](javascript:alert(1)).png`;
    const r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{ name, bytes: png }]),
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rec = r.body.data;
    assert.match(rec.title, /onerror/);
    const page = await env.app.request(new URL(rec.url_viewer).pathname);
    assert.equal(page.status, 200);
    const doc = parse(await page.text()) as unknown as P5Node;
    const all = elements(doc);
    assert.ok(
      all.every((e) => !("onerror" in attrs(e))),
      "no element has an onerror attribute",
    );
    const field = (label: string) => {
      const inputs = all.filter((e) => e.nodeName === "input");
      const labels = all.filter((e) => e.nodeName === "label");
      const forId = labels.find((l) =>
        (l.childNodes ?? []).some((t) =>
          (t as unknown as { value?: string }).value === label
        )
      );
      const id = forId && attrs(forId).for;
      const input = inputs.find((i) => attrs(i).id === id);
      assert.ok(input, `a field labelled ${label}`);
      return attrs(input).value;
    };
    checkHtml(field("HTML"), rec);
    checkMarkdown(field("Markdown"), rec, true);
    checkBbcode(field("BBCode"), rec);
  } finally {
    await env.close();
  }
});

test("a hostile title stays text on every page that shows it: viewer, delete confirmation, deleted page, My images and the owner's viewer", async () => {
  const env = await testEnv();
  try {
    const signup = await env.app.request("/signup", {
      method: "POST",
      headers: {
        origin: "http://localhost:8080",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "email=owner%40example.com&password=a+long+enough+password",
    });
    assert.equal(signup.status, 303);
    const cookie = signup.headers.get("set-cookie")!.split(";")[0];
    const user = await env.deps.database.db.selectFrom("users").select("id")
      .where("email", "=", "owner@example.com").executeTakeFirstOrThrow();
    const { createApiKey } = await import("../services/accounts/api_keys.ts");
    const { key } = await createApiKey(env.deps.database.db, user.id, "t");
    const name = `"><img src=x onerror=alert(1)><svg onload=alert(2)>.png`;
    const r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{
          name,
          bytes: await makeImage("png", { width: 23 }),
        }]),
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const rec = r.body.data;
    // (No "/" in it: a file name keeps only what follows the last one; a form sends " as
    // %22, as browsers do.)
    assert.equal(rec.title, name.replace('"', "%22"));
    const deletePath = new URL(rec.delete_url).pathname;
    const pages: [string, () => Promise<Response>][] = [
      [
        "viewer",
        async () => await env.app.request(new URL(rec.url_viewer).pathname),
      ],
      [
        "my images",
        async () => await env.app.request("/images", { headers: { cookie } }),
      ],
      [
        "owner's viewer (delete confirmation text)",
        async () =>
          await env.app.request(new URL(rec.url_viewer).pathname, {
            headers: { cookie },
          }),
      ],
      ["delete confirmation", async () => await env.app.request(deletePath)],
      ["deleted", async () =>
        await env.app.request(deletePath, {
          method: "POST",
          headers: { origin: "http://localhost:8080" },
        })],
    ];
    for (const [what, get] of pages) {
      const res = await get();
      assert.equal(res.status, 200, what);
      const html = await res.text();
      const all = elements(parse(html) as unknown as P5Node);
      assert.ok(
        all.every((e) => !("onerror" in attrs(e)) && !("onload" in attrs(e))),
        `${what}: an injected handler`,
      );
      assert.ok(
        all.every((e) => e.nodeName !== "svg"),
        `${what}: an injected svg`,
      );
      // The title is there, as text or as an attribute's value, whole.
      const values: string[] = [];
      const walk = (n: P5Node) => {
        const v = (n as unknown as { value?: string }).value;
        if (n.nodeName === "#text" && v) values.push(v);
        for (const a of n.attrs ?? []) values.push(a.value);
        for (const c of n.childNodes ?? []) walk(c);
      };
      walk(parse(html) as unknown as P5Node);
      assert.ok(
        values.some((v) =>
          v.includes(`onerror=alert(1)><svg onload=alert(2)>`)
        ),
        `${what}: the title shown whole, as text`,
      );
    }
  } finally {
    await env.close();
  }
});
