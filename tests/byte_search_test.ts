import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { test } from "./helpers.ts";
import { ByteSearch } from "../services/bodies/byte_search.ts";

test("the byte search finds exactly what Buffer.indexOf finds, from any start, in haystacks full of near matches (property test)", () => {
  // A three-letter alphabet makes partial matches, overlaps and matches at both ends common.
  const bytes = (max: number) =>
    fc.array(fc.constantFrom(0x0d, 0x0a, 0x2d), {
      minLength: 1,
      maxLength: max,
    })
      .map((a) => Uint8Array.from(a));
  fc.assert(
    fc.property(
      bytes(8),
      bytes(200),
      fc.array(fc.nat(200), { maxLength: 4 }),
      fc.integer({ min: -3, max: 210 }),
      (needle, hay, plants, from) => {
        const h = Uint8Array.from(hay);
        for (const at of plants) {
          if (at + needle.length <= h.length) h.set(needle, at);
        }
        const want = Buffer.from(h).indexOf(
          Buffer.from(needle),
          Math.max(0, from),
        );
        assert.equal(new ByteSearch(needle).indexIn(h, from), want);
      },
    ),
    { numRuns: 3000 },
  );
});

test("the byte search finds a multipart delimiter in random binary data as Buffer.indexOf does, and refuses an empty needle", () => {
  const delimiter = Buffer.from(`\r\n--${crypto.randomUUID()}`, "latin1");
  const search = new ByteSearch(delimiter);
  for (const size of [0, 1, delimiter.length - 1, 4096, 200_000]) {
    const hay = new Uint8Array(size);
    for (let i = 0; i < size; i += 65536) {
      crypto.getRandomValues(hay.subarray(i, Math.min(size, i + 65536)));
    }
    assert.equal(search.indexIn(hay), -1, `no delimiter in ${size} bytes`);
    if (size >= delimiter.length) {
      const at = size - delimiter.length;
      hay.set(delimiter, at);
      assert.equal(search.indexIn(hay), Buffer.from(hay).indexOf(delimiter));
      assert.equal(search.indexIn(hay), at);
      assert.equal(search.indexIn(hay, at + 1), -1);
    }
  }
  assert.throws(() => new ByteSearch(new Uint8Array(0)), RangeError);
});
