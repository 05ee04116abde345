/**
 * Buffers of one size, reused across requests. Each upload used to allocate its own read
 * and write buffers (~1 MB a request): at 190 uploads a second that churn of
 * ArrayBuffers, counted by V8 as external memory, started a full collection every ~60 ms
 * under the service's `--heap-growing-percent=50` (BENCHMARKS.md §7, session 22). Taken
 * from here, a request's buffers are the previous request's.
 *
 * A buffer is given back only when nothing can still read or write it.
 */
export class BufferPool {
  readonly #free: ArrayBuffer[] = [];

  /**
   * @param size bytes of each buffer
   * @param keep how many free buffers to hold at most (the rest go to the collector)
   */
  constructor(readonly size: number, readonly keep: number) {}

  /** A buffer of `size` bytes: a free one, or a new one. Its contents are not cleared. */
  take(): ArrayBuffer {
    return this.#free.pop() ?? new ArrayBuffer(this.size);
  }

  /**
   * Gives a buffer back for the next request. A detached one (its byteLength is 0) is
   * dropped, and so is one given twice: two requests would write into it.
   */
  give(buf: ArrayBuffer): void {
    if (
      buf.byteLength === this.size && this.#free.length < this.keep &&
      !this.#free.includes(buf)
    ) {
      this.#free.push(buf);
    }
  }

  /** Free buffers held now (tests). */
  get free(): number {
    return this.#free.length;
  }
}
