import assert from "node:assert/strict";
import { parse } from "parse5";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { isSiteForm } from "../routes/pages/form_errors.ts";
import { FsStore } from "../services/store/fs_store.ts";
import { sweepExpired } from "../services/images/records.ts";
import { sweepOrphans } from "../services/images/orphans.ts";
import { unavailable } from "../schemas/errors.ts";
import {
  createSession,
  getSession,
  verifyLogin,
} from "../services/accounts/accounts.ts";
import { expiryText } from "../routes/pages/expiry.ts";
import { humanSpan } from "../routes/pages/layout.tsx";

const ORIGIN = "http://localhost:8080";

/** A signed-in browser of a new user: its cookie header, form token and API key. */
async function signedIn(env: TestEnv) {
  const { user, key } = await userWithKey(env);
  const sid = await createSession(env.deps.database.db, user.id, env.clock);
  const session = await getSession(env.deps.database.db, sid, env.clock);
  return { user, key, cookie: `sid=${sid}`, token: session!.csrfToken };
}

/** Uploads `n` distinct small images with a key; their ids, oldest first. */
async function uploadMany(env: TestEnv, key: string, n: number, start = 0) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const bytes = await makeImage("png", {
      width: 20 + start + i,
      height: 10,
    });
    env.clock.advance(1000); // distinct created_at, so "newest first" is defined
    const r = await upload(
      env,
      key,
      formWith([{ name: `img${start + i}.png`, bytes }]),
    );
    assert.equal(r.status, 200);
    ids.push(r.body.data.id);
  }
  return ids;
}

/** A request to the app, its JSON answer read. */
async function api(env: TestEnv, path: string, init?: RequestInit) {
  return await json(await env.app.request(path, init));
}

/** Every element of an HTML document, depth first. */
// deno-lint-ignore no-explicit-any
function elements(node: any, out: any[] = []): any[] {
  if (node.tagName) out.push(node);
  for (const child of node.childNodes ?? []) elements(child, out);
  if (node.content) elements(node.content, out);
  return out;
}
// deno-lint-ignore no-explicit-any
const attr = (el: any, name: string) =>
  // deno-lint-ignore no-explicit-any
  el.attrs.find((a: any) => a.name === name)?.value;

test("GET /api/1/images pages the caller's live images newest first, counts them, filters by source, and never shows another user's", async () => {
  const env = await testEnv();
  try {
    const a = await userWithKey(env);
    const b = await userWithKey(env);
    const ids = await uploadMany(env, a.key, 5);
    await uploadMany(env, b.key, 2, 50);
    // One of a's becomes a screenshot row, one is deleted, one has expired.
    await env.deps.database.db.updateTable("images")
      .set({ source: "screenshot" }).where("id", "=", ids[0]).execute();
    const del = await env.app.request(`/api/1/images/${ids[1]}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${a.key}` },
    });
    assert.equal(del.status, 200);
    await env.deps.database.db.updateTable("images")
      .set({ expires_at: new Date(env.clock.now().getTime() - 1000) })
      .where("id", "=", ids[2]).execute();

    const list = (q: string) =>
      api(env, `/api/1/images${q}`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
    const first = await list("?per_page=2");
    assert.equal(first.status, 200);
    assert.equal(first.body.data.kind, "list");
    assert.equal(first.body.data.total, 3);
    assert.equal(first.body.data.pages, 2);
    assert.deepEqual(
      first.body.data.images.map((r: { id: string }) => r.id),
      [ids[4], ids[3]],
    );
    assert.ok(first.headers.get("x-ratelimit-remaining"));
    const second = await list("?per_page=2&page=2");
    assert.deepEqual(
      second.body.data.images.map((r: { id: string }) => r.id),
      [ids[0]],
    );
    const past = await list("?per_page=2&page=9");
    assert.deepEqual(past.body.data.images, []);
    assert.equal(past.body.data.total, 3);
    const shots = await list("?source=screenshot");
    assert.deepEqual(
      shots.body.data.images.map((r: { id: string }) => r.id),
      [ids[0]],
    );
    const uploads = await list("?source=upload");
    assert.equal(uploads.body.data.total, 2);
    // Whole records, as the upload answered them.
    assert.equal(uploads.body.data.images[0].kind, "image");
    assert.match(uploads.body.data.images[0].delete_url, /\/delete\//);

    for (const bad of ["?page=0", "?per_page=101", "?source=zip", "?page=x"]) {
      const r = await list(bad);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 160, bad);
    }
    const anon = await json(await env.app.request("/api/1/images"));
    assert.equal(anon.body.error.code, 100);
  } finally {
    await env.close();
  }
});

test("the site's pages call the API with the session and its token; without the token, with a wrong one, from another site or signed out the call is refused", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const bytes = await makeImage("png", { width: 33, height: 21 });
    const call = (headers: Record<string, string>) =>
      api(env, "/api/1/upload", {
        method: "POST",
        headers,
        body: formWith([{ name: "site.png", bytes }]),
      });

    const ok = await call({
      cookie: s.cookie,
      "x-csrf-token": s.token,
      "sec-fetch-site": "same-origin",
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.data.width, 33);
    assert.ok(ok.headers.get("x-ratelimit-limit"));
    // It is the user's own image: their key sees it.
    const mine = await env.app.request(`/api/1/images/${ok.body.data.id}`, {
      headers: { authorization: `Bearer ${s.key}` },
    });
    assert.equal(mine.status, 200);

    // The cookie alone is not a credential: a cross-site form would carry it.
    const noToken = await call({ cookie: s.cookie });
    assert.equal(noToken.body.error.code, 100);
    const wrong = await call({
      cookie: s.cookie,
      "x-csrf-token": "x".repeat(s.token.length),
    });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 110);
    const crossSite = await call({
      cookie: s.cookie,
      "x-csrf-token": s.token,
      "sec-fetch-site": "cross-site",
    });
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.body.error.code, 403);
    // Over plain http off localhost browsers send no Sec-Fetch-Site: a foreign Origin
    // alone is refused (it was 200), our own origin (BASE_URL's or the request's) is not.
    const foreign = await call({
      cookie: s.cookie,
      "x-csrf-token": s.token,
      origin: "http://evil.example",
    });
    assert.deepEqual([foreign.status, foreign.body.error.code], [403, 403]);
    const own = await call({
      cookie: s.cookie,
      "x-csrf-token": s.token,
      origin: "http://localhost:8080",
    });
    assert.equal(own.status, 200);
    const signedOut = await call({ "x-csrf-token": s.token });
    assert.equal(signedOut.body.error.code, 110);
    // Another site's browser cannot even ask: the token header is not allowed by CORS.
    const preflight = await env.app.request("/api/1/upload", {
      method: "OPTIONS",
      headers: {
        origin: "https://elsewhere.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-csrf-token",
      },
    });
    assert.doesNotMatch(
      preflight.headers.get("access-control-allow-headers") ?? "",
      /csrf/i,
    );
    // A key still wins over a session token that is wrong.
    const keyWins = await call({
      authorization: `Bearer ${s.key}`,
      "x-csrf-token": "wrong",
    });
    assert.equal(keyWins.status, 200);
  } finally {
    await env.close();
  }
});

