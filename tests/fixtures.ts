import sharp from "sharp";

/** A solid-colour image of the given format, made in memory for a test. */
export async function makeImage(
  format: "jpeg" | "png" | "webp" | "gif" | "avif" | "tiff",
  opts: { width?: number; height?: number; color?: string } = {},
): Promise<Uint8Array> {
  const img = sharp({
    create: {
      width: opts.width ?? 64,
      height: opts.height ?? 48,
      channels: 3,
      background: opts.color ?? "#3366cc",
    },
  });
  return new Uint8Array(await img.toFormat(format).toBuffer());
}

/** An animated GIF of `frames` differently coloured frames. */
export async function makeAnimatedGif(frames = 3): Promise<Uint8Array> {
  const colors = ["red", "green", "blue", "yellow"];
  const parts = await Promise.all(
    Array.from(
      { length: frames },
      (_, i) =>
        sharp({
          create: {
            width: 32,
            height: 32,
            channels: 3,
            background: colors[i % 4],
          },
        }).png()
          .toBuffer(),
    ),
  );
  return new Uint8Array(
    await sharp(parts, { join: { animated: true } }).gif().toBuffer(),
  );
}

/** A JPEG carrying GPS coordinates, camera make, artist and orientation 6. */
export async function makeJpegWithGps(): Promise<Uint8Array> {
  return new Uint8Array(
    await sharp({
      create: { width: 80, height: 40, channels: 3, background: "#884422" },
    })
      .jpeg({ quality: 90 })
      .withExif({
        IFD0: { Make: "TestCam", Artist: "Alice Example" },
        IFD3: {
          GPSLatitudeRef: "N",
          GPSLatitude: "51/1 30/1 0/1",
          GPSLongitudeRef: "W",
          GPSLongitude: "0/1 7/1 0/1",
        },
      })
      .withMetadata({ orientation: 6 })
      .toBuffer(),
  );
}

/** A random-noise JPEG of roughly `bytes` bytes (noise defeats compression). */
export async function makeNoiseJpeg(
  width: number,
  height: number,
): Promise<Uint8Array> {
  const raw = new Uint8Array(width * height * 3);
  crypto.getRandomValues(raw.subarray(0, Math.min(raw.length, 65536)));
  for (let i = 65536; i < raw.length; i += 65536) {
    raw.copyWithin(i, (i * 7919) % 65536, Math.min(raw.length, i + 65536));
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({
      quality: 95,
    }).toBuffer(),
  );
}

/** Builds multipart form data from named files. */
export function formWith(
  files: { field?: string; name: string; bytes: Uint8Array; type?: string }[],
  fields: Record<string, string> = {},
): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const f of files) {
    fd.append(
      f.field ?? "images",
      new File([f.bytes as Uint8Array<ArrayBuffer>], f.name, {
        type: f.type ?? "application/octet-stream",
      }),
    );
  }
  return fd;
}
