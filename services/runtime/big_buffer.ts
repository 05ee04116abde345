/**
 * Buffers of this size or more are mapped on their own (see bigBuffer); smaller ones are
 * the allocator's, which reuses them well.
 */
export const BIG_BUFFER_BYTES = 256 * 1024;

const PAGE = 65_536;

/**
 * A zeroed buffer of `size` bytes that gives its memory back to the system when it is
 * collected. An ArrayBuffer's bytes come from the C allocator (glibc's malloc), which
 * keeps what is freed inside its heap: once a freed buffer of N MB has raised its mmap
 * threshold to N, every later buffer under N is carved from a heap that never shrinks
 * past its live top. A body's parts, the whole file a resumable upload is read into and
 * its stripped copy were that churn; in the sandbox profile the heap kept their high-water
 * mark for good (issue #49: 120 MB of RSS kept after ~100 MB of such buffers came and
 * went, 46 MB with this). A WebAssembly.Memory is mapped by V8 itself and unmapped when
 * collected. Falls back to a plain buffer where one cannot be mapped.
 */
export function bigBuffer(size: number): Uint8Array<ArrayBuffer> {
  if (size < BIG_BUFFER_BYTES) return new Uint8Array(size);
  try {
    const pages = Math.ceil(size / PAGE);
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    return new Uint8Array(memory.buffer, 0, size);
  } catch {
    return new Uint8Array(size);
  }
}
