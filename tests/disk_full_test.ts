import assert from "node:assert/strict";
import { scratchFiles, test, testEnv, upload, userWithKey } from "./helpers.ts";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";
import { startFixture } from "./fixture_server.ts";
import { isNoSpace } from "../services/runtime/file_io.ts";

/** Runs a command, failing with its stderr (mounting needs root, as CI has). */
async function sh(cmd: string, ...args: string[]) {
  const out = await new Deno.Command(cmd, { args, stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

/** Fills the filesystem of `dir` with one file until a write is refused; returns it. */
async function fill(dir: string): Promise<string> {
  const path = `${dir}/filler-${crypto.randomUUID()}`;
  const f = await Deno.open(path, { write: true, createNew: true });
  const chunk = new Uint8Array(4096);
  try {
    for (;;) await f.write(chunk);
  } catch (e) {
    if (!isNoSpace(e)) throw e;
  } finally {
    f.close();
  }
  return path;
}

/** The answer a full disk gets. */
// deno-lint-ignore no-explicit-any
function assertDiskFull(r: { status: number; body: any; headers: Headers }) {
  assert.equal(r.status, 503, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 250);
  assert.equal(r.body.error.details[0].path, "disk");
  assert.equal(r.headers.get("retry-after"), "60");
}

test("an upload that finds the disk full answers 250 / 503 with Retry-After (not 141 or 500) at each write it can fail (variants, the body, a URL import's download), leaves no temp file, and works again once space is freed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-full-" });
  await sh("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir);
  const remote = await makeNoiseJpeg(500, 400);
  const fx = startFixture({
    "/i.jpg": () =>
      new Response(remote.slice(), {
        headers: { "content-type": "image/jpeg" },
      }),
  });
  try {
    const env = await testEnv({
      env: { DATA_DIR: dir, FETCH_ALLOW_PRIVATE: `127.0.0.1:${fx.port}` },
    });
    try {
      const { key } = await userWithKey(env);
      const jpeg = () => makeNoiseJpeg(500, 400); // ~200 KB, new bytes each
      // Room for the body but not for the variants: libvips' failed save used to read as
      // 141 "could not be decoded", blaming the file.
      let stored = 0, r;
      for (;;) {
        r = await upload(
          env,
          key,
          formWith([{ name: "n.jpg", bytes: await jpeg() }]),
        );
        if (r.status !== 200) break;
        stored++;
        assert.ok(stored < 20, "a 3 MB disk took 20 uploads of 200 KB");
      }
      assertDiskFull(r);
      assert.ok(stored >= 3, `${stored} stored first`);
      // No room even for the body: the multipart receive's write fails; one file or two.
      const filler = await fill(dir);
      assertDiskFull(
        await upload(
          env,
          key,
          formWith([{ name: "a.jpg", bytes: await jpeg() }]),
        ),
      );
      assertDiskFull(
        await upload(
          env,
          key,
          formWith([
            { name: "a.jpg", bytes: await jpeg() },
            { name: "b.jpg", bytes: await jpeg() },
          ]),
        ),
      );
      // A URL import's download fails the same way.
      const source = new FormData();
      source.append("source", `http://127.0.0.1:${fx.port}/i.jpg`);
      assertDiskFull(await upload(env, key, source));
      assert.equal(fx.requests.length, 1);
      assert.deepEqual(scratchFiles(env), [], "no half-written temp file");
      assert.ok(
        env.log.lines.some((l) => String(l.msg).includes("no disk space left")),
        "the operator is told",
      );
      // Space again (the filler gone, the disk grown): stored and served whole.
      await Deno.remove(filler);
      await sh("mount", "-o", "remount,size=8m", dir);
      const bytes = await jpeg();
      r = await upload(env, key, formWith([{ name: "c.jpg", bytes }]));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const res = await env.app.request(new URL(r.body.data.url).pathname);
      assert.equal(res.status, 200);
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
    } finally {
      await env.close();
    }
  } finally {
    await fx.close();
    await sh("umount", dir);
    await Deno.remove(dir, { recursive: true });
  }
});

test("isNoSpace knows a full disk by errno name, Rust's and libvips' text, through causes, and nothing else", () => {
  const libvips = new Error(
    "/d/tmp/x-th.jpg: write error\nsystem error: No space left on device\nVipsJpeg: unable to write to target",
  );
  const node = Object.assign(new Error("write failed"), { code: "ENOSPC" });
  const quota = new Error("Disk quota exceeded (os error 122)");
  const rust = new Error("No space left on device (os error 28)");
  const wrapped = new Error("store failed", { cause: rust });
  for (const e of [libvips, node, quota, rust, wrapped]) {
    assert.equal(isNoSpace(e), true, String(e));
  }
  const others = [
    new Error("Input buffer contains unsupported image format"),
    new Deno.errors.NotFound("No such file or directory (os error 2)"),
    new Error("os error 280"),
    "No space left on device", // not an Error
    undefined,
  ];
  for (const e of others) assert.equal(isNoSpace(e), false, String(e));
});
