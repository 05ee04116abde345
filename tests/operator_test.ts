import assert from "node:assert/strict";
import { pgliteTemplate, test, testEnv } from "./helpers.ts";
import { openDatabase } from "../services/db/database.ts";

const ROOT = new URL("..", import.meta.url).pathname;

async function run(script: string, args: string[], dataDir: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    cwd: ROOT,
    env: { DATA_DIR: dataDir, SCREENSHOTS: "off" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout).trim(),
    stderr: new TextDecoder().decode(out.stderr).trim(),
  };
}

test("user:create and key:create print keys that authenticate, without a browser", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-operator-" });
  try {
    // Seed the embedded database from the migrated template (a fresh initdb takes seconds).
    const seed = await openDatabase({
      dataDir: `${dir}/pgdata`,
      loadDataDir: await pgliteTemplate(),
    });
    await seed.close();

    const made = await run("scripts/user_create.ts", ["ops@example.com"], dir);
    assert.equal(made.code, 0, made.stderr);
    const { api_key, password, email } = JSON.parse(made.stdout);
    assert.equal(email, "ops@example.com");
    assert.match(api_key, /^ihk_[A-Za-z0-9_-]{43}$/);
    assert.ok(password.length >= 12);

    const again = await run("scripts/key_create.ts", [
      "OPS@example.com",
      "backup",
    ], dir);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^ihk_/);
    const missing = await run(
      "scripts/key_create.ts",
      ["nobody@example.com"],
      dir,
    );
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no user with e-mail nobody@example.com/);

    // Both keys work against an app on that database.
    const database = await openDatabase({ dataDir: `${dir}/pgdata` });
    // While it is open, a second process is refused with a clear message.
    const busy = await run("scripts/key_create.ts", ["ops@example.com"], dir);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /in use by process \d+/);
    const env = await testEnv({ database });
    try {
      for (const key of [api_key, again.stdout]) {
        const res = await env.app.request("/api/1/screenshot/presets", {
          headers: { authorization: `Bearer ${key}` },
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
    } finally {
      await env.close();
      await database.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

test("user:create --admin makes an operator: it prints the role and a key the admin API answers, where a plain user:create's key gets 404", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-operator-" });
  try {
    const seed = await openDatabase({
      dataDir: `${dir}/pgdata`,
      loadDataDir: await pgliteTemplate(),
    });
    await seed.close();
    const admin = await run(
      "scripts/user_create.ts",
      ["--admin", "root@example.com"],
      dir,
    );
    assert.equal(admin.code, 0, admin.stderr);
    const made = JSON.parse(admin.stdout);
    assert.equal(made.role, "admin");
    const user = await run(
      "scripts/user_create.ts",
      ["plain@example.com"],
      dir,
    );
    assert.equal(user.code, 0, user.stderr);
    assert.equal(JSON.parse(user.stdout).role, "user");
    const usage = await run("scripts/user_create.ts", ["--admin"], dir);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: deno task user:create \[--admin\]/);

    const database = await openDatabase({ dataDir: `${dir}/pgdata` });
    const env = await testEnv({ database });
    try {
      const ask = async (key: string) => {
        const res = await env.app.request("/api/1/admin/users", {
          headers: { authorization: `Bearer ${key}` },
        });
        await res.body?.cancel();
        return res.status;
      };
      assert.equal(await ask(made.api_key), 200);
      assert.equal(await ask(JSON.parse(user.stdout).api_key), 404);
    } finally {
      await env.close();
      await database.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
