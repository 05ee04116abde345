import assert from "node:assert/strict";
import { documentApp } from "../scripts/document_app.ts";
import {
  signedInAccount,
  test,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";

const RATE = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
];

/**
 * Whether the /api/1 middleware admits a request to this operation by its key or session,
 * counting it against the per-key limit (routes/api_auth.ts): every /api/1 route but the
 * admin API and reports, which find out who calls themselves without counting, and tus's
 * OPTIONS, which carries no key.
 */
function admitted(path: string, method: string): boolean {
  // ImgBB's /1/upload is /api/1/upload under another name (app.ts).
  return (path.startsWith("/api/1/") || path === "/1/upload") &&
    !path.startsWith("/api/1/admin") && path !== "/api/1/reports" &&
    method !== "options";
}

test("the per-key rate limit's headers are documented on every answer of the operations a key admits, and on none of the others (a page's, a file's or the admin API's 170 sends Retry-After alone)", async () => {
  const { app, close } = await documentApp();
  try {
    // deno-lint-ignore no-explicit-any
    const doc: any = await (await app.request("/openapi.json")).json();
    const wrong: string[] = [];
    let keyed = 0;
    let other = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      // deno-lint-ignore no-explicit-any
      for (const [method, op] of Object.entries(item as Record<string, any>)) {
        if (!op?.responses) continue;
        const admits = admitted(path, method);
        admits ? keyed++ : other++;
        for (const [status, res] of Object.entries(op.responses)) {
          // deno-lint-ignore no-explicit-any
          const names = Object.keys((res as any).headers ?? {});
          const declared = RATE.filter((h) => names.includes(h));
          // 401 is answered before anyone is admitted; 405 by no route at all.
          const expected = admits && status !== "401" && status !== "405"
            ? RATE
            : [];
          if (declared.join() !== expected.join()) {
            wrong.push(
              `${method.toUpperCase()} ${path} ${status}: ${
                declared.join(", ") || "none"
              }`,
            );
          }
        }
      }
    }
    assert.deepEqual(wrong, []);
    // Both kinds are there to check: the API's, and pages, files and the admin API.
    assert.ok(keyed > 30 && other > 20, `${keyed} keyed, ${other} others`);
  } finally {
    await close();
  }
});

test("the answers agree with the document: a key's API calls (tus's included) carry the rate headers; the admin API, a file and a page's wrong-key throttle do not", async () => {
  const env = await testEnv({
    env: { API_KEY_FAILURES_PER_MINUTE: "1", RATE_LIMIT_PER_MINUTE: "100" },
  });
  try {
    const { key } = await userWithKey(env);
    const bearer = { authorization: `Bearer ${key}` };
    const rateOf = (res: Response) =>
      RATE.map((h) => res.headers.get(h) !== null);
    const list = await env.app.request("/api/1/images", { headers: bearer });
    assert.equal(list.status, 200);
    assert.deepEqual(rateOf(list), [true, true, true]);
    const unknown = await env.app.request("/api/1/images/nosuchid", {
      headers: bearer,
    });
    assert.equal(unknown.status, 404);
    assert.deepEqual(rateOf(unknown), [true, true, true]);
    const created = await env.app.request("/api/1/tus/", {
      method: "POST",
      headers: {
        ...bearer,
        "tus-resumable": "1.0.0",
        "upload-length": "10",
        "upload-metadata": `filename ${btoa("a.png")}`,
      },
    });
    assert.equal(created.status, 201, await created.clone().text());
    assert.deepEqual(rateOf(created), [true, true, true]);
    const head = await env.app.request(
      new URL(created.headers.get("location")!, "http://x").pathname,
      { method: "HEAD", headers: { ...bearer, "tus-resumable": "1.0.0" } },
    );
    assert.equal(head.status, 200);
    assert.deepEqual(rateOf(head), [true, true, true]);

    const zip = await env.app.request("/api/1/account/export", {
      headers: bearer,
    });
    assert.equal(zip.status, 200);
    assert.ok(zip.headers.get("x-request-id"));
    assert.deepEqual(rateOf(zip), [true, true, true]);
    await zip.body?.cancel();

    const admin = await signedInAccount(env, { role: "admin" });
    const stats = await env.app.request("/api/1/admin/stats", {
      headers: { authorization: `Bearer ${admin.key}` },
    });
    assert.equal(stats.status, 200);
    assert.deepEqual(rateOf(stats), [false, false, false]);

    const up = await upload(
      env,
      key,
      formWith([{ name: "a.png", bytes: await makeImage("png") }], {
        privacy: "private",
      }),
    );
    assert.equal(up.status, 200);
    const image = up.body.data;
    const file = await env.app.request(new URL(image.url).pathname);
    assert.equal(file.status, 404);
    await file.body?.cancel();
    // A wrong key sent to the private image's page: the first is counted, the next
    // refused by the address's throttle, with Retry-After and no per-key headers.
    const page = `/i/${image.id}`;
    const wrongKey = { "x-api-key": "ih_" + "x".repeat(40) };
    await (await env.app.request(page, { headers: wrongKey })).body?.cancel();
    const throttled = await env.app.request(page, { headers: wrongKey });
    assert.equal(throttled.status, 429);
    assert.equal((await throttled.json()).error.code, 170);
    assert.ok(Number(throttled.headers.get("retry-after")) > 0);
    assert.deepEqual(rateOf(throttled), [false, false, false]);
    assert.deepEqual(rateOf(file), [false, false, false]);
  } finally {
    await env.close();
  }
});
