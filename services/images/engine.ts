import sharp from "sharp";

/**
 * Which libvips sharp runs: its native addon, or its WebAssembly build
 * (`@img/sharp-wasm32`, a locked dependency), which sharp falls back to by itself where
 * native code is refused (`--deny-ffi`, Deno Deploy). Same API, same formats; the wasm
 * build runs each image on one thread and several times slower (BENCHMARKS.md).
 */
export type ImageEngine = "native" | "wasm";

/** The engine this process loaded, told by the versions it reports (only wasm has emscripten). */
export function imageEngine(
  versions: Record<string, string | undefined> = sharp.versions,
): ImageEngine {
  return versions.emscripten ? "wasm" : "native";
}

/**
 * libvips threads per image for the engine: the configured number natively; one in wasm,
 * where an image's work runs on one thread whatever is asked (sharp reports concurrency
 * 1), so parallelism comes only from IMAGE_WORKERS images at once.
 */
export function engineThreads(engine: ImageEngine, configured: number): number {
  return engine === "wasm" ? 1 : configured;
}

/**
 * Does one tiny image's work, so the first upload does not pay for the engine's start: in
 * wasm that is its thread pool (~145 ms here, then ~3 ms an operation), natively a few
 * ms. Never fails: a broken engine shows on the first upload, with its error.
 */
export async function warmEngine(): Promise<void> {
  await sharp({
    create: { width: 1, height: 1, channels: 3, background: "#000" },
  }).png().toBuffer().catch(() => {});
}

/** libvips stopped a pipeline at its `timeout` (a decode or an encode past its deadline). */
export function isLibvipsTimeout(e: unknown): boolean {
  return e instanceof Error && /^timeout:/i.test(e.message);
}
