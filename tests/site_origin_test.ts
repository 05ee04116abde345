import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  json,
  signedInAccount,
  test,
  type TestEnv,
  testEnv,
} from "./helpers.ts";
import { originOfRequest } from "../services/runtime/link_base.ts";
import { sitePath } from "../routes/pages/site_links.ts";
import { startupLine } from "../server/composition.ts";
import { loadConfig } from "../schemas/config.ts";

/**
 * Issue #52: the site at any address. With BASE_URL unset the links follow the origin a
 * request was sent to; with it set they are its; the pages link themselves relatively.
 */

let width = 900;

/** Uploads a new PNG (a new size each time: no duplicate) at `origin`; the record. */
async function uploadAt(
  env: TestEnv,
  origin: string,
  key: string,
  fields: Record<string, string> = {},
) {
  const { privacy, ...rest } = fields;
  const form = formWith([{
    name: "a.png",
    bytes: await makeImage("png", { width: width++ }),
  }]);
  for (const [k, v] of Object.entries(rest)) form.append(k, v);
  const res = await json(
    await env.app.request(`${origin}/api/1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    }),
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  if (!privacy) return res.body.data;
  // Privacy is set after the upload (ImgBB's upload has no such field).
  const set = await json(
    await env.app.request(`${origin}/api/1/images/${res.body.data.id}`, {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ privacy }),
    }),
  );
  assert.equal(set.status, 200, JSON.stringify(set.body));
  assert.equal(set.body.data.privacy, privacy);
  return set.body.data;
}

/** Every URL-looking value in a record, flattened. */
function urlsOf(rec: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string" && /^https?:\/\//.test(v)) out.push(v);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(rec);
  return out;
}

test("with BASE_URL unset, the links an upload answers follow the address the request was sent to", async () => {
  const env = await testEnv({ env: { BASE_URL: undefined } });
  try {
    const { key } = await signedInAccount(env);
    for (const origin of ["http://photos.lan:8080", "http://127.0.0.2:9000"]) {
      const rec = await uploadAt(env, origin, key);
      assert.equal(rec.url_viewer, `${origin}/i/${rec.id}`);
      assert.equal(rec.url, `${origin}/${rec.id}.png`);
      assert.match(rec.delete_url, new RegExp(`^${origin}/delete/${rec.id}/`));
      const urls = urlsOf(rec);
      assert.ok(urls.length >= 7, urls.join(" "));
      for (const u of urls) assert.ok(u.startsWith(`${origin}/`), u);
      // The link answers at that address: the same service, whatever its name.
      const file = await env.app.request(rec.thumb.url);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get("content-type"), "image/png");
      await file.body?.cancel();
    }
    // Albums too, listed at one address and read at another.
    const made = await json(
      await env.app.request("http://photos.lan:8080/api/1/albums", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ title: "Trip" }),
      }),
    );
    assert.equal(made.status, 200);
    assert.equal(
      made.body.data.url_viewer,
      `http://photos.lan:8080/a/${made.body.data.id}`,
    );
    const again = await json(
      await env.app.request(
        `http://127.0.0.2:9000/api/1/albums/${made.body.data.id}`,
        { headers: { authorization: `Bearer ${key}` } },
      ),
    );
    assert.equal(
      again.body.data.url_viewer,
      `http://127.0.0.2:9000/a/${made.body.data.id}`,
    );
  } finally {
    await env.close();
  }
});

test("with BASE_URL set, the links are BASE_URL's at whatever address the request came", async () => {
  const env = await testEnv({
    env: { BASE_URL: "https://img.example.com" },
  });
  try {
    const { key } = await signedInAccount(env);
    const rec = await uploadAt(env, "http://127.0.0.2:9000", key);
    const urls = urlsOf(rec);
    assert.ok(urls.length >= 7);
    for (const u of urls) {
      assert.ok(u.startsWith("https://img.example.com/"), u);
    }
  } finally {
    await env.close();
  }
});

