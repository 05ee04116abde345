import assert from "node:assert/strict";
import { centrePixel } from "./pixels.ts";
import { connect } from "node:net";
import { test, waitUntil, waitUntilAsync } from "./helpers.ts";
import { startFixture } from "./fixture_server.ts";
import {
  desktopShot,
  startDevtoolsBrowser,
  testScreenshotter,
} from "./browser_service.ts";
import { freePort } from "./pg_cluster.ts";
import { linkedNamespace } from "./netns.ts";
import { ChromiumScreenshotter } from "../services/screenshots/chromium.ts";
import { SpreadScreenshotter } from "../services/screenshots/spread.ts";
import { openScreenshotter } from "../server/composition.ts";
import { loadConfig } from "../schemas/config.ts";
import { findChromium } from "../services/screenshots/chromium_launch.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { startGuardProxy } from "../services/net/guard_proxy.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { ApiError } from "../schemas/errors.ts";

const GREEN =
  `<!doctype html><style>html,body{margin:0;height:100%;background:#00ff00}</style><body></body>`;
let releaseHang: () => void = () => {};
const hangGate = new Promise<void>((r) => releaseHang = r);
const fixture = startFixture({
  "/": GREEN,
  // Answers after a second: two such captures at once are both in flight.
  "/slow": async () => {
    await new Promise((r) => setTimeout(r, 1000));
    return new Response(GREEN, { headers: { "content-type": "text/html" } });
  },
  // Never answers until the test ends: a capture of it stays in flight.
  "/hang": async () => {
    await hangGate;
    return new Response("late");
  },
});
const denied = startFixture({ "/": "<h1>secret</h1>" });

test("a remote browser named by http://host:port is found again after it restarts with a new DevTools URL; captures meanwhile answer 240 at once", async () => {
  const port = freePort();
  let browser = await startDevtoolsBrowser("127.0.0.1", port);
  const log = memoryLogger();
  const shooter = new ChromiumScreenshotter({
    wsEndpoint: browser.endpoint,
    concurrency: 2,
    queueMax: 4,
    recycleAfter: 100,
    timeoutMs: 10_000,
    allowRules: parseAllowList(`127.0.0.1:${fixture.port}`),
    log,
  });
  try {
    const first = await shooter.capture(desktopShot(`${fixture.origin}/`));
    assert.deepEqual(await centrePixel(first.bytes), [0, 255, 0]);
    const firstWs = await browser.wsUrl();

    await browser.kill();
    await waitUntilAsync(async () => !(await shooter.ready(500)), 5000);
    await assert.rejects(
      shooter.capture(desktopShot(`${fixture.origin}/`)),
      (e) => e instanceof ApiError && e.code === 240,
    );

    browser = await startDevtoolsBrowser("127.0.0.1", port);
    assert.notEqual(await browser.wsUrl(), firstWs, "a new browser, a new URL");
    await waitUntilAsync(() => shooter.ready(1000), 15_000, 250);
    const again = await shooter.capture(desktopShot(`${fixture.origin}/`));
    assert.deepEqual(await centrePixel(again.bytes), [0, 255, 0]);
    // The failures were logged as sentences, not "[object Object]".
    const failures = log.lines.filter((l) => l.msg === "browser start failed");
    assert.ok(failures.length > 0);
    for (const f of failures) {
      assert.doesNotMatch(String(f.error), /object Object/);
    }
  } finally {
    await shooter.close();
    await browser.kill();
  }
});

test("captures spread over two browser services; when one dies the next captures go to the other without failing, and it is used again once back", async () => {
  const ports = [freePort(), freePort()];
  const browsers = await Promise.all(
    ports.map((p) => startDevtoolsBrowser("127.0.0.1", p)),
  );
  const logs = browsers.map(() => memoryLogger());
  const pools = browsers.map((b, i) =>
    new ChromiumScreenshotter({
      wsEndpoint: b.endpoint,
      concurrency: 2,
      queueMax: 4,
      recycleAfter: 100,
      timeoutMs: 10_000,
      allowRules: parseAllowList(`127.0.0.1:${fixture.port}`),
      log: logs[i],
    })
  );
  const spread = new SpreadScreenshotter(pools);
  /** Two slow captures at once: each service holds one. */
  const bothUsed = async () => {
    const two = [0, 1].map(() =>
      spread.capture(desktopShot(`${fixture.origin}/slow`))
    );
    await waitUntil(() => pools.every((p) => p.load === 1), 5000);
    for (const r of await Promise.all(two)) {
      assert.deepEqual(await centrePixel(r.bytes), [0, 255, 0]);
    }
  };
  try {
    await spread.start();
    await bothUsed();
    // The first service dies: every capture from now on still succeeds, on the other.
    await browsers[0].kill();
    await waitUntilAsync(async () => !(await pools[0].ready(300)), 5000);
    for (let i = 0; i < 6; i++) {
      const r = await spread.capture(desktopShot(`${fixture.origin}/`));
      assert.deepEqual(await centrePixel(r.bytes), [0, 255, 0]);
    }
    // The dead one was tried (its connect refused) and its captures went to the other;
    // when it is tried again depends on its backoff, not on this test's pace.
    assert.ok(
      logs[0].lines.some((l) => l.msg === "browser start failed"),
      "the dead service was tried and passed over",
    );
    assert.equal(await spread.ready(1000), true);
    // Back (a new browser, a new DevTools URL, the same address): once its backoff is
    // over, the spread uses it again.
    browsers[0] = await startDevtoolsBrowser("127.0.0.1", ports[0]);
    await waitUntil(() => pools[0].usable, 15_000);
    await bothUsed();
  } finally {
    await spread.close();
    for (const b of browsers) await b.kill();
  }
});

