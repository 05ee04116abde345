import assert from "node:assert/strict";
import { ApiError } from "../schemas/errors.ts";
import { ByteGate } from "../services/runtime/byte_gate.ts";
import { memoryFileNames } from "../services/runtime/scratch_files.ts";
import { test, testEnv, userWithKey } from "./helpers.ts";
import { formWith } from "./fixtures.ts";
import sharp from "sharp";

const MiB = 1024 * 1024;

/** Settles `p` or says it is still pending after a few turns of the event loop. */
async function stateOf(p: Promise<unknown>): Promise<"pending" | "settled"> {
  let settled = false;
  p.then(() => settled = true, () => settled = true);
  await new Promise((r) => setTimeout(r, 20));
  return settled ? "settled" : "pending";
}

test("the byte gate admits work while its bytes fit, in arrival order, a piece larger than the whole alone, and releases once", async () => {
  const gate = new ByteGate(10, 8);
  const a = await gate.enter(6, 1000);
  const b = await gate.enter(4, 1000);
  assert.equal(gate.held, 10);
  // A big one waits; a small one behind it waits too (no overtaking, so no starvation).
  const big = gate.enter(9, 1000);
  const small = gate.enter(1, 1000);
  assert.equal(await stateOf(big), "pending");
  assert.equal(await stateOf(small), "pending");
  assert.equal(gate.waiting, 2);
  a();
  a(); // a second release gives nothing back twice
  assert.equal(gate.held, 4);
  assert.equal(await stateOf(big), "pending");
  b();
  const bigRelease = await big;
  assert.equal(await stateOf(small), "settled");
  assert.equal(gate.held, 10);
  bigRelease();
  (await small)();
  assert.equal(gate.held, 0);
  // Larger than the capacity: counted as the capacity, so it runs alone.
  const huge = await gate.enter(1_000, 1000);
  assert.equal(gate.held, 10);
  huge();
  assert.equal(gate.held, 0);
});

test("the byte gate refuses with 250 and Retry-After past its wait or its line, and a refused head lets the next in", async () => {
  const gate = new ByteGate(10, 1);
  const a = await gate.enter(8, 1000);
  const late = gate.enter(5, 50);
  await assert.rejects(gate.enter(1, 1000), (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 250);
    return true;
  });
  await assert.rejects(late, (e: unknown) => {
    assert.ok(e instanceof ApiError);
    assert.equal(e.code, 250);
    assert.equal(e.headers?.["Retry-After"], "5");
    return true;
  });
  assert.equal(gate.waiting, 0);
  a();
  assert.equal(gate.held, 0);
  // 8 held: a 5 waits, a 1 behind it waits; when the 5 gives up, the 1 fits and goes in.
  const gate2 = new ByteGate(10, 8);
  const held = await gate2.enter(8, 1000);
  const head = gate2.enter(5, 50);
  head.catch(() => {});
  const next = gate2.enter(1, 1000);
  await assert.rejects(head);
  (await next)();
  held();
  assert.equal(gate2.held, 0);
});

/** A multipart upload body whose bytes are sent only when `send()` is called; `pulls` counts reads. */
async function heldUpload(bytes: Uint8Array, name: string) {
  const form = new Response(formWith([{ name, bytes }]));
  const body = new Uint8Array(await form.arrayBuffer());
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  let pulls = 0;
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      pulls++;
      if (sent) return c.close();
      await gate;
      c.enqueue(body);
      sent = true;
    },
  }, { highWaterMark: 0 });
  return {
    contentType: form.headers.get("content-type")!,
    length: body.length,
    stream,
    send: open,
    get pulls() {
      return pulls;
    },
  };
}

test("with SCRATCH=memory an upload whose bytes are not admitted (MEMORY_INFLIGHT_MB) is not read until one ends, then stored; one that waits past IMAGE_TIMEOUT_MS is 503/250 with Retry-After, unread", async () => {
  const env = await testEnv({
    env: {
      SCRATCH: "memory",
      MEMORY_INFLIGHT_MB: "1",
      IMAGE_TIMEOUT_MS: "1000",
    },
  });
  try {
    const { key } = await userWithKey(env);
    // Two noise PNGs of ~0.7 MB: one fits the 1 MB, two do not.
    const png = async (seed: number) =>
      new Uint8Array(
        await sharp({
          create: {
            width: 480,
            height: 480,
            channels: 3,
            background: { r: seed, g: 0, b: 0 },
            noise: { type: "gaussian", mean: 128, sigma: 60 },
          },
        }).png().toBuffer(),
      );
    const first = await heldUpload(await png(1), "first.png");
    const second = await heldUpload(await png(2), "second.png");
    assert.ok(
      first.length > 0.5 * MiB && first.length < MiB,
      `${first.length}`,
    );
    const send = (u: Awaited<ReturnType<typeof heldUpload>>) =>
      env.app.request("/api/1/upload", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": u.contentType,
          "content-length": String(u.length),
        },
        body: u.stream,
        duplex: "half",
      } as RequestInit);
    const one = send(first);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(first.pulls, 1, "the first body is being read");
    const two = send(second);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(second.pulls, 0, "the second body waits unread");
    first.send();
    second.send();
    const [r1, r2] = await Promise.all([one, two]);
    assert.equal(r1.status, 200, await r1.clone().text());
    assert.equal(r2.status, 200, await r2.clone().text());
    assert.notEqual(
      (await r1.json()).data.id,
      (await r2.json()).data.id,
    );
    // Held past IMAGE_TIMEOUT_MS: the waiting one is refused without a byte read.
    const third = await heldUpload(await png(3), "third.png");
    const fourth = await heldUpload(await png(4), "fourth.png");
    const three = send(third);
    await new Promise((r) => setTimeout(r, 50));
    const refused = await send(fourth);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "5");
    const body = await refused.json();
    assert.equal(body.error.code, 250);
    assert.equal(fourth.pulls, 0);
    third.send();
    assert.equal((await three).status, 200);
    assert.deepEqual(memoryFileNames(), []);
  } finally {
    await env.close();
  }
});

test("a waiter admitted in the same turn as its wait ends keeps its bytes and its place: the wait's end cannot take another waiter out of the line", async () => {
  const gate = new ByteGate(10, 8);
  const first = await gate.enter(10, 1000);
  // Both timers are due at once; the release's was set first, so it runs first.
  setTimeout(() => first(), 30);
  const close = gate.enter(10, 30);
  const behind = gate.enter(5, 1000);
  const release = await close;
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(gate.held, 10);
  assert.equal(gate.waiting, 1, "the one behind is still in line");
  release();
  (await behind)();
  assert.equal(gate.held, 0);
});