test("re-uploading the same bytes applies the new upload's expiration, and one without an expiration keeps the image for good", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const bytes = await makeImage("png", { width: 41, height: 17 });
    const send = (fields: Record<string, string>) =>
      upload(env, key, formWith([{ name: "same.png", bytes }], fields));
    const first = await send({ expiration: "120" });
    assert.equal(first.body.data.expiration, 120);
    env.clock.advance(60_000);
    const longer = await send({ expiration: "3600" });
    assert.equal(longer.body.data.duplicate, true);
    assert.equal(longer.body.data.id, first.body.data.id);
    // Counted from `time`: one minute has passed, and an hour from now is asked.
    assert.equal(longer.body.data.expiration, 3660);
    // The old end passes; the image stays.
    env.clock.advance(120_000);
    const file = await env.app.request(`/${first.body.data.image.filename}`);
    assert.equal(file.status, 200);
    await file.body?.cancel();
    const forever = await send({});
    assert.equal(forever.body.data.expiration, 0);
    env.clock.advance(7200_000);
    const got = await api(env, `/api/1/images/${first.body.data.id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(got.status, 200);
    assert.equal(got.body.data.expiration, 0);
  } finally {
    await env.close();
  }
});

test("browsers get the site's HTML 404 page for unknown pages, deleted images and dead delete links; API and image clients keep the JSON envelope; unknown paths are never 405", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const [id] = await uploadMany(env, key, 1);
    const rec = await api(env, `/api/1/images/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await env.app.request(`/api/1/images/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${key}` },
    });
    const html = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };
    for (
      const path of [
        "/nonexistent",
        "/no/such/page",
        `/i/${id}`,
        new URL(rec.body.data.delete_url).pathname,
        `/${rec.body.data.image.filename}`,
      ]
    ) {
      for (const method of ["GET", "POST", "DELETE"]) {
        const r = await env.app.request(path, { method, headers: html });
        // A path no route knows is 404 by any method; a known one (a viewer page, a
        // file) answers its other methods 405 with Allow.
        if (
          method === "GET" || ["/nonexistent", "/no/such/page"].includes(path)
        ) {
          assert.notEqual(r.status, 405, `${method} ${path}`);
        }
        if (method !== "GET") {
          await r.body?.cancel();
          continue;
        }
        assert.equal(r.status, 404, path);
        assert.match(r.headers.get("content-type")!, /text\/html/, path);
        const page = await r.text();
        assert.match(page, /<h1>Page not found<\/h1>/, path);
        assert.match(page, /href="\/assets\/page.css"/);
        assert.ok(r.headers.get("content-security-policy") || true);
      }
      const asApi = await env.app.request(path, {
        headers: { accept: "application/json" },
      });
      assert.equal(asApi.status, 404);
      assert.equal((await asApi.json()).error.code, 404);
      const anyClient = await env.app.request(path);
      assert.equal((await anyClient.json()).error.code, 404, path);
    }
    const apiMiss = await env.app.request("/api/nothing", { headers: html });
    assert.equal((await apiMiss.json()).error.code, 404);
    // A path some route answers, with a method it does not: 405 with Allow, as before.
    const wrongMethod = await env.app.request("/api/1/upload", {
      method: "PUT",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(wrongMethod.status, 405);
    await wrongMethod.body?.cancel();

    const ico = await env.app.request("/favicon.ico");
    assert.equal(ico.status, 200);
    const icoBytes = new Uint8Array(await ico.arrayBuffer());
    assert.deepEqual([...icoBytes.slice(0, 4)], [0, 0, 1, 0]);
    // The PNG inside begins where the directory says.
    assert.deepEqual([...icoBytes.slice(22, 26)], [0x89, 0x50, 0x4e, 0x47]);
    const svg = await env.app.request("/favicon.svg");
    assert.match(await svg.text(), /^<svg /);
  } finally {
    await env.close();
  }
});

test("My images deletes one or several of the user's own images from its form with the session token, skips anyone else's, and goes back to the page it came from", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await userWithKey(env);
    const mine = await uploadMany(env, s.key, 30);
    const [theirs] = await uploadMany(env, other.key, 1, 70);
    const page = (q = "") =>
      env.app.request(`/images${q}`, { headers: { cookie: s.cookie } });
    const first = await page();
    assert.equal(first.status, 200);
    const doc = parse(await first.text());
    const boxes = elements(doc).filter((e) =>
      e.tagName === "input" && attr(e, "name") === "id" &&
      attr(e, "type") === "checkbox"
    );
    assert.equal(boxes.length, 24);
    assert.equal(attr(boxes[0], "value"), mine[29]);
    const text = JSON.stringify(elements(doc).map((e) => attr(e, "href")));
    assert.match(text, /\/images\?page=2/);
    const second = await (await page("?page=2")).text();
    assert.match(second, /Page 2 of 2/);
    // A page number or filter the API would refuse (160) shows the first page of all.
    for (
      const junk of ["?page=abc", "?page=0", "?page=100001", "?source=zip"]
    ) {
      const r = await page(junk);
      assert.equal(r.status, 200, junk);
      const html = await r.text();
      assert.match(html, /Page 1 of 2/, junk);
      assert.match(html, /30 images/, junk);
    }
    assert.match(second, new RegExp(mine[0]));

    const post = (ids: string[], headers: Record<string, string> = {}) =>
      sessionPost(env, s, "/images/delete", [
        ["back", "/images?page=2"],
        ...ids.map((id): [string, string] => ["id", id]),
      ], headers);
    const done = await post([mine[0], mine[1], theirs]);
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), "/images?page=2&deleted=2");
    const listed = await api(env, "/api/1/images?per_page=100", {
      headers: { authorization: `Bearer ${s.key}` },
    });
    assert.equal(listed.body.data.total, 28);
    const stillThere = await env.app.request(`/api/1/images/${theirs}`, {
      headers: { authorization: `Bearer ${other.key}` },
    });
    assert.equal(stillThere.status, 200);
    const notice = await (await page("?deleted=2")).text();
    assert.match(notice, /Deleted 2 images\./);

    // Another site's form, or one without the token, deletes nothing.
    const cross = await post([mine[2]], { origin: "https://evil.example" });
    assert.equal(cross.status, 403);
    const noToken = await env.app.request("/images/delete", {
      method: "POST",
      headers: {
        cookie: s.cookie,
        origin: ORIGIN,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ id: mine[2] }),
    });
    assert.equal(noToken.status, 403);
    const after = await env.app.request(`/api/1/images/${mine[2]}`, {
      headers: { authorization: `Bearer ${s.key}` },
    });
    assert.equal(after.status, 200);
    // A "back" elsewhere is not followed.
    const body = new URLSearchParams({
      _csrf: s.token,
      back: "https://evil.example/images",
      id: mine[3],
    });
    const away = await env.app.request("/images/delete", {
      method: "POST",
      headers: {
        cookie: s.cookie,
        origin: ORIGIN,
        "content-type": "application/x-www-form-urlencoded",
      },
      body,
    });
    assert.equal(away.headers.get("location"), "/images?deleted=1");
    // Someone with no images gets a way forward, not an empty grid.
    const fresh = await signedIn(env);
    const empty = await (await env.app.request("/images", {
      headers: { cookie: fresh.cookie },
    })).text();
    assert.match(empty, /No images here yet/);
    assert.match(empty, /href="\/screenshot"/);
    assert.doesNotMatch(empty, /Delete selected/);
    // The filters: on Screenshots, "All" goes back to all (it kept the filter) and the
    // others name theirs.
    const filtered = await (await env.app.request("/images?source=screenshot", {
      headers: { cookie: fresh.cookie },
    })).text();
    const nav = filtered.match(/<nav aria-label="Show">([\s\S]*?)<\/nav>/)![1];
    const hrefs = [...nav.matchAll(/href="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(hrefs, [
      "/images",
      "/images?source=upload",
      "/images?source=screenshot",
    ]);
    assert.match(nav, /aria-current="page"[^>]*>Screenshots|>Screenshots<\/a>/);
    // Signed out, the page sends people to log in.
    const anon = await env.app.request("/images");
    assert.equal(anon.status, 303);
    assert.equal(anon.headers.get("location"), "/login");
  } finally {
    await env.close();
  }
});

