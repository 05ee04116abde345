import assert from "node:assert/strict";
import { hostname } from "node:os";
import { processTag } from "../services/runtime/scratch_dir.ts";
import {
  MEMORY_ROOT,
  removeScratch,
  setMemoryBudget,
  statScratch,
  writeScratch,
} from "../services/runtime/scratch_files.ts";
import { FsStore } from "../services/store/fs_store.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import { ImagePipeline } from "../services/images/pipeline.ts";
import { json, test, testEnv, userWithKey } from "./helpers.ts";
import { startS3 } from "./s3_server.ts";
import { formWith, makeImage } from "./fixtures.ts";

/**
 * Runs `action` while recording what stores ask of S3 into `seen`, as "METHOD
 * ?param&param" (aws4fetch calls the global fetch); `refuse` answers a request 403
 * instead of sending it. The real fetch is back when this settles, either way.
 */
async function recordS3Requests(
  seen: string[],
  action: () => Promise<unknown>,
  refuse: (u: URL) => boolean = () => false,
) {
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const r = input instanceof Request ? input : new Request(input, init);
    const u = new URL(r.url);
    seen.push(`${r.method} ${u.search.replace(/=[^&]+/g, "")}`);
    if (refuse(u)) {
      return Promise.resolve(new Response("<Error/>", { status: 403 }));
    }
    return realFetch(input, init);
  };
  try {
    await action();
  } finally {
    globalThis.fetch = realFetch;
  }
}

async function contract(store: BlobStore) {
  const bytes = new Uint8Array(200_000).map((_, i) => i % 251);
  await store.put("abcdefgh.png", bytes, {
    contentType: "image/png",
    size: bytes.length,
  });
  assert.deepEqual(await store.stat("abcdefgh.png"), { size: bytes.length });
  const whole = await store.get("abcdefgh.png");
  assert.equal(whole!.size, bytes.length);
  assert.deepEqual(
    new Uint8Array(await new Response(whole!.body as BodyInit).arrayBuffer()),
    bytes,
  );
  const part = await store.get("abcdefgh.png", {
    start: 100_000,
    end: 100_009,
  });
  assert.equal(part!.size, bytes.length);
  assert.deepEqual(
    new Uint8Array(await new Response(part!.body as BodyInit).arrayBuffer()),
    bytes.subarray(100_000, 100_010),
  );
  // Streams are accepted as well as byte arrays.
  await store.put(
    "abcdefgh.th.png",
    new Blob([bytes.subarray(0, 1000)]).stream(),
    {
      contentType: "image/png",
      size: 1000,
    },
  );
  assert.equal((await store.stat("abcdefgh.th.png"))!.size, 1000);
  // A handed-over file is stored whole and is gone from where it was.
  const local = await Deno.makeTempFile();
  await Deno.writeFile(local, bytes.subarray(0, 5000));
  await store.putFile("abcdefgh.md.png", local, { contentType: "image/png" });
  await assert.rejects(Deno.stat(local), Deno.errors.NotFound);
  const moved = await store.get("abcdefgh.md.png");
  assert.deepEqual(
    new Uint8Array(await new Response(moved!.body as BodyInit).arrayBuffer()),
    bytes.subarray(0, 5000),
  );
  await store.delete("abcdefgh.png");
  await store.delete("abcdefgh.png"); // absent: not an error
  assert.equal(await store.stat("abcdefgh.png"), null);
  assert.equal(await store.get("abcdefgh.png"), null);
  await assert.rejects(
    store.put("../../etc/passwd", bytes, { contentType: "x", size: 1 }),
    /invalid store key/,
  );
}

