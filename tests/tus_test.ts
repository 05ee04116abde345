import assert from "node:assert/strict";
import {
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";
import { sweepResumable } from "../routes/tus.ts";
import { appSettled } from "../app.ts";
import {
  creationsAtOnce,
  cuttingProxy,
  serve,
  tusUpload,
} from "./tus_clients.ts";

/**
 * Resumable uploads (tus 1.0, issue #53) with tus-js-client, the reference client, against
 * the app on a real loopback server; a cut connection through a proxy of our own.
 */

/** The files left in DATA_DIR/tus. */
async function parts(env: TestEnv): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(`${env.deps.config.DATA_DIR}/tus`)) {
      out.push(e.name);
    }
  } catch { /* none made */ }
  return out;
}

test("tus-js-client uploads a photo in chunks to /api/1/tus/: the last PATCH answers its record, titled from its filename and listed like any upload, stored as the same bytes a one-request upload stores, and no part is left; metadata sets privacy, password and expiration, a bad privacy is 400 at creation", async () => {
  const env = await testEnv();
  const http = serve(env);
  try {
    const { key } = await userWithKey(env);
    const other = await userWithKey(env, "other@example.com");
    const photo = await makeNoiseJpeg(1600, 1200);
    const done = await tusUpload(`${http.origin}/api/1/tus/`, key, photo, {
      filename: "train.jpg",
    }, { chunkSize: 256 * 1024 });
    const answer = JSON.parse(done.body);
    assert.equal(answer.success, true, done.body);
    assert.equal(answer.data.title, "train.jpg");
    const list = await json(
      await env.app.request("/api/1/images", {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.deepEqual(list.body.data.images.map((i: { id: string }) => i.id), [
      answer.data.id,
    ]);
    // The same file in one request, from another account: the same stored bytes.
    const single = await upload(
      env,
      other.key,
      formWith([{ name: "train.jpg", bytes: photo }]),
    );
    assert.equal(single.status, 200);
    const stored = async (url: string) =>
      new Uint8Array(
        await (await env.app.request(new URL(url).pathname)).arrayBuffer(),
      );
    assert.deepEqual(
      await stored(answer.data.url),
      await stored(single.body.data.url),
    );
    assert.deepEqual(await parts(env), []);

    // Metadata carries privacy (and a password), and a bad value is refused at creation.
    const lockedPhoto = await makeNoiseJpeg(300, 200);
    const locked = JSON.parse(
      (await tusUpload(`${http.origin}/api/1/tus/`, key, lockedPhoto, {
        filename: "locked.jpg",
        privacy: "password",
        password: "open sesame",
        expiration: "3600",
      })).body,
    );
    assert.deepEqual(
      [locked.data.privacy, locked.data.expiration],
      ["password", 3600],
    );
    const anonymous = await env.app.request(new URL(locked.data.url).pathname);
    assert.equal(anonymous.status, 404, "a password image's file needs access");
    await anonymous.body?.cancel();
    await assert.rejects(
      tusUpload(`${http.origin}/api/1/tus/`, key, lockedPhoto, {
        filename: "x.jpg",
        privacy: "secret",
      }, { retryDelays: [] }),
      (e: Error) => /400/.test(e.message) && /privacy/.test(e.message),
    );
  } finally {
    await http.close();
    await env.close();
  }
});

test("a connection cut at about half resumes from the server's offset: tus-js-client asks HEAD, sends the rest, and the stored image is the same bytes as a one-request upload; no part is left", async () => {
  const env = await testEnv();
  const http = serve(env);
  const photo = await makeNoiseJpeg(1800, 1400);
  const proxy = cuttingProxy(http.port, http.port, photo.length / 2);
  try {
    const { key } = await userWithKey(env);
    const other = await userWithKey(env, "other@example.com");
    const offsets: number[] = [];
    const done = await tusUpload(
      `http://127.0.0.1:${proxy.port}/api/1/tus/`,
      key,
      photo,
      { filename: "cut.jpg" },
      {
        // One PATCH for the whole file: the cut lands in its middle.
        chunkSize: Infinity,
        onAfterResponse: (req, res) => {
          if (req.getMethod() === "HEAD") {
            offsets.push(Number(res.getHeader("Upload-Offset")));
          }
        },
      },
    );
    assert.equal(proxy.cuts, 1, "the first connection was cut");
    assert.ok(proxy.connections >= 2);
    // One HEAD after the cut, or more on a loaded machine: until the server has seen the
    // cut, the cut request still holds the upload, so a HEAD may answer what was written
    // so far (even 0) and the PATCH after it is told busy (503/250); the client asks
    // again. The last HEAD, which the resumed PATCH starts from, is where the bytes
    // stopped, never zero.
    assert.ok(offsets.length >= 1, "a HEAD after the cut");
    const from = offsets.at(-1)!;
    assert.ok(
      from > 0 && from < photo.length,
      `resumed from ${from} of ${photo.length} (HEADs: ${offsets}), not from zero`,
    );
    const answer = JSON.parse(done.body);
    assert.equal(answer.success, true, done.body);
    const single = await upload(
      env,
      other.key,
      formWith([{ name: "cut.jpg", bytes: photo }]),
    );
    const bytes = async (url: string) =>
      new Uint8Array(
        await (await env.app.request(new URL(url).pathname)).arrayBuffer(),
      );
    assert.deepEqual(
      await bytes(answer.data.url),
      await bytes(single.body.data.url),
    );
    await appSettled(env.app);
    assert.deepEqual(await parts(env), []);
  } finally {
    proxy.close();
    await http.close();
    await env.close();
  }
});

test("resumable uploads keep every upload's rules: no key 401, over the account's quota 403/180 at creation, past TUS_UPLOADS_AT_ONCE 429/170 until one is ended by DELETE, someone else's upload 404, tus's own refusals in the envelope (409/161 a wrong offset, 412/162 no Tus-Resumable), past TUS_MAX_FILE_BYTES 413/130 in the envelope, a file that is no image 415/141 at its last chunk with its parts removed, and an abandoned upload's parts gone after TUS_EXPIRE_HOURS", async () => {
  const env = await testEnv({
    env: {
      TUS_MAX_FILE_BYTES: String(4 * 1024 * 1024),
      TUS_UPLOADS_AT_ONCE: "2",
    },
  });
  const http = serve(env);
  const base = `${http.origin}/api/1/tus`;
  try {
    const { key } = await userWithKey(env);
    const other = await userWithKey(env, "other@example.com");
    const create = (k: string | undefined, length: number) =>
      fetch(`${base}/`, {
        method: "POST",
        headers: {
          "tus-resumable": "1.0.0",
          "upload-length": String(length),
          ...(k ? { authorization: `Bearer ${k}` } : {}),
        },
      });
    const anonymous = await create(undefined, 10);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    const big = await create(key, 5 * 1024 * 1024);
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, 130);
    // Over the account's storage quota: refused at creation, before any byte is sent.
    const quota = await userWithKey(env, "quota@example.com");
    await env.deps.database.db.updateTable("users").set({ quota_storage_mb: 1 })
      .where("email", "=", "quota@example.com").execute();
    const overQuota = await create(quota.key, 2 * 1024 * 1024);
    assert.equal(overQuota.status, 403);
    assert.equal((await overQuota.json()).error.code, 180);

    // Half an upload, then someone else asks for it.
    const made = await create(key, 1000);
    assert.equal(made.status, 201);
    await made.body?.cancel();
    const url = new URL(made.headers.get("location")!, http.origin).href;
    const half = await fetch(url, {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${key}`,
        "tus-resumable": "1.0.0",
        "upload-offset": "0",
        "content-type": "application/offset+octet-stream",
      },
      body: new Uint8Array(500),
    });
    assert.equal(half.status, 204);
    assert.equal(half.headers.get("upload-offset"), "500");
    // tus's own refusals come in the envelope, at the status tus clients expect.
    const wrongOffset = await fetch(url, {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${key}`,
        "tus-resumable": "1.0.0",
        "upload-offset": "10",
        "content-type": "application/offset+octet-stream",
      },
      body: new Uint8Array(5),
    });
    assert.equal(wrongOffset.status, 409);
    assert.equal((await wrongOffset.json()).error.code, 161);
    const noVersion = await fetch(url, {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${key}`,
        "upload-offset": "500",
        "content-type": "application/offset+octet-stream",
      },
      body: new Uint8Array(5),
    });
    assert.equal(noVersion.status, 412);
    assert.equal((await noVersion.json()).error.code, 162);
    const theirs = await fetch(url, {
      method: "HEAD",
      headers: {
        authorization: `Bearer ${other.key}`,
        "tus-resumable": "1.0.0",
      },
    });
    assert.equal(theirs.status, 404);
    const mine = await fetch(url, {
      method: "HEAD",
      headers: { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0" },
    });
    assert.equal(mine.headers.get("upload-offset"), "500");

    // Not an image: refused at its last chunk, its parts gone.
    await assert.rejects(
      tusUpload(
        `${base}/`,
        key,
        new TextEncoder().encode("just text\n".repeat(50)),
        {
          filename: "notes.png",
        },
        { retryDelays: [] },
      ),
      (e: Error) => /415/.test(e.message) && /141/.test(e.message),
    );
    const left = await parts(env);
    assert.equal(
      left.length,
      2,
      `only the half upload's file and info: ${left}`,
    );

    // At most TUS_UPLOADS_AT_ONCE unfinished: the third is 429/170; one ended by DELETE
    // (termination) makes room, its parts gone.
    const second = await create(key, 100);
    assert.equal(second.status, 201);
    await second.body?.cancel();
    const third = await create(key, 100);
    assert.equal(third.status, 429);
    assert.equal((await third.json()).error.code, 170);
    const ended = await fetch(
      new URL(second.headers.get("location")!, http.origin),
      {
        method: "DELETE",
        headers: { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0" },
      },
    );
    assert.equal(ended.status, 204);
    await ended.body?.cancel();
    assert.equal((await parts(env)).length, 2);

    // Abandoned: once its last write is older than TUS_EXPIRE_HOURS, the sweep removes it.
    const id = new URL(url).pathname.split("/").pop()!;
    const info = `${env.deps.config.DATA_DIR}/tus/${id}.json`;
    const meta = JSON.parse(await Deno.readTextFile(info));
    meta.creation_date = new Date(Date.now() - 25 * 3_600_000).toISOString();
    await Deno.writeTextFile(info, JSON.stringify(meta));
    assert.equal(await sweepResumable(env.app), 1);
    assert.deepEqual(await parts(env), []);
  } finally {
    await http.close();
    await env.close();
  }
});

test("an OPTIONS without Access-Control-Request-Method is tus's discovery, answered by tus (its version, extensions and Tus-Max-Size = TUS_MAX_FILE_BYTES, readable from any origin), while a CORS preflight is still answered as one", async () => {
  const env = await testEnv({ env: { TUS_MAX_FILE_BYTES: "123456" } });
  try {
    const discovery = await env.app.request("/api/1/tus/", {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example" },
    });
    assert.equal(discovery.status, 204);
    assert.equal(discovery.headers.get("tus-version"), "1.0.0");
    assert.equal(discovery.headers.get("tus-max-size"), "123456");
    assert.match(discovery.headers.get("tus-extension") ?? "", /creation/);
    assert.equal(discovery.headers.get("access-control-allow-origin"), "*");
    assert.match(
      discovery.headers.get("access-control-expose-headers") ?? "",
      /Tus-Max-Size/,
    );
    const pre = await env.app.request("/api/1/tus/", {
      method: "OPTIONS",
      headers: {
        origin: "https://elsewhere.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "tus-resumable,upload-length",
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("tus-version"), null, "cors answered it");
    assert.match(
      pre.headers.get("access-control-allow-headers") ?? "",
      /Upload-Length/,
    );
  } finally {
    await env.close();
  }
});

test("creations sent at the same moment keep an account within TUS_UPLOADS_AT_ONCE and TUS_PENDING_MB: the ones past it are 429/170 and 413/130", async () => {
  const env = await testEnv({
    env: { TUS_UPLOADS_AT_ONCE: "3", TUS_PENDING_MB: "1" },
  });
  try {
    await creationsAtOnce(env);
  } finally {
    await env.close();
  }
});
