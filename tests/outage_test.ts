import assert from "node:assert/strict";
import { migrate, openDatabase } from "../services/db/database.ts";
import { isOutage } from "../services/db/postgres.ts";
import { formWith, makeImage } from "./fixtures.ts";
import {
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
  waitUntilAsync,
} from "./helpers.ts";
import { startPgCluster } from "./pg_cluster.ts";
import { withTimeout } from "../services/runtime/timeout.ts";
import { startS3 } from "./s3_server.ts";

/** Fails the test instead of hanging it when a request gets no answer within `ms`. */
async function answered(
  p: Response | Promise<Response>,
  what: string,
  ms = 15_000,
) {
  return await withTimeout(
    Promise.resolve(p),
    ms,
    `${what}: no answer in ${ms} ms`,
  );
}

/** A user with a key and one stored 40×30 PNG, taken while everything is up. */
async function userWithUpload(env: TestEnv) {
  const { key, user } = await userWithKey(env);
  const png = await makeImage("png", { width: 40, height: 30 });
  const first = await upload(
    env,
    key,
    formWith([{ name: "a.png", bytes: png }]),
  );
  assert.equal(first.status, 200);
  return { key, user, png, first };
}

/** Every response must be the outage envelope: 503, code 250, Retry-After. */
async function assertOutage(res: Response, what: string) {
  const body = await res.json();
  assert.equal(res.status, 503, `${what}: ${JSON.stringify(body)}`);
  assert.equal(body.error.code, 250, what);
  assert.equal(res.headers.get("retry-after"), "5", what);
  return body;
}

test("the driver's outage test tells an unreachable server from a bad query", () => {
  const coded = (message: string, code: string) =>
    Object.assign(new Error(message), { code });
  for (
    const e of [
      coded("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
      coded("terminating connection due to administrator command", "57P01"),
      coded("canceling statement due to statement timeout", "57014"),
      coded("the database system is starting up", "57P03"),
      coded("connection failure", "08006"),
      new Error("Connection terminated unexpectedly"),
      new Error("timeout exceeded when trying to connect"),
      new Error("Query read timeout"),
    ]
  ) assert.equal(isOutage(e), true, e.message);
  for (
    const e of [
      coded("duplicate key value violates unique constraint", "23505"),
      coded('relation "nope" does not exist', "42P01"),
      coded("invalid input syntax for type integer", "22P02"),
      new Error("some bug"),
      "not an error",
    ]
  ) assert.equal(isOutage(e), false, String(e));
});

test("with PostgreSQL stopped every request answers 503 (code 250, Retry-After) within its bound, never 500 or a hang, and all recovers once it is back", async () => {
  const pgc = await startPgCluster();
  const database = await openDatabase({
    url: pgc.url,
    timeouts: { connectMs: 1000, statementMs: 2000, poolMax: 4 },
  });
  await migrate(database.db);
  const env = await testEnv({ database });
  try {
    const { key, user, png, first } = await userWithUpload(env);
    const id: string = first.body.data.id;
    const imagePath = new URL(first.body.data.url).pathname;
    const auth = { authorization: `Bearer ${key}` };

    await pgc.stop("fast");
    const attempts: [string, () => Response | Promise<Response>][] = [
      [
        "GET record",
        () => env.app.request(`/api/1/images/${id}`, { headers: auth }),
      ],
      ["upload", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: auth,
          body: formWith([{
            name: "b.png",
            bytes: new Uint8Array([...png, 0]),
          }]),
        })],
      ["image (row not cached)", () => env.app.request(imagePath)],
      ["viewer", () => env.app.request(`/i/${id}`)],
      ["login", () =>
        env.app.request("/login", {
          method: "POST",
          headers: {
            origin: "http://localhost:8080",
            "content-type": "application/x-www-form-urlencoded",
          },
          body: `email=${encodeURIComponent(user.email)}&password=wrong`,
        })],
      ["delete", () =>
        env.app.request(`/api/1/images/${id}`, {
          method: "DELETE",
          headers: auth,
        })],
    ];
    // Twice: once on connections the pool held, once on fresh connects that are refused.
    for (let round = 0; round < 2; round++) {
      const results = await Promise.all(
        attempts.map(([what, go]) => answered(go(), what)),
      );
      for (let i = 0; i < results.length; i++) {
        await assertOutage(results[i], `${attempts[i][0]} (round ${round})`);
      }
    }
    const ready = await assertOutage(
      await answered(env.app.request("/readyz"), "readyz"),
      "readyz",
    );
    assert.deepEqual(ready.error.details.map((d: { path: string }) => d.path), [
      "database",
    ]);
    // Nothing was lost or half-done: the image is still there once the database is back.
    await pgc.start();
    await waitUntilAsync(
      async () => (await env.app.request("/readyz")).status === 200,
      15_000,
      200,
    );
    const record = await json(
      await env.app.request(`/api/1/images/${id}`, { headers: auth }),
    );
    assert.equal(record.status, 200);
    assert.equal((await env.app.request(imagePath)).status, 200);
    const again = await upload(
      env,
      key,
      formWith([{
        name: "c.png",
        bytes: await makeImage("png", { width: 9 }),
      }]),
    );
    assert.equal(again.status, 200);
    const rows = await database.db.selectFrom("images").select("title")
      .orderBy("created_at").execute();
    assert.deepEqual(rows.map((r) => r.title), ["a.png", "c.png"]);
  } finally {
    await env.close();
    await database.close();
    await pgc.destroy();
  }
});

test("with the S3 store down uploads and uncached images answer 503 (code 250) and readyz names the store; all recovers once it is back", async () => {
  const s3 = await startS3({ timeoutMs: 2000 });
  const env = await testEnv({
    store: s3.store,
    env: { IMAGE_CACHE_MB: "0" },
  });
  try {
    const { key, png, first } = await userWithUpload(env);
    const imagePath = new URL(first.body.data.url).pathname;
    assert.equal((await env.app.request(imagePath)).status, 200);

    await s3.stop();
    await assertOutage(
      await answered(
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: formWith([{
            name: "b.png",
            bytes: new Uint8Array([...png, 1]),
          }]),
        }),
        "upload",
      ),
      "upload",
    );
    await assertOutage(
      await answered(env.app.request(imagePath), "image"),
      "image",
    );
    const ready = await assertOutage(
      await answered(env.app.request("/readyz"), "readyz"),
      "readyz",
    );
    assert.deepEqual(ready.error.details.map((d: { path: string }) => d.path), [
      "store",
    ]);
    // The failed upload left no row behind.
    const rows = await env.deps.database.db.selectFrom("images").select("title")
      .execute();
    assert.deepEqual(rows.map((r) => r.title), ["a.png"]);

    await s3.start();
    assert.equal((await env.app.request("/readyz")).status, 200);
    assert.equal((await env.app.request(imagePath)).status, 200);
    const again = await upload(
      env,
      key,
      formWith([{ name: "b.png", bytes: new Uint8Array([...png, 1]) }]),
    );
    assert.equal(again.status, 200);
  } finally {
    await env.close();
    await s3.close();
  }
});
