import assert from "node:assert/strict";
import { Collector, fullCollection } from "../services/runtime/collector.ts";

const tick = () => new Promise((r) => setTimeout(r, 5));

Deno.test("the collector runs one collection once the dropped bytes pass its threshold, at the next turn of the event loop, and counts again from zero after it", async () => {
  let runs = 0;
  const c = new Collector(100, () => runs++);
  c.dropped(60);
  await tick();
  assert.equal(runs, 0, "below the threshold: none");
  c.dropped(40);
  assert.equal(runs, 0, "not inside the caller's work");
  c.dropped(500);
  await tick();
  assert.equal(runs, 1, "one for every note made before it ran");
  c.dropped(99);
  await tick();
  assert.equal(runs, 1, "counted from zero again");
  c.dropped(1);
  await tick();
  assert.equal(runs, 2);
});

Deno.test("the full collection this runtime gives frees dropped ArrayBuffers' memory at once", () => {
  const gc = fullCollection();
  assert.ok(gc, "Deno gives V8's collection through node:v8 and node:vm");
  gc();
  const before = Deno.memoryUsage().external;
  for (let i = 0; i < 64; i++) new Uint8Array(1 << 20)[0] = i;
  const held = Deno.memoryUsage().external - before;
  assert.ok(held >= 48 << 20, `64 MB dropped, ${held >> 20} MB still counted`);
  gc();
  const after = Deno.memoryUsage().external - before;
  assert.ok(after < 8 << 20, `${after >> 20} MB left after the collection`);
});

Deno.test("a collection asked for now runs at once and counts the dropped bytes from zero again (after start-up, with memory scratch)", async () => {
  let runs = 0;
  const c = new Collector(100, () => runs++);
  c.dropped(90);
  c.collectNow();
  assert.equal(runs, 1);
  c.dropped(90);
  await tick();
  assert.equal(runs, 1, "the 90 before it no longer count");
  c.dropped(10);
  await tick();
  assert.equal(runs, 2);
});