test("the filesystem store keeps the contract: put, stat, get with ranges, delete, key checks", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await contract(await new FsStore(dir).init());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("the filesystem store makes each folder once, and again if it was removed since", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await new FsStore(dir).init();
    const bytes = new TextEncoder().encode("abc");
    await store.put("zzfirst1.png", bytes);
    await Deno.remove(`${dir}/zz`, { recursive: true });
    await store.put("zzsecond.png", bytes);
    assert.equal(await Deno.readTextFile(`${dir}/zz/zzsecond.png`), "abc");
    const file = `${dir}/handed`;
    await Deno.writeTextFile(file, "def");
    await Deno.remove(`${dir}/zz`, { recursive: true });
    await store.putFile("zzthird1.png", file, { contentType: "image/png" });
    assert.equal(await Deno.readTextFile(`${dir}/zz/zzthird1.png`), "def");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("a file handed over from another filesystem is copied in, synced, and removed where it was", async () => {
  const dir = await Deno.makeTempDir();
  // /dev/shm is a tmpfs: rename(2) from it into the store fails with EXDEV.
  const local = await Deno.makeTempFile({ dir: "/dev/shm" });
  try {
    assert.notEqual((await Deno.stat(local)).dev, (await Deno.stat(dir)).dev);
    const bytes = new Uint8Array(300_000).map((_, i) => i % 253);
    await Deno.writeFile(local, bytes);
    const store = await new FsStore(dir).init();
    await store.putFile("crossdev1.png", local, { contentType: "image/png" });
    await assert.rejects(Deno.stat(local), Deno.errors.NotFound);
    const got = await store.get("crossdev1.png");
    assert.deepEqual(
      new Uint8Array(await new Response(got!.body as BodyInit).arrayBuffer()),
      bytes,
    );
    // Nothing left in the store's temp folder.
    assert.deepEqual([...Deno.readDirSync(`${dir}/.tmp/${processTag()}`)], []);
  } finally {
    await Deno.remove(local).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

test("the S3 store keeps the same contract against a local S3 server", async () => {
  const s3 = await startS3();
  try {
    await contract(s3.store);
  } finally {
    await s3.close();
  }
});

for (const where of ["disk", "memory"] as const) {
  test(
    `a file ${
      where === "disk"
        ? "on disk"
        : "in memory (the sandbox's, sent as views of its own bytes)"
    } larger than one part goes to S3 as a multipart upload and comes back whole, and is removed`,
    async () => {
      const s3 = await startS3({ partSize: 5 * 1024 * 1024 });
      setMemoryBudget(64);
      const local = where === "disk"
        ? await Deno.makeTempFile()
        : `${MEMORY_ROOT}/store-test/multipart1.jpg`;
      try {
        const bytes = new Uint8Array(12 * 1024 * 1024 + 123).map((_, i) =>
          (i * 7) % 251
        );
        await writeScratch(local, bytes);
        const seen: string[] = [];
        await recordS3Requests(
          seen,
          () =>
            s3.store.putFile("multipart1.jpg", local, {
              contentType: "image/jpeg",
            }),
        );
        assert.deepEqual(seen, [
          "POST ?uploads",
          "PUT ?partNumber&uploadId",
          "PUT ?partNumber&uploadId",
          "PUT ?partNumber&uploadId",
          "POST ?uploadId",
        ]);
        await assert.rejects(statScratch(local), Deno.errors.NotFound);
        const got = await s3.store.get("multipart1.jpg");
        assert.equal(got!.size, bytes.length);
        assert.deepEqual(
          new Uint8Array(
            await new Response(got!.body as BodyInit).arrayBuffer(),
          ),
          bytes,
        );
      } finally {
        await removeScratch(local).catch(() => {});
        setMemoryBudget(256);
        await s3.close();
      }
    },
  );
}

test("a multipart upload whose part is refused fails whole: aborted, nothing stored", async () => {
  const s3 = await startS3({ partSize: 5 * 1024 * 1024 });
  const local = await Deno.makeTempFile();
  try {
    await Deno.writeFile(local, new Uint8Array(11 * 1024 * 1024));
    const seen: string[] = [];
    await assert.rejects(
      recordS3Requests(
        seen,
        () =>
          s3.store.putFile("multipart2.jpg", local, {
            contentType: "image/jpeg",
          }),
        (u) => u.searchParams.get("partNumber") === "2",
      ),
      /part 2/,
    );
    // The S3 protocol, whatever order parts go in: started, never completed, aborted.
    assert.equal(seen[0], "POST ?uploads");
    assert.equal(seen.at(-1), "DELETE ?uploadId");
    assert.ok(!seen.includes("POST ?uploadId"), "never completed");
    assert.equal(await s3.store.stat("multipart2.jpg"), null);
  } finally {
    await Deno.remove(local).catch(() => {});
    await s3.close();
  }
});

test("uploads through the S3 store are served by the image host", async () => {
  const s3 = await startS3();
  const env = await testEnv({ store: s3.store });
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 1500, height: 700 });
    const r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{ name: "s3.png", bytes: png }]),
      }),
    );
    assert.equal(r.status, 200);
    for (
      const url of [
        r.body.data.url,
        r.body.data.thumb.url,
        r.body.data.medium.url,
      ]
    ) {
      const res = await env.app.request(new URL(url).pathname);
      assert.equal(res.status, 200, url);
      assert.equal(res.headers.get("content-type"), "image/png");
      await res.body?.cancel();
    }
    const direct = await fetch(`${s3.endpoint}/images/${r.body.data.id}.png`);
    assert.equal(direct.status, 200);
    assert.equal((await direct.arrayBuffer()).byteLength, r.body.data.size);
    const range = await env.app.request(new URL(r.body.data.url).pathname, {
      headers: { range: "bytes=0-7" },
    });
    assert.equal(range.status, 206);
    assert.deepEqual(
      new Uint8Array(await range.arrayBuffer()),
      png.subarray(0, 8),
    );
  } finally {
    await env.close();
    await s3.close();
  }
});