test("with IMAGE_HOST_URL set and BASE_URL unset, image links keep IMAGE_HOST_URL while page links follow the request", async () => {
  const env = await testEnv({
    env: { BASE_URL: undefined, IMAGE_HOST_URL: "http://cdn.lan:8081" },
  });
  try {
    const { key } = await signedInAccount(env);
    const rec = await uploadAt(env, "http://photos.lan:8080", key);
    assert.equal(rec.url_viewer, `http://photos.lan:8080/i/${rec.id}`);
    assert.equal(rec.url, `http://cdn.lan:8081/${rec.id}.png`);
    assert.match(rec.thumb.url, /^http:\/\/cdn\.lan:8081\//);
    assert.match(rec.delete_url, /^http:\/\/photos\.lan:8080\/delete\//);
    // A private image's files come from the service too (IMAGE_HOST_URL is one before it).
    const priv = await uploadAt(env, "http://photos.lan:8080", key, {
      privacy: "private",
    });
    assert.equal(priv.url, `http://cdn.lan:8081/${priv.id}.png`);
  } finally {
    await env.close();
  }
});

test("the site's pages link the site relatively, so a private image's thumbnail loads at any address, while shared codes stay absolute", async () => {
  // BASE_URL says localhost; the browser came by 127.0.0.1 (its cookie lives there).
  const env = await testEnv({ env: { BASE_URL: "http://localhost:8080" } });
  try {
    const { key, cookie } = await signedInAccount(env);
    const priv = await uploadAt(env, "http://127.0.0.1:8080", key, {
      privacy: "private",
      title: "Secret",
    });
    const pub = await uploadAt(env, "http://127.0.0.1:8080", key, {
      title: "Open",
    });
    assert.equal(priv.url_viewer, `http://localhost:8080/i/${priv.id}`);
    const page = await env.app.request("http://127.0.0.1:8080/images", {
      headers: { cookie },
    });
    assert.equal(page.status, 200);
    const html = await page.text();
    // Every href and src that names the site is a path: nothing jumps to BASE_URL.
    const attrs = [...html.matchAll(/\s(?:href|src)="([^"]+)"/g)].map((m) =>
      m[1]
    );
    assert.ok(attrs.includes(`/${priv.id}.th.png`), "private thumb relative");
    assert.ok(attrs.includes(`/i/${priv.id}`), "Open link relative");
    assert.ok(attrs.includes(`/i/${pub.id}`));
    for (const a of attrs) {
      assert.ok(!a.startsWith("http://localhost:8080"), a);
    }
    // Shared links (copy buttons, codes box) are the absolute ones a stranger can open.
    assert.ok(
      html.includes(`data-copy-text="http://localhost:8080/${pub.id}.png"`),
    );
    assert.ok(html.includes(`http://localhost:8080/i/${pub.id}`));
    // The thumbnail the page names answers this browser at this address.
    const thumb = await env.app.request(
      `http://127.0.0.1:8080/${priv.id}.th.png`,
      { headers: { cookie } },
    );
    assert.equal(thumb.status, 200);
    await thumb.body?.cancel();

    // The viewer page: its picture, Full size and Download are paths; og: stays absolute.
    const viewer = await (await env.app.request(
      `http://127.0.0.1:8080/i/${pub.id}`,
      { headers: { cookie } },
    )).text();
    assert.match(
      viewer,
      new RegExp(
        `<a class="button secondary" href="/${pub.id}\\.png">Full size`,
      ),
    );
    assert.match(
      viewer,
      new RegExp(`src="/${pub.id}\\.md\\.png"|src="/${pub.id}\\.png"`),
    );
    assert.match(
      viewer,
      new RegExp(`og:url" content="http://localhost:8080/i/${pub.id}"`),
    );

    // Albums: title and cover (a private image) link the site relatively.
    const album = await json(
      await env.app.request("http://127.0.0.1:8080/api/1/albums", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ title: "Trip" }),
      }),
    );
    await uploadAt(env, "http://127.0.0.1:8080", key, {
      privacy: "private",
      album_id: album.body.data.id,
    });
    const albums = await (await env.app.request(
      "http://127.0.0.1:8080/albums",
      { headers: { cookie } },
    )).text();
    const albumHrefs = [...albums.matchAll(/href="([^"]*\/a\/[^"]+)"/g)];
    assert.ok(albumHrefs.length > 0, "an album link");
    for (const m of albumHrefs) assert.match(m[1], /^\/a\//);
    assert.match(albums, /<img\s+src="\/[\w-]+\.th\.png"/);
    assert.ok(!albums.includes('src="http://localhost:8080/'));
  } finally {
    await env.close();
  }
});

test("with BASE_URL unset, the ShareX file and the account page name the address the account page was opened at", async () => {
  const env = await testEnv({ env: { BASE_URL: undefined } });
  try {
    const { key, cookie, token } = await signedInAccount(env);
    const origin = "http://photos.lan:8080";
    // A new key's page shows the curl line to this address.
    const made = await env.app.request(`${origin}/account/keys`, {
      method: "POST",
      headers: {
        cookie,
        origin,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ _csrf: token, label: "cli" }),
    });
    assert.equal(made.status, 303);
    const newKey = made.headers.get("set-cookie")!.split(";")[0];
    const page = await (await env.app.request(`${origin}/account`, {
      headers: { cookie: `${cookie}; ${newKey}` },
    })).text();
    assert.ok(page.includes(`${origin}/api/1/upload`));
    assert.ok(!page.includes("localhost"));
    const sx = await env.app.request(`${origin}/account/sharex`, {
      method: "POST",
      headers: {
        cookie,
        origin,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ _csrf: token, key }),
    });
    assert.equal(sx.status, 200);
    assert.match(
      sx.headers.get("content-disposition")!,
      /filename="photos\.lan-8080\.sxcu"/,
    );
    const sxcu = await sx.json();
    assert.equal(sxcu.RequestURL, `${origin}/api/1/upload`);
  } finally {
    await env.close();
  }
});

