import assert from "node:assert/strict";
import { centrePixel } from "./pixels.ts";
import { test, waitUntilAsync } from "./helpers.ts";
import { countingListener, startFixture } from "./fixture_server.ts";
import { desktopShot, startBrowserService } from "./browser_service.ts";
import { freePort } from "./pg_cluster.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { ApiError } from "../schemas/errors.ts";

const TOKEN = "test-token-" + crypto.randomUUID();

/**
 * An instance's screenshotter on a browser service (one capture at a time), with
 * `token` and `timeoutMs`; its own allow list is empty, so only the service's guard can
 * let a page through.
 */
function remoteShooter(endpoint: string, token: string, timeoutMs = 10_000) {
  return new ChromiumScreenshotter({
    wsEndpoint: endpoint,
    browserToken: token,
    concurrency: 1,
    queueMax: 2,
    recycleAfter: 100,
    timeoutMs,
    allowRules: parseAllowList(""),
    log: memoryLogger(),
  });
}

test("the browser service refuses a missing or wrong BROWSER_TOKEN on every route, DevTools included, and logs each refusal", async () => {
  const service = await startBrowserService({
    address: "127.0.0.1",
    port: freePort(),
    token: TOKEN,
  });
  const shooter = remoteShooter(service.endpoint, "wrong-token-0123456789");
  try {
    for (
      const [path, init] of [
        ["/json/version", {}],
        ["/health", {}],
        ["/guards", { method: "POST" }],
        ["/devtools/browser/x", {
          headers: { upgrade: "websocket", connection: "Upgrade" },
        }],
      ] as [string, RequestInit][]
    ) {
      for (const auth of [undefined, "Bearer nope", `Bearer ${TOKEN}x`]) {
        const res = await fetch(`${service.endpoint}${path}`, {
          ...init,
          headers: {
            ...init.headers,
            ...(auth ? { authorization: auth } : {}),
          },
        });
        await res.body?.cancel();
        assert.equal(res.status, 401, `${path} with ${auth}`);
      }
    }
    // An instance with the wrong token gets no browser: 240, not a hang.
    await assert.rejects(
      shooter.capture(desktopShot("http://127.0.0.1:1/")),
      (e) => e instanceof ApiError && e.code === 240,
    );
    await waitUntilAsync(
      () =>
        Promise.resolve(
          service.lines.filter((l) => /browser token (refused|missing)/.test(l))
            .length >= 12,
        ),
      5000,
    );
    const refused = service.lines.filter((l) =>
      /browser token (refused|missing)/.test(l)
    );
    assert.ok(refused.length >= 12, service.lines.join("\n"));
    assert.ok(refused.some((l) => l.includes("/devtools/browser/x")));
  } finally {
    await shooter.close();
    await service.stop();
  }
});

test("with BROWSER_TOKEN every page request leaves through the browser service's own guard: what it allows is captured, a denied loopback page is 210 with zero requests, and the guards close with the instance", async () => {
  const green = startFixture({
    "/":
      `<!doctype html><style>html,body{margin:0;height:100%;background:#00ff00}</style><img src="/pixel">`,
    "/pixel": () => new Response(null, { status: 204 }),
  });
  const denied = countingListener();
  const service = await startBrowserService({
    address: "127.0.0.1",
    port: freePort(),
    token: TOKEN,
    allow: `127.0.0.1:${green.port}`,
  });
  // The instance's own allow list is empty: were its own guard used, the green page would
  // be refused. Only the service's guard, which allows it, can fetch it.
  const shooter = remoteShooter(service.endpoint, TOKEN);
  try {
    const res = await shooter.capture(desktopShot(`${green.origin}/`));
    assert.deepEqual(await centrePixel(res.bytes), [0, 255, 0]);
    assert.deepEqual(green.requests.map((r) => r.path).sort(), ["/", "/pixel"]);
    await assert.rejects(
      shooter.capture(desktopShot(`http://127.0.0.1:${denied.port}/`)),
      (e) => e instanceof ApiError && e.code === 210,
    );
    assert.equal(denied.accepted, 0);
    // The spare's guard is open at the service while the instance is connected.
    assert.ok((await service.health()).guards >= 1);
    await shooter.close();
    await waitUntilAsync(
      async () => (await service.health()).guards === 0,
      5000,
    );
    assert.deepEqual(await service.health(), { guards: 0, devtools: 0 });
  } finally {
    await shooter.close();
    await service.stop();
    await green.close();
    await denied.close();
  }
});

test("a spare page whose guard the browser service has closed at its age is not used: the next capture after a quiet spell makes a fresh one and succeeds", async () => {
  const green = startFixture({
    "/":
      `<!doctype html><style>html,body{margin:0;height:100%;background:#00ff00}</style>`,
  });
  // Guards live 9 s at the service; a capture may take 2 s and a spare must outlive that
  // by 5 s, so a spare is used while fresh and dropped once its guard is near its end.
  const service = await startBrowserService({
    address: "127.0.0.1",
    port: freePort(),
    token: TOKEN,
    allow: `127.0.0.1:${green.port}`,
    env: { BROWSER_GUARD_MAX_AGE_S: "9" },
  });
  const shooter = remoteShooter(service.endpoint, TOKEN, 2_000);
  try {
    const first = await shooter.capture(desktopShot(`${green.origin}/`));
    assert.deepEqual(await centrePixel(first.bytes), [0, 255, 0]);
    // The spare made after that capture now waits; its guard ends at the service.
    await new Promise((r) => setTimeout(r, 10_000));
    const after = await shooter.capture(desktopShot(`${green.origin}/`));
    assert.deepEqual(await centrePixel(after.bytes), [0, 255, 0]);
  } finally {
    await shooter.close();
    await service.stop();
    await green.close();
  }
});
