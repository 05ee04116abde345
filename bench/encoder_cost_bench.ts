/**
 * What each encoder costs on the worst input, noise (every pixel random), in ms per
 * megapixel: the table services/images/encode_budget.ts plans with. libvips stops a
 * pipeline at its timeout only while it makes pixels; AVIF, mozjpeg and GIF then encode the
 * whole image in one call that nothing interrupts (issue #51: a 1600×1200 noise AVIF at
 * effort 4 ran 18.8 s past a 2 s timeout). Run: `deno task bench:encoders` (native, then
 * the WebAssembly engine in a child under --deny-ffi).
 */
import sharp, { type Sharp } from "sharp";
import {
  ENCODER_SETTINGS,
  type EncoderSetting,
} from "../services/images/encode_budget.ts";

const SIDE = 1000; // 1 MP

async function noisePng(): Promise<Uint8Array> {
  const raw = new Uint8Array(SIDE * SIDE * 3);
  for (let i = 0; i < raw.length; i += 65536) {
    crypto.getRandomValues(raw.subarray(i, Math.min(i + 65536, raw.length)));
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width: SIDE, height: SIDE, channels: 3 } })
      .png({ compressionLevel: 1 }).toBuffer(),
  );
}

function encode(img: Sharp, s: EncoderSetting): Sharp {
  switch (s.format) {
    case "avif":
      return img.avif({ quality: s.quality, effort: s.effort });
    case "jpg":
      return img.jpeg({ quality: s.quality, mozjpeg: s.effort > 0 });
    case "gif":
      return img.gif({ effort: s.effort });
  }
}

/** ms per MP of each setting, the slower of two runs. */
async function measure(): Promise<Record<string, number>> {
  const png = await noisePng();
  const out: Record<string, number> = {};
  for (const s of ENCODER_SETTINGS) {
    let worst = 0;
    for (let run = 0; run < 2; run++) {
      const t = performance.now();
      await encode(sharp(png), s).toBuffer();
      worst = Math.max(worst, performance.now() - t);
    }
    out[`${s.format} e${s.effort} q${s.quality}`] = Math.round(worst);
  }
  return out;
}

if (Deno.args[0] === "--child") {
  console.log(JSON.stringify(await measure()));
} else {
  const native = await measure();
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--deny-ffi", "-A", import.meta.filename!, "--child"],
    stdout: "piped",
  }).output();
  const wasm = JSON.parse(new TextDecoder().decode(child.stdout));
  console.log(`noise, ${SIDE}×${SIDE}, ms per MP (slower of two runs)`);
  console.log("| setting | native | wasm | wasm/native |");
  console.log("| --- | --- | --- | --- |");
  for (const k of Object.keys(native)) {
    console.log(
      `| ${k} | ${native[k]} | ${wasm[k]} | ${
        (wasm[k] / native[k]).toFixed(1)
      }× |`,
    );
  }
}
