import assert from "node:assert/strict";
import { test, testEnv, userWithKey } from "./helpers.ts";
import { makeImage } from "./fixtures.ts";
import { startFixture } from "./fixture_server.ts";
import { openScreenshotter } from "../server/composition.ts";
import { loadConfig } from "../schemas/config.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { findChromium } from "../services/screenshots/chromium_launch.ts";
import { createAlbum } from "../services/albums/albums.ts";

/** The curl commands of README.md's shell blocks, each as its words (quotes removed). */
export function readmeCurls(markdown: string): string[][] {
  const blocks = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    m[1]
  );
  const commands = blocks.flatMap((b) =>
    b.replace(/\\\n\s*/g, " ").split("\n").map((l) =>
      l.replace(/\s+#.*$/, "").trim()
    ).filter((l) => l.startsWith("curl "))
  );
  return commands.map(shellWords);
}

/** A command line's words, as a POSIX shell splits them (quotes, no expansions). */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let quote: "'" | '"' | undefined;
  let inWord = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** What curl would send for `-H`, `-F` and `-d`, against `base` instead of the URL's origin. */
async function asRequest(
  words: string[],
  vars: Record<string, string>,
  file: (name: string) => Promise<Uint8Array>,
): Promise<{ path: string; init: RequestInit }> {
  const sub = (s: string) => s.replace(/\$(\w+)/g, (_, v) => vars[v] ?? "");
  const headers = new Headers();
  let form: FormData | undefined;
  const data: string[] = [];
  let url = "";
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    const next = () => sub(words[++i]);
    if (w === "-H") {
      const h = next();
      const at = h.indexOf(":");
      headers.set(h.slice(0, at).trim(), h.slice(at + 1).trim());
    } else if (w === "-F") {
      const f = next();
      const at = f.indexOf("=");
      const [name, value] = [f.slice(0, at), f.slice(at + 1)];
      form ??= new FormData();
      if (value.startsWith("@")) {
        const bytes = await file(value.slice(1));
        form.append(
          name,
          new File([bytes as Uint8Array<ArrayBuffer>], value.slice(1)),
        );
      } else form.append(name, value);
    } else if (w === "-d") data.push(next());
    else if (!w.startsWith("-")) url = sub(w);
    else throw new Error(`the test does not know curl's ${w}`);
  }
  let body: BodyInit | undefined = form;
  if (data.length) {
    body = data.join("&");
    if (!headers.has("content-type")) {
      headers.set("content-type", "application/x-www-form-urlencoded");
    }
  }
  const u = new URL(url);
  return {
    path: `${u.pathname}${u.search}`,
    init: { method: body ? "POST" : "GET", headers, body },
  };
}

test("README.md's curl examples work as written: two uploads, a URL import into an album, a capture", async () => {
  const readme = await Deno.readTextFile(
    new URL("../README.md", import.meta.url),
  );
  const curls = readmeCurls(readme);
  assert.equal(curls.length, 4, JSON.stringify(curls));
  // Not the bytes of the uploads before it: a duplicate answers the stored record as it is.
  const png = await makeImage("png", { color: "#cc3366" });
  // The web addresses of the examples, served on loopback instead (no DNS, no network).
  const site = startFixture({
    "/": "<!doctype html><h1>Example Domain</h1>",
    "/cat.png": () =>
      new Response(png as Uint8Array<ArrayBuffer>, {
        headers: { "content-type": "image/png" },
      }),
  });
  const allow = `127.0.0.1:${site.port}`;
  const dataDir = await Deno.makeTempDir({ prefix: "readme-" });
  const chromium = findChromium(Deno.env.get("TEST_CHROMIUM_PATH"));
  assert.ok(chromium, "Chromium is required (TEST_CHROMIUM_PATH)");
  const screenshotter = await openScreenshotter(
    loadConfig({
      DATA_DIR: dataDir,
      CHROMIUM_PATH: chromium,
      FETCH_ALLOW_PRIVATE: allow,
    }),
    memoryLogger(),
  );
  const env = await testEnv({
    env: { FETCH_ALLOW_PRIVATE: allow },
    screenshotter,
  });
  try {
    const { user, key } = await userWithKey(env);
    const album = await createAlbum(env.deps.database.db, user.id, {
      title: "Holiday",
    });
    const files: Record<string, () => Promise<Uint8Array>> = {
      "photo.jpg": () => makeImage("jpeg"),
      "a.png": () => makeImage("png"),
      "b.gif": () => makeImage("gif"),
    };
    const answers = [];
    for (const words of curls) {
      const url = words.find((w) => w.startsWith("http://localhost:8080/"));
      assert.ok(url, words.join(" "));
      const localised = words.map((w) =>
        w.replaceAll("https://example.com", site.origin)
      );
      const { path, init } = await asRequest(
        localised,
        { KEY: key, ALBUM: album.id },
        (name) => files[name](),
      );
      const res = await env.app.request(path, init);
      const body = await res.json();
      assert.equal(
        res.status,
        200,
        `${words.join(" ")}: ${JSON.stringify(body)}`,
      );
      assert.equal(body.success, true);
      answers.push(body.data);
    }
    const [one, two, imported, shot] = answers;
    assert.equal(one.kind, "image");
    assert.match(one.url, /\.jpg$/);
    assert.equal(two.kind, "batch");
    assert.equal(two.count, 2);
    assert.equal(imported.kind, "image");
    assert.equal(imported.album_id, album.id);
    assert.ok(imported.expiration > 0);
    assert.equal(shot.metadata.title, "");
    assert.ok(shot.metadata.width > 0);
    // Each web address was fetched from the loopback copy, once.
    assert.deepEqual(
      site.requests.map((r) => r.path).sort(),
      ["/", "/cat.png"],
    );
  } finally {
    await env.close();
    await screenshotter?.close();
    await site.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
