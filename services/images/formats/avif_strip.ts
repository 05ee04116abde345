/**
 * An AVIF's original without its metadata, by rewriting its boxes instead of re-encoding
 * its pixels. An AVIF keeps EXIF and XMP as items of their own (types `Exif` and `mime`)
 * beside the picture's; re-encoding the file to lose them costs the picture quality (a
 * second lossy pass) and seconds of CPU per megapixel. Here the metadata items leave the
 * `meta` box's lists (iinf, iloc, iref, ipma) and their bytes are zeroed where they lie, so
 * every other byte keeps its offset: the `meta` box shrinks and a `free` box right after it
 * takes up the difference, the AV1 data is copied as it was. Item names are emptied (free
 * text), boxes this file does not know at the top level become `free` boxes of zeros, and
 * bytes past the last box are dropped. What it cannot do so with certainty (an animated
 * AVIF, entity groups, a property or a box in `meta` it does not know, metadata that a
 * picture item refers to) it leaves to its caller, writing nothing.
 */

import { BufWriter, fourcc, StripBuffers } from "./metadata_strip.ts";
import { copyRange, type Read } from "./positioned_read.ts";
import { openScratch } from "../../runtime/scratch_files.ts";

/** Item types that make up a picture; any other item (Exif, mime, uri) is dropped. */
const KEEP_ITEMS = new Set(["av01", "grid", "iovl", "iden", "tmap"]);
/** Boxes a `meta` box may hold here. */
const META_CHILDREN = new Set([
  "hdlr",
  "pitm",
  "iloc",
  "iinf",
  "iref",
  "iprp",
  "idat",
  "dinf",
]);
/** Item properties that describe pixels (size, depth, codec, colour, transforms). */
const PIXEL_PROPERTIES = new Set([
  "ispe",
  "pixi",
  "av1C",
  "colr",
  "irot",
  "imir",
  "clap",
  "pasp",
  "auxC",
  "a1op",
  "a1lx",
  "lsel",
  "clli",
  "mdcv",
  "cclv",
  "amve",
]);
/** A `meta` box larger than this is left to a re-encode (real ones are a few KB). */
const MAX_META = 1 << 20;
/**
 * Top-level boxes and item extents at most (a real AVIF has a handful of boxes, and a grid
 * of tiles a few hundred extents): a file made of millions of empty boxes or extents must
 * not cost a read or a comparison each.
 */
const MAX_TOP_BOXES = 64, MAX_EXTENTS = 4096;

/** A box: its type, where it starts, its header's length and its whole length. */
interface Box {
  type: string;
  at: number;
  header: number;
  size: number;
}

/** Thrown inside this module when the file is not one it rewrites. */
class Refused extends Error {
  constructor(why: string, readonly sequence = false) {
    super(why);
  }
}

function refuse(why: string, sequence = false): never {
  throw new Refused(why, sequence);
}

/**
 * What rewriteAvif did: wrote the copy, or wrote nothing and left the file to the caller:
 * an image sequence (which a re-encode would flatten to one picture), or anything else it
 * cannot rewrite with certainty (which is safest re-encoded).
 */
export type AvifRewrite = "rewritten" | "sequence" | "refused";

/**
 * Writes to `out` (a new file) the AVIF read through `read` (`size` bytes) without its
 * metadata items, as described above, or nothing (see AvifRewrite).
 */
export async function rewriteAvif(
  read: Read,
  size: number,
  out: string,
  buffers: StripBuffers = new StripBuffers(),
): Promise<AvifRewrite> {
  let plan;
  try {
    plan = await planAvif(read, size);
  } catch (e) {
    if (e instanceof Refused && e.sequence) return "sequence";
    if (e instanceof Refused || e instanceof RangeError) return "refused";
    throw e;
  }
  const f = await openScratch(out, { write: true, createNew: true });
  const buf = buffers.take();
  try {
    const w = new BufWriter(f, buf);
    for (const box of plan.boxes) {
      if (box.type === "meta") {
        await w.write(plan.meta);
        if (plan.slack) await writeFree(w, plan.slack);
      } else if (box.type === "ftyp" || box.type === "mdat") {
        await copyRange(
          read,
          box.at,
          box.at + box.size,
          w.write,
          (piece, at) => zeroed(piece, at, plan.zero),
        );
      } else await writeFree(w, box.size);
    }
    await w.flush();
  } finally {
    f.close();
    buffers.give(buf);
  }
  return "rewritten";
}

