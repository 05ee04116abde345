/**
 * What glibc's allocator was told at the process's start, read from the environment it was
 * started with: `GLIBC_TUNABLES` (`glibc.malloc.mmap_threshold=…:glibc.malloc.arena_max=…`)
 * or the older names glibc still reads (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_ARENA_MAX`);
 * GLIBC_TUNABLES wins where both name one. glibc reads them only then, so setting them
 * later changes nothing; the service only reports them.
 */
export interface AllocatorSetting {
  /**
   * Bytes from which a buffer is mapped on its own, given back when freed; "dynamic"
   * when unset: glibc then raises it to the largest mapped buffer freed so far (up to 32
   * MB), and in the sandbox profile the image engine's own start raises it to ~9 MB.
   */
  mmapThreshold: number | "dynamic";
  /** The most heaps glibc keeps for its threads; "default" (8 per core) when unset. */
  arenaMax: number | "default";
}

/** glibc's allocator setting from the start environment's values (see AllocatorSetting). */
export function allocatorSetting(
  env: Record<string, string | undefined>,
): AllocatorSetting {
  const tunables = new Map<string, string>();
  for (const item of (env.GLIBC_TUNABLES ?? "").split(":")) {
    const at = item.indexOf("=");
    if (at > 0) tunables.set(item.slice(0, at), item.slice(at + 1));
  }
  const threshold = tunables.get("glibc.malloc.mmap_threshold") ??
    env.MALLOC_MMAP_THRESHOLD_;
  const arenas = number(
    tunables.get("glibc.malloc.arena_max") ?? env.MALLOC_ARENA_MAX ?? "",
  );
  return {
    // Named at all, it is fixed (glibc 2.36, checked: even empty, as 0).
    mmapThreshold: threshold === undefined ? "dynamic" : number(threshold),
    arenaMax: arenas > 0 ? arenas : "default",
  };
}

/**
 * A tunable's number as glibc reads it: the longest number at its start (hex after 0x,
 * octal after a leading 0, else decimal; "256k" is 256), 0 when there is none, a minus
 * wrapping round 2^64 as an unsigned long does.
 */
function number(value: string): number {
  const negative = value.startsWith("-");
  const v = negative ? value.slice(1) : value;
  const hex = /^0x([0-9a-f]+)/i.exec(v);
  const n = hex
    ? parseInt(hex[1], 16)
    : v.startsWith("0")
    ? parseInt(/^[0-7]+/.exec(v)![0], 8)
    : Number(/^\d*/.exec(v)![0] || 0);
  return negative && n > 0 ? 2 ** 64 - n : n;
}

/** The setting `deno task start:sandbox` starts the process with. */
export const SANDBOX_TUNABLES =
  "glibc.malloc.mmap_threshold=262144:glibc.malloc.arena_max=1";

/**
 * The start's log entry on the allocator; `level: "warn"` where the WebAssembly engine runs
 * (the sandbox profile, Deno Deploy) with a dynamic threshold. There a warmed instance held
 * ~40–60 MB more after the same load (docs/deploy.md), and the process cannot change it
 * itself, so the entry says what to start it with.
 */
export function allocatorLog(
  setting: AllocatorSetting,
  engine: "native" | "wasm",
): Record<string, unknown> {
  const fields = {
    mmap_threshold: setting.mmapThreshold,
    arena_max: setting.arenaMax,
  };
  if (engine === "wasm" && setting.mmapThreshold === "dynamic") {
    return {
      level: "warn",
      msg: "allocator not set: start the process with " +
        `GLIBC_TUNABLES=${SANDBOX_TUNABLES} (glibc reads it only at the start); ` +
        "without it a warmed instance holds ~50 MB more (docs/deploy.md)",
      ...fields,
    };
  }
  return { msg: "allocator", ...fields };
}