test("the served API document's first server is the address it was fetched at, so Try it out calls the same origin", async () => {
  const env = await testEnv({ env: { BASE_URL: undefined } });
  try {
    const doc = await (await env.app.request(
      "http://127.0.0.2:9000/openapi.json",
    )).json();
    assert.deepEqual(doc.servers, [{
      url: "http://127.0.0.2:9000",
      description: "This address",
    }]);
    const set = await testEnv({ env: { BASE_URL: "http://localhost:8080" } });
    try {
      const other = await (await set.app.request(
        "http://127.0.0.1:8080/openapi.json",
      )).json();
      assert.deepEqual(other.servers.map((s: { url: string }) => s.url), [
        "http://127.0.0.1:8080",
        "http://localhost:8080",
      ]);
      const same = await (await set.app.request(
        "http://localhost:8080/openapi.json",
      )).json();
      assert.deepEqual(same.servers.map((s: { url: string }) => s.url), [
        "http://localhost:8080",
      ]);
    } finally {
      await set.close();
    }
  } finally {
    await env.close();
  }
});

test("the request's origin is its URL's, or with TRUST_PROXY the forwarded host and scheme, never a smuggled path or user", () => {
  const h = (o: Record<string, string>) => new Headers(o);
  const url = "http://10.0.0.5:8080/api/1/upload";
  assert.equal(originOfRequest(url, h({}), false), "http://10.0.0.5:8080");
  // Without TRUST_PROXY a forwarded header means nothing: anyone could send it.
  assert.equal(
    originOfRequest(url, h({ "x-forwarded-host": "evil.test" }), false),
    "http://10.0.0.5:8080",
  );
  assert.equal(
    originOfRequest(
      url,
      h({
        "x-forwarded-host": "img.example.com, proxy.internal",
        "x-forwarded-proto": "https",
      }),
      true,
    ),
    "https://img.example.com",
  );
  assert.equal(
    originOfRequest(url, h({ "x-forwarded-proto": "https" }), true),
    "https://10.0.0.5:8080",
  );
  for (
    const bad of ["evil.test/path", "user@evil.test", "evil.test?x=1", "a b"]
  ) {
    assert.equal(
      originOfRequest(url, h({ "x-forwarded-host": bad }), true),
      "http://10.0.0.5:8080",
      bad,
    );
  }
  assert.equal(
    originOfRequest(
      url,
      h({ "x-forwarded-host": "img.lan", "x-forwarded-proto": "gopher" }),
      true,
    ),
    "http://img.lan",
  );
});

test("sitePath makes only the site's own links relative", () => {
  const bases = ["http://localhost:8080"];
  assert.equal(sitePath("http://localhost:8080/i/abc", bases), "/i/abc");
  assert.equal(
    sitePath("http://localhost:80800/i/abc", bases),
    "http://localhost:80800/i/abc",
  );
  assert.equal(
    sitePath("http://cdn.lan/abc.png", bases),
    "http://cdn.lan/abc.png",
  );
});

test("the start-up line names an address that reaches the listener, and asks for BASE_URL in production when it is unset", () => {
  const unset = loadConfig({});
  const wildcard = startupLine(unset, "0.0.0.0", 8080);
  assert.match(wildcard, /^Image host is up: open http:\/\/localhost:8080\//);
  assert.match(wildcard, /set BASE_URL \(and IMAGE_HOST_URL for a CDN\)/);
  const bound = startupLine(unset, "127.0.0.2", 9000);
  assert.match(
    bound,
    /open http:\/\/127\.0\.0\.2:9000\/ \(API docs: http:\/\/127\.0\.0\.2:9000\/docs\)/,
  );
  assert.match(startupLine(unset, "::1", 9000), /open http:\/\/\[::1\]:9000\//);
  const set = loadConfig({ BASE_URL: "https://img.example.com" });
  assert.equal(
    startupLine(set, "0.0.0.0", 8080),
    "Image host is up: open https://img.example.com/ (API docs: https://img.example.com/docs); listening on http://0.0.0.0:8080",
  );
});

test("with BASE_URL unset, a resumable upload's last PATCH answers links at the address it was sent to", async () => {
  const env = await testEnv({ env: { BASE_URL: undefined } });
  try {
    const { key } = await signedInAccount(env);
    const origin = "http://photos.lan:8080";
    const bytes = await makeImage("png", { width: 333 });
    const tus = { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0" };
    const made = await env.app.request(`${origin}/api/1/tus/`, {
      method: "POST",
      headers: {
        ...tus,
        "upload-length": String(bytes.length),
        "upload-metadata": `filename ${btoa("r.png")}`,
      },
    });
    assert.equal(made.status, 201);
    await made.body?.cancel();
    // The upload's URL is a path: right at any address, with no Host header trusted.
    assert.match(made.headers.get("location")!, /^\/api\/1\/tus\/[\w-]+$/);
    const location = new URL(made.headers.get("location")!, origin);
    const last = await env.app.request(location.href, {
      method: "PATCH",
      headers: {
        ...tus,
        "upload-offset": "0",
        "content-type": "application/offset+octet-stream",
      },
      body: new Uint8Array(bytes),
    });
    assert.equal(last.status, 200);
    const rec = (await last.json()).data;
    assert.equal(rec.url_viewer, `${origin}/i/${rec.id}`);
    for (const u of urlsOf(rec)) assert.ok(u.startsWith(`${origin}/`), u);
  } finally {
    await env.close();
  }
});