/** What rewriteAvif writes: the top-level boxes, the new `meta`, and what to zero. */
interface Plan {
  boxes: Box[];
  meta: Uint8Array;
  /** The old `meta`'s length less the new one's: a `free` box of it follows. */
  slack: number;
  /** Ranges [from, to) of the file to write as zeros: the dropped items' bytes. */
  zero: [number, number][];
}

async function planAvif(read: Read, size: number): Promise<Plan> {
  const boxes: Box[] = [];
  for (let at = 0; at + 8 <= size;) {
    const box = await boxAt(read, at, size);
    if (!box) break; // what follows the last whole box is dropped
    if (boxes.push(box) > MAX_TOP_BOXES) refuse("too many boxes");
    at += box.size;
  }
  if (boxes[0]?.type !== "ftyp") refuse("no ftyp");
  const ftyp = await read(
    boxes[0].at + boxes[0].header,
    Math.min(boxes[0].size - boxes[0].header, 256),
  );
  const brands = new Set<string>();
  for (let i = 0; i + 4 <= ftyp.length; i += 4) {
    if (i !== 4) brands.add(fourcc(ftyp, i)); // 4: the minor version
  }
  if (brands.has("avis")) refuse("an image sequence", true);
  if (!brands.has("avif")) refuse("not an AVIF");
  if (boxes.some((b) => b.type === "moov" || b.type === "moof")) {
    refuse("tracks", true);
  }
  const metas = boxes.filter((b) => b.type === "meta");
  if (metas.length !== 1 || metas[0].size > MAX_META) refuse("meta");
  const metaBox = metas[0];
  const metaBytes = await read(metaBox.at, metaBox.size);
  if (metaBytes.length < metaBox.size) refuse("meta cut short");
  const children = childBoxes(metaBytes, metaBox.header + 4);
  const child = (type: string) => {
    const found = children.filter((c) => c.type === type);
    if (found.length > 1) refuse(`two ${type}`);
    return found[0];
  };
  for (const c of children) {
    if (!META_CHILDREN.has(c.type)) refuse(`meta holds ${c.type}`);
  }
  const hdlr = child("hdlr"), iinf = child("iinf"), iloc = child("iloc");
  if (!hdlr || !iinf || !iloc) refuse("meta lacks hdlr, iinf or iloc");
  if (fourcc(metaBytes, hdlr.at + hdlr.header + 8) !== "pict") {
    refuse("not a picture");
  }
  const pitm = child("pitm");
  const primary = pitm ? pitmId(metaBytes, pitm) : undefined;

  const itemList = readItems(metaBytes, iinf);
  const items = itemList.items;
  const dropped = new Set(
    [...items.keys()].filter((id) => !KEEP_ITEMS.has(items.get(id)!.type)),
  );
  if (primary === undefined || !items.has(primary) || dropped.has(primary)) {
    refuse("primary item");
  }

  const idat = child("idat");
  const idatStart = idat ? metaBox.at + idat.at + idat.header : 0;
  const locations = readLocations(metaBytes, iloc);
  const zero: [number, number][] = [];
  const kept: [number, number][] = [];
  for (const loc of locations) {
    if (!items.has(loc.id)) refuse("a location without an item");
    for (const [from, length] of loc.extents) {
      const base = loc.method === 1 ? idatStart : 0;
      if (loc.method === 1 && !idat) refuse("no idat");
      if (!dropped.has(loc.id)) {
        if (loc.method === 0 && length > 0) kept.push([from, from + length]);
        continue;
      }
      if (loc.method > 1 || loc.reference !== 0 || length === 0) {
        refuse("metadata stored elsewhere");
      }
      zero.push([base + from, base + from + length]);
    }
  }
  // The dropped bytes must lie in an mdat or the idat, and in no picture item's bytes;
  // a picture's bytes given by file offset, in an mdat (the idat moves with the meta).
  const mdats = boxes.filter((b) => b.type === "mdat").map((
    b,
  ) => [b.at + b.header, b.at + b.size]);
  const holders = idat
    ? [...mdats, [idatStart, metaBox.at + idat.at + idat.size]]
    : mdats;
  const inside = (from: number, to: number, where: number[][]) =>
    where.some(([a, b]) => from >= a && to <= b);
  for (const [from, to] of zero) {
    if (!inside(from, to, holders)) refuse("bytes outside");
    if (kept.some(([a, b]) => from < b && a < to)) refuse("shared bytes");
  }
  for (const [from, to] of kept) {
    if (!inside(from, to, mdats)) refuse("bytes outside");
  }

  const parts: Uint8Array[] = [];
  for (const c of children) {
    const bytes = metaBytes.subarray(c.at, c.at + c.size);
    if (c.type === "iinf") parts.push(rewriteIinf(itemList, dropped));
    else if (c.type === "iloc") {
      parts.push(rewriteIloc(metaBytes, c, locations, dropped));
    } else if (c.type === "iref") {
      const iref = rewriteIref(metaBytes, c, dropped);
      if (iref.length > 12) parts.push(iref); // an empty one goes
    } else if (c.type === "iprp") {
      parts.push(rewriteIprp(metaBytes, c, dropped));
    } else if (c.type === "idat") {
      parts.push(zeroed(bytes, metaBox.at + c.at, zero));
    } else parts.push(bytes);
  }
  const meta = box(
    "meta",
    metaBytes.subarray(metaBox.header, metaBox.header + 4),
    ...parts,
  );
  const slack = metaBox.size - meta.length;
  if (slack < 0 || (slack > 0 && slack < 8)) refuse("no room for a free box");
  return { boxes, meta, slack, zero };
}

