import assert from "node:assert/strict";
import { KeyedLine } from "../services/runtime/keyed_line.ts";
import { test } from "./helpers.ts";

/** A promise and its resolver. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => open = r);
  return { open, opened };
}

test("a keyed line runs one key's work one at a time in arrival order, another key's beside it, a failure does not stop the line, and no entry is left", async () => {
  const line = new KeyedLine();
  const log: string[] = [];
  const first = gate();
  const a1 = line.run("a", async () => {
    log.push("a1 start");
    await first.opened;
    log.push("a1 end");
    return 1;
  });
  const a2 = line.run("a", () => {
    log.push("a2");
    return Promise.reject(new Error("a2 failed"));
  });
  const a3 = line.run("a", () => {
    log.push("a3");
    return Promise.resolve(3);
  });
  const b1 = line.run("b", () => {
    log.push("b1");
    return Promise.resolve("b");
  });
  assert.equal(await b1, "b");
  assert.deepEqual(log, ["a1 start", "b1"], "b ran while a1 held a");
  assert.equal(line.size, 1);
  first.open();
  assert.equal(await a1, 1);
  await assert.rejects(a2, /a2 failed/);
  assert.equal(await a3, 3);
  assert.deepEqual(log, ["a1 start", "b1", "a1 end", "a2", "a3"]);
  assert.equal(line.size, 0);
});
