import assert from "node:assert/strict";
import { FairSlots } from "../services/screenshots/fair_slots.ts";
import { loadConfig } from "../schemas/config.ts";
import { ApiError } from "../schemas/errors.ts";
import { test } from "./helpers.ts";

const far = () => Date.now() + 60_000;
/** Resolves to `name` when `p` does, so the order of service can be read. */
const named = (p: Promise<void>, name: string, order: string[]) =>
  p.then(() => order.push(name));
const tick = () => new Promise((r) => setTimeout(r, 0));

test("capture slots: one owner holds at most its share, others get a free slot at once, and waiters are served in turns", async () => {
  const slots = new FairSlots(2, 1, 10);
  await slots.acquire("A", far());
  const order: string[] = [];
  // A's second capture waits although a slot is free: A already holds its share.
  const a2 = named(slots.acquire("A", far()), "A2", order);
  const a3 = named(slots.acquire("A", far()), "A3", order);
  await tick();
  assert.deepEqual(order, []);
  assert.equal(slots.load, 3);
  // B takes the free slot at once.
  await slots.acquire("B", far());
  assert.deepEqual([slots.heldBy("A"), slots.heldBy("B")], [1, 1]);
  const b2 = named(slots.acquire("B", far()), "B2", order);
  const c1 = named(slots.acquire("C", far()), "C1", order);
  await tick();
  // A finishes: A's line goes last, so B and C (waiting too) are not starved by it.
  slots.release("A");
  await tick();
  slots.release("B");
  await tick();
  assert.deepEqual(order, ["C1", "A2"]);
  slots.release("C");
  await tick();
  slots.release("A");
  await tick();
  assert.deepEqual(order, ["C1", "A2", "B2", "A3"]);
  await Promise.all([a2, a3, b2, c1]);
});

test("capture slots: a waiter leaves at its deadline with 240, a full line answers 240 at once, and closing lets everyone go", async () => {
  const slots = new FairSlots(1, 1, 1);
  await slots.acquire("A", far());
  const late = slots.acquire("B", Date.now() + 30);
  await assert.rejects(
    slots.acquire("C", far()),
    (e) => e instanceof ApiError && e.code === 240,
  );
  await assert.rejects(late, (e) => e instanceof ApiError && e.code === 240);
  assert.equal(slots.load, 1);
  // Room for slots about to free themselves.
  const waiting = slots.acquire("D", far(), 0);
  const extra = slots.acquire("E", far(), 1);
  slots.wakeAll();
  await Promise.all([waiting, extra]);
  assert.equal(slots.load, 3);
});

test("by default SCREENSHOT_PER_KEY leaves a slot for others: one less than SCREENSHOT_CONCURRENCY, at least one; a value given is kept", () => {
  const perKey = (env: Record<string, string>) =>
    loadConfig(env).SCREENSHOT_PER_KEY;
  assert.equal(perKey({}), 1, "the default concurrency is 2");
  assert.equal(perKey({ SCREENSHOT_CONCURRENCY: "4" }), 3);
  assert.equal(perKey({ SCREENSHOT_CONCURRENCY: "1" }), 1);
  assert.equal(
    perKey({ SCREENSHOT_CONCURRENCY: "4", SCREENSHOT_PER_KEY: "4" }),
    4,
  );
  // And with those defaults one account's flood leaves a slot free for another.
  const c = loadConfig({ SCREENSHOT_CONCURRENCY: "3" });
  const slots = new FairSlots(
    c.SCREENSHOT_CONCURRENCY,
    c.SCREENSHOT_PER_KEY,
    8,
  );
  const flood = [far(), far(), far()].map((d) => slots.acquire("A", d));
  assert.equal(slots.heldBy("A"), 2);
  const other = slots.acquire("B", far());
  return other.then(async () => {
    assert.equal(slots.heldBy("B"), 1, "another account got the free slot");
    slots.wakeAll();
    await Promise.all(flood);
  });
});
