import v8 from "node:v8";
import vm from "node:vm";

/**
 * Collects the garbage of large buffers soon after it is made, where memory is tight (Deno
 * Deploy: 512 MB, no runtime flags). V8 frees an ArrayBuffer's bytes only when a collection
 * finds it unreferenced, and it starts one for external memory only after it grew by tens
 * of MB since the last: a 60 MB resumable upload left ~160 MB of dropped buffers (its
 * chunks, its parts, the copies the stores make) that the process held as RSS for
 * seconds after, and a burst of uploads stacked them (issue #49). Counting the bytes the
 * service drops and asking for a collection every `everyBytes` bounds that lag.
 */
export class Collector {
  #since = 0;
  #due = false;

  constructor(
    private readonly everyBytes: number,
    private readonly collect: () => void,
  ) {}

  /** Collects now, and counts from zero again. */
  collectNow(): void {
    this.#since = 0;
    this.collect();
  }

  /**
   * `bytes` of buffers were dropped: past `everyBytes` since the last collection, one is
   * run at the next turn of the event loop (not inside the caller's work), once however
   * many notes came meanwhile.
   */
  dropped(bytes: number): void {
    this.#since += bytes;
    if (this.#since < this.everyBytes || this.#due) return;
    this.#due = true;
    setTimeout(() => {
      this.#since = 0;
      this.#due = false;
      this.collect();
    }, 0);
  }
}

/**
 * V8's full collection as a function, or undefined where the runtime does not give it.
 * `--expose-gc` set at run time exposes `gc` to contexts made after it, in the same
 * isolate, so the collection is the whole process's.
 */
export function fullCollection(): (() => void) | undefined {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    return typeof gc === "function" ? () => gc() : undefined;
  } catch {
    return undefined;
  }
}

let current: Collector | undefined;

/**
 * Collects every `everyMb` MB of dropped buffers from now on (the memory-scratch profile;
 * composition calls it); false, changing nothing, where no full collection is given.
 */
export function collectEvery(everyMb: number): boolean {
  const gc = fullCollection();
  if (!gc) return false;
  current = new Collector(everyMb * 1024 * 1024, gc);
  return true;
}

/** Notes `bytes` of buffers just dropped (a no-op unless collectEvery was called). */
export function dropped(bytes: number): void {
  current?.dropped(bytes);
}

/** A full collection now, where one was set up by collectEvery (else nothing). */
export function collectNow(): void {
  current?.collectNow();
}
