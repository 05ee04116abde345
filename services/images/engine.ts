import sharp from "./sharp_module.ts";

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
 * The AVIF encoder's effort (0–9) for the engine, unless IMAGE_AVIF_EFFORT sets one:
 * libvips' default 4 natively, 1 in wasm. Encoding a 640 px AVIF took 1,880 ms at effort
 * 4 in wasm against 196 ms natively (9.6×), 212 ms at effort 2 and 95 ms at effort 1, for
 * 10–26 % more bytes than effort 4 (docs/benchmarks.md, issue #49).
 */
export function avifEffort(engine: ImageEngine, configured?: number): number {
  return configured ?? (engine === "wasm" ? 1 : 4);
}

/**
 * The WebP encoder's effort (0–6) for the engine: libvips' default 4 natively, 2 in wasm,
 * where it halved a 640 px encode (25 → 12 ms) for the same bytes within 1 %.
 */
export function webpEffort(engine: ImageEngine): number {
  return engine === "wasm" ? 2 : 4;
}

/**
 * Does one tiny image's work, so the first upload does not pay for the engine's start: in
 * wasm that is its threads' start (~200 ms here, ~60 of them on the calling thread; then
 * ~4 ms an operation), natively a few ms. main.ts calls it once the service listens and
 * has been idle a moment, never beside the database's start (issue #49). Never fails: a
 * broken engine shows on the first upload, with its error.
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
