import assert from "node:assert/strict";
import {
  allocatorLog,
  allocatorSetting,
  SANDBOX_TUNABLES,
} from "../services/runtime/allocator.ts";
import { SANDBOX_ENV } from "./start_task.ts";
import { startService } from "./service_process.ts";

// Each case as glibc 2.36 (Debian 12) took it, read back from its `mp_` with gdb.
Deno.test("glibc's allocator setting is read as glibc reads it: GLIBC_TUNABLES before the older names, a number's longest start in decimal, hex or octal, and a threshold named at all is fixed", () => {
  const dynamic = { mmapThreshold: "dynamic", arenaMax: "default" };
  assert.deepEqual(allocatorSetting({}), dynamic);
  assert.deepEqual(
    allocatorSetting({ GLIBC_TUNABLES: SANDBOX_TUNABLES }),
    { mmapThreshold: 262144, arenaMax: 1 },
  );
  assert.deepEqual(
    allocatorSetting({
      MALLOC_MMAP_THRESHOLD_: "131072",
      MALLOC_ARENA_MAX: "2",
    }),
    { mmapThreshold: 131072, arenaMax: 2 },
  );
  // GLIBC_TUNABLES names it: the older name is not read for it.
  assert.deepEqual(
    allocatorSetting({
      GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=0x40000",
      MALLOC_MMAP_THRESHOLD_: "1048576",
      MALLOC_ARENA_MAX: "4",
    }),
    { mmapThreshold: 262144, arenaMax: 4 },
  );
  assert.deepEqual(
    allocatorSetting({
      GLIBC_TUNABLES: "glibc.malloc.arena_max=2",
      MALLOC_ARENA_MAX: "4",
    }),
    { mmapThreshold: "dynamic", arenaMax: 2 },
  );
  const threshold = (v: string) =>
    allocatorSetting({ GLIBC_TUNABLES: `glibc.malloc.mmap_threshold=${v}` })
      .mmapThreshold;
  assert.equal(threshold("01000000"), 262144);
  assert.equal(threshold("256k"), 256);
  assert.equal(threshold("12x4"), 12);
  assert.equal(threshold("08"), 0);
  assert.equal(threshold("99999999999"), 99999999999);
  assert.equal(threshold("-1"), 2 ** 64 - 1);
  for (const v of ["", "abc", "0x"]) assert.equal(threshold(v), 0);
  assert.equal(
    allocatorSetting({ MALLOC_MMAP_THRESHOLD_: "" }).mmapThreshold,
    0,
  );
  // Other tunables, and names glibc does not know, leave it dynamic.
  for (
    const GLIBC_TUNABLES of [
      "glibc.malloc.tcache_count=0",
      "mmap_threshold=262144",
      "",
    ]
  ) {
    assert.deepEqual(allocatorSetting({ GLIBC_TUNABLES }), dynamic);
  }
  assert.equal(allocatorSetting({ MALLOC_ARENA_MAX: "0" }).arenaMax, "default");
});

Deno.test("the start logs the allocator's setting, and warns where the WebAssembly engine runs with a dynamic threshold, naming what to start it with; the start:sandbox task sets exactly that", async () => {
  assert.equal(SANDBOX_ENV.GLIBC_TUNABLES, SANDBOX_TUNABLES);
  const dynamic = allocatorSetting({});
  const set = allocatorSetting({ GLIBC_TUNABLES: SANDBOX_TUNABLES });
  const warned = allocatorLog(dynamic, "wasm");
  assert.equal(warned.level, "warn");
  assert.match(String(warned.msg), /GLIBC_TUNABLES=glibc\.malloc\.mmap/);
  assert.equal(warned.mmap_threshold, "dynamic");
  assert.deepEqual(allocatorLog(dynamic, "native"), {
    msg: "allocator",
    mmap_threshold: "dynamic",
    arena_max: "default",
  });
  assert.deepEqual(allocatorLog(set, "wasm"), {
    msg: "allocator",
    mmap_threshold: 262144,
    arena_max: 1,
  });

  // The real start, without native code (the WebAssembly engine): with the task's
  // environment and without it.
  const lines = async (env: Record<string, string>) => {
    const svc = await startService(env, { denoFlags: ["--deny-ffi"] });
    try {
      return svc.log().split("\n").filter((l) => l.includes('"allocator'))
        .map((l) => JSON.parse(l));
    } finally {
      await svc.close();
    }
  };
  const [tuned] = await lines(SANDBOX_ENV);
  assert.equal(tuned.msg, "allocator");
  assert.equal(tuned.mmap_threshold, 262144);
  // Empty, in case the suite itself was started with it: glibc then reads nothing.
  const [untuned] = await lines({ GLIBC_TUNABLES: "" });
  assert.equal(untuned.level, "warn");
  assert.equal(untuned.mmap_threshold, "dynamic");
});
