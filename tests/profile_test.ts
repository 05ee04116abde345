import assert from "node:assert/strict";
import { loadConfig } from "../schemas/config.ts";
import {
  type Capabilities,
  profileProblem,
  resolveProfile,
} from "../server/profile.ts";
import { test } from "./helpers.ts";

const all: Capabilities = { ffi: true, run: true, writeDataDir: true };
const sandbox: Capabilities = { ffi: false, run: false, writeDataDir: false };

test("start-up names the one variable to set for each thing the platform refuses", () => {
  // The embedded box: everything allowed, nothing to say.
  assert.equal(profileProblem(loadConfig({}), all), undefined);
  // No FFI alone is fine: sharp runs its WebAssembly build.
  assert.equal(
    profileProblem(loadConfig({}), { ...all, ffi: false }),
    undefined,
  );
  // No disk: the embedded database first, then the file store, then the scratch files.
  assert.match(profileProblem(loadConfig({}), sandbox)!, /set DATABASE_URL/);
  const pg = { DATABASE_URL: "postgres://db.invalid/images" };
  assert.match(profileProblem(loadConfig(pg), sandbox)!, /set STORE=s3/);
  const s3 = {
    ...pg,
    STORE: "s3",
    S3_ENDPOINT: "http://s3.invalid",
    S3_BUCKET: "b",
    S3_ACCESS_KEY_ID: "k",
    S3_SECRET_ACCESS_KEY: "s",
  };
  // With both, uploads are received in memory (SCRATCH=auto), unless disk is asked for.
  assert.equal(
    profileProblem(loadConfig(s3), { ...sandbox, run: true }),
    undefined,
  );
  assert.equal(resolveProfile(loadConfig(s3), sandbox).SCRATCH, "memory");
  assert.equal(resolveProfile(loadConfig(s3), all).SCRATCH, "disk");
  assert.match(
    profileProblem(loadConfig({ ...s3, SCRATCH: "disk" }), sandbox)!,
    /set SCRATCH=memory/,
  );
  // No subprocesses: a local Chromium cannot start; a browser service or none is fine.
  const noRun = { ...all, run: false };
  assert.match(
    profileProblem(loadConfig({}), noRun)!,
    /set BROWSER_WS_ENDPOINT.*or SCREENSHOTS=off/,
  );
  assert.equal(
    profileProblem(loadConfig({ SCREENSHOTS: "off" }), noRun),
    undefined,
  );
  assert.equal(
    profileProblem(
      loadConfig({ BROWSER_WS_ENDPOINT: "ws://browser.invalid:9222/x" }),
      noRun,
    ),
    undefined,
  );
});

/** main.ts under Deno permission flags: its exit code and what it printed. */
async function startUnder(flags: string[], env: Record<string, string>) {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-profile-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        "--allow-sys",
        "--allow-net",
        ...flags,
        new URL("../main.ts", import.meta.url).pathname,
      ],
      env: { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", ...env },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    return {
      code: out.code,
      stderr: new TextDecoder().decode(out.stderr),
      stdout: new TextDecoder().decode(out.stdout),
    };
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

test("main.ts in a sandbox that refuses disk writes or processes stops at once with one line naming the variable, never a stack trace", async () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--deny-write", "--deny-run", "--deny-ffi"], {}, /set DATABASE_URL/],
    [
      ["--deny-write", "--deny-run", "--deny-ffi"],
      // Never connected to: the check comes before anything is opened.
      { DATABASE_URL: "postgres://127.0.0.1:1/none", SCREENSHOTS: "off" },
      /set STORE=s3/,
    ],
    [
      ["--deny-write", "--deny-run", "--deny-ffi"],
      {
        DATABASE_URL: "postgres://127.0.0.1:1/none",
        STORE: "s3",
        S3_ENDPOINT: "http://127.0.0.1:1",
        S3_BUCKET: "b",
        SCRATCH: "disk",
        SCREENSHOTS: "off",
      },
      /set SCRATCH=memory/,
    ],
    [
      ["--allow-write", "--deny-run"],
      { SCREENSHOTS: "on" },
      /BROWSER_WS_ENDPOINT/,
    ],
  ];
  for (const [flags, env, said] of cases) {
    const r = await startUnder(flags, env);
    const lines = r.stderr.trim().split("\n").filter((l) =>
      !/DeprecationWarning|DEP0104/.test(l)
    );
    assert.equal(r.code, 2, `${flags.join(" ")}: ${r.stderr}`);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], said);
    assert.doesNotMatch(r.stderr, /^\s+at /m);
    assert.doesNotMatch(r.stderr, /NotCapable|PermissionDenied|error:/i);
  }
});
