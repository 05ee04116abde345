import assert from "node:assert/strict";
import {
  apiCall,
  databaseKinds,
  setAccountDisabled,
  signedInAccount,
  test,
  type TestEnv,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { sql } from "kysely";
import { fromKysely, PgBoss } from "pg-boss";

/**
 * Issue #50: scheduled captures. The timer is pg-boss's (one per deployment); what is
 * ours is tested here: the rules a schedule must meet, pause and removal, and a run with
 * notify_on_change, which calls the webhook only when the page's pixels changed.
 */

let colour = "#2e86de";
/** A 20 × 10 px box's colour: 1 % of a 200 × 100 capture. */
let box = "#ffffff";
const page = startFixture({
  "/changing": () =>
    new Response(
      `<!doctype html><style>html,body{margin:0;height:100%;background:${colour}}</style><body><div style="width:20px;height:10px;background:${box}"></div></body>`,
      { headers: { "content-type": "text/html" } },
    ),
});
const got: string[] = [];
const receiver: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  async (req): Promise<Response> => {
    got.push(await req.text());
    return new Response("");
  },
);
const ALLOW = `127.0.0.1:${page.port},127.0.0.1:${receiver.addr.port}`;

async function env(
  extra: Record<string, string> = {},
  kind: "pglite" | "postgres" = "pglite",
): Promise<TestEnv> {
  const e = await testEnv({
    kind,
    screenshotter: testScreenshotter(ALLOW, { concurrency: 1 }),
    env: { FETCH_ALLOW_PRIVATE: ALLOW, ...extra },
  });
  return {
    ...e,
    async close() {
      await e.close();
      await e.deps.screenshotter?.close();
    },
  };
}

test("a schedule is made with its next runs, refused when its runs come too close, its cron is no cron, its capture is not stored or the account has its maximum; paused it has no next run; removed it is 404; someone else's is 404", async () => {
  const e = await env({ SCREENSHOT_SCHEDULES_MAX: "2" });
  try {
    const { key } = await userWithKey(e);
    const other = await userWithKey(e);
    const make = (body: Record<string, unknown>) =>
      apiCall(e, key, "POST", "/api/1/screenshot/schedules", {
        request: { url: `${page.origin}/changing` },
        ...body,
      });
    const made = await make({ cron: "*/5 * * * *" });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const s = made.body.data;
    assert.equal(s.cron, "*/5 * * * *");
    assert.equal(s.paused, false);
    assert.equal(s.runs, 0);
    assert.equal(s.next_runs.length, 3);
    const gaps = s.next_runs.slice(1).map((t: string, i: number) =>
      Date.parse(t) - Date.parse(s.next_runs[i])
    );
    assert.deepEqual(gaps, [300_000, 300_000]);

    const close = await make({ cron: "* * * * *" });
    assert.equal(close.body.error.code, 160);
    assert.match(close.body.error.details[0].message, /at least 5/);
    const nonsense = await make({ cron: "every tuesday" });
    assert.equal(nonsense.body.error.code, 160);
    assert.equal(nonsense.body.error.details[0].path, "cron");
    const inline = await make({
      cron: "0 * * * *",
      request: { url: `${page.origin}/changing`, share: false },
    });
    assert.equal(inline.body.error.code, 160);
    assert.equal((await make({ cron: "0 * * * *" })).status, 200);
    const third = await make({ cron: "0 0 * * *" });
    assert.equal(third.body.error.code, 160);
    assert.match(third.body.error.details[0].message, /at most 2/);

    // Registered with pg-boss's scheduler (its timer is pg-boss's), under its id.
    const timers = async () =>
      (await sql<{ key: string; cron: string }>`
        select key, cron from pgboss.schedule
        where name = 'screenshot-schedules'`.execute(e.deps.database.db)).rows;
    assert.deepEqual(
      (await timers()).find((t) => t.key === s.id)?.cron,
      "*/5 * * * *",
    );
    const listed = await apiCall(e, key, "GET", "/api/1/screenshot/schedules");
    assert.equal(listed.body.data.schedules.length, 2);
    const path = `/api/1/screenshot/schedules/${s.id}`;
    const paused = await apiCall(e, key, "PATCH", path, { paused: true });
    assert.equal(paused.body.data.paused, true);
    assert.deepEqual(paused.body.data.next_runs, []);
    assert.ok(!(await timers()).some((t) => t.key === s.id), "no timer paused");
    const resumed = await apiCall(e, key, "PATCH", path, { paused: false });
    assert.equal(resumed.body.data.next_runs.length, 3);
    assert.equal((await apiCall(e, other.key, "GET", path)).status, 404);
    assert.equal((await apiCall(e, other.key, "DELETE", path)).status, 404);
    assert.ok((await timers()).some((t) => t.key === s.id), "resumed, a timer");
    assert.equal((await apiCall(e, key, "DELETE", path)).status, 200);
    assert.ok(!(await timers()).some((t) => t.key === s.id), "removed, none");
    assert.equal((await apiCall(e, key, "GET", path)).status, 404);
  } finally {
    await e.close();
  }
});

