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

/** The RGB of an encoded image's centre pixel. */
export async function centrePixel(bytes: Uint8Array): Promise<number[]> {
  const img = sharp(bytes);
  const { width, height } = await img.metadata();
  const { data } = await img.extract({
    left: Math.floor(width! / 2),
    top: Math.floor(height! / 2),
    width: 1,
    height: 1,
  }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return [...data];
}

/** How many pixels of an image are pure-ish red (the colour test pages give what must go). */
export async function redPixels(bytes: Uint8Array): Promise<number> {
  const { data } = await sharp(bytes).removeAlpha().raw().toBuffer({
    resolveWithObject: true,
  });
  let n = 0;
  for (let i = 0; i < data.length; i += 3) {
    if (data[i] > 200 && data[i + 1] < 60 && data[i + 2] < 60) n++;
  }
  return n;
}
