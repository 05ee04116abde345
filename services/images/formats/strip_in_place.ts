/**
 * The lossless strip of a JPEG, PNG, GIF or WebP held in memory, rewritten within its own
 * bytes instead of into a copy (issue #49: on Deno Deploy a copy of a 20 MB upload was
 * 20 MB more at the process's peak). The format's pass (metadata_strip.ts) first runs
 * against a plan: which ranges of the original it keeps, in order, and the few bytes it
 * makes itself (an orientation segment, a trailer, a size). Nothing is moved until the
 * whole plan is known to fit: every piece must land at or before the bytes it still has
 * to read. A plan that does not fit (new bytes written before anything was dropped) is
 * answered null with the bytes untouched, and the caller strips into a copy as before.
 */
import {
  gifPass,
  jpegPass,
  pngPass,
  SeqReader,
  type StripPass,
  type StripWriter,
  webpPass,
} from "./metadata_strip.ts";

/** A piece of the stripped file: a range of the original's bytes, or bytes of its own. */
type Piece = { from: number; len: number } | { bytes: Uint8Array };

/** What a pass wrote, as pieces of the original, and what it overwrote after. */
export interface StripPlan {
  pieces: Piece[];
  patches: { offset: number; bytes: Uint8Array }[];
}

/** A writer that records a plan over `src` instead of writing bytes. */
class PlanWriter implements StripWriter {
  readonly plan: StripPlan = { pieces: [], patches: [] };
  pos = 0;
  constructor(private readonly src: Uint8Array) {}

  write = (b: Uint8Array): Promise<void> => {
    const from = b.byteOffset - this.src.byteOffset;
    const inSrc = b.buffer === this.src.buffer && from >= 0 &&
      from + b.length <= this.src.length;
    const last = this.plan.pieces.at(-1);
    if (!inSrc) this.plan.pieces.push({ bytes: b.slice() });
    else if (last && "from" in last && last.from + last.len === from) {
      last.len += b.length;
    } else this.plan.pieces.push({ from, len: b.length });
    this.pos += b.length;
    return Promise.resolve();
  };

  patch(offset: number, b: Uint8Array): Promise<void> {
    this.plan.patches.push({ offset, bytes: b.slice() });
    return Promise.resolve();
  }
}

/** The pass of a format that can be stripped in place, or undefined. */
export function inPlacePass(
  ext: string,
  orientation: number,
): StripPass | undefined {
  if (ext === "jpg") return jpegPass(orientation);
  if (ext === "png") return pngPass;
  if (ext === "gif") return gifPass;
  // A WebP turned by its EXIF is re-encoded upright (pipeline_stages.ts's strip).
  if (ext === "webp" && orientation <= 1) return webpPass;
  return undefined;
}

/**
 * Plans `pass` over `bytes`: the pieces it keeps and the bytes it makes, nothing moved.
 * Throws what the pass throws (MalformedImage for a broken file).
 */
export async function planStrip(
  bytes: Uint8Array,
  pass: StripPass,
): Promise<StripPlan> {
  const w = new PlanWriter(bytes);
  await pass(SeqReader.ofBytes(bytes), w);
  return w.plan;
}

/**
 * The stripped length when `plan` fits within `bytes`, else null. It fits when each range
 * moves only towards the start: then whatever lands before it (new bytes included) lands
 * on bytes already read, since the ranges come in the order they are read. Pure.
 */
export function fitsInPlace(bytes: Uint8Array, plan: StripPlan): number | null {
  let out = 0;
  for (const p of plan.pieces) {
    if ("from" in p) {
      if (out > p.from) return null;
      out += p.len;
    } else out += p.bytes.length;
  }
  // Patches only rewrite what was written (a size), so they need no room of their own.
  return out > bytes.length ? null : out;
}

/**
 * Strips `bytes` (a whole JPEG, PNG, GIF or WebP) within themselves: the new length, their
 * first bytes now the stripped file, as stripJpeg & co. would have written it. Null, with
 * the bytes untouched, when the format has no such pass or the plan does not fit.
 */
export async function stripInPlace(
  bytes: Uint8Array,
  ext: string,
  orientation: number,
): Promise<number | null> {
  const pass = inPlacePass(ext, orientation);
  if (!pass) return null;
  const plan = await planStrip(bytes, pass);
  const length = fitsInPlace(bytes, plan);
  if (length === null) return null;
  let out = 0;
  for (const p of plan.pieces) {
    if ("from" in p) {
      // copyWithin moves as memmove does: a range overlapping its new place is safe.
      if (out !== p.from) bytes.copyWithin(out, p.from, p.from + p.len);
      out += p.len;
    } else {
      bytes.set(p.bytes, out);
      out += p.bytes.length;
    }
  }
  for (const { offset, bytes: b } of plan.patches) bytes.set(b, offset);
  return length;
}
