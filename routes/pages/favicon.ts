import sharp from "../../services/images/sharp_module.ts";

/** The site's icon: a picture frame with a mountain and a sun, in the link colour. */
export const FAVICON_SVG =
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="2" y="4" width="28" height="24" rx="4" fill="#0969da"/><circle cx="11" cy="12" r="3" fill="#fff"/><path d="M4 25l8-8 5 5 4-4 7 7v1H4z" fill="#fff"/></svg>`;

let ico: Promise<Uint8Array<ArrayBuffer>> | undefined;

/**
 * /favicon.ico for clients that ask for it without reading the page's `<link rel=icon>`:
 * a 32×32 PNG from the SVG, in an ICO container (one entry; ICO allows PNG payloads).
 * Made once, on first use.
 */
export function faviconIco(): Promise<Uint8Array<ArrayBuffer>> {
  return ico ??= (async () => {
    const png = await sharp(new TextEncoder().encode(FAVICON_SVG))
      .resize(32, 32).png().toBuffer();
    const out = new Uint8Array(6 + 16 + png.length);
    const v = new DataView(out.buffer);
    v.setUint16(2, 1, true); // type: icon
    v.setUint16(4, 1, true); // one image
    out[6] = 32; // width
    out[7] = 32; // height
    v.setUint16(10, 1, true); // colour planes
    v.setUint16(12, 32, true); // bits per pixel
    v.setUint32(14, png.length, true);
    v.setUint32(18, 22, true); // offset of the PNG
    out.set(png, 22);
    return out;
  })();
}
