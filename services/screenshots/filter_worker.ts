/**
 * Builds a filter engine off the main thread (see buildInWorker): receives a list's name,
 * answers its serialized engine (transferred, not copied), or `{error}`. A
 * node:worker_threads worker, so it runs the same whichever global Worker the process has.
 */
import { parentPort } from "node:worker_threads";
import { buildEngineBytes, type FilterListName } from "./filter_engine.ts";

parentPort!.once("message", async (list: FilterListName) => {
  try {
    const bytes = await buildEngineBytes(list);
    parentPort!.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
  } catch (err) {
    parentPort!.postMessage({
      error: err instanceof Error ? err.message : String(err),
    });
  }
});
