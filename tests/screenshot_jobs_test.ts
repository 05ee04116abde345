import assert from "node:assert/strict";
import sharp from "sharp";
import {
  apiCall,
  databaseKinds,
  json,
  setAccountDisabled,
  signedInAccount,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { createApp } from "../app.ts";
import { withTimeout } from "../services/runtime/timeout.ts";
import { appSettled, startJobWorker } from "../app.ts";
import { createApiClient } from "../sdk/src/client.ts";
import type { ServiceError } from "../sdk/src/errors.ts";

/**
 * Issue #50, first part: asynchronous captures on pg-boss. `async: true` answers 202 with
 * a job that runs in the background and is followed, listed and cancelled through the
 * API; it survives its app (a new one over the same database runs what was queued).
 */

let release = () => {};
/** Resolves when the held page has been asked for (its capture is under way). */
let heldAsked = Promise.withResolvers<void>();
/** The hung page: resolves when asked for, and when the browser drops its request. */
let hung = {
  asked: Promise.withResolvers<void>(),
  dropped: Promise.withResolvers<void>(),
};
/** Ends every hung request (the test's end). */
const unhang = new AbortController();
const fixture = startFixture({
  "/blue":
    `<!doctype html><style>html,body{margin:0;height:100%;background:#2e86de}</style><body></body>`,
  // Held until the test lets it go: captures that stay running while others queue.
  "/held": async () => {
    const held = new Promise<void>((r) => release = r);
    heldAsked.resolve();
    await held;
    return new Response(
      `<!doctype html><style>html,body{margin:0;height:100%;background:#27ae60}</style><body></body>`,
      { headers: { "content-type": "text/html" } },
    );
  },
  // Never answered while the test runs: a capture that stays running until stopped.
  "/hang": async (req) => {
    const mine = hung;
    mine.asked.resolve();
    req.signal.addEventListener("abort", () => mine.dropped.resolve());
    await new Promise((r) => {
      req.signal.addEventListener("abort", r);
      unhang.signal.addEventListener("abort", r);
    });
    return new Response("<!doctype html><body>late</body>", {
      headers: { "content-type": "text/html" },
    });
  },
});
const ALLOW = `127.0.0.1:${fixture.port}`;

async function env(
  kind: "pglite" | "postgres",
  slots = 1,
  extra: Record<string, string> = {},
): Promise<TestEnv> {
  const e = await testEnv({
    kind,
    screenshotter: testScreenshotter(ALLOW, { concurrency: slots }),
    env: {
      FETCH_ALLOW_PRIVATE: ALLOW,
      SCREENSHOT_CONCURRENCY: String(slots),
      SCREENSHOT_PER_KEY: "1",
      ...extra,
    },
  });
  return {
    ...e,
    async close() {
      await e.close();
      await e.deps.screenshotter?.close();
    },
  };
}

/** Queues a 200 × 100 capture of the fixture's `path` with `key`; the job's id. */
async function askJob(e: TestEnv, key: string, path: string): Promise<string> {
  const r = await apiCall(e, key, "POST", "/api/1/screenshot", {
    url: `${fixture.origin}${path}`,
    viewport: { width: 200, height: 100 },
    async: true,
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.data.job.id;
}

/** GETs the job until `done(status)` or 30 s; its last record. */
async function follow(
  e: TestEnv,
  key: string,
  id: string,
  done: (s: string) => boolean = (s) => s === "done" || s === "failed",
) {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${id}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (done(r.body.data.status)) return r.body.data;
    if (Date.now() > end) {
      throw new Error(`job ${id} stayed ${r.body.data.status}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const kind of databaseKinds()) {
  test(`[${kind}] async: true answers 202 with a queued job at once; it runs in the background and ends done with the capture as the synchronous call answers it, stored and listed`, async () => {
    const e = await env(kind);
    try {
      const { key } = await userWithKey(e);
      const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
        url: `${fixture.origin}/blue`,
        viewport: { width: 320, height: 200 },
        async: true,
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.equal(accepted.body.status, 202);
      const job = accepted.body.data.job;
      assert.match(job.id, /^[0-9a-f-]{36}$/);
      assert.equal(job.status, "queued");
      assert.equal(
        job.status_url,
        `http://localhost:8080/api/1/screenshot/jobs/${job.id}`,
      );
      assert.equal(job.request.url, `${fixture.origin}/blue`);
      assert.equal(job.result, null);

      const done = await follow(e, key, job.id);
      assert.equal(done.status, "done", JSON.stringify(done));
      assert.equal(done.attempts, 1);
      assert.ok(done.started_at && done.finished_at);
      assert.equal(done.error, null);
      const r = done.result;
      assert.equal(r.shared, true);
      assert.equal(r.width, 320);
      assert.equal(r.height, 200);
      assert.equal(r.url_viewer, `http://localhost:8080/i/${r.id}`);
      // The stored image is the page: blue.
      const file = await e.app.request(new URL(r.url).pathname);
      assert.equal(file.status, 200);
      const { data, info } = await sharp(
        new Uint8Array(await file.arrayBuffer()),
      )
        .raw().toBuffer({ resolveWithObject: true });
      const at = (info.width * 100 + 160) * info.channels;
      assert.deepEqual([data[at], data[at + 1], data[at + 2]], [
        0x2e,
        0x86,
        0xde,
      ]);
      // Listed with the account's images, and among its jobs.
      const image = await apiCall(e, key, "GET", `/api/1/images/${r.id}`);
      assert.equal(image.status, 200);
      const list = await apiCall(e, key, "GET", "/api/1/screenshot/jobs");
      assert.deepEqual(list.body.data.jobs.map((j: { id: string }) => j.id), [
        job.id,
      ]);
      const doneOnly = await apiCall(
        e,
        key,
        "GET",
        "/api/1/screenshot/jobs?status=failed",
      );
      assert.deepEqual(doneOnly.body.data.jobs, []);
    } finally {
      await e.close();
    }
  });

  test(`[${kind}] a job whose capture is refused ends failed with the code the synchronous call answers; someone else's job is 404; async with share false is 160`, async () => {
    const e = await env(kind);
    try {
      const { key } = await userWithKey(e);
      const other = await userWithKey(e);
      // Port 9 on loopback is not allowed: the guard refuses it.
      const target = {
        url: "http://127.0.0.1:9/",
        viewport: { width: 200, height: 100 },
      };
      const sync = await apiCall(e, key, "POST", "/api/1/screenshot", target);
      assert.ok(sync.status >= 400);
      const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
        ...target,
        async: true,
      });
      assert.equal(accepted.status, 202);
      const failed = await follow(e, key, accepted.body.data.job.id);
      assert.equal(failed.status, "failed");
      assert.deepEqual(failed.error, {
        code: sync.body.error.code,
        message: sync.body.error.message,
      });
      assert.equal(failed.result, null);
      const theirs = await apiCall(
        e,
        other.key,
        "GET",
        `/api/1/screenshot/jobs/${accepted.body.data.job.id}`,
      );
      assert.equal(theirs.status, 404);
      const inline = await apiCall(e, key, "POST", "/api/1/screenshot", {
        url: `${fixture.origin}/blue`,
        share: false,
        async: true,
      });
      assert.equal(inline.status, 400);
      assert.equal(inline.body.error.code, 160);
      assert.equal(inline.body.error.details[0].path, "async");
    } finally {
      await e.close();
    }
  });

  test(`[${kind}] a queued job can be cancelled and never runs; a finished one cannot (160)`, async () => {
    const e = await env(kind);
    try {
      const { key } = await userWithKey(e);
      const ask = (path: string) => askJob(e, key, path);
      // One capture at a time: the held one runs, the next waits in the queue.
      heldAsked = Promise.withResolvers<void>();
      const held = await ask("/held");
      await heldAsked.promise;
      const waiting = await ask("/blue");
      // Cancelled while the queue had already handed it out (a race the row settles):
      // its worker finds the row cancelled and runs nothing.
      const raced = await ask("/blue");
      await e.deps.database.db.updateTable("screenshot_jobs")
        .set({ status: "cancelled" }).where("id", "=", raced).execute();
      const cancelled = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/jobs/${waiting}`,
      );
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.equal(cancelled.body.data.status, "cancelled");
      release();
      assert.equal((await follow(e, key, held)).status, "done");
      const finished = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/jobs/${held}`,
      );
      assert.equal(finished.status, 400);
      assert.equal(finished.body.error.code, 160);
      assert.equal(finished.body.error.details[0].path, "id");
      assert.match(finished.body.error.details[0].message, /this one is done/);
      // A later job runs after it: the cancelled one was passed over, not run.
      const later = await ask("/blue");
      assert.equal((await follow(e, key, later)).status, "done");
      const after = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/jobs/${waiting}`,
      );
      assert.equal(after.body.data.status, "cancelled");
      assert.equal(after.body.data.attempts, 0);
      const racedAfter = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/jobs/${raced}`,
      );
      assert.equal(racedAfter.body.data.status, "cancelled");
      assert.equal(racedAfter.body.data.attempts, 0);
      const images = await apiCall(e, key, "GET", "/api/1/images");
      assert.equal(images.body.data.total, 2);
    } finally {
      release();
      await e.close();
    }
  });

  test(`[${kind}] a running job is stopped when cancelled: its page is dropped, nothing is stored or counted, no webhook is called, and its slot goes to the next job; cancelled through another app on the same database, it stops at that app's next look at its row`, async () => {
    const e = await env(kind);
    try {
      const { key } = await userWithKey(e);
      const used = async () =>
        (await e.deps.database.db.selectFrom("screenshot_usage")
          .select("count").executeTakeFirst())?.count ?? 0;
      // One slot: the hung capture holds it; the next job can only run once it is let go.
      hung = {
        asked: Promise.withResolvers(),
        dropped: Promise.withResolvers(),
      };
      const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
        url: `${fixture.origin}/hang`,
        viewport: { width: 200, height: 100 },
        async: true,
        webhook_url: `${fixture.origin}/hook`,
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const running = accepted.body.data.job.id;
      await hung.asked.promise;
      const next = await askJob(e, key, "/blue");
      const before = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/jobs/${running}`,
      );
      assert.equal(before.body.data.status, "running");
      const stop = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/jobs/${running}`,
      );
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      assert.equal(stop.body.data.status, "cancelled");
      // The browser let the page's request go (its page was closed), and the next job
      // ran in the slot (the hung page never answers while the test runs).
      await withTimeout(
        hung.dropped.promise,
        10_000,
        "the hung page was not dropped within 10 s",
      );
      assert.equal((await follow(e, key, next)).status, "done");
      const after = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/jobs/${running}`,
      );
      assert.equal(after.body.data.status, "cancelled");
      assert.equal(after.body.data.result, null);
      assert.equal(after.body.data.error, null);
      const images = await apiCall(e, key, "GET", "/api/1/images");
      assert.equal(images.body.data.total, 1);
      assert.equal(await used(), 1, "only the capture that ran is counted");
      // A finished one cannot be cancelled, and a cancelled one not again.
      const again = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/jobs/${running}`,
      );
      assert.equal(again.body.error.code, 160);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(
        fixture.requests.filter((r) => r.path === "/hook").length,
        0,
        "a cancelled job calls no webhook",
      );

      // Through an app without a browser (API only): it takes no capture job, and its
      // cancel reaches the app running the job through the job's row.
      hung = {
        asked: Promise.withResolvers(),
        dropped: Promise.withResolvers(),
      };
      const elsewhere = await askJob(e, key, "/hang");
      await hung.asked.promise;
      const waiting = await askJob(e, key, "/blue");
      const spare = await askJob(e, key, "/blue");
      const other = createApp({ ...e.deps, screenshotter: undefined });
      try {
        const r1 = await apiCall(
          { ...e, app: other },
          key,
          "DELETE",
          `/api/1/screenshot/jobs/${spare}`,
        );
        assert.equal(r1.status, 200, JSON.stringify(r1.body));
        // Its queue engine is started now; given time to poll, it takes nothing (it did:
        // each job it took failed 240 for want of a browser).
        await new Promise((r) => setTimeout(r, 1500));
        const untouched = await apiCall(
          e,
          key,
          "GET",
          `/api/1/screenshot/jobs/${waiting}`,
        );
        assert.equal(untouched.body.data.status, "queued");
        assert.equal(untouched.body.data.attempts, 0);
        const t0 = Date.now();
        const r = await apiCall(
          { ...e, app: other },
          key,
          "DELETE",
          `/api/1/screenshot/jobs/${elsewhere}`,
        );
        assert.equal(r.status, 200, JSON.stringify(r.body));
        await withTimeout(
          hung.dropped.promise,
          10_000,
          "the hung page was not dropped within 10 s",
        );
        const waited = Date.now() - t0;
        assert.ok(waited < 5000, `dropped after ${waited} ms`);
        const done = await follow(e, key, waiting);
        assert.equal(done.status, "done");
        assert.equal(done.attempts, 1);
        const end = await apiCall(
          e,
          key,
          "GET",
          `/api/1/screenshot/jobs/${elsewhere}`,
        );
        assert.equal(end.body.data.status, "cancelled");
        assert.equal(end.body.data.result, null);
        // The two captures of /blue are the same bytes: one image, two captures counted.
        assert.equal(
          (await apiCall(e, key, "GET", "/api/1/images")).body.data.total,
          1,
        );
        assert.equal(await used(), 2);
      } finally {
        await appSettled(other);
      }
    } finally {
      await e.close();
    }
  });

  test(`[${kind}] DELETE on a batch cancels every job of it still queued or running (the running one's page dropped), leaves the one done as it was, and answers the batch; again it changes nothing; someone else's batch is 404`, async () => {
    const e = await env(kind);
    try {
      const { key } = await userWithKey(e);
      hung = {
        asked: Promise.withResolvers(),
        dropped: Promise.withResolvers(),
      };
      const item = (path: string) => ({
        url: `${fixture.origin}${path}`,
        viewport: { width: 200, height: 100 },
      });
      const queued = await apiCall(e, key, "POST", "/api/1/screenshot/batch", {
        requests: [item("/blue"), item("/hang"), item("/blue?2")],
      });
      assert.equal(queued.status, 202, JSON.stringify(queued.body));
      const id = queued.body.data.batch.id;
      await hung.asked.promise;
      const other = await userWithKey(e);
      const theirs = await apiCall(
        e,
        other.key,
        "DELETE",
        `/api/1/screenshot/batches/${id}`,
      );
      assert.equal(theirs.status, 404);
      const stop = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/batches/${id}`,
      );
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      const batch = stop.body.data.batch;
      assert.equal(batch.total, 3);
      assert.deepEqual(batch.counts, {
        queued: 0,
        running: 0,
        done: 1,
        failed: 0,
        cancelled: 2,
      });
      assert.deepEqual(
        batch.jobs.map((j: { status: string }) => j.status),
        ["done", "cancelled", "cancelled"],
      );
      assert.ok(batch.jobs[0].result.id, "the capture done keeps its result");
      await withTimeout(
        hung.dropped.promise,
        10_000,
        "the hung page was not dropped within 10 s",
      );
      const again = await apiCall(
        e,
        key,
        "DELETE",
        `/api/1/screenshot/batches/${id}`,
      );
      assert.equal(again.status, 200);
      assert.deepEqual(again.body.data.batch.counts, batch.counts);
      // Nothing of it ran afterwards, nor was stored.
      await new Promise((r) => setTimeout(r, 1000));
      const after = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/batches/${id}`,
      );
      assert.deepEqual(after.body.data.batch.counts, batch.counts);
      assert.deepEqual(
        after.body.data.batch.jobs.map((j: { attempts: number }) => j.attempts),
        [1, 1, 0],
      );
      const images = await apiCall(e, key, "GET", "/api/1/images");
      assert.equal(images.body.data.total, 1);
    } finally {
      await e.close();
    }
  });

  test(`[${kind}] a disabled account's jobs end failed 120 without an image or a webhook call: the queued one without a capture, the running one stopped; enabled again, its jobs run`, async () => {
    const e = await env(kind);
    try {
      const admin = await signedInAccount(e, { role: "admin" });
      const { user, key } = await userWithKey(e);
      const { db } = e.deps.database;
      const row = (id: string) =>
        db.selectFrom("screenshot_jobs").selectAll().where("id", "=", id)
          .executeTakeFirstOrThrow();
      const ended = async (id: string) => {
        const end = Date.now() + 30_000;
        for (;;) {
          const r = await row(id);
          if (r.status === "done" || r.status === "failed") return r;
          if (Date.now() > end) throw new Error(`job ${id} stayed ${r.status}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      const hooked = () =>
        fixture.requests.filter((r) => r.path === "/disabled-hook").length;
      heldAsked = Promise.withResolvers<void>();
      const held = await askJob(e, key, "/held");
      await heldAsked.promise;
      const accepted = await apiCall(e, key, "POST", "/api/1/screenshot", {
        url: `${fixture.origin}/blue?disabled`,
        viewport: { width: 200, height: 100 },
        async: true,
        webhook_url: `${fixture.origin}/disabled-hook`,
      });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const waiting = accepted.body.data.job.id;
      await setAccountDisabled(e, admin.key, user.id, true);
      // The held page is never let go: the running capture ends because it is stopped.
      const stopped = await ended(held);
      assert.equal(stopped.status, "failed");
      assert.equal(stopped.error_code, 120);
      assert.equal(stopped.image_id, null);
      const refused = await ended(waiting);
      assert.equal(refused.status, "failed");
      assert.equal(refused.error_code, 120);
      assert.equal(refused.image_id, null);
      const images = await db.selectFrom("images").select("id")
        .where("user_id", "=", user.id).execute();
      assert.equal(images.length, 0);
      assert.equal(
        fixture.requests.filter((r) => r.search === "?disabled").length,
        0,
        "the queued job's page was never asked for",
      );
      // The webhook queue is polled every 2 s: given time, it calls nobody.
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal(hooked(), 0);
      await setAccountDisabled(e, admin.key, user.id, false);
      const again = await askJob(e, key, "/blue?again");
      assert.equal((await ended(again)).status, "done");
    } finally {
      release();
      await e.close();
    }
  });

  test(`[${kind}] a job still queued when its app stops (a rolling restart) is run by the next app on the same database once that app's worker is started (not as the app is made); the one running finishes first`, async () => {
    const first = await env(kind);
    try {
      const { key } = await userWithKey(first);
      const ask = (path: string) => askJob(first, key, path);
      heldAsked = Promise.withResolvers<void>();
      const held = await ask("/held");
      await heldAsked.promise;
      const queued = await ask("/blue");
      // The first app stops: its running capture may finish, nothing new starts.
      const stopping = appSettled(first.app);
      await new Promise((r) => setTimeout(r, 300));
      release();
      await stopping;
      assert.equal((await follow(first, key, held)).status, "done");
      const still = await apiCall(
        first,
        key,
        "GET",
        `/api/1/screenshot/jobs/${queued}`,
      );
      assert.equal(still.body.data.status, "queued");
      const browser = testScreenshotter(ALLOW, { concurrency: 1 });
      const second = createApp({ ...first.deps, screenshotter: browser });
      try {
        // Made, the app runs nothing yet: its worker starts when main.ts says so, a
        // while after listening, so that a cold start's first requests go first.
        await new Promise((r) => setTimeout(r, 1500));
        const waiting = await apiCall(
          { ...first, app: second },
          key,
          "GET",
          `/api/1/screenshot/jobs/${queued}`,
        );
        assert.equal(waiting.body.data.status, "queued");
        assert.equal(waiting.body.data.attempts, 0);
        await startJobWorker(second);
        const done = await follow({ ...first, app: second }, key, queued);
        assert.equal(done.status, "done", JSON.stringify(done));
        assert.equal(done.attempts, 1);
      } finally {
        await appSettled(second);
        await browser.close();
      }
    } finally {
      release();
      await first.close();
    }
  });
}

test("a batch queues every request at once (202, one id, its jobs in order), counts them by status as they run, and ends with each done; over SCREENSHOT_BATCH_MAX or an item with share false is 160 and queues nothing", async () => {
  const e = await env("pglite", 1, { SCREENSHOT_BATCH_MAX: "3" });
  try {
    const { key } = await userWithKey(e);
    const item = (w: number) => ({
      url: `${fixture.origin}/blue`,
      viewport: { width: w, height: 100 },
    });
    const r = await apiCall(e, key, "POST", "/api/1/screenshot/batch", {
      requests: [item(200), item(210), item(220)],
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.status, 202);
    const batch = r.body.data.batch;
    assert.equal(batch.total, 3);
    assert.equal(
      batch.status_url,
      `http://localhost:8080/api/1/screenshot/batches/${batch.id}`,
    );
    assert.deepEqual(
      batch.jobs.map((j: { request: { viewport: { width: number } } }) =>
        j.request.viewport.width
      ),
      [200, 210, 220],
    );
    assert.equal(batch.counts.queued + batch.counts.running, 3);
    const end = Date.now() + 30_000;
    let now = batch;
    while (now.counts.done < 3 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      now = (await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/batches/${batch.id}`,
      )).body.data.batch;
    }
    assert.deepEqual(now.counts, {
      queued: 0,
      running: 0,
      done: 3,
      failed: 0,
      cancelled: 0,
    });
    assert.deepEqual(
      now.jobs.map((j: { result: { width: number } }) => j.result.width),
      [200, 210, 220],
    );
    const tooMany = await apiCall(e, key, "POST", "/api/1/screenshot/batch", {
      requests: [item(201), item(202), item(203), item(204)],
    });
    assert.equal(tooMany.body.error.code, 160);
    assert.equal(tooMany.body.error.details[0].path, "requests");
    const inline = await apiCall(e, key, "POST", "/api/1/screenshot/batch", {
      requests: [item(200), { ...item(200), share: false }],
    });
    assert.equal(inline.body.error.code, 160);
    assert.equal(inline.body.error.details[0].path, "requests.1.share");
    const all = await apiCall(e, key, "GET", "/api/1/screenshot/jobs");
    assert.equal(all.body.data.jobs.length, 3);
    const other = await userWithKey(e);
    const theirs = await apiCall(
      e,
      other.key,
      "GET",
      `/api/1/screenshot/batches/${batch.id}`,
    );
    assert.equal(theirs.status, 404);
  } finally {
    await e.close();
  }
});

test("fair between accounts: while one account's job runs and its others wait (SCREENSHOT_PER_KEY), another account's job takes the free slot at once", async () => {
  const e = await env("pglite", 2);
  try {
    const a = await userWithKey(e);
    const b = await userWithKey(e);
    const ask = (key: string, path: string) => askJob(e, key, path);
    heldAsked = Promise.withResolvers<void>();
    const held = await ask(a.key, "/held");
    await heldAsked.promise;
    const waiting = [await ask(a.key, "/blue"), await ask(a.key, "/blue")];
    const theirs = await ask(b.key, "/blue");
    const done = await follow(e, b.key, theirs);
    assert.equal(done.status, "done");
    // A's others still wait for A's share, though a browser slot is free.
    for (const id of waiting) {
      const r = await apiCall(e, a.key, "GET", `/api/1/screenshot/jobs/${id}`);
      assert.equal(r.body.data.status, "queued");
      // Never handed out to be refused by the browser's per-key slots either.
      assert.equal(r.body.data.attempts, 0);
    }
    release();
    for (const id of [held, ...waiting]) {
      const end = await follow(e, a.key, id);
      assert.equal(end.status, "done");
      assert.equal(end.attempts, 1);
    }
  } finally {
    release();
    await e.close();
  }
});

test("without a browser, async: true is refused at once (240) and nothing is queued", async () => {
  const e = await testEnv();
  try {
    const { key } = await userWithKey(e);
    const r = await json(
      await e.app.request("/api/1/screenshot", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ url: "https://example.com", async: true }),
      }),
    );
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, 240);
    const rows = await e.deps.database.db.selectFrom("screenshot_jobs")
      .selectAll().execute();
    assert.deepEqual(rows, []);
  } finally {
    await e.close();
  }
});

test("the typed client queues, follows, lists, batches and cancels captures, and makes, pauses, runs and removes a schedule", async () => {
  const e = await env("pglite");
  try {
    const { key } = await userWithKey(e);
    const client = createApiClient({
      baseUrl: "http://localhost:8080",
      apiKey: key,
      fetch: ((input: RequestInfo | URL, init?: RequestInit) =>
        Promise.resolve(e.app.request(input, init))) as typeof fetch,
    });
    const item = {
      url: `${fixture.origin}/blue`,
      viewport: { width: 240, height: 100 },
    };
    const accepted = await client.screenshotAsync(item);
    assert.equal(accepted.status, 202);
    const job = await client.waitForScreenshotJob(accepted.data.job.id, {
      intervalMs: 100,
      timeoutMs: 30_000,
    });
    assert.equal(job.status, "done");
    assert.equal(job.result?.width, 240);
    const batch = await client.screenshotBatch([item, item]);
    assert.equal(batch.data.batch.total, 2);
    const listed = await client.listScreenshotJobs({ perPage: 10 });
    assert.equal(listed.data.jobs.length, 3);
    const one = await client.getScreenshotBatch(batch.data.batch.id);
    assert.equal(one.data.batch.id, batch.data.batch.id);
    const last = batch.data.batch.jobs[1].id;
    // Cancelled while queued, or already past it (160): either way the client says so.
    const cancelled = await client.cancelScreenshotJob(last).then(
      (r) => r.data.status,
      (err: ServiceError) => err.code,
    );
    assert.ok(
      cancelled === "cancelled" || cancelled === 160,
      String(cancelled),
    );
    // What is left of the batch, cancelled at once: nothing of it is queued or running.
    const stopped = await client.cancelScreenshotBatch(batch.data.batch.id);
    assert.equal(stopped.data.batch.total, 2);
    assert.equal(
      stopped.data.batch.counts.queued + stopped.data.batch.counts.running,
      0,
    );
    const none = await client.cancelScreenshotBatch(crypto.randomUUID()).then(
      () => 200,
      (err: ServiceError) => err.status,
    );
    assert.equal(none, 404);
    const account = await client.webhookAccount();
    assert.match(account.data.secret, /^whsec_/);
    const schedule = await client.createSchedule({
      cron: "0 3 * * *",
      request: item,
    });
    assert.equal(schedule.data.next_runs.length, 3);
    const paused = await client.pauseSchedule(schedule.data.id);
    assert.equal(paused.data.paused, true);
    assert.equal((await client.listSchedules()).data.schedules.length, 1);
    const run = await client.runSchedule(schedule.data.id);
    assert.equal(run.status, 202);
    const ran = await client.waitForScreenshotJob(run.data.job.id, {
      intervalMs: 100,
      timeoutMs: 30_000,
    });
    assert.equal(ran.schedule_id, schedule.data.id);
    await client.deleteSchedule(schedule.data.id);
    assert.equal((await client.listSchedules()).data.schedules.length, 0);
  } finally {
    await e.close();
  }
});

test("the screenshot page queues a list of addresses: its batch page shows each one's progress and result, refreshing itself until all have ended; a bad line goes back to the form naming it", async () => {
  const e = await env("pglite");
  try {
    const { cookie, token } = await signedInAccount(e);
    const page = await (await e.app.request("/screenshot", {
      headers: { cookie },
    })).text();
    assert.match(page, /action="\/screenshot\/batch"/);
    const post = (urls: string) =>
      e.app.request("/screenshot/batch", {
        method: "POST",
        headers: {
          cookie,
          origin: "http://localhost:8080",
          referer: "http://localhost:8080/screenshot",
          accept: "text/html",
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          _csrf: token,
          urls,
          preset: "desktop-1080p",
        }),
      });
    const queued = await post(
      `${fixture.origin}/blue\n\n${fixture.origin}/blue?2\n`,
    );
    assert.equal(queued.status, 303);
    const where = queued.headers.get("location")!;
    assert.match(where, /^\/screenshot\/batches\/[0-9a-f-]{36}$/);
    const view = async () =>
      await (await e.app.request(where, { headers: { cookie } })).text();
    const first = await view();
    assert.match(first, /of 2 done/);
    assert.match(first, /http-equiv="refresh"/);
    const end = Date.now() + 30_000;
    let html = first;
    while (!/2 of 2 done\./.test(html) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      html = await view();
    }
    assert.match(html, /2 of 2 done\./);
    assert.doesNotMatch(html, /http-equiv="refresh"/);
    assert.equal([...html.matchAll(/Open the image/g)].length, 2);
    // Someone else's batch page is none.
    const other = await signedInAccount(e);
    const theirs = await e.app.request(where, {
      headers: { cookie: other.cookie },
    });
    assert.equal(theirs.status, 404);
    await theirs.body?.cancel();
    // A bad line: back to the form, the line named beside the field, nothing queued.
    const bad = await post(`${fixture.origin}/blue\nnot a url`);
    assert.equal(bad.status, 303);
    const back = bad.headers.get("location")!;
    assert.match(back, /^\/screenshot/);
    const shown = await (await e.app.request(back, { headers: { cookie } }))
      .text();
    assert.match(shown, /line 2 \(not a url\)/);
    const jobs = await e.deps.database.db.selectFrom("screenshot_jobs")
      .select("id").execute();
    assert.equal(jobs.length, 2);
  } finally {
    await e.close();
  }
});

test("the batch page offers to cancel what is left while captures are waiting or running: the form stops them and the page shows them cancelled, without the button; without the form's token nothing is cancelled", async () => {
  const e = await env("pglite");
  try {
    const { cookie, token } = await signedInAccount(e);
    const headers = {
      cookie,
      origin: "http://localhost:8080",
      referer: "http://localhost:8080/screenshot",
      accept: "text/html",
      "content-type": "application/x-www-form-urlencoded",
    };
    hung = { asked: Promise.withResolvers(), dropped: Promise.withResolvers() };
    const queued = await e.app.request("/screenshot/batch", {
      method: "POST",
      headers,
      body: new URLSearchParams({
        _csrf: token,
        urls: `${fixture.origin}/hang\n${fixture.origin}/blue`,
        preset: "desktop-1080p",
      }),
    });
    assert.equal(queued.status, 303);
    const where = queued.headers.get("location")!;
    await hung.asked.promise;
    const view = async () =>
      await (await e.app.request(where, { headers: { cookie } })).text();
    const open = await view();
    const action = `${where}/cancel`;
    assert.ok(open.includes(`action="${action}"`), open);
    assert.match(open, /Cancel the rest/);
    const forged = await e.app.request(action, {
      method: "POST",
      headers,
      body: new URLSearchParams({ _csrf: "not the token" }),
    });
    assert.notEqual(forged.status, 303);
    await forged.body?.cancel();
    assert.match(await view(), /Capturing…/);
    const cancel = await e.app.request(action, {
      method: "POST",
      headers,
      body: new URLSearchParams({ _csrf: token }),
    });
    assert.equal(cancel.status, 303);
    assert.equal(cancel.headers.get("location"), where);
    await withTimeout(
      hung.dropped.promise,
      10_000,
      "the hung page was not dropped within 10 s",
    );
    const ended = await view();
    assert.equal([...ended.matchAll(/>Cancelled</g)].length, 2);
    assert.match(ended, /0 of 2 done\./);
    assert.doesNotMatch(ended, /Cancel the rest/);
    assert.doesNotMatch(ended, /http-equiv="refresh"/);
  } finally {
    await e.close();
  }
});

test("teardown", async () => {
  unhang.abort();
  release();
  await fixture.close();
});
