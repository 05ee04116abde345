import sharp from "sharp";

/** The bytes of a `data:…;base64,` URI (an inline screenshot's display_url). */
export function dataUriBytes(uri: string): Uint8Array {
  return Uint8Array.from(atob(uri.split(",")[1]), (c) => c.charCodeAt(0));
}

/** The RGB of one pixel of an encoded image. */
export async function pixel(
  bytes: Uint8Array,
  x: number,
  y: number,
): Promise<number[]> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({
    resolveWithObject: true,
  });
  const i = (y * info.width + x) * 3;
  return [data[i], data[i + 1], data[i + 2]];
}
