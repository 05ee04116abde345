import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import {
  apiCall,
  signedInAccount,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { signWebhook } from "../services/screenshots/webhooks.ts";

/**
 * Issue #50: signed webhooks of asynchronous captures. A loopback receiver the test
 * allows (FETCH_ALLOW_PRIVATE) gets each try; a loopback one it does not allow must see
 * nothing at all.
 */

const page = startFixture({
  "/blue":
    `<!doctype html><style>html,body{margin:0;height:100%;background:#2e86de}</style><body></body>`,
});
/** Bodies and headers the allowed receiver got, and what it answers next. */
const got: { path: string; body: string; headers: Headers }[] = [];
const answers: number[] = [];
const receiver: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  async (req): Promise<Response> => {
    const path = new URL(req.url).pathname;
    got.push({ path, body: await req.text(), headers: req.headers });
    if (path === "/moved") {
      return new Response(null, {
        status: 302,
        headers: { location: `http://127.0.0.1:${receiver.addr.port}/target` },
      });
    }
    return new Response("", { status: answers.shift() ?? 200 });
  },
);
const denied = startFixture({ "/hook": "never" });
const ALLOW = `127.0.0.1:${page.port},127.0.0.1:${receiver.addr.port}`;
const hook = (path: string) => `http://127.0.0.1:${receiver.addr.port}${path}`;

async function env(): Promise<TestEnv> {
  const e = await testEnv({
    screenshotter: testScreenshotter(ALLOW, { concurrency: 1 }),
    env: { FETCH_ALLOW_PRIVATE: ALLOW, WEBHOOK_RETRY_S: "1" },
  });
  return {
    ...e,
    async close() {
      await e.close();
      await e.deps.screenshotter?.close();
    },
  };
}

async function until<T>(f: () => Promise<T | undefined>, what: string) {
  const end = Date.now() + 30_000;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`waited in vain for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("a job with webhook_url is asynchronous; its webhook is signed with the account's secret, tried again after a 500, and every try is listed with the job", async () => {
  const e = await env();
  got.length = 0;
  answers.push(500);
  try {
    const { key } = await userWithKey(e);
    const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
      url: `${page.origin}/blue`,
      viewport: { width: 200, height: 100 },
      webhook_url: hook("/hook"),
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const id = accepted.body.data.job.id;
    const job = await until(async () => {
      const r = await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${id}`);
      return r.body.data.webhook.deliveries.length >= 2
        ? r.body.data
        : undefined;
    }, "two tries");
    assert.equal(job.status, "done");
    assert.deepEqual(
      job.webhook.deliveries.map((d: Record<string, unknown>) => [
        d.attempt,
        d.ok,
        d.status_code,
        d.error,
      ]),
      [[1, false, 500, "HTTP 500"], [2, true, 200, null]],
    );
    assert.equal(got.length, 2);
    const account = await apiCall(e, key, "GET", "/api/1/account/webhook");
    const secret = account.body.data.secret;
    assert.match(secret, /^whsec_/);
    assert.equal(account.body.data.deliveries.length, 2);
    for (const r of got) {
      const sig = r.headers.get("x-webhook-signature")!;
      const t = Number(sig.match(/^t=(\d+),/)![1]);
      // Recomputed the way a receiver would, with node:crypto.
      const v1 = createHmac("sha256", secret).update(`${t}.${r.body}`)
        .digest("hex");
      assert.equal(sig, `t=${t},v1=${v1}`);
      assert.equal(sig, await signWebhook(secret, t, r.body));
      // The app's clock (a test clock here) stamps it.
      assert.ok(Math.abs(e.clock.now().getTime() / 1000 - t) < 120);
      assert.equal(r.headers.get("x-webhook-id"), id);
      const body = JSON.parse(r.body);
      assert.equal(body.type, "screenshot.job.done");
      assert.equal(body.job.id, id);
      assert.equal(body.job.status, "done");
      assert.equal(body.job.result.width, 200);
    }
    // A signature under another secret does not match: the receiver can tell.
    assert.notEqual(
      got[0].headers.get("x-webhook-signature"),
      await signWebhook(
        "whsec_other",
        Number(
          got[0].headers.get("x-webhook-signature")!.match(/^t=(\d+),/)![1],
        ),
        got[0].body,
      ),
    );
    // A new secret signs from then on.
    const rotated = await apiCall(
      e,
      key,
      "POST",
      "/api/1/account/webhook/secret",
    );
    assert.notEqual(rotated.body.data.secret, secret);
  } finally {
    await e.close();
  }
});

