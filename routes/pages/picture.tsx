import { mayAnimate, srcsetOf } from "../../sdk/src/embed_codes.ts";

/**
 * Responsive images from transform URLs (services/images/transforms.ts): a <picture> with
 * AVIF and WebP sources and the original type as the fallback, each a srcset over the
 * configured widths below the original's, so a browser fetches the type it takes at the
 * width its layout needs. Explicit types, not format=auto: a shared cache or CDN then needs
 * no Vary on Accept.
 */

/** What the element needs of an image. */
export interface PictureImage {
  url: string;
  /** Where its transform URLs are made (see srcsetOf). */
  transform_url?: string;
  title: string;
  width: number;
  height: number;
  extension: string;
}

/** The picture fields of an image record. */
export function pictureOf(
  rec: {
    url: string;
    transform_url?: string;
    title: string;
    width: number;
    height: number;
    image: { extension: string };
  },
): PictureImage {
  return {
    url: rec.url,
    transform_url: rec.transform_url,
    title: rec.title,
    width: rec.width,
    height: rec.height,
    extension: rec.image.extension,
  };
}

/** A width and height of at most `max` on the long side, keeping the aspect ratio. */
export function fitWithin(width: number, height: number, max: number) {
  const scale = Math.min(1, max / Math.max(width, height));
  return {
    width: Math.max(1, Math.round(width * scale)),
    height: Math.max(1, Math.round(height * scale)),
  };
}

/**
 * `<picture>` for `img`, shown at most `maxWidth` CSS px wide (`sizes`). An image that may
 * be animated (GIF, WebP) gets no AVIF source: an AVIF of it would be its first frame.
 */
export function Picture(
  props: {
    img: PictureImage;
    widths: readonly number[];
    sizes: string;
    shown: { width: number; height: number };
    /** What a browser without srcset loads (default: the original). */
    src?: string;
    loading?: "lazy" | "eager";
  },
) {
  const { img, widths } = props;
  const animated = mayAnimate(img.extension);
  return (
    <picture>
      {!animated && (
        <source
          type="image/avif"
          srcset={srcsetOf(img, widths, "avif")}
          sizes={props.sizes}
        />
      )}
      {img.extension !== "webp" && (
        <source
          type="image/webp"
          srcset={srcsetOf(img, widths, "webp")}
          sizes={props.sizes}
        />
      )}
      <img
        src={props.src ?? img.url}
        srcset={srcsetOf(img, widths)}
        sizes={props.sizes}
        alt={img.title}
        width={props.shown.width}
        height={props.shown.height}
        loading={props.loading}
      />
    </picture>
  );
}

/**
 * An image as a grid card shows it (My images, an album's page): its `<picture>` at most
 * the grid's 240 px column (half the screen on a phone), linked to its viewer page, the
 * thumbnail for browsers without srcset, loaded when scrolled near.
 */
export function CardPicture(
  props: {
    rec: Parameters<typeof pictureOf>[0] & {
      url_viewer: string;
      thumb: { url: string };
    };
    widths: readonly number[];
  },
) {
  const { rec } = props;
  return (
    <a href={rec.url_viewer}>
      <Picture
        img={pictureOf(rec)}
        widths={props.widths}
        sizes="(max-width: 600px) 50vw, 240px"
        shown={fitWithin(rec.width, rec.height, 320)}
        src={rec.thumb.url}
        loading="lazy"
      />
    </a>
  );
}