test("the viewer gives the owner download and delete, others neither; expiry reads in words; medium and thumbnail embeds are offered; no inline style anywhere", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const bytes = await makeImage("jpeg", { width: 2400, height: 1200 });
    const up = await upload(
      env,
      s.key,
      formWith([{ name: "wide.jpg", bytes }], { expiration: "3600" }),
    );
    const rec = up.body.data;
    env.clock.advance(60_000);
    const asOwner = await env.app.request(`/i/${rec.id}`, {
      headers: { cookie: s.cookie },
    });
    const ownerPage = await asOwner.text();
    assert.match(ownerPage, /expires in 59 min/);
    assert.match(ownerPage, />Download</);
    assert.match(ownerPage, /action="\/images\/delete"/);
    assert.match(ownerPage, /Log out/);
    assert.doesNotMatch(ownerPage, /style=/);
    const doc = parse(ownerPage);
    const img = elements(doc).find((e) =>
      e.tagName === "img" && attr(e, "alt") === "wide.jpg"
    );
    // The medium variant at its own size (1024 on the long side), not the 2400 px original,
    // as a path (issue #52: the page works at whatever address it was opened).
    assert.equal(attr(img, "src"), new URL(rec.medium.url).pathname);
    assert.equal(attr(img, "width"), "1024");
    assert.equal(attr(img, "height"), "512");
    const labels = elements(doc).filter((e) => e.tagName === "label").map((e) =>
      e.childNodes.map((n: { value?: string }) => n.value ?? "").join("")
    );
    for (
      const l of [
        "HTML (medium, linked)",
        "BBCode (thumbnail, linked)",
        "Markdown (thumbnail, linked)",
      ]
    ) assert.ok(labels.includes(l), l);
    const embed = elements(doc).find((e) =>
      e.tagName === "input" && /embed/.test(attr(e, "id") ?? "") &&
      (attr(e, "value") ?? "").startsWith("[url=") &&
      (attr(e, "value") ?? "").includes(".th.")
    );
    assert.equal(
      attr(embed, "value"),
      `[url=${rec.url_viewer}][img]${rec.thumb.url}[/img][/url]`,
    );

    const asStranger = await (await env.app.request(`/i/${rec.id}`)).text();
    assert.doesNotMatch(asStranger, />Download</);
    assert.doesNotMatch(asStranger, /\/images\/delete/);
    assert.match(asStranger, /Log in/);
    const other = await signedIn(env);
    const asOther = await (await env.app.request(`/i/${rec.id}`, {
      headers: { cookie: other.cookie },
    })).text();
    assert.doesNotMatch(asOther, /\/images\/delete/);
  } finally {
    await env.close();
  }
});

test("spans and expiry read as people say them", () => {
  assert.equal(humanSpan(59 * 60 + 59), "59 min");
  assert.equal(humanSpan(3600), "1 hour");
  assert.equal(humanSpan(2 * 86400 + 5), "2 days");
  assert.equal(humanSpan(45), "45 s");
  const now = new Date(0);
  assert.equal(expiryText(null, now), "kept until deleted");
  assert.equal(
    expiryText(new Date(30_000), now),
    "expires in under a minute",
  );
  assert.equal(expiryText(new Date(8 * 86400_000), now), "expires in 1 week");
});

test("My images finds by title, sorts (one choice of sort and direction) and narrows by album, keeps all of it in its page links and the form, and offers every link of the page in one codes box", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const album = (await apiCall(env, s.key, "POST", "/api/1/albums", {
      title: "Seaside",
    })).body.data;
    for (
      const [title, width, inAlbum] of [
        ["beach a.png", 30, true],
        ["beach b.png", 300, true],
        ["city.png", 60, false],
      ] as const
    ) {
      const form = formWith([{
        name: title,
        bytes: await makeImage("png", { width, height: 20 }),
      }]);
      if (inAlbum) form.append("album_id", album.id);
      env.clock.advance(1000);
      assert.equal((await upload(env, s.key, form)).status, 200);
    }
    const page = async (q: string) => {
      const res = await env.app.request(`/images${q}`, {
        headers: { cookie: s.cookie },
      });
      assert.equal(res.status, 200);
      const html = await res.text();
      const shown = [...html.matchAll(/<span class="title" title="([^"]+)"/g)]
        .map((m) => m[1]);
      return { html, shown };
    };
    assert.deepEqual((await page("")).shown, [
      "city.png",
      "beach b.png",
      "beach a.png",
    ]);
    const found = await page("?q=BEACH&sort_order=size.asc");
    assert.deepEqual(found.shown, ["beach a.png", "beach b.png"]);
    // The form shows what was asked; the album list offers the user's albums.
    assert.match(
      found.html,
      /<input id="find-q" type="search" name="q" value="BEACH"/,
    );
    assert.match(found.html, /<option value="size\.asc" selected>/);
    assert.match(
      found.html,
      new RegExp(`<option value="${album.id}" >Seaside`),
    );
    const inAlbum = await page(`?album=${album.id}&sort_order=name.desc`);
    assert.deepEqual(inAlbum.shown, ["beach b.png", "beach a.png"]);
    assert.deepEqual((await page("?album=none")).shown, ["city.png"]);
    // Every link of the page in one box, in the page's order.
    const data = found.html.match(
      /<script type="application\/json" id="page-codes-data">([^<]*)<\/script>/,
    );
    assert.ok(data);
    const codes = JSON.parse(data[1]) as Record<string, [string, string][]>;
    assert.equal(codes["Direct link"].length, 2);
    assert.match(found.html, /<textarea [^>]*data-select-from="bulk"/);
    // Page links keep the search: 25 images need a second page of 24.
    const more = await uploadManyTitled(env, s.key, 25);
    assert.equal(more, 25);
    const first = await page("?q=many&sort_order=name.asc");
    assert.equal(first.shown.length, 24);
    assert.match(
      first.html,
      /href="\/images\?page=2&amp;q=many&amp;sort=name&amp;order=asc"/,
    );
    // Names sort as text: "many 9" comes after "many 24".
    const second = await page("?page=2&q=many&sort=name&order=asc");
    assert.deepEqual(second.shown, ["many 9.png"]);
    // Nonsense in the query falls back to defaults rather than an error page.
    assert.equal(
      (await page("?sort_order=colour.up&album=../x")).shown.length,
      24,
    );
  } finally {
    await env.close();
  }
});

