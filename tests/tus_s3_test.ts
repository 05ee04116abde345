import assert from "node:assert/strict";
import {
  databaseKinds,
  json,
  test,
  testDatabase,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { makeNoiseJpeg } from "./fixtures.ts";
import { startS3 } from "./s3_server.ts";
import {
  creationsAtOnce,
  cuttingProxy,
  serve,
  tusUpload as upload,
} from "./tus_clients.ts";
import { startNginx } from "./nginx.ts";
import { Readable } from "node:stream";
import { Upload } from "@tus/utils";
import { BucketStore } from "../services/uploads/bucket_store.ts";
import { sweepResumable } from "../routes/tus.ts";
import { sweepOrphans } from "../services/images/orphans.ts";
import { wholeBody } from "../services/runtime/file_io.ts";

/**
 * Resumable uploads kept in the images' bucket (STORE=s3, BucketStore) on s3rver: with
 * memory scratch (nothing written to disk, as on Deno Deploy), and across two instances
 * sharing the PostgreSQL and the bucket, where a cut upload goes on at the other one.
 */

/** Uploads `bytes` as `filename`; the last answer's body. HEADs' offsets go to `offsets`. */
async function tusUpload(
  endpoint: string,
  key: string,
  bytes: Uint8Array,
  filename: string,
  chunkSize = Infinity,
  offsets: number[] = [],
): Promise<string> {
  return (await upload(endpoint, key, bytes, { filename }, {
    chunkSize,
    retryDelays: [0, 200, 500],
    onAfterResponse: (req, res) => {
      if (req.getMethod() === "HEAD") {
        offsets.push(Number(res.getHeader("Upload-Offset")));
      }
    },
  })).body;
}

/** Resolves once an upload's info in the bucket says a part was committed (10 s at most). */
async function aPartCommitted(store: TestEnv["deps"]["store"]) {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    for await (const o of store.list()) {
      if (!o.key.endsWith(".info")) continue;
      const blob = await store.get(o.key);
      const text = blob
        ? new TextDecoder().decode(await wholeBody(blob.body, blob.size))
        : "";
      if (/"offset":[1-9]/.test(text)) return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The bucket's objects of resumable uploads. */
async function tusKeys(env: TestEnv): Promise<string[]> {
  const out: string[] = [];
  for await (const o of env.deps.store.list()) {
    if (o.key.startsWith("tus-")) out.push(o.key);
  }
  return out;
}

test("with STORE=s3 and memory scratch a resumable upload is kept in the bucket, stored through the pipeline, and leaves no object behind; nothing is written to DATA_DIR/tus; one larger than MEMORY_REQUEST_MB is refused at its creation; an abandoned one's objects go once it is old enough", async () => {
  const s3 = await startS3();
  const env = await testEnv({
    store: s3.store,
    env: { ...s3.env, SCRATCH: "memory", MEMORY_REQUEST_MB: "8" },
  });
  const http = serve(env);
  const base = `http://127.0.0.1:${http.port}/api/1/tus/`;
  try {
    const { key } = await userWithKey(env);
    const photo = await makeNoiseJpeg(1400, 1000);
    const body = JSON.parse(
      await tusUpload(base, key, photo, "s3.jpg", 256 * 1024),
    );
    assert.equal(body.success, true, JSON.stringify(body));
    assert.equal(body.data.title, "s3.jpg");
    const stored = new Uint8Array(
      await (await env.app.request(new URL(body.data.url).pathname))
        .arrayBuffer(),
    );
    assert.ok(stored.length > 0);
    assert.deepEqual(await tusKeys(env), []);
    await assert.rejects(Deno.stat(`${env.config.DATA_DIR}/tus`));

    // A finished upload is read into the request's memory, so the largest one here is
    // MEMORY_REQUEST_MB, not TUS_MAX_FILE_BYTES (200 MB): said before any byte is sent.
    const options = await fetch(base, { method: "OPTIONS" });
    await options.body?.cancel();
    assert.equal(options.headers.get("tus-max-size"), String(8 * 1024 * 1024));
    const tooBig = await fetch(base, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "tus-resumable": "1.0.0",
        "upload-length": String(8 * 1024 * 1024 + 1),
      },
    });
    assert.equal(tooBig.status, 413);
    const refusal = await tooBig.json();
    assert.equal(refusal.error.code, 130);
    assert.equal(refusal.error.details[0].path, "Upload-Length");
    assert.match(refusal.error.details[0].message, /MEMORY_REQUEST_MB/);
    assert.deepEqual(await tusKeys(env), [], "nothing was begun");

    // Abandoned half-way: its info and parts stay until they are old enough to go.
    const made = await fetch(base, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "tus-resumable": "1.0.0",
        "upload-length": "1000",
      },
    });
    assert.equal(made.status, 201);
    await made.body?.cancel();
    const half = await fetch(
      new URL(made.headers.get("location")!, base),
      {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${key}`,
          "tus-resumable": "1.0.0",
          "upload-offset": "0",
          "content-type": "application/offset+octet-stream",
        },
        body: new Uint8Array(400),
      },
    );
    assert.equal(half.status, 204);
    assert.equal((await tusKeys(env)).length, 2, "its info and one part");
    assert.equal(await sweepResumable(env.app), 0, "not old enough yet");
    // The orphan sweep leaves them to their own expiry, however old.
    env.clock.advance(Date.now() - env.clock.now().getTime() + 86_400_000);
    await sweepOrphans(env.deps.database.db, env.deps.store, env.clock, 0);
    assert.equal((await tusKeys(env)).length, 2, "the orphan sweep kept them");
  } finally {
    await http.close();
    await env.close();
    await s3.close();
  }
});

test("with the uploads in the bucket too, creations sent at the same moment keep an account within TUS_UPLOADS_AT_ONCE and TUS_PENDING_MB", async () => {
  const s3 = await startS3();
  const env = await testEnv({
    store: s3.store,
    env: {
      ...s3.env,
      SCRATCH: "memory",
      TUS_UPLOADS_AT_ONCE: "3",
      TUS_PENDING_MB: "1",
    },
  });
  try {
    await creationsAtOnce(env);
  } finally {
    await env.close();
    await s3.close();
  }
});

test("two instances sharing the PostgreSQL and the bucket: an upload cut at half on one goes on at the other (its HEAD there finds the offset) and is stored once", async () => {
  if (!databaseKinds().includes("postgres")) return;
  const s3 = await startS3();
  const dbA = await testDatabase("postgres");
  const dbB = await dbA.another!();
  const a = await testEnv({
    database: dbA,
    store: s3.store,
    env: { ...s3.env, SCRATCH: "memory" },
  });
  const b = await testEnv({
    database: dbB,
    store: s3.store,
    env: { ...s3.env, SCRATCH: "memory" },
  });
  const [httpA, httpB] = [serve(a), serve(b)];
  const photo = await makeNoiseJpeg(1600, 1200);
  // Cut past the first whole part (1 MB), once A has committed it: what a cut keeps is
  // the whole parts its instance committed before the cut.
  const lb = cuttingProxy(
    httpA.port,
    httpB.port,
    photo.length * 3 / 4,
    () => aPartCommitted(s3.store),
  );
  try {
    const { key } = await userWithKey(a);
    const offsets: number[] = [];
    const body = JSON.parse(
      await tusUpload(
        `http://127.0.0.1:${lb.port}/api/1/tus/`,
        key,
        photo,
        "across.jpg",
        Infinity,
        offsets,
      ),
    );
    assert.equal(
      offsets.length,
      1,
      `one HEAD, at the other instance: ${offsets}`,
    );
    assert.ok(
      offsets[0] > 0 && offsets[0] < photo.length,
      `went on from what A kept, not from zero: ${offsets}`,
    );
    assert.equal(body.success, true, JSON.stringify(body));
    assert.equal(lb.sent[0], httpA.port);
    assert.ok(lb.sent.length >= 2, String(lb.sent));
    assert.ok(lb.sent.slice(1).every((p) => p === httpB.port));
    const list = await json(
      await b.app.request("/api/1/images", {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.deepEqual(
      list.body.data.images.map((i: { title: string }) => i.title),
      ["across.jpg"],
    );
    assert.deepEqual(await tusKeys(a), []);
    // The same bytes as a one-request upload of the file stores.
    const other = await userWithKey(b, "single@example.com");
    const form = new FormData();
    form.append(
      "images",
      new File([photo as Uint8Array<ArrayBuffer>], "single.jpg"),
    );
    const single = await json(
      await b.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${other.key}` },
        body: form,
      }),
    );
    const bytes = async (url: string) =>
      new Uint8Array(
        await (await b.app.request(new URL(url).pathname)).arrayBuffer(),
      );
    assert.deepEqual(
      await bytes(body.data.url),
      await bytes(single.body.data.url),
    );
  } finally {
    lb.close();
    await httpA.close();
    await httpB.close();
    await b.close();
    await a.close();
    await s3.close();
  }
});

test("behind nginx with deploy/nginx.conf's proxying (request bodies streamed, two instances round-robin), an upload cut at half is resumed and finished across both instances, stored once", async () => {
  if (!databaseKinds().includes("postgres")) return;
  const s3 = await startS3();
  const dbA = await testDatabase("postgres");
  const dbB = await dbA.another!();
  const env = { ...s3.env, SCRATCH: "memory", TRUST_PROXY: "true" };
  const a = await testEnv({ database: dbA, store: s3.store, env });
  const b = await testEnv({ database: dbB, store: s3.store, env });
  const seenA: string[] = [], seenB: string[] = [];
  const [httpA, httpB] = [serve(a, seenA), serve(b, seenB)];
  // The deploy's proxy settings that matter here, without TLS.
  const nginx = await startNginx(`
  upstream imagehost {
    server 127.0.0.1:${httpA.port};
    server 127.0.0.1:${httpB.port};
    keepalive 8;
  }
  server {
    listen LISTEN;
    client_max_body_size 600m;
    proxy_request_buffering off;
    location / {
      proxy_pass http://imagehost;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 2;
    }
  }`);
  const nginxPort = Number(new URL(nginx.base).port);
  const photo = await makeNoiseJpeg(1600, 1200);
  // A phone's network in front of nginx: its first connection is cut once a part is in.
  const phone = cuttingProxy(
    nginxPort,
    nginxPort,
    photo.length * 3 / 4,
    () => aPartCommitted(s3.store),
  );
  try {
    const { key } = await userWithKey(a);
    const offsets: number[] = [];
    const body = JSON.parse(
      await tusUpload(
        `http://127.0.0.1:${phone.port}/api/1/tus/`,
        key,
        photo,
        "nginx.jpg",
        Infinity,
        offsets,
      ),
    );
    assert.equal(body.success, true, JSON.stringify(body));
    assert.ok(
      offsets.some((o) => o > 0 && o < photo.length),
      `resumed from what was kept: ${offsets}`,
    );
    assert.ok(
      seenA.length > 0 && seenB.length > 0,
      `both instances took part: A ${seenA}, B ${seenB}`,
    );
    const list = await json(
      await b.app.request("/api/1/images", {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.deepEqual(
      list.body.data.images.map((i: { title: string }) => i.title),
      ["nginx.jpg"],
    );
    assert.deepEqual(await tusKeys(a), []);
  } finally {
    phone.close();
    await nginx.close();
    await httpA.close();
    await httpB.close();
    await b.close();
    await a.close();
    await s3.close();
  }
});

test("the bucket store removes an upload unwritten for its expiry, info and parts, and keeps a fresh one", async () => {
  const s3 = await startS3();
  try {
    // Its expiry in milliseconds here (TUS_EXPIRE_HOURS is at least an hour); S3 dates
    // are whole seconds, so the two are seconds apart.
    const store = new BucketStore(s3.store, 2000);
    const write = async (id: string) => {
      await store.create(new Upload({ id, size: 3_000_000, offset: 0 }));
      await store.write(
        Readable.from([new Uint8Array(1024 * 1024 + 10)]),
        id,
        0,
      );
    };
    const old = "tus-0123456789abcdef0123456789abcdef";
    const fresh = "tus-fedcba9876543210fedcba9876543210";
    await write(old);
    assert.equal((await store.getUpload(old)).offset, 1024 * 1024 + 10);
    await new Promise((r) => setTimeout(r, 3000));
    await write(fresh);
    assert.equal(await store.deleteExpired(), 1);
    const left: string[] = [];
    for await (const o of s3.store.list()) left.push(o.key);
    assert.ok(left.every((k) => k.startsWith(fresh)), String(left));
    assert.equal(left.length, 3, `the fresh one's info and two parts: ${left}`);
    await assert.rejects(store.getUpload(old));
  } finally {
    await s3.close();
  }
});
