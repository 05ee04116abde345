import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  json,
  signedInAccount,
  test,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { authOf } from "../routes/api_auth.ts";
import { Authenticator } from "../services/accounts/authenticator.ts";
import { SESSION_TOKEN_HEADER } from "../routes/session.ts";
import { ApiError } from "../schemas/errors.ts";

/** Counts the calls an app makes to its authenticator's two questions. */
function countCalls(auth: Authenticator) {
  const calls = { admit: 0, ownerOf: 0 };
  const admit = auth.admit.bind(auth);
  const ownerOf = auth.ownerOf.bind(auth);
  auth.admit = (who) => (calls.admit++, admit(who));
  auth.ownerOf = (key, address) => (calls.ownerOf++, ownerOf(key, address));
  return calls;
}

/** The code an authenticator's refusal carries. */
async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e.code;
    throw e;
  }
  return 0;
}

test("an upload asks who calls and whether they may once, whichever way it carries its key or session", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png");
    const calls = countCalls(authOf(env.deps));
    const file = () =>
      formWith([{ field: "image", name: "a.png", bytes: png }]);
    const b64 = Buffer.from(png).toString("base64");
    const session = await signedInAccount(env);
    const ways: [string, () => Response | Promise<Response>][] = [
      ["Bearer, multipart", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: file(),
        })],
      ["X-API-Key, multipart", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "x-api-key": key },
          body: file(),
        })],
      ["the form's key field", () => {
        const fd = formWith([{ field: "image", name: "a.png", bytes: png }], {
          key,
        });
        return env.app.request("/api/1/upload", { method: "POST", body: fd });
      }],
      ["?key=", () =>
        env.app.request(`/api/1/upload?key=${key}`, {
          method: "POST",
          body: file(),
        })],
      ["a JSON body's key", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key, image: b64 }),
        })],
      ["an urlencoded body's key", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ key, image: b64 }).toString(),
        })],
      ["the site's session", () =>
        env.app.request("/api/1/upload", {
          method: "POST",
          headers: {
            cookie: session.cookie,
            [SESSION_TOKEN_HEADER]: session.token,
          },
          body: file(),
        })],
    ];
    for (const [way, send] of ways) {
      calls.admit = calls.ownerOf = 0;
      const res = await json(await send());
      assert.equal(res.status, 200, `${way}: ${JSON.stringify(res.body)}`);
      assert.equal(calls.admit, 1, `${way}: asked ${calls.admit} times`);
      // The key's owner is looked up inside that one call (a session has no key).
      assert.equal(calls.ownerOf, way.includes("session") ? 0 : 1, way);
      assert.ok(res.headers.get("x-ratelimit-remaining"), way);
    }
  } finally {
    await env.close();
  }
});

test("the authenticator answers 100 without a key, 110 for a wrong one, 170 to an address past its wrong keys and to a caller past its minute", async () => {
  const env = await testEnv();
  try {
    const { key, user, keyId } = await userWithKey(env);
    const auth = new Authenticator(env.deps.database.db, env.clock, {
      keyFailuresPerMinute: 2,
      callsPerMinute: 3,
    });
    assert.equal(
      await codeOf(auth.admit({ key: undefined, address: "a" })),
      100,
    );
    // A wrong key is counted against its address; two are allowed in a minute.
    assert.equal(await codeOf(auth.admit({ key: "nope", address: "b" })), 110);
    assert.equal(
      await codeOf(auth.admit({ key: "ih_" + "x".repeat(40), address: "b" })),
      110,
    );
    assert.equal(await codeOf(auth.admit({ key: "nope", address: "b" })), 170);
    // Past the limit the address is refused before any look-up, even with a right key;
    // another address is not.
    assert.equal(await codeOf(auth.admit({ key, address: "b" })), 170);
    const first = await auth.admit({ key, address: "c" });
    assert.deepEqual(
      { userId: first.userId, keyId: first.keyId },
      { userId: user.id, keyId },
    );
    assert.equal(first.rate?.limit, 3);
    assert.equal(first.rate?.remaining, 2);
    // The caller's minute: two more calls, then 170.
    await auth.admit({ key, address: "c" });
    assert.equal((await auth.admit({ key, address: "c" })).rate?.remaining, 0);
    assert.equal(await codeOf(auth.admit({ key, address: "c" })), 170);
    // A session counts under its own counter, not its key's.
    const s = await auth.admit({ sessionUserId: user.id });
    assert.deepEqual([s.userId, s.keyId, s.rate?.remaining], [user.id, "", 2]);
    // The owner of a key, without counting a call.
    const owner = await auth.ownerOf(key, "d");
    assert.equal(owner.userId, user.id);
    // Without a per-minute limit nothing is counted.
    const free = new Authenticator(env.deps.database.db, env.clock, {
      keyFailuresPerMinute: 2,
      callsPerMinute: 0,
    });
    for (let i = 0; i < 5; i++) {
      assert.equal((await free.admit({ key, address: "e" })).rate, undefined);
    }
  } finally {
    await env.close();
  }
});

test("a path under /api/1 that is no route is 404 to everyone, with or without a key, while a route without a key stays 401", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const asked: Record<string, string>[] = [{}, {
      authorization: `Bearer ${key}`,
    }];
    for (const headers of asked) {
      for (const path of ["/api/1/nope", "/api/1/images/abc/def", "/api/1/"]) {
        const r = await json(await env.app.request(path, { headers }));
        assert.deepEqual([r.status, r.body.error?.code], [404, 404], path);
      }
    }
    const routes = ["/api/1/images", "/api/1/images/abcdefgh", "/api/1/albums"];
    for (const path of routes) {
      const r = await json(await env.app.request(path));
      assert.deepEqual([r.status, r.body.error?.code], [401, 100], path);
    }
  } finally {
    await env.close();
  }
});