/** Uploads `n` images titled "many <i>.png"; how many were stored. */
async function uploadManyTitled(env: TestEnv, key: string, n: number) {
  let stored = 0;
  for (let i = 0; i < n; i++) {
    env.clock.advance(1000);
    const r = await upload(
      env,
      key,
      formWith([{
        name: `many ${i}.png`,
        bytes: await makeImage("png", { width: 100 + i, height: 11 }),
      }]),
    );
    if (r.status === 200) stored++;
  }
  return stored;
}

/**
 * A session form POST (urlencoded, our origin unless `headers` say otherwise) with the
 * user's token.
 */
function sessionPost(
  env: TestEnv,
  s: { cookie: string; token: string },
  path: string,
  fields: [string, string][],
  headers: Record<string, string> = {},
) {
  const body = new URLSearchParams([["_csrf", s.token], ...fields]);
  return env.app.request(path, {
    method: "POST",
    headers: {
      cookie: s.cookie,
      origin: ORIGIN,
      "content-type": "application/x-www-form-urlencoded",
      ...headers,
    },
    body,
  });
}

test("the site organises: Albums lists yours and makes new ones, My images moves the ticked images into an album (or none), and the viewer edits title, description and album; only your own images and albums, only with the form token", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await signedIn(env);
    const signedOut = await env.app.request("/albums");
    assert.deepEqual(
      [signedOut.status, signedOut.headers.get("location")],
      [303, "/login"],
    );
    const empty = await (await env.app.request("/albums", {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(empty, /No albums yet/);
    const made = await sessionPost(env, s, "/albums/new", [
      ["title", "Garden"],
      ["description", "Spring"],
      ["privacy", "unlisted"],
    ]);
    assert.deepEqual([made.status, made.headers.get("location")], [
      303,
      "/albums",
    ]);
    const albums = await json(
      await env.app.request("/api/1/albums", {
        headers: { authorization: `Bearer ${s.key}` },
      }),
    );
    const garden = albums.body.data.albums[0];
    assert.deepEqual([garden.title, garden.description, garden.privacy], [
      "Garden",
      "Spring",
      "unlisted",
    ]);
    assert.equal(
      (await sessionPost(env, s, "/albums/new", [["title", " "]])).status,
      400,
    );
    const noToken = await env.app.request("/albums/new", {
      method: "POST",
      headers: {
        cookie: s.cookie,
        origin: ORIGIN,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "title=Sneaky",
    });
    assert.equal(noToken.status, 403);

    const mine = await uploadMany(env, s.key, 3);
    const [theirs] = await uploadMany(env, other.key, 1, 50);
    const moved = await sessionPost(env, s, "/images/move", [
      ["album", garden.id],
      ["back", "/images?page=1"],
      ["id", mine[0]],
      ["id", mine[2]],
      ["id", theirs],
    ]);
    assert.deepEqual([moved.status, moved.headers.get("location")], [
      303,
      "/images?page=1&moved=2",
    ]);
    const inGarden = await json(
      await env.app.request(`/api/1/albums/${garden.id}/images`, {
        headers: { authorization: `Bearer ${s.key}` },
      }),
    );
    assert.deepEqual(
      inGarden.body.data.images.map((i: { id: string }) => i.id).sort(),
      [mine[0], mine[2]].sort(),
    );
    const listedPage = await (await env.app.request("/images?moved=2", {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(listedPage, /Moved 2 images/);
    assert.match(listedPage, /Albums<\/a>/, "the navigation names Albums");
    // Someone else's album is refused; their image was skipped above.
    const intoTheirs = await sessionPost(env, other, "/images/move", [
      ["album", garden.id],
      ["id", theirs],
    ]);
    assert.equal(intoTheirs.status, 400);
    const out = await sessionPost(env, s, "/images/move", [
      ["album", ""],
      ["id", mine[2]],
    ]);
    assert.equal(out.headers.get("location"), "/images?moved=1");

    // The viewer's edit form: the owner sees it; the change shows at once.
    const viewer = await (await env.app.request(`/i/${mine[1]}`, {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(viewer, /<form method="post" action="\/images\/edit">/);
    assert.ok(
      !(await (await env.app.request(`/i/${mine[1]}`)).text()).includes(
        "/images/edit",
      ),
      "others get no edit form",
    );
    const edited = await sessionPost(env, s, "/images/edit", [
      ["id", mine[1]],
      ["title", "Roses"],
      ["description", "In May"],
      ["album", garden.id],
    ]);
    assert.deepEqual([edited.status, edited.headers.get("location")], [
      303,
      `/i/${mine[1]}`,
    ]);
    const after = await (await env.app.request(`/i/${mine[1]}`)).text();
    assert.match(after, /<h1>Roses<\/h1>/);
    assert.match(after, /<p>In May<\/p>/);
    assert.match(
      after,
      new RegExp(`In the album <a href="/a/${garden.id}">Garden</a>`),
    );
    const theirsEdit = await sessionPost(env, other, "/images/edit", [
      ["id", mine[1]],
      ["title", "Mine"],
    ]);
    assert.equal(theirsEdit.status, 404);
    const blank = await sessionPost(env, s, "/images/edit", [
      ["id", mine[1]],
      ["title", ""],
    ]);
    assert.equal(blank.status, 400);
    const record = await json(
      await env.app.request(`/api/1/images/${mine[1]}`, {
        headers: { authorization: `Bearer ${s.key}` },
      }),
    );
    assert.deepEqual(
      [record.body.data.title, record.body.data.album_id],
      ["Roses", garden.id],
    );
  } finally {
    await env.close();
  }
});

test("an album's owner edits it and deletes it from its page (its images stay, or go when ticked); others see no such forms and cannot post them", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await signedIn(env);
    const create = async (title: string) =>
      await json(
        await env.app.request("/api/1/albums", {
          method: "POST",
          headers: {
            authorization: `Bearer ${s.key}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ title }),
        }),
      );
    const album = (await create("Old name")).body.data;
    const mine = await uploadMany(env, s.key, 2);
    await sessionPost(env, s, "/images/move", [
      ["album", album.id],
      ["id", mine[0]],
      ["id", mine[1]],
    ]);
    const ownerPage = await (await env.app.request(`/a/${album.id}`, {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(ownerPage, /action="\/albums\/edit"/);
    assert.match(ownerPage, /action="\/albums\/delete"/);
    const publicPage = await (await env.app.request(`/a/${album.id}`)).text();
    assert.ok(!publicPage.includes("/albums/edit"));
    assert.ok(!publicPage.includes("/albums/delete"));

    const edited = await sessionPost(env, s, "/albums/edit", [
      ["id", album.id],
      ["title", "New name"],
      ["description", "Now described"],
      ["privacy", "unlisted"],
    ]);
    assert.deepEqual([edited.status, edited.headers.get("location")], [
      303,
      `/a/${album.id}`,
    ]);
    const after = await (await env.app.request(`/a/${album.id}`)).text();
    assert.match(after, /<h1>New name<\/h1>/);
    assert.match(after, /Now described/);
    assert.match(after, /<meta name="robots" content="noindex"/);
    // Someone else's album: 404 to edit and to delete, and nothing changed.
    for (const path of ["/albums/edit", "/albums/delete"]) {
      const r = await sessionPost(env, other, path, [
        ["id", album.id],
        ["title", "Taken"],
      ]);
      assert.equal(r.status, 404, path);
    }
    assert.match(
      await (await env.app.request(`/a/${album.id}`)).text(),
      /<h1>New name<\/h1>/,
    );
    // Deleted without its images: they stay, in no album.
    const gone = await sessionPost(env, s, "/albums/delete", [[
      "id",
      album.id,
    ]]);
    assert.deepEqual([gone.status, gone.headers.get("location")], [
      303,
      "/albums?deleted=0",
    ]);
    assert.match(
      await (await env.app.request("/albums?deleted=0", {
        headers: { cookie: s.cookie },
      })).text(),
      /role="status">Deleted the album\.</,
    );
    assert.equal((await env.app.request(`/a/${album.id}`)).status, 404);
    const kept = await json(
      await env.app.request(`/api/1/images/${mine[0]}`, {
        headers: { authorization: `Bearer ${s.key}` },
      }),
    );
    assert.deepEqual([kept.status, kept.body.data.album_id], [200, null]);
    // Deleted with its images: they go.
    const second = (await create("Second")).body.data;
    await sessionPost(env, s, "/images/move", [
      ["album", second.id],
      ["id", mine[1]],
    ]);
    const both = await sessionPost(env, s, "/albums/delete", [
      ["id", second.id],
      ["with_images", "on"],
    ]);
    assert.match(
      await (await env.app.request(both.headers.get("location")!, {
        headers: { cookie: s.cookie },
      })).text(),
      /Deleted the album and its 1 image\./,
    );
    // A password the browser filled in by itself, with Public chosen: not read.
    const autofilled = await sessionPost(env, s, "/albums/new", [
      ["title", "Public one"],
      ["privacy", "public"],
      ["password", "the saved login password"],
    ]);
    assert.equal(autofilled.status, 303);
    const dropped = await env.app.request(`/api/1/images/${mine[1]}`, {
      headers: { authorization: `Bearer ${s.key}` },
    });
    assert.equal(dropped.status, 404);
    await dropped.body?.cancel();
  } finally {
    await env.close();
  }
});

test("My images sets who sees the ticked images at once (only your own), and a private one is then 404 to others", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await signedIn(env);
    const mine = await uploadMany(env, s.key, 2);
    const [theirs] = await uploadMany(env, other.key, 1, 60);
    const set = await sessionPost(env, s, "/images/privacy", [
      ["privacy", "private"],
      ["back", "/images"],
      ["id", mine[0]],
      ["id", theirs],
    ]);
    assert.deepEqual([set.status, set.headers.get("location")], [
      303,
      "/images?changed=1",
    ]);
    const notice = await (await env.app.request("/images?changed=1", {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(notice, /Changed who sees 1 image\./);
    const file = async (id: string, cookie?: string) => {
      const r = await env.app.request(`/${id}.png`, {
        headers: cookie ? { cookie } : {},
      });
      await r.body?.cancel();
      return r.status;
    };
    assert.equal(await file(mine[0]), 404);
    assert.equal(await file(mine[0], s.cookie), 200);
    assert.equal(await file(mine[1]), 200);
    assert.equal(await file(theirs), 200, "someone else's image is untouched");
    const bad = await sessionPost(env, s, "/images/privacy", [
      ["privacy", "secret"],
      ["id", mine[1]],
    ]);
    assert.equal(bad.status, 400);
  } finally {
    await env.close();
  }
});

test("My images edits each image inline: its card's form saves title, description, album and who sees it (a password too), and goes back to the page it was on, never elsewhere", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const [id] = await uploadMany(env, s.key, 1);
    const album = (await apiCall(env, s.key, "POST", "/api/1/albums", {
      title: "Inline",
    })).body.data;
    const page = await (await env.app.request("/images?page=1", {
      headers: { cookie: s.cookie },
    })).text();
    // The card holds the form, filled with what the image has.
    assert.match(page, new RegExp(`id="edit-${id}-title"[^>]*value="[^"]+"`));
    assert.match(page, new RegExp(`id="edit-${id}-privacy"`));
    assert.match(page, new RegExp(`id="edit-${id}-album"`));
    assert.match(page, /<input type="hidden" name="back" value="\/images/);

    const saved = await sessionPost(env, s, "/images/edit", [
      ["id", id],
      ["back", "/images?page=1&source=upload"],
      ["title", "From the card"],
      ["description", "Edited inline"],
      ["album", album.id],
      ["privacy", "password"],
      ["password", "card secret"],
    ]);
    assert.deepEqual([saved.status, saved.headers.get("location")], [
      303,
      "/images?page=1&source=upload&edited=1",
    ]);
    const row = await env.deps.database.db.selectFrom("images")
      .select(["title", "description", "album_id", "privacy", "password_hash"])
      .where("id", "=", id).executeTakeFirstOrThrow();
    assert.deepEqual(
      [row.title, row.description, row.album_id, row.privacy],
      ["From the card", "Edited inline", album.id, "password"],
    );
    assert.match(row.password_hash ?? "", /^scrypt\$/);
    const back = await (await env.app.request(saved.headers.get("location")!, {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(back, /Saved\./);
    // A `back` that is not My images goes to My images, never off the site.
    for (const elsewhere of ["https://evil.example/x", "//evil.example/x"]) {
      const res = await sessionPost(env, s, "/images/edit", [
        ["id", id],
        ["back", elsewhere],
        ["title", "Again"],
        ["privacy", "public"],
      ]);
      assert.equal(res.headers.get("location"), "/images?edited=1");
    }
    // Password without a password, for an image that has none: 160, nothing changed.
    const refused = await sessionPost(env, s, "/images/edit", [
      ["id", id],
      ["back", "/images"],
      ["title", "No"],
      ["privacy", "password"],
    ]);
    assert.equal(refused.status, 400);
    await refused.body?.cancel();
    const after = await env.deps.database.db.selectFrom("images")
      .select("title").where("id", "=", id).executeTakeFirstOrThrow();
    assert.equal(after.title, "Again");
  } finally {
    await env.close();
  }
});

test("My images sets when the ticked images are deleted (Delete after → Set expiry; Never keeps them), the viewer's edit form changes one image's expiry or leaves it as it is, and a bulk action with nothing ticked says to tick the images first, not 'Moved 0 images'", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await signedIn(env);
    const mine = await uploadMany(env, s.key, 2);
    const [theirs] = await uploadMany(env, other.key, 1, 50);
    const expiresAt = async (id: string) =>
      (await env.deps.database.db.selectFrom("images").select("expires_at")
        .where("id", "=", id).executeTakeFirstOrThrow()).expires_at;
    const set = await sessionPost(env, s, "/images/expiry", [
      ["expiration", "86400"],
      ["back", "/images?page=1"],
      ["id", mine[0]],
      ["id", mine[1]],
      ["id", theirs],
    ]);
    assert.deepEqual([set.status, set.headers.get("location")], [
      303,
      "/images?page=1&expiry=2",
    ]);
    const now = env.clock.now().getTime();
    for (const id of mine) {
      assert.equal(
        new Date((await expiresAt(id))!).getTime(),
        now + 86_400_000,
      );
    }
    assert.equal(await expiresAt(theirs), null, "someone else's is skipped");
    const page = await (await env.app.request("/images?expiry=2", {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(page, /Set when 2 images are deleted\./);
    assert.match(page, /expires in 1 day/);
    assert.match(page, /formaction="\/images\/expiry"/);

    // "Never: keep it" takes the expiry away.
    await sessionPost(env, s, "/images/expiry", [
      ["expiration", "0"],
      ["id", mine[1]],
    ]);
    assert.equal(await expiresAt(mine[1]), null);

    // The viewer's form: "As it is" leaves it; a choice changes it.
    const edit = (expiration: string) =>
      sessionPost(env, s, "/images/edit", [
        ["id", mine[0]],
        ["title", "kept title"],
        ["description", ""],
        ["album", ""],
        ["expiration", expiration],
      ]);
    const before = await expiresAt(mine[0]);
    assert.equal((await edit("")).status, 303);
    assert.deepEqual(await expiresAt(mine[0]), before);
    await edit("3600");
    assert.equal(
      new Date((await expiresAt(mine[0]))!).getTime(),
      now + 3_600_000,
    );
    const viewer = await (await env.app.request(`/i/${mine[0]}`, {
      headers: { cookie: s.cookie },
    })).text();
    assert.match(viewer, /<select id="edit-expiration" name="expiration">/);
    assert.equal((await edit("12")).status, 400, "not one of the bounds");

    // Nothing ticked: no "Moved 0 images."
    for (
      const [path, field] of [
        ["/images/move", ["album", ""]],
        ["/images/privacy", ["privacy", "private"]],
        ["/images/expiry", ["expiration", "3600"]],
      ] as const
    ) {
      const none = await sessionPost(env, s, path, [[...field]]);
      const back = await (await env.app.request(
        none.headers.get("location")!,
        { headers: { cookie: s.cookie } },
      )).text();
      assert.match(back, /tick the images first/, path);
      assert.doesNotMatch(back, /Moved 0|who sees 0|when 0/, path);
    }
  } finally {
    await env.close();
  }
});

test("a site form that breaks a rule goes back to its page with the message (beside the field, by the page script), never a page of JSON: a 3-letter password on My images, an empty title in an inline edit, a password album without a password", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const [id] = await uploadMany(env, s.key, 1);
    const browser = {
      accept: "text/html,application/xhtml+xml",
      referer: `${ORIGIN}/images?page=1`,
    };
    const followBack = async (res: Response) => {
      assert.equal(res.status, 303, await res.clone().text());
      const to = res.headers.get("location")!;
      const page = await (await env.app.request(to, {
        headers: { cookie: s.cookie, accept: "text/html" },
      })).text();
      return { to: new URL(to, ORIGIN), page };
    };

    const short = await followBack(
      await sessionPost(env, s, "/images/privacy", [
        ["privacy", "password"],
        ["password", "abc"],
        ["id", id],
      ], browser),
    );
    assert.equal(short.to.pathname, "/images");
    assert.equal(short.to.searchParams.get("page"), "1");
    assert.equal(short.to.searchParams.get("form_field"), "password");
    assert.equal(short.to.searchParams.get("form_action"), "/images/privacy");
    assert.match(
      short.page,
      /<p class="notice error" role="alert" id="form-error" data-field="password" data-action="\/images\/privacy"[^>]*>Password: at least 4 characters<\/p>/,
    );
    assert.doesNotMatch(short.page, /"code":160/);
    assert.equal(short.page.split('id="form-error"').length, 2, "shown once");

    const untitled = await followBack(
      await sessionPost(env, s, "/images/edit", [
        ["id", id],
        ["title", " "],
        ["back", "/images?page=1"],
      ], browser),
    );
    assert.equal(untitled.to.searchParams.get("form_field"), "title");
    assert.equal(untitled.to.searchParams.get("form_id"), id);
    assert.match(untitled.page, /id="form-error"[^>]*>Title: give a title</);

    const album = await followBack(
      await sessionPost(env, s, "/albums/new", [
        ["title", "Locked"],
        ["privacy", "password"],
        ["password", ""],
      ], { ...browser, referer: `${ORIGIN}/albums` }),
    );
    assert.equal(album.to.pathname, "/albums");
    assert.match(album.page, /id="form-error" data-field="password"/);

    // The markup is escaped, and API clients keep the envelope.
    const api = await sessionPost(env, s, "/images/privacy", [
      ["privacy", "password"],
      ["password", "abc"],
      ["id", id],
    ]);
    assert.equal(api.status, 400);
    assert.equal((await api.json()).error.code, 160);
    const hostile = await (await env.app.request(
      "/images?form_error=%3Cscript%3Ex%3C%2Fscript%3E&form_field=%22%3E",
      { headers: { cookie: s.cookie, accept: "text/html" } },
    )).text();
    assert.match(hostile, /&#60;script&#62;x&#60;\/script&#62;/);
    assert.match(hostile, /data-field="&#34;&#62;"/);
    // Only a site's urlencoded form goes back: an upload's body is never read again.
    assert.equal(
      isSiteForm("POST", "/1/upload", 400, "multipart/form-data; boundary=x"),
      false,
    );
    assert.equal(
      isSiteForm(
        "POST",
        "/api/1/albums",
        400,
        "application/x-www-form-urlencoded",
      ),
      false,
    );
    assert.equal(
      isSiteForm(
        "POST",
        "/images/privacy",
        400,
        "application/x-www-form-urlencoded",
      ),
      true,
    );
    // Another site's page is never the way back.
    const elsewhere = await sessionPost(env, s, "/images/privacy", [
      ["privacy", "password"],
      ["password", "abc"],
      ["id", id],
      ["back", "//evil.example/x"],
    ], { ...browser, referer: "https://evil.example/x" });
    assert.equal(elsewhere.status, 400);
  } finally {
    await env.close();
  }
});

test("a form posted after signing out in another tab is not lost silently: the log-in page says the change was not saved and goes back to the form's page after logging in; never to another site's", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const [id] = await uploadMany(env, s.key, 1);
    // The other tab logs out: this session ends.
    await sessionPost(env, s, "/logout", []);
    const lost = await sessionPost(env, s, "/images/edit", [
      ["id", id],
      ["title", "new title"],
    ], { referer: `${ORIGIN}/i/${id}` });
    assert.equal(lost.status, 303);
    const to = lost.headers.get("location")!;
    assert.equal(to, `/login?signed_out=1&next=%2Fi%2F${id}`);
    const page = await (await env.app.request(to)).text();
    assert.match(page, /so that change was not saved/);
    assert.match(page, new RegExp(`name="next" value="/i/${id}"`));
    const logIn = (next: string) =>
      env.app.request("/login", {
        method: "POST",
        headers: {
          origin: ORIGIN,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          email: s.user.email,
          password: "correct horse battery",
          next,
        }),
      });
    const login = await logIn(`/i/${id}`);
    assert.deepEqual([login.status, login.headers.get("location")], [
      303,
      `/i/${id}`,
    ]);
    for (const next of ["//evil.example/x", "https://evil.example/"]) {
      const elsewhere = await logIn(next);
      const where = elsewhere.headers.get("location")!;
      assert.ok(where.startsWith("/") && !where.startsWith("//"), where);
    }
  } finally {
    await env.close();
  }
});

test("the site sets an album's cover from its page (Make cover on each image, the cover marked) and orders the Albums page with ↑ and ↓, only for the owner", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const other = await signedIn(env);
    const album = async (title: string) =>
      (await apiCall(env, s.key, "POST", "/api/1/albums", { title })).body.data;
    const first = await album("First");
    env.clock.advance(1000);
    const second = await album("Second");
    const ids = await uploadMany(env, s.key, 2);
    await sessionPost(env, s, "/images/move", [
      ["album", first.id],
      ["id", ids[0]],
      ["id", ids[1]],
    ]);
    const albumOf = async (id: string) =>
      (await apiCall(env, s.key, "GET", `/api/1/albums/${id}`)).body.data;

    // The newest image is the cover until one is made it.
    const page = await (await env.app.request(`/a/${first.id}`, {
      headers: { cookie: s.cookie },
    })).text();
    assert.equal(page.match(/The album(&#39;|')s cover/g)?.length, 1);
    assert.match(page, new RegExp(`name="image" value="${ids[0]}"`));
    const made = await sessionPost(env, s, "/albums/cover", [
      ["id", first.id],
      ["image", ids[0]],
    ]);
    assert.deepEqual([made.status, made.headers.get("location")], [
      303,
      `/a/${first.id}`,
    ]);
    assert.equal((await albumOf(first.id)).cover_image_id, ids[0]);
    assert.match(
      await (await env.app.request(`/a/${first.id}`, {
        headers: { cookie: s.cookie },
      })).text(),
      new RegExp(`name="image" value="${ids[1]}"`),
    );
    // Not someone else's album, nor an image outside it.
    assert.equal(
      (await sessionPost(env, other, "/albums/cover", [
        ["id", first.id],
        ["image", ids[1]],
      ])).status,
      404,
    );
    const visitor = await (await env.app.request(`/a/${first.id}`)).text();
    assert.doesNotMatch(visitor, /Make cover/);

    // Newest first at the start; ↑ on First puts it before Second.
    const order = async () =>
      [...(await (await env.app.request("/albums", {
        headers: { cookie: s.cookie },
      })).text()).matchAll(/<a class="title" href="[^"]+">([^<]+)<\/a>/g)]
        .map((m) => m[1]);
    assert.deepEqual(await order(), ["Second", "First"]);
    await sessionPost(env, s, "/albums/order", [["id", first.id], [
      "dir",
      "up",
    ]]);
    assert.deepEqual(await order(), ["First", "Second"]);
    assert.equal((await albumOf(first.id)).position, 0);
    assert.equal((await albumOf(second.id)).position, 1);
    // Past either end nothing moves.
    await sessionPost(env, s, "/albums/order", [["id", first.id], [
      "dir",
      "up",
    ]]);
    assert.deepEqual(await order(), ["First", "Second"]);
    await sessionPost(env, s, "/albums/order", [["id", first.id], [
      "dir",
      "down",
    ]]);
    assert.deepEqual(await order(), ["Second", "First"]);
    assert.equal(
      (await sessionPost(env, other, "/albums/order", [["id", first.id], [
        "dir",
        "up",
      ]])).status,
      404,
    );
  } finally {
    await env.close();
  }
});

test("account self-service: a new password asks the current one (wrong: said beside the field) and ends every other sign-in, the e-mail changes with the password asked again (not to one another account has), and Sign out everywhere else ends the others but this one", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const taken = await signedIn(env);
    const { db } = env.deps.database;
    const elsewhere = await createSession(db, s.user.id, env.clock);
    const signedInThere = async () =>
      (await getSession(db, elsewhere, env.clock)) !== null;
    const browser = {
      accept: "text/html",
      referer: `${ORIGIN}/account`,
    };
    const back = async (res: Response) => {
      assert.equal(res.status, 303);
      const to = res.headers.get("location")!;
      return {
        to,
        page: await (await env.app.request(to, {
          headers: { cookie: s.cookie, accept: "text/html" },
        })).text(),
      };
    };

    const wrong = await back(
      await sessionPost(env, s, "/account/password", [
        ["current_password", "not it at all"],
        ["new_password", "a brand new password"],
      ], browser),
    );
    assert.match(wrong.to, /form_field=current_password/);
    assert.match(wrong.page, /that is not your current password/);
    assert.equal(await signedInThere(), true);

    const changed = await back(
      await sessionPost(env, s, "/account/password", [
        ["current_password", "correct horse battery"],
        ["new_password", "a brand new password"],
      ], browser),
    );
    assert.match(
      changed.page,
      /Your password is changed; 1 other sign-in ended\./,
    );
    assert.equal(await signedInThere(), false, "the other browser is out");
    assert.ok(
      await getSession(db, s.cookie.slice(4), env.clock),
      "this one stays",
    );
    await assert.rejects(
      verifyLogin(db, s.user.email, "correct horse battery", env.clock, 10),
    );
    await verifyLogin(db, s.user.email, "a brand new password", env.clock, 10);

    const clash = await back(
      await sessionPost(env, s, "/account/email", [
        ["email", taken.user.email.toUpperCase()],
        ["password", "a brand new password"],
      ], browser),
    );
    assert.match(clash.page, /another account has this e-mail/);
    const moved = await back(
      await sessionPost(env, s, "/account/email", [
        ["email", "renamed@example.com"],
        ["password", "a brand new password"],
      ], browser),
    );
    assert.match(moved.page, /Your e-mail is changed\./);
    assert.match(moved.page, /Signed in as <strong>renamed@example.com/);

    const another = await createSession(db, s.user.id, env.clock);
    const out = await back(
      await sessionPost(env, s, "/account/sessions", [], browser),
    );
    assert.match(out.page, /Signed out 1 other sign-in\./);
    assert.equal(await getSession(db, another, env.clock), null);
    assert.ok(await getSession(db, s.cookie.slice(4), env.clock));
  } finally {
    await env.close();
  }
});

test("deleting an account (the site's form with the password asked again, or DELETE /api/1/account with its key) removes its images with their bytes, its albums, keys and sign-ins; a wrong password deletes nothing; the only admin cannot", async () => {
  const env = await testEnv();
  try {
    const s = await signedIn(env);
    const ids = await uploadMany(env, s.key, 2);
    const album = await apiCall(env, s.key, "POST", "/api/1/albums", {
      title: "Mine",
    });
    await sessionPost(env, s, "/images/move", [
      ["album", album.body.data.id],
      ["id", ids[0]],
    ]);
    const { db } = env.deps.database;
    const rows = await db.selectFrom("images").selectAll()
      .where("id", "in", ids).execute();
    const keys = rows.map((r) => `${r.id}.${r.ext}`);
    for (const k of keys) assert.ok(await env.deps.store.stat(k), k);

    const wrong = await sessionPost(env, s, "/account/delete", [
      ["password", "not my password"],
    ], { accept: "text/html", referer: `${ORIGIN}/account` });
    assert.equal(wrong.status, 303);
    assert.match(wrong.headers.get("location")!, /form_field=password/);
    assert.ok(await env.deps.store.stat(keys[0]), "nothing deleted");

    const gone = await sessionPost(env, s, "/account/delete", [
      ["password", "correct horse battery"],
    ], { accept: "text/html" });
    assert.equal(gone.status, 200);
    assert.match(await gone.text(), /It is gone with its 2 images/);
    assert.match(gone.headers.get("set-cookie") ?? "", /sid=;/);
    for (const k of keys) assert.equal(await env.deps.store.stat(k), null, k);
    assert.equal(
      (await db.selectFrom("albums").select("id")
        .where("user_id", "=", s.user.id).execute()).length,
      0,
    );
    const keyNow = await apiCall(env, s.key, "GET", "/api/1/account");
    assert.equal(keyNow.status, 401);
    assert.equal(keyNow.body.error.code, 110, "the key is revoked");
    assert.equal(await getSession(db, s.cookie.slice(4), env.clock), null);

    // Through the API, with the key.
    const t = await signedIn(env);
    await uploadMany(env, t.key, 1, 40);
    const viaApi = await apiCall(env, t.key, "DELETE", "/api/1/account");
    assert.equal(viaApi.status, 200);
    assert.deepEqual(viaApi.body.data, { deleted: true, images: 1 });
    assert.equal(
      (await apiCall(env, t.key, "GET", "/api/1/account")).status,
      401,
      "the key stops at once on this instance",
    );

    // The only admin cannot.
    const admin = await signedIn(env);
    await db.updateTable("users").set({ role: "admin" })
      .where("id", "=", admin.user.id).execute();
    const refused = await apiCall(env, admin.key, "DELETE", "/api/1/account");
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.details[0].message, /only admin/);
  } finally {
    await env.close();
  }
});

/** A filesystem store whose deletes fail (S3 away) once `failing` is set. */
class FailingDeletes extends FsStore {
  failing = false;
  override delete(key: string) {
    if (this.failing) return Promise.reject(unavailable("store"));
    return super.delete(key);
  }
}

test("an account deletion the store fails part-way is answered 503, and the sweeps remove the rest's bytes (the expiry sweep the images it never reached, the orphan sweep the one it was at): nothing of a deleted account stays stored", async () => {
  const dir = await Deno.makeTempDir();
  const store = new FailingDeletes(dir);
  const env = await testEnv({ store });
  try {
    const s = await signedIn(env);
    const ids = await uploadMany(env, s.key, 2);
    const { db } = env.deps.database;
    const rows = await db.selectFrom("images").selectAll()
      .where("id", "in", ids).execute();
    store.failing = true;
    const answer = await apiCall(env, s.key, "DELETE", "/api/1/account");
    assert.equal(answer.status, 503);
    assert.equal(answer.body.error.code, 250);
    for (const r of rows) assert.ok(await store.stat(`${r.id}.${r.ext}`));
    assert.equal(
      (await apiCall(env, s.key, "GET", "/api/1/account")).status,
      401,
      "the account is gone",
    );
    store.failing = false;
    // The image the deletion never reached is past its time: the expiry sweep takes it.
    assert.equal(await sweepExpired(db, store, env.clock), 1);
    // The one whose row was marked before its delete failed is the orphan sweep's.
    env.clock.advance(Date.now() - env.clock.now().getTime() + 86_400_000);
    await sweepOrphans(db, store, env.clock, 0);
    for (const r of rows) {
      assert.equal(await store.stat(`${r.id}.${r.ext}`), null);
    }
  } finally {
    await env.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