/** Runs the schedule now and waits for the run's job to end; the job. */
async function runOnce(e: TestEnv, key: string, id: string) {
  const run = await apiCall(
    e,
    key,
    "POST",
    `/api/1/screenshot/schedules/${id}/run`,
  );
  assert.equal(run.status, 202, JSON.stringify(run.body));
  const jobId = run.body.data.job.id;
  const end = Date.now() + 30_000;
  for (;;) {
    const j = (await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${jobId}`))
      .body.data;
    if (j.status === "done" || j.status === "failed") return j;
    assert.ok(Date.now() < end, JSON.stringify(j));
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const kind of databaseKinds()) {
  test(`[${kind}] schedules asked for at the same moment keep an account within SCREENSHOT_SCHEDULES_MAX: of six, two are made and four refused 400/160`, async () => {
    const e = await env({ SCREENSHOT_SCHEDULES_MAX: "2" }, kind);
    try {
      const { key } = await userWithKey(e);
      const answers = await Promise.all(
        Array.from(
          { length: 6 },
          (_, i) =>
            apiCall(e, key, "POST", "/api/1/screenshot/schedules", {
              request: { url: `${page.origin}/changing?n=${i}` },
              cron: `${i} * * * *`,
            }),
        ),
      );
      assert.deepEqual(
        answers.map((a) => a.status).sort(),
        [200, 200, 400, 400, 400, 400],
      );
      for (const a of answers.filter((a) => a.status === 400)) {
        assert.equal(a.body.error.code, 160);
        assert.match(a.body.error.details[0].message, /at most 2/);
      }
      const listed = await apiCall(
        e,
        key,
        "GET",
        "/api/1/screenshot/schedules",
      );
      assert.equal(listed.body.data.schedules.length, 2);
    } finally {
      await e.close();
    }
  });
}

test("with notify_on_change the first run sets the mark, an unchanged page calls nobody, and a changed one calls the webhook with how much changed; each run's image is kept", async () => {
  const e = await env({ WEBHOOK_RETRY_S: "1" });
  got.length = 0;
  colour = "#2e86de";
  box = "#ffffff";
  try {
    const { key } = await userWithKey(e);
    const made = await apiCall(e, key, "POST", "/api/1/screenshot/schedules", {
      cron: "0 */6 * * *",
      request: {
        url: `${page.origin}/changing`,
        viewport: { width: 200, height: 100 },
        webhook_url: `http://127.0.0.1:${receiver.addr.port}/changed`,
      },
      notify_on_change: true,
      change_threshold: 0.05,
    });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const id = made.body.data.id;

    const first = await runOnce(e, key, id);
    assert.equal(first.status, "done");
    assert.equal(first.schedule_id, id);
    assert.equal(first.changed, null);
    const same = await runOnce(e, key, id);
    assert.equal(same.changed, 0);
    assert.equal(same.result.id, first.result.id, "the same bytes, one image");
    // A change under the threshold (1 % of the pixels, 5 % asked): a new image, no call.
    box = "#000000";
    const small = await runOnce(e, key, id);
    assert.ok(
      small.changed > 0.005 && small.changed < 0.02,
      String(small.changed),
    );
    assert.notEqual(small.result.id, first.result.id);
    colour = "#c0392b";
    const changed = await runOnce(e, key, id);
    assert.ok(changed.changed > 0.9, String(changed.changed));
    assert.notEqual(changed.result.id, first.result.id);
    // Only the changed run called: one delivery, naming it.
    const end = Date.now() + 10_000;
    while (got.length < 1 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.length, 1);
    const body = JSON.parse(got[0]);
    assert.equal(body.job.id, changed.id);
    assert.ok(body.job.changed > 0.9);
    for (const j of [first, same, small]) {
      const r = await apiCall(e, key, "GET", `/api/1/screenshot/jobs/${j.id}`);
      assert.deepEqual(r.body.data.webhook.deliveries, []);
    }
    const schedule = await apiCall(
      e,
      key,
      "GET",
      `/api/1/screenshot/schedules/${id}`,
    );
    assert.equal(schedule.body.data.runs, 4);
    assert.equal(schedule.body.data.last_image_id, changed.result.id);
    const images = await apiCall(e, key, "GET", "/api/1/images");
    assert.equal(images.body.data.total, 3);
  } finally {
    await e.close();
  }
});

