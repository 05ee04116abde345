import assert from "node:assert/strict";
import { formWith, makeImage } from "./fixtures.ts";
import {
  apiCall,
  json,
  signedInAccount,
  test,
  type TestEnv,
  testEnv,
  upload,
} from "./helpers.ts";
import { blobKeys } from "../services/images/records.ts";
import { FsStore } from "../services/store/fs_store.ts";
import type { ByteRange } from "../services/store/blob_store.ts";

/**
 * Issue #52: "Export my data". The zip is checked by another implementation (Info-ZIP's
 * unzip: every entry's CRC), its files against the store's bytes, and its manifest
 * against the API's records.
 */

/** Runs unzip with `args` on the zip's bytes; its standard output. */
async function unzip(zip: Uint8Array, ...args: string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-export-" });
  try {
    await Deno.writeFile(`${dir}/e.zip`, zip);
    const out = await new Deno.Command("unzip", {
      args: [...args, `${dir}/e.zip`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(
      out.success,
      `unzip ${args.join(" ")}: ${text} ${
        new TextDecoder().decode(out.stderr)
      }`,
    );
    return text;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The bytes of one entry of the zip. */
async function entry(zip: Uint8Array, name: string): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-export-" });
  try {
    await Deno.writeFile(`${dir}/e.zip`, zip);
    const out = await new Deno.Command("unzip", {
      args: ["-p", `${dir}/e.zip`, name],
      stdout: "piped",
    }).output();
    assert.ok(out.success, `unzip -p ${name}`);
    return out.stdout;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function uploadOne(env: TestEnv, key: string, width: number) {
  const res = await upload(
    env,
    key,
    formWith([{
      name: `w${width}.png`,
      bytes: await makeImage("png", { width }),
    }]),
  );
  assert.equal(res.status, 200);
  return res.body.data;
}

test("GET /api/1/account/export streams a valid zip of every original (the stored bytes) and a manifest of the account, its albums and every image's record", async () => {
  const env = await testEnv();
  try {
    const { key, user } = await signedInAccount(env);
    const other = await signedInAccount(env);
    const album = (await apiCall(env, key, "POST", "/api/1/albums", {
      title: "Trip",
    })).body.data;
    const a = await uploadOne(env, key, 120);
    const b = await uploadOne(env, key, 121);
    const c = await uploadOne(env, key, 122);
    await apiCall(env, key, "PATCH", `/api/1/images/${b.id}`, {
      privacy: "private",
      album_id: album.id,
      title: "Zürich 🏔",
      description: 'with "quotes"',
    });
    await apiCall(env, key, "DELETE", `/api/1/images/${c.id}`);
    const theirs = await uploadOne(env, other.key, 123);

    const res = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/zip");
    assert.match(
      res.headers.get("content-disposition")!,
      /^attachment; filename="image-host-export-\d{4}-\d{2}-\d{2}\.zip"$/,
    );
    assert.equal(res.headers.get("cache-control"), "no-store");
    const zip = new Uint8Array(await res.arrayBuffer());
    // Every entry's CRC checked by Info-ZIP.
    const tested = await unzip(zip, "-t");
    assert.match(tested, /No errors detected/);
    const names = (await unzip(zip, "-Z1")).trim().split("\n").sort();
    assert.deepEqual(
      names,
      [`images/${a.id}.png`, `images/${b.id}.png`, "manifest.json"].sort(),
    );
    assert.ok(!names.some((n) => n.includes(theirs.id)), "only the account's");
    for (const rec of [a, b]) {
      const stored = await env.deps.store.get(
        blobKeys({
          id: rec.id,
          ext: "png",
          thumb_ext: null,
          medium_ext: null,
        }).original,
      );
      const bytes = stored!.body instanceof Uint8Array
        ? stored!.body
        : new Uint8Array(await new Response(stored!.body).arrayBuffer());
      assert.deepEqual(await entry(zip, `images/${rec.id}.png`), bytes);
    }
    const manifest = JSON.parse(
      new TextDecoder().decode(await entry(zip, "manifest.json")),
    );
    assert.equal(manifest.account.id, user.id);
    assert.equal(manifest.account.email, user.email);
    assert.deepEqual(manifest.albums.map((x: { id: string }) => x.id), [
      album.id,
    ]);
    const byId = Object.fromEntries(
      manifest.images.map((i: { id: string }) => [i.id, i]),
    );
    assert.deepEqual(Object.keys(byId).sort(), [a.id, b.id].sort());
    const listed = await apiCall(env, key, "GET", `/api/1/images/${b.id}`);
    const { file, expires_at, ...record } = byId[b.id];
    assert.equal(file, `images/${b.id}.png`);
    assert.equal(expires_at, null);
    assert.deepEqual(record, listed.body.data);
    assert.equal(record.title, "Zürich 🏔");
    assert.equal(record.privacy, "private");
    assert.equal(record.album_id, album.id);
  } finally {
    await env.close();
  }
});

test("the export of an empty account is a valid zip with only its manifest; without a key it is 401", async () => {
  const env = await testEnv();
  try {
    const { key } = await signedInAccount(env);
    const res = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    const zip = new Uint8Array(await res.arrayBuffer());
    assert.deepEqual((await unzip(zip, "-Z1")).trim().split("\n"), [
      "manifest.json",
    ]);
    const manifest = JSON.parse(
      new TextDecoder().decode(await entry(zip, "manifest.json")),
    );
    assert.deepEqual(manifest.images, []);
    assert.deepEqual(manifest.albums, []);
    const anon = await json(await env.app.request("/api/1/account/export"));
    assert.equal(anon.status, 401);
  } finally {
    await env.close();
  }
});

test("an export of more images than a page (200) holds every one, and an image whose bytes are gone is in the manifest with file null", async () => {
  const env = await testEnv();
  try {
    const { key, user } = await signedInAccount(env);
    // Rows and bytes written directly: 205 images are a second page of both passes.
    const db = env.deps.database.db;
    const png = await makeImage("png", { width: 8 });
    const ids: string[] = [];
    for (let i = 0; i < 205; i++) {
      const id = `bulk${String(i).padStart(4, "0")}`;
      ids.push(id);
      await db.insertInto("images").values({
        id,
        user_id: user.id,
        title: `#${i}`,
        ext: "png",
        mime: "image/png",
        width: 8,
        height: 8,
        size: png.length,
        delete_token: `t${i}`,
        sha256: `${i}`.padStart(64, "0"),
        thumb_ext: null,
        medium_ext: null,
        expires_at: null,
        deleted_at: null,
      }).execute();
      if (i !== 7) {
        await env.deps.store.put(`${id}.png`, png, {
          contentType: "image/png",
          size: png.length,
        });
      }
    }
    const res = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    const zip = new Uint8Array(await res.arrayBuffer());
    assert.match(await unzip(zip, "-t"), /No errors detected/);
    const names = (await unzip(zip, "-Z1")).trim().split("\n");
    assert.equal(names.length, 204 + 1);
    const manifest = JSON.parse(
      new TextDecoder().decode(await entry(zip, "manifest.json")),
    );
    assert.equal(manifest.images.length, 205);
    const lost = manifest.images.find((i: { id: string }) =>
      i.id === "bulk0007"
    );
    assert.equal(lost.file, null);
    assert.ok(!names.includes("images/bulk0007.png"));
  } finally {
    await env.close();
  }
});

/** A store whose reads of one key fail after `after` bytes: a disk or bucket gone mid-read. */
class FailingReadStore extends FsStore {
  constructor(dir: string, private readonly failKey: () => string) {
    super(dir);
  }
  override async get(key: string, range?: ByteRange) {
    if (key !== this.failKey()) return await super.get(key, range);
    return {
      size: 1000,
      body: new ReadableStream<Uint8Array>({
        start(ctl) {
          ctl.enqueue(new Uint8Array(10));
          ctl.error(new Error("the store went away"));
        },
      }),
    };
  }
}

test("a store that fails mid-export ends the download short (an unreadable zip, never a silently incomplete one), and the account may export again at once", async () => {
  let failing = "none";
  const dir = await Deno.makeTempDir({ prefix: "imagehost-export-store-" });
  const store = await new FailingReadStore(dir, () => failing).init();
  const env = await testEnv({ store });
  try {
    const { key } = await signedInAccount(env);
    const a = await uploadOne(env, key, 130);
    failing = `${a.id}.png`;
    const res = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    await assert.rejects(res.arrayBuffer());
    // The operator hears of it.
    assert.ok(
      env.log.lines.some((l) =>
        l.msg === "an account export ended short" &&
        /the store went away/.test(String(l.error))
      ),
    );
    // The account is not left "exporting": the next one runs (and now succeeds).
    failing = "none";
    const again = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(again.status, 200);
    const zip = new Uint8Array(await again.arrayBuffer());
    assert.match(await unzip(zip, "-t"), /No errors detected/);
  } finally {
    await env.close();
    await Deno.remove(dir, { recursive: true });
  }
});

test("one export of an account at a time: a second while the first is being read is 429/170; a cancelled download frees the account", async () => {
  const env = await testEnv();
  try {
    const { key } = await signedInAccount(env);
    await uploadOne(env, key, 140);
    const first = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(first.status, 200);
    const second = await json(
      await env.app.request("/api/1/account/export", {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.equal(second.status, 429);
    assert.equal(second.body.error.code, 170);
    await first.body!.cancel();
    const third = await env.app.request("/api/1/account/export", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(third.status, 200);
    await third.arrayBuffer();
  } finally {
    await env.close();
  }
});

test("two exports of an account sent at the same moment: one is the zip, the other 429/170", async () => {
  const env = await testEnv();
  try {
    const { key } = await signedInAccount(env);
    await uploadOne(env, key, 140);
    const ask = () =>
      env.app.request("/api/1/account/export", {
        headers: { authorization: `Bearer ${key}` },
      });
    const answers = await Promise.all([ask(), ask()]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 429]);
    for (const r of answers) {
      if (r.status === 429) {
        assert.equal((await r.json()).error.code, 170);
      } else {
        const zip = new Uint8Array(await r.arrayBuffer());
        assert.match(await unzip(zip, "-l"), /manifest\.json/);
      }
    }
  } finally {
    await env.close();
  }
});

test("the account page's Export my data form downloads the same zip with the session; without its CSRF token it is refused", async () => {
  const env = await testEnv();
  try {
    const { key, cookie, token } = await signedInAccount(env);
    const a = await uploadOne(env, key, 150);
    const page = await (await env.app.request("/account", {
      headers: { cookie },
    })).text();
    assert.match(page, /action="\/account\/export"/);
    assert.match(page, /Export my data/);
    const post = (csrf: string) =>
      env.app.request("/account/export", {
        method: "POST",
        headers: {
          cookie,
          origin: "http://localhost:8080",
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ _csrf: csrf }),
      });
    const res = await post(token);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/zip");
    const zip = new Uint8Array(await res.arrayBuffer());
    assert.ok(
      (await unzip(zip, "-Z1")).split("\n").includes(`images/${a.id}.png`),
    );
    const forged = await post("not-the-token");
    assert.notEqual(forged.status, 200);
    assert.notEqual(forged.headers.get("content-type"), "application/zip");
    await forged.body?.cancel();
  } finally {
    await env.close();
  }
});