test("a webhook_url at an address the guard refuses is 210 at once, nothing is queued, and that server sees no request", async () => {
  const e = await env();
  try {
    const { key } = await userWithKey(e);
    const r = await apiCall(e, key, "POST", "/api/1/screenshot", {
      url: `${page.origin}/blue`,
      webhook_url: `${denied.origin}/hook`,
    });
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 210);
    assert.equal(r.body.error.details[0].path, "webhook_url");
    const jobs = await apiCall(e, key, "GET", "/api/1/screenshot/jobs");
    assert.deepEqual(jobs.body.data.jobs, []);
    assert.equal(denied.requests.length, 0);
    const inline = await apiCall(e, key, "POST", "/api/1/screenshot", {
      url: `${page.origin}/blue`,
      share: false,
      webhook_url: hook("/hook"),
    });
    assert.equal(inline.body.error.code, 160);
  } finally {
    await e.close();
  }
});

test("a webhook answered with a redirect is not followed: the try is listed as such and the redirect's target sees nothing", async () => {
  const e = await env();
  got.length = 0;
  try {
    const { key } = await userWithKey(e);
    const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
      url: `${page.origin}/blue`,
      viewport: { width: 200, height: 100 },
      webhook_url: hook("/moved"),
    });
    const id = accepted.body.data.job.id;
    const first = await until(async () => {
      const r = await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${id}`);
      return r.body.data.webhook.deliveries[0];
    }, "a try");
    assert.deepEqual([first.ok, first.status_code, first.error], [
      false,
      302,
      "redirects are not followed",
    ]);
    assert.ok(got.every((r) => r.path === "/moved"), JSON.stringify(got));
  } finally {
    await e.close();
  }
});

test("the account page shows the webhook secret the API gives, the latest tries, and makes a new secret", async () => {
  const e = await env();
  got.length = 0;
  try {
    const { key, cookie, token } = await signedInAccount(e);
    const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
      url: `${page.origin}/blue`,
      viewport: { width: 200, height: 100 },
      webhook_url: hook("/hook"),
    });
    const id = accepted.body.data.job.id;
    await until(async () => {
      const r = await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${id}`);
      return r.body.data.webhook.deliveries[0];
    }, "a try");
    const secret = (await apiCall(e, key, "GET", "/api/1/account/webhook"))
      .body.data.secret;
    const html = await (await e.app.request("/account", {
      headers: { cookie },
    })).text();
    assert.ok(html.includes(secret), "the secret is shown");
    assert.ok(html.includes(hook("/hook")), "the delivery's address");
    assert.match(html, /delivered \(200\)/);
    const rotated = await e.app.request("/account/webhook/secret", {
      method: "POST",
      headers: {
        cookie,
        origin: "http://localhost:8080",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ _csrf: token }),
    });
    assert.equal(rotated.status, 303);
    const after = (await apiCall(e, key, "GET", "/api/1/account/webhook"))
      .body.data.secret;
    assert.notEqual(after, secret);
    const page2 = await (await e.app.request("/account?done=webhook", {
      headers: { cookie },
    })).text();
    assert.ok(page2.includes(after));
    assert.match(page2, /A new webhook secret is made/);
  } finally {
    await e.close();
  }
});

test("teardown", async () => {
  await receiver.shutdown();
  await page.close();
  await denied.close();
});