test("what the timer sends (a message on the schedules' queue, as pg-boss's cron sends it) runs the schedule as a job of its account; a paused one's message runs nothing, nor one of a disabled account", async () => {
  const e = await env();
  try {
    const { key, user } = await userWithKey(e);
    const made = await apiCall(e, key, "POST", "/api/1/screenshot/schedules", {
      cron: "0 4 * * *",
      request: {
        url: `${page.origin}/changing`,
        viewport: { width: 210, height: 100 },
      },
    });
    const id = made.body.data.id;
    // A second pg-boss on the same database plays the timer.
    const timer = new PgBoss({
      db: fromKysely(e.deps.database.db as never),
      schema: "pgboss",
      supervise: false,
      schedule: false,
    });
    await timer.start();
    try {
      await timer.send("screenshot-schedules", { scheduleId: id });
      const jobs = async () =>
        (await apiCall(e, key, "GET", "/api/1/screenshot/jobs")).body.data.jobs;
      const end = Date.now() + 30_000;
      while (
        !(await jobs()).some((j: { status: string }) => j.status === "done") &&
        Date.now() < end
      ) await new Promise((r) => setTimeout(r, 200));
      const [job] = await jobs();
      assert.equal(job.status, "done");
      assert.equal(job.schedule_id, id);
      assert.equal(job.result.width, 210);
      await apiCall(e, key, "PATCH", `/api/1/screenshot/schedules/${id}`, {
        paused: true,
      });
      await timer.send("screenshot-schedules", { scheduleId: id });
      await new Promise((r) => setTimeout(r, 4_000));
      assert.equal((await jobs()).length, 1, "a paused schedule's message ran");
      const schedule = await apiCall(
        e,
        key,
        "GET",
        `/api/1/screenshot/schedules/${id}`,
      );
      assert.equal(schedule.body.data.runs, 1);
      // Running again, but its account disabled: the timer's message makes no job.
      await apiCall(e, key, "PATCH", `/api/1/screenshot/schedules/${id}`, {
        paused: false,
      });
      const admin = await signedInAccount(e, { role: "admin" });
      await setAccountDisabled(e, admin.key, user.id, true);
      await timer.send("screenshot-schedules", { scheduleId: id });
      await new Promise((r) => setTimeout(r, 4_000));
      const { db } = e.deps.database;
      const made = await db.selectFrom("screenshot_jobs").select("id")
        .where("schedule_id", "=", id).execute();
      assert.equal(made.length, 1, "a disabled account's schedule ran");
      const kept = await db.selectFrom("screenshot_schedules").select("runs")
        .where("id", "=", id).executeTakeFirstOrThrow();
      assert.equal(kept.runs, 1);
    } finally {
      await timer.stop({ graceful: false, close: false });
    }
  } finally {
    await e.close();
  }
});

test("teardown", async () => {
  await receiver.shutdown();
  await page.close();
});
