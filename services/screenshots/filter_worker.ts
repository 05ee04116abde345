/// <reference lib="deno.worker" />
/**
 * Builds a filter engine off the main thread (see FilterEngines): receives a list's name,
 * answers its serialized engine (transferred, not copied), or `{error}`.
 */
import { buildEngineBytes, type FilterListName } from "./filter_engine.ts";

self.onmessage = async (e: MessageEvent<FilterListName>) => {
  try {
    const bytes = await buildEngineBytes(e.data);
    self.postMessage(bytes, [bytes.buffer]);
  } catch (err) {
    self.postMessage({
      error: err instanceof Error ? err.message : String(err),
    });
  }
};