/** The box at `at` ending by `limit`, or undefined when there is none whole. */
async function boxAt(read: Read, at: number, limit: number) {
  const h = await read(at, 16);
  return parseBox(h, 0, limit - at, at);
}

/**
 * The box whose header starts `bytes[i]`, with `room` bytes left for it; `at` is where it
 * is reported to start. Undefined when the header or the length does not fit.
 */
function parseBox(
  bytes: Uint8Array,
  i: number,
  room: number,
  at = i,
): Box | undefined {
  if (bytes.length - i < 8) return undefined;
  const v = view(bytes);
  let size = v.getUint32(i), header = 8;
  if (size === 1) {
    if (bytes.length - i < 16) return undefined;
    const big = v.getBigUint64(i + 8);
    if (big > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
    size = Number(big);
    header = 16;
  } else if (size === 0) size = room;
  const type = fourcc(bytes, i + 4);
  if (type === "uuid") header += 16;
  if (size < header || size > room) return undefined;
  return { type, at, header, size };
}

/** The boxes inside bytes[from..] up to the end (each must be whole). */
function childBoxes(bytes: Uint8Array, from: number, to = bytes.length): Box[] {
  const out: Box[] = [];
  for (let at = from; at < to;) {
    const b = parseBox(bytes.subarray(0, to), at, to - at);
    if (!b) refuse("a box cut short");
    out.push(b);
    at += b.size;
  }
  return out;
}

function pitmId(bytes: Uint8Array, b: Box): number {
  const p = b.at + b.header;
  return bytes[p] === 0 ? u16(bytes, p + 4) : u32(bytes, p + 4);
}

/** One item of `iinf`: its type, and its entry up to the type (what a rewrite keeps). */
interface Item {
  type: string;
  /** The `infe` box's version, flags, item id, protection index and item type. */
  fixed: Uint8Array;
}

/** The items of `iinf` (`infe` boxes of versions 2 and 3) by id, and the list's header. */
function readItems(
  bytes: Uint8Array,
  iinf: Box,
): { head: Uint8Array; items: Map<number, Item> } {
  const p = iinf.at + iinf.header;
  const wide = bytes[p] !== 0;
  const count = wide ? u32(bytes, p + 4) : u16(bytes, p + 4);
  const entries = childBoxes(bytes, p + (wide ? 8 : 6), iinf.at + iinf.size);
  if (entries.length !== count) refuse("iinf count");
  const items = new Map<number, Item>();
  for (const e of entries) {
    const q = e.at + e.header;
    const version = bytes[q];
    if (e.type !== "infe" || version < 2 || version > 3) refuse("infe");
    const id = version === 2 ? u16(bytes, q + 4) : u32(bytes, q + 4);
    const at = q + (version === 2 ? 6 : 8);
    if (at + 6 > e.at + e.size) refuse("infe cut short");
    if (u16(bytes, at) !== 0) refuse("a protected item");
    if (items.has(id)) refuse("an item twice");
    items.set(id, {
      type: fourcc(bytes, at + 2),
      fixed: bytes.subarray(q, at + 6),
    });
  }
  return { head: bytes.subarray(p, p + (wide ? 8 : 6)), items };
}

/** `iinf` without the dropped items, and every kept item's name emptied. */
function rewriteIinf(
  list: { head: Uint8Array; items: Map<number, Item> },
  dropped: Set<number>,
): Uint8Array {
  const kept = [...list.items].filter(([id]) => !dropped.has(id))
    .map(([, item]) => box("infe", item.fixed, new Uint8Array(1)));
  const head = list.head.slice();
  if (head.length === 8) view(head).setUint32(4, kept.length);
  else view(head).setUint16(4, kept.length);
  return box("iinf", head, ...kept);
}

/** One item's location: construction method, data reference, [offset, length] extents. */
interface Location {
  id: number;
  method: number;
  reference: number;
  extents: [number, number][];
  /** Where its entry lies in the box's bytes. */
  from: number;
  to: number;
}

function readLocations(bytes: Uint8Array, iloc: Box): Location[] {
  const end = iloc.at + iloc.size;
  let p = iloc.at + iloc.header;
  const version = bytes[p];
  if (version > 2) refuse("iloc version");
  const offsetSize = bytes[p + 4] >> 4, lengthSize = bytes[p + 4] & 15;
  const baseSize = bytes[p + 5] >> 4;
  const indexSize = version >= 1 ? bytes[p + 5] & 15 : 0;
  for (const s of [offsetSize, lengthSize, baseSize, indexSize]) {
    if (s !== 0 && s !== 4 && s !== 8) refuse("iloc field size");
  }
  const count = version < 2 ? u16(bytes, p + 6) : u32(bytes, p + 6);
  p += version < 2 ? 8 : 10;
  const num = (n: number) => {
    if (p + n > end) refuse("iloc cut short");
    const value = n === 0
      ? 0
      : n === 2
      ? u16(bytes, p)
      : n === 4
      ? u32(bytes, p)
      : u64(bytes, p);
    p += n;
    return value;
  };
  const out: Location[] = [];
  let total = 0;
  for (let i = 0; i < count; i++) {
    const from = p;
    const id = num(version < 2 ? 2 : 4);
    const method = version >= 1 ? num(2) & 15 : 0;
    const reference = num(2);
    const base = num(baseSize);
    const extentCount = num(2);
    if ((total += extentCount) > MAX_EXTENTS) refuse("too many extents");
    const extents: [number, number][] = [];
    for (let e = 0; e < extentCount; e++) {
      num(indexSize);
      const offset = num(offsetSize);
      extents.push([base + offset, num(lengthSize)]);
    }
    out.push({ id, method, reference, extents, from, to: p });
  }
  if (p !== end) refuse("iloc length");
  return out;
}

/** `iloc` without the dropped items' entries, each other entry byte for byte. */
function rewriteIloc(
  bytes: Uint8Array,
  iloc: Box,
  locations: Location[],
  dropped: Set<number>,
): Uint8Array {
  const p = iloc.at + iloc.header;
  const version = bytes[p];
  const keptEntries = locations.filter((l) => !dropped.has(l.id));
  const head = bytes.slice(p, p + (version < 2 ? 8 : 10));
  if (version < 2) view(head).setUint16(6, keptEntries.length);
  else view(head).setUint32(6, keptEntries.length);
  return box(
    "iloc",
    head,
    ...keptEntries.map((l) => bytes.subarray(l.from, l.to)),
  );
}

/** `iref` without references from dropped items; refused when a kept one refers to one. */
function rewriteIref(
  bytes: Uint8Array,
  iref: Box,
  dropped: Set<number>,
): Uint8Array {
  const p = iref.at + iref.header;
  const wide = bytes[p] !== 0;
  const n = wide ? 4 : 2;
  const id = (at: number) => wide ? u32(bytes, at) : u16(bytes, at);
  const kept: Uint8Array[] = [];
  for (const r of childBoxes(bytes, p + 4, iref.at + iref.size)) {
    const q = r.at + r.header;
    if (q + n + 2 > r.at + r.size) refuse("iref cut short");
    const count = u16(bytes, q + n);
    if (q + n + 2 + count * n !== r.at + r.size) refuse("iref length");
    const to = Array.from({ length: count }, (_, i) => id(q + n + 2 + i * n));
    if (dropped.has(id(q))) continue;
    if (to.some((t) => dropped.has(t))) refuse("a picture refers to metadata");
    kept.push(bytes.subarray(r.at, r.at + r.size));
  }
  return box("iref", bytes.subarray(p, p + 4), ...kept);
}

/** `iprp` without the dropped items' property associations; refused for an unknown property. */
function rewriteIprp(
  bytes: Uint8Array,
  iprp: Box,
  dropped: Set<number>,
): Uint8Array {
  const parts: Uint8Array[] = [];
  for (
    const c of childBoxes(bytes, iprp.at + iprp.header, iprp.at + iprp.size)
  ) {
    if (c.type === "ipco") {
      for (const prop of childBoxes(bytes, c.at + c.header, c.at + c.size)) {
        if (!PIXEL_PROPERTIES.has(prop.type)) refuse(`property ${prop.type}`);
      }
      parts.push(bytes.subarray(c.at, c.at + c.size));
    } else if (c.type === "ipma") parts.push(rewriteIpma(bytes, c, dropped));
    else refuse(`iprp holds ${c.type}`);
  }
  return box("iprp", new Uint8Array(0), ...parts);
}

function rewriteIpma(
  bytes: Uint8Array,
  ipma: Box,
  dropped: Set<number>,
): Uint8Array {
  const end = ipma.at + ipma.size;
  const p = ipma.at + ipma.header;
  if (p + 8 > end) refuse("ipma cut short");
  const version = bytes[p], wideIndex = (bytes[p + 3] & 1) === 1;
  const count = u32(bytes, p + 4);
  const kept: Uint8Array[] = [];
  let q = p + 8;
  for (let i = 0; i < count; i++) {
    const from = q;
    const idSize = version < 1 ? 2 : 4;
    if (q + idSize + 1 > end) refuse("ipma cut short");
    const id = version < 1 ? u16(bytes, q) : u32(bytes, q);
    q += idSize + 1 + bytes[q + idSize] * (wideIndex ? 2 : 1);
    if (q > end) refuse("ipma cut short");
    if (!dropped.has(id)) kept.push(bytes.subarray(from, q));
  }
  if (q !== end) refuse("ipma length");
  const head = bytes.slice(p, p + 8);
  view(head).setUint32(4, kept.length);
  return box("ipma", head, ...kept);
}

/** `bytes` (found at `at` in the file) with the parts inside `zero` set to zeros. */
function zeroed(
  bytes: Uint8Array,
  at: number,
  zero: [number, number][],
): Uint8Array {
  let out = bytes;
  for (const [from, to] of zero) {
    const a = Math.max(from, at), b = Math.min(to, at + bytes.length);
    if (a >= b) continue;
    if (out === bytes) out = bytes.slice();
    out.fill(0, a - at, b - at);
  }
  return out;
}

/** A box of `type` holding `parts` one after the other. */
function box(type: string, ...parts: Uint8Array[]): Uint8Array {
  const size = 8 + parts.reduce((n, b) => n + b.length, 0);
  const out = new Uint8Array(size);
  view(out).setUint32(0, size);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  let at = 8;
  for (const b of parts) out.set(b, at), at += b.length;
  return out;
}

/** Zeros written at a time for a `free` box. */
const ZEROS = new Uint8Array(64 * 1024);

/**
 * A `free` box `size` bytes long (at least 8; 16 or more past 4 GiB, as every box that
 * long was), all zeros after its header, written a piece at a time.
 */
async function writeFree(w: BufWriter, size: number) {
  const head = new Uint8Array(size > 0xffffffff ? 16 : 8);
  const v = view(head);
  v.setUint32(0, head.length === 16 ? 1 : size);
  head.set([0x66, 0x72, 0x65, 0x65], 4); // "free"
  if (head.length === 16) v.setBigUint64(8, BigInt(size));
  await w.write(head);
  for (let left = size - head.length; left > 0; left -= ZEROS.length) {
    await w.write(ZEROS.subarray(0, Math.min(left, ZEROS.length)));
  }
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function u16(b: Uint8Array, at: number): number {
  if (at + 2 > b.length) refuse("cut short");
  return view(b).getUint16(at);
}

function u32(b: Uint8Array, at: number): number {
  if (at + 4 > b.length) refuse("cut short");
  return view(b).getUint32(at);
}

function u64(b: Uint8Array, at: number): number {
  if (at + 8 > b.length) refuse("cut short");
  const n = view(b).getBigUint64(at);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) refuse("an offset too large");
  return Number(n);
}
