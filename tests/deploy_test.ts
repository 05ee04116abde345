import assert from "node:assert/strict";
import { parse } from "yaml";
import { test } from "./helpers.ts";
import {
  START_ENV,
  START_V8_FLAGS,
  TASK_NAMES,
  taskCommand,
  taskDependencies,
} from "./start_task.ts";
import { startNginx } from "./nginx.ts";

const root = new URL("../", import.meta.url).pathname;

async function lint(args: string[]) {
  const out = await new Deno.Command("npx", {
    args: ["-y", ...args],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) +
    new TextDecoder().decode(out.stderr).replace(/^npm warn.*\n/gm, "");
  return { ok: out.success, text };
}

test("the Dockerfile lints clean and installs through the same script CI runs, as a non-root user with a health check", async () => {
  const r = await lint(["dockerfile-utils@0.16.3", "lint", "Dockerfile"]);
  assert.equal(r.text.trim(), "", r.text);
  assert.ok(r.ok);
  const df = await Deno.readTextFile(`${root}/Dockerfile`);
  assert.match(df, /^FROM debian:/m);
  // Deno at an exact version, and its cache owned by the user the service runs as.
  assert.match(df, /npm install -g deno@\d+\.\d+\.\d+ /);
  const denoDir = /^ENV DENO_DIR=(\S+)$/m.exec(df)?.[1];
  assert.ok(denoDir, "DENO_DIR is set");
  assert.ok(
    df.indexOf("ENV DENO_DIR=") < df.indexOf("RUN deno install"),
    "the cache is filled where DENO_DIR says",
  );
  assert.match(df, new RegExp(`chown -R imagehost ${denoDir}\\b`));
  assert.match(df, /bash \/tmp\/install_system\.sh runtime/);
  assert.match(df, /^USER imagehost$/m);
  assert.match(df, /^HEALTHCHECK .*\n?.*\/healthz/m);
  const ci = await Deno.readTextFile(`${root}/.ci/run`);
  assert.match(ci, /bash scripts\/install_system\.sh test/);
  // The image runs main.ts as `deno task start` does: the same heap flags and malloc arena.
  const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(df)![1]) as string[];
  assert.ok(cmd.includes(`--v8-flags=${START_V8_FLAGS}`), cmd.join(" "));
  assert.match(START_V8_FLAGS, /--heap-growing-percent=\d+/);
  for (const [k, v] of Object.entries(START_ENV)) {
    assert.match(df, new RegExp(`\\b${k}=${v}\\b`), `${k}=${v}`);
  }
});

test("the operator tasks run with the start task's V8 flags, so they keep the service's cached compiled code valid (V8's code cache is only valid for the flags that wrote it)", () => {
  for (const name of ["user:create", "key:create"]) {
    assert.ok(
      taskCommand(name).includes(`--v8-flags=${START_V8_FLAGS} `),
      `${name}: ${taskCommand(name)}`,
    );
  }
});