test("BROWSER_WS_ENDPOINT may list several browser services: one pool each, spread over", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-spread-" });
  const config = loadConfig({
    DATA_DIR: dataDir,
    BROWSER_WS_ENDPOINT: " http://127.0.0.1:9/ , ws://127.0.0.1:10/devtools/x",
  });
  assert.deepEqual(config.BROWSER_ENDPOINTS, [
    "http://127.0.0.1:9/",
    "ws://127.0.0.1:10/devtools/x",
  ]);
  assert.throws(
    () => loadConfig({ BROWSER_WS_ENDPOINT: "http://a:1,file:///x" }),
    /BROWSER_WS_ENDPOINT/,
  );
  const shooter = await openScreenshotter(config, memoryLogger());
  try {
    assert.ok(shooter instanceof SpreadScreenshotter);
    // Neither answers: a capture gets 240 from the last one tried, not a hang or a 500.
    await assert.rejects(
      shooter.capture(desktopShot(`${fixture.origin}/`)),
      (e) => e instanceof ApiError && e.code === 240,
    );
  } finally {
    await shooter?.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

test("one account flooding slow captures cannot hold up another's: each account gets its share of the slots, in turns", async () => {
  const shooter = testScreenshotter(`127.0.0.1:${fixture.port}`, {
    perOwner: 1,
    queueMax: 12,
    recycleAfter: 100,
    timeoutMs: 20_000,
  });
  try {
    await shooter.start();
    // A: eight captures of a page that takes a second, all at once: on a first-come line
    // over two slots, a capture sent after them would wait about four seconds.
    const flood = Array.from(
      { length: 8 },
      () =>
        shooter.capture({
          ...desktopShot(`${fixture.origin}/slow`),
          owner: "A",
        }),
    );
    await waitUntil(() => shooter.load === 8, 5000);
    // B: three light captures one after another, each with a deadline (3.5 s) such a
    // line would have outlasted.
    for (let i = 0; i < 3; i++) {
      const r = await shooter.capture({
        ...desktopShot(`${fixture.origin}/`),
        owner: "B",
        timeoutMs: 3500,
      });
      assert.deepEqual(await centrePixel(r.bytes), [0, 255, 0]);
    }
    for (const r of await Promise.all(flood)) {
      assert.deepEqual(await centrePixel(r.bytes), [0, 255, 0]);
    }
  } finally {
    await shooter.close();
  }
});

test("a capture whose browser dies mid-capture answers 240 (retry), not a 500", async () => {
  const shooter = testScreenshotter(`127.0.0.1:${fixture.port}`, {
    concurrency: 1,
    queueMax: 2,
    recycleAfter: 100,
    timeoutMs: 20_000,
  });
  try {
    await shooter.start();
    const pid = shooter.pid!;
    const before = fixture.requests.filter((r) => r.path === "/hang").length;
    const inFlight = shooter.capture(desktopShot(`${fixture.origin}/hang`))
      .then(
        () => "captured",
        (e) => e,
      );
    await waitUntil(
      () => fixture.requests.filter((r) => r.path === "/hang").length > before,
      10_000,
    );
    Deno.kill(pid, "SIGKILL");
    const err = await inFlight;
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 240);
    assert.equal(err.headers?.["Retry-After"], "5");
    // And the next capture gets a new browser.
    const next = await shooter.capture(desktopShot(`${fixture.origin}/`));
    assert.deepEqual(await centrePixel(next.bytes), [0, 255, 0]);
    assert.notEqual(shooter.pid, pid);
  } finally {
    await shooter.close();
  }
});

test("off loopback the guard proxy refuses requests without this capture's credentials (407) and forwards none of them", async () => {
  const credentials = { username: "cap", password: crypto.randomUUID() };
  const guard = await startGuardProxy(
    parseAllowList(`127.0.0.1:${fixture.port}`),
    { listenHost: "127.0.0.2", credentials },
  );
  const ask = (headers: string) =>
    new Promise<string>((resolve, reject) => {
      const u = new URL(guard.url);
      const s = connect({ host: u.hostname, port: Number(u.port) }, () => {
        s.write(
          `GET ${fixture.origin}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Connection: close\r\n\r\n`,
        );
      });
      let out = "";
      s.on("data", (d) => out += d.toString("latin1"));
      s.on("end", () => resolve(out));
      s.on("error", reject);
    });
  const basic = (u: string, p: string) =>
    `Proxy-Authorization: Basic ${btoa(`${u}:${p}`)}\r\n`;
  try {
    assert.match(guard.url, /^http:\/\/127\.0\.0\.2:\d+$/);
    const before = fixture.requests.length;
    assert.match(await ask(""), /^HTTP\/1\.1 407 /);
    assert.match(await ask(basic("cap", "wrong")), /^HTTP\/1\.1 407 /);
    assert.match(
      await ask(basic("other", credentials.password)),
      /^HTTP\/1\.1 407 /,
    );
    assert.equal(fixture.requests.length, before, "nothing was forwarded");
    assert.match(
      await ask(basic(credentials.username, credentials.password)),
      /^HTTP\/1\.1 200 /,
    );
    assert.equal(fixture.requests.length, before + 1);
  } finally {
    await guard.close();
  }
});

test("a browser on another host (its own network namespace, reached over a veth /30 the test makes) captures through the guard, which it can reach only over that link, and a denied page sees zero requests", async () => {
  const { ns, hostIp, nsIp, destroy } = await linkedNamespace();
  let browser: Awaited<ReturnType<typeof startDevtoolsBrowser>> | undefined;
  let shooter: ChromiumScreenshotter | undefined;
  try {
    browser = await startDevtoolsBrowser(nsIp, 9222, ns);
    shooter = new ChromiumScreenshotter({
      wsEndpoint: browser.endpoint,
      concurrency: 1,
      queueMax: 2,
      recycleAfter: 100,
      timeoutMs: 15_000,
      allowRules: parseAllowList(`127.0.0.1:${fixture.port}`),
      proxyListen: hostIp,
      log: memoryLogger(),
    });
    // The page is on this host's 127.0.0.1, which from the namespace is the browser's own
    // loopback: only the guard, over the link, can fetch it.
    const before = fixture.requests.filter((r) => r.path === "/").length;
    const res = await shooter.capture(desktopShot(`${fixture.origin}/`));
    assert.deepEqual(await centrePixel(res.bytes), [0, 255, 0]);
    assert.equal(
      fixture.requests.filter((r) => r.path === "/").length,
      before + 1,
    );
    await assert.rejects(
      shooter.capture(desktopShot(`${denied.origin}/`)),
      (e) => e instanceof ApiError && e.code === 210,
    );
    assert.equal(denied.requests.length, 0);
  } finally {
    await shooter?.close();
    await browser?.kill();
    await destroy();
  }
});

test("close the fixtures", async () => {
  releaseHang();
  await fixture.close();
  await denied.close();
});

test("on a fresh machine without root, start-up names the one command that installs Chromium and its fonts, and that script lists them", async () => {
  const { installChromium, INSTALL_SCRIPT } = await import(
    "../services/screenshots/install.ts"
  );
  const log = memoryLogger();
  assert.equal(await installChromium(log, { root: false, apt: true }), false);
  assert.equal(log.lines.length, 1);
  assert.match(
    String(log.lines[0].msg),
    new RegExp(`sudo bash ${INSTALL_SCRIPT} runtime`),
  );
  const script = await Deno.readTextFile(INSTALL_SCRIPT);
  for (
    const p of [
      "chromium-headless-shell",
      "fonts-noto-core",
      "fonts-noto-cjk",
      "fonts-noto-color-emoji",
    ]
  ) assert.match(script, new RegExp(`\\b${p}\\b`));
});

test("the installing branch of the first-run installer runs the project's install script and reports success (on a machine that has every package, so apt-get is never reached)", async () => {
  const { installChromium, INSTALL_SCRIPT } = await import(
    "../services/screenshots/install.ts"
  );
  const script = await Deno.readTextFile(INSTALL_SCRIPT);
  const runtime = /^pkgs=\(([^)]*)\)/m.exec(script)![1].trim().split(/\s+/);
  // Never a download from a test: every package must already be there (.ci/run installs
  // them first); the script then exits before apt-get.
  const missing = [];
  for (const p of runtime) {
    const out = await new Deno.Command("dpkg-query", {
      args: ["-W", "-f=${Status}", p],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (
      !new TextDecoder().decode(out.stdout).includes("install ok installed")
    ) {
      missing.push(p);
    }
  }
  assert.deepEqual(
    missing,
    [],
    "run: sudo bash scripts/install_system.sh test",
  );
  const log = memoryLogger();
  assert.equal(await installChromium(log, { root: true, apt: true }), true);
  assert.match(String(log.lines[0].msg), /installing chromium-headless-shell/);
  assert.ok(findChromium(), "a Chromium is found afterwards");
});
