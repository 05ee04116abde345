import assert from "node:assert/strict";
import { BIG_BUFFER_BYTES, bigBuffer } from "../services/runtime/big_buffer.ts";
import {
  openScratch,
  readScratch,
  removeScratch,
  setMemoryBudget,
} from "../services/runtime/scratch_files.ts";
import { SANDBOX_ENV } from "./start_task.ts";

Deno.test("a big buffer has exactly the bytes asked for, zeroed, mapped on its own; a small one is an ordinary buffer", () => {
  const small = bigBuffer(BIG_BUFFER_BYTES - 1);
  assert.equal(small.length, BIG_BUFFER_BYTES - 1);
  assert.equal(small.buffer.byteLength, BIG_BUFFER_BYTES - 1);
  const big = bigBuffer(5 * 1024 * 1024 + 3);
  assert.equal(big.length, 5 * 1024 * 1024 + 3);
  assert.ok(big.every((b) => b === 0));
  // Its memory is a WebAssembly.Memory's, which V8 maps and unmaps itself: such a buffer
  // cannot be transferred away, an ordinary one can.
  assert.throws(() => structuredClone(big.buffer, { transfer: [big.buffer] }));
  structuredClone(small.buffer, { transfer: [small.buffer] });
});

/**
 * RSS growth (MB) of a fresh process after rounds of large-buffer churn: pairs of 28 MB
 * buffers and eight 5 MB ones, interleaved with small buffers that stay (what a stream of
 * uploads does), with a full collection after each round. `env` is the process's (glibc's
 * tunables are read at its start); none by default.
 */
async function churnGrowth(
  allocator: "bigBuffer" | "plain",
  env: Record<string, string> = { GLIBC_TUNABLES: "" },
): Promise<number> {
  const script = `
import v8 from "node:v8"; import vm from "node:vm";
import { bigBuffer } from ${
    JSON.stringify(
      new URL("../services/runtime/big_buffer.ts", import.meta.url).href,
    )
  };
v8.setFlagsFromString("--expose-gc"); const gc = vm.runInNewContext("gc");
const alloc = ${
    allocator === "plain" ? "(n) => new Uint8Array(n)" : "bigBuffer"
  };
gc(); const start = Deno.memoryUsage().rss;
const keep = [];
for (let round = 0; round < 3; round++) {
  let a = alloc(28 << 20); a.fill(1); let b = alloc(28 << 20); b.set(a); a = b = null;
  let bufs = [];
  for (let i = 0; i < 8; i++) { const x = alloc(5 << 20); x.fill(2); bufs.push(x); keep.push(new Uint8Array(200 * 1024).fill(3)); }
  bufs = []; gc();
}
console.log(Math.round((Deno.memoryUsage().rss - start) / 2 ** 20));
`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return Number(new TextDecoder().decode(out.stdout).trim());
}

Deno.test("memory of big buffers goes back to the system once they are collected, where glibc keeps plain buffers' heap (issue #49)", async () => {
  // 24 × 200 KB stay held: ~5 MB is the least either can grow.
  const plain = await churnGrowth("plain");
  const mapped = await churnGrowth("bigBuffer");
  console.log(`RSS kept: plain ${plain} MB, big buffers ${mapped} MB`);
  assert.ok(
    plain > 40,
    `plain buffers kept ${plain} MB (the behaviour this avoids)`,
  );
  assert.ok(mapped < 20, `big buffers kept ${mapped} MB`);
});

Deno.test("under `deno task start:sandbox`'s environment glibc gives plain buffers' memory back too: the runtime's and the image engine's, which bigBuffer cannot reach (issue #49)", async () => {
  assert.match(
    SANDBOX_ENV.GLIBC_TUNABLES ?? "",
    /(^|:)glibc\.malloc\.mmap_threshold=\d+($|:)/,
  );
  const plain = await churnGrowth("plain");
  const tuned = await churnGrowth("plain", SANDBOX_ENV);
  console.log(
    `RSS kept by plain buffers: ${plain} MB, with the task's environment ${tuned} MB`,
  );
  // Without it glibc raises its mapping threshold to the largest buffer freed (up to 32 MB)
  // and carves later ones from a heap it cannot shrink past what stays.
  assert.ok(plain > 40, `without the tunable plain buffers kept ${plain} MB`);
  assert.ok(tuned < 20, `with it they kept ${tuned} MB`);
});

Deno.test("a memory scratch file's parts and its whole bytes are big buffers", async () => {
  setMemoryBudget(64);
  const path = "memory:/big-buffer-test/a";
  const f = await openScratch(path, { write: true, createNew: true });
  try {
    // Written in pieces: parts doubling from 64 KB, then gathered into one when read whole.
    for (let i = 0; i < 12; i++) await f.write(new Uint8Array(100_000).fill(i));
  } finally {
    f.close();
  }
  const whole = await readScratch(path);
  assert.equal(whole.length, 1_200_000);
  assert.equal(whole[1_199_999], 11);
  assert.throws(() =>
    structuredClone(whole.buffer, { transfer: [whole.buffer as ArrayBuffer] })
  );
  await removeScratch(path);
  setMemoryBudget(256);
});