test("temp files a crash left behind are removed at start-up and never served", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Loose files (older versions) and the folder of a process that no longer runs.
    const dead = `${hostname()}-999999999-1`;
    await Deno.mkdir(`${dir}/images/.tmp/${dead}`, { recursive: true });
    await Deno.mkdir(`${dir}/tmp/${dead}`, { recursive: true });
    await Deno.writeTextFile(`${dir}/images/.tmp/half-written`, "partial");
    await Deno.writeTextFile(`${dir}/images/.tmp/${dead}/x`, "partial");
    await Deno.writeTextFile(`${dir}/tmp/up-123`, "partial upload");
    await Deno.writeTextFile(`${dir}/tmp/${dead}/up-9`, "partial upload");
    await new FsStore(`${dir}/images`).init();
    const env = await testEnv({ env: { DATA_DIR: dir } });
    await new ImagePipeline(env.deps).init();
    // What is left is this process's own (empty) scratch folder.
    assert.deepEqual(names(`${dir}/images/.tmp`), [processTag()]);
    assert.deepEqual(names(`${dir}/tmp`), [processTag()]);
    assert.deepEqual(names(`${dir}/tmp/${processTag()}`), []);
    await env.close();
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

test("two instances sharing a DATA_DIR: starting one never touches the scratch files of another that still runs", async () => {
  const dir = await Deno.makeTempDir();
  // A second live process: its scratch folder is named as processTag() would name it there.
  const other = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const stat = await Deno.readTextFile(`/proc/${other.pid}/stat`);
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const live = `${hostname()}-${other.pid}-${start}`;
    for (const base of [`${dir}/tmp`, `${dir}/images/.tmp`]) {
      await Deno.mkdir(`${base}/${live}`, { recursive: true });
      await Deno.writeTextFile(`${base}/${live}/upload-in-flight`, "bytes");
      // A pid reused by another program is not the instance that wrote this folder.
      await Deno.mkdir(`${base}/${hostname()}-${other.pid}-1`);
    }
    const claim = async () => {
      await new FsStore(`${dir}/images`).init();
      const env = await testEnv({ env: { DATA_DIR: dir } });
      await new ImagePipeline(env.deps).init();
      await env.close().catch(() => {});
    };
    await claim();
    for (const base of [`${dir}/tmp`, `${dir}/images/.tmp`]) {
      assert.deepEqual(names(base), [live, processTag()].sort());
      assert.equal(
        await Deno.readTextFile(`${base}/${live}/upload-in-flight`),
        "bytes",
      );
    }
    // Once that process is gone, its leftovers go at the next start.
    other.kill("SIGKILL");
    await other.status;
    await claim();
    for (const base of [`${dir}/tmp`, `${dir}/images/.tmp`]) {
      assert.deepEqual(names(base), [processTag()]);
    }
  } finally {
    try {
      other.kill("SIGKILL");
    } catch { /* already gone */ }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

function names(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
}

/**
 * Records the durability calls made while `work` runs: file and directory syncs and renames,
 * in order. (A spy on Deno's file API: a crash of the machine cannot be staged in a test,
 * but the order of the calls that make a put survive one can be checked exactly.)
 */
async function durabilityCalls(work: () => Promise<void>): Promise<string[]> {
  const calls: string[] = [];
  const proto = Deno.FsFile.prototype;
  const sync = proto.sync, syncData = proto.syncData, rename = Deno.rename;
  proto.sync = function () {
    calls.push("sync");
    return sync.call(this);
  };
  proto.syncData = function () {
    calls.push("syncData");
    return syncData.call(this);
  };
  Deno.rename = (from, to) => {
    calls.push(`rename ${String(to).split("/").slice(-2).join("/")}`);
    return rename(from, to);
  };
  try {
    await work();
  } finally {
    proto.sync = sync;
    proto.syncData = syncData;
    Deno.rename = rename;
  }
  return calls;
}

test("the filesystem store syncs an object's bytes before the rename and its directory after, for put and putFile (an upload's original), and a variant made again when lost not at all", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await new FsStore(dir).init();
    const put = await durabilityCalls(() =>
      store.put("abcdefgh.png", new TextEncoder().encode("x".repeat(1000)))
    );
    assert.deepEqual(put, ["syncData", "rename ab/abcdefgh.png", "sync"]);
    const file = `${dir}/handed-over`;
    await Deno.writeTextFile(file, "y".repeat(1000));
    const putFile = await durabilityCalls(() =>
      store.putFile("ijklmnop.png", file)
    );
    assert.deepEqual(putFile, ["sync", "rename ij/ijklmnop.png", "sync"]);
    // A variant made again when lost (durable: false): renamed into place, no syncs.
    const variant = await durabilityCalls(() =>
      store.put("qrstuvwx.th.png", new TextEncoder().encode("z".repeat(100)), {
        durable: false,
      })
    );
    assert.deepEqual(variant, ["rename qr/qrstuvwx.th.png"]);
    assert.equal(
      await Deno.readTextFile(`${dir}/qr/qrstuvwx.th.png`),
      "z".repeat(100),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

test("kill -9 of a process in the middle of puts: every object at its final name is whole, and every acknowledged one is there", async () => {
  const dir = await Deno.makeTempDir();
  const script = `
    import { FsStore } from "${
    new URL("../services/store/fs_store.ts", import.meta.url).href
  }";
    const store = await new FsStore(${JSON.stringify(dir)}).init();
    for (let i = 0; ; i++) {
      const key = "obj" + String(i).padStart(5, "0") + ".bin";
      // 4 MiB in 16 pieces a few ms apart: the kill lands inside a put.
      const body = new ReadableStream({
        async start(c) {
          for (let p = 0; p < 16; p++) {
            c.enqueue(new Uint8Array(256 * 1024).fill(i & 255));
            await new Promise((r) => setTimeout(r, 5));
          }
          c.close();
        },
      });
      await store.put(key, body);
      console.log(key);
    }`;
  try {
    for (let round = 0; round < 3; round++) {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["eval", script],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      const reader = child.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let out = "";
      // Let it acknowledge a few objects, then kill it mid-put.
      while ((out.match(/\n/g) ?? []).length < 2 + round) {
        const { value, done } = await reader.read();
        if (done) break;
        out += value;
      }
      await new Promise((r) => setTimeout(r, 37 * (round + 1)));
      child.kill("SIGKILL");
      await child.status;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        out += value;
      }
      const acked = out.trim().split("\n").filter(Boolean);
      assert.ok(acked.length >= 2, `round ${round}: ${acked.length} acked`);
      const store = await new FsStore(dir).init(); // a restart: leftovers go
      for (const sub of Deno.readDirSync(dir)) {
        if (sub.name === ".tmp" || !sub.isDirectory) continue;
        for (const f of Deno.readDirSync(`${dir}/${sub.name}`)) {
          const bytes = await Deno.readFile(`${dir}/${sub.name}/${f.name}`);
          assert.equal(bytes.length, 4 * 1024 * 1024, `${f.name} is whole`);
        }
      }
      for (const key of acked) {
        assert.ok(await store.stat(key), `${key} was acknowledged`);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