test("node_modules is laid out by `deno install` ahead (nodeModulesDir manual) and every task that runs Deno code installs first, so a start does not re-check the whole tree once per npm import", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${root}/deno.json`));
  assert.equal(config.nodeModulesDir, "manual");
  assert.equal(taskCommand("install"), "deno install --quiet");
  for (const name of TASK_NAMES) {
    if (!/\bdeno (run|test|check)\b/.test(taskCommand(name))) continue;
    assert.deepEqual(taskDependencies(name), ["install"], name);
  }
  // `test` runs scripts/test.sh, which installs before its first deno command.
  const sh = await Deno.readTextFile(`${root}/scripts/test.sh`);
  const install = sh.indexOf('"${DENO[@]}" install');
  assert.ok(
    install > 0 && install < sh.indexOf('"${DENO[@]}" test'),
    "test.sh installs first",
  );
  // The measured cost it removes: under "auto", loading app.ts took Deno's node_modules
  // lock and re-checked all ~700 packages 86 times (~7-12 ms each, ~150 ms of a cold start).
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/load.ts`,
      `await import("${root}app.ts");\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--log-level=debug",
        "--config",
        `${root}deno.json`,
        "--allow-all",
        `${dir}/load.ts`,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    const log = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, log.slice(-2000));
    assert.match(log, /Building module graph/, "the debug log is read");
    assert.equal(
      log.match(/Acquiring file lock at \S*node_modules/g)?.length ?? 0,
      0,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // And the task itself: install, then the service (here refusing a bad PORT, exit 2).
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: root,
    env: { PORT: "abc", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(run.stdout) +
    new TextDecoder().decode(run.stderr);
  assert.equal(run.code, 2, text);
  assert.ok(text.indexOf("Task install") >= 0, text);
  assert.ok(text.indexOf("Task install") < text.indexOf("Task start"), text);
  assert.match(text, /PORT/);
});

test("compose.yaml lints clean and runs PostgreSQL, an S3 store, one browser, two instances with a data dir each, and a TLS proxy", async () => {
  const r = await lint(["dclint@3.1.0", "compose.yaml"]);
  assert.ok(r.ok, r.text);
  assert.doesNotMatch(r.text, /problem|warning|error/i, r.text);
  const c = parse(await Deno.readTextFile(`${root}/compose.yaml`), {
    merge: true,
  });
  const s = c.services;
  assert.deepEqual(
    Object.keys(s).sort(),
    ["app1", "app2", "browser", "minio", "postgres", "proxy"],
  );
  assert.deepEqual(s.browser.command, ["bash", "scripts/browser.sh"]);
  for (const app of [s.app1, s.app2]) {
    assert.match(app.environment.DATABASE_URL, /^postgres:\/\/.*@postgres:/);
    assert.equal(app.environment.STORE, "s3");
    assert.equal(app.environment.BROWSER_WS_ENDPOINT, "http://browser:9222");
    assert.equal(app.environment.TRUST_PROXY, "true");
    assert.match(app.environment.BASE_URL, /^https:/);
  }
  assert.notDeepEqual(s.app1.volumes, s.app2.volumes, "one DATA_DIR each");
  assert.notEqual(
    s.app1.environment.SCREENSHOT_PROXY_ADVERTISE,
    s.app2.environment.SCREENSHOT_PROXY_ADVERTISE,
  );
  // No secret is written in compose.yaml: each comes from .env, and .env.example names it.
  const example = await Deno.readTextFile(`${root}/.env.example`);
  const text = await Deno.readTextFile(`${root}/compose.yaml`);
  assert.doesNotMatch(text, /change-me/);
  for (
    const v of [
      s.postgres.environment.POSTGRES_PASSWORD,
      s.minio.environment.MINIO_ROOT_PASSWORD,
      s.app1.environment.S3_SECRET_ACCESS_KEY,
      /postgres:\/\/postgres:([^@]+)@/.exec(
        s.app1.environment.DATABASE_URL,
      )![1],
    ]
  ) {
    const name = /^\$\{(\w+):\?/.exec(v)?.[1];
    assert.ok(name, `${v} comes from the environment`);
    assert.match(example, new RegExp(`^${name}=`, "m"), name);
  }
  // DevTools is reachable only from the apps, on a network with no way out; the data
  // services only from the apps; the proxy only reaches the apps.
  const on = (net: string) =>
    Object.keys(s).filter((k) => (s[k].networks ?? []).includes(net)).sort();
  assert.deepEqual(s.browser.networks, ["browsers"]);
  assert.deepEqual(on("browsers"), ["app1", "app2", "browser"]);
  assert.deepEqual(on("data"), ["app1", "app2", "minio", "postgres"]);
  assert.deepEqual(on("front"), ["app1", "app2", "proxy"]);
  assert.equal(c.networks.browsers.internal, true);
  assert.equal(c.networks.data.internal, true);
  const nginx = await Deno.readTextFile(`${root}/deploy/nginx.conf`);
  assert.match(nginx, /server app1:8080/);
  assert.match(nginx, /server app2:8080/);
  assert.match(nginx, /X-Forwarded-Proto \$scheme/);
  assert.match(nginx, /proxy_next_upstream error timeout/);
});

test("deploy/nginx.conf cuts slow clients the service cannot (Deno.serve has no header or idle timeout): a request head still incomplete after client_header_timeout is closed, while the service alone keeps it", async () => {
  const root = new URL("..", import.meta.url).pathname;
  const conf = await Deno.readTextFile(`${root}/deploy/nginx.conf`);
  const timeouts = [
    ...conf.matchAll(
      /^\s*(client_header_timeout|client_body_timeout|keepalive_timeout|send_timeout)\s+(\d+)s;/gm,
    ),
  ].map((m) => [m[1], Number(m[2])] as const);
  assert.deepEqual(
    timeouts.map(([k]) => k).sort(),
    [
      "client_body_timeout",
      "client_header_timeout",
      "keepalive_timeout",
      "send_timeout",
    ],
  );
  const header = Object.fromEntries(timeouts).client_header_timeout;
  assert.ok(header <= 10, `client_header_timeout ${header}s`);
  const app = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("ok"),
  );
  // The deploy file's own timeout lines, in front of a bare server.
  const nginx = await startNginx(`  server {
    listen LISTEN;
${timeouts.map(([k, v]) => `    ${k} ${v}s;`).join("\n")}
    location / { proxy_pass http://127.0.0.1:${app.addr.port}; }
  }`);
  const slowHead = async (port: number) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\nhost: x\r\n"));
    const t = performance.now();
    const got = await Promise.race([
      conn.read(new Uint8Array(1024)).catch(() => null),
      new Promise<"open">((r) =>
        setTimeout(() => r("open"), (header + 3) * 1000)
      ),
    ]);
    conn.close();
    return { got, s: (performance.now() - t) / 1000 };
  };
  try {
    const [viaNginx, direct] = await Promise.all([
      slowHead(Number(new URL(nginx.base).port)),
      slowHead(app.addr.port),
    ]);
    // nginx closed it (no answer: read gives null) within its timeout and a margin.
    assert.equal(viaNginx.got, null);
    assert.ok(viaNginx.s < header + 2, `${viaNginx.s} s`);
    // The bare server still held it: what the proxy is there for.
    assert.equal(direct.got, "open");
  } finally {
    await nginx.close();
    await app.shutdown();
  }
});
