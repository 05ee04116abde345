import type sharp from "./sharp_module.ts";
type Sharp = ReturnType<typeof sharp>;

/**
 * The two fixed variants every image has (ImgBB's record names them): the thumbnail
 * `/<id>.th.<ext>` and, above MEDIUM_SIZE, the medium `/<id>.md.<ext>`. Neither is made by
 * the upload, which answers once the original is stored: both are made at their first
 * request, and again if lost (variant_maker.ts, routes/host.ts).
 */

/** Longest side of the thumbnail and of the medium variant. */
export const THUMB_SIZE = 320;
export const MEDIUM_SIZE = 1024;

/** Which fixed variant, by its key's marker. */
export type FixedKind = "th" | "md";

/** Longest side of a fixed variant. */
export function fixedSize(kind: FixedKind): number {
  return kind === "th" ? THUMB_SIZE : MEDIUM_SIZE;
}

/** Whether an image of this size has a medium variant (a thumbnail it always has). */
export function hasMedium(width: number, height: number): boolean {
  return Math.max(width, height) > MEDIUM_SIZE;
}

/** Variant format per original: keep the format where it can be written, else PNG/WebP. */
export function variantExt(ext: string): string {
  return ({
    jpg: "jpg",
    png: "png",
    webp: "webp",
    gif: "gif",
    avif: "webp",
  } as Record<
    string,
    string
  >)[ext] ?? "png";
}

/**
 * A fixed variant's encoding, by its extension; `gifEffort` is the quantiser's effort
 * planned to fit the time left (encode_budget.ts), sharp's default 7 otherwise.
 */
export function encodeFixed(
  img: Sharp,
  ext: string,
  gifEffort?: number,
): Sharp {
  switch (ext) {
    case "jpg":
      // libjpeg-turbo, not mozjpeg: mozjpeg's smaller files cost 4-6x the encode time,
      // which the upload benchmark measured as the largest part of a request.
      return img.jpeg({ quality: 85 });
    case "webp":
      return img.webp({ quality: 85 });
    case "gif":
      return img.gif({ effort: gifEffort });
    default:
      return img.png({ compressionLevel: 8 });
  }
}
