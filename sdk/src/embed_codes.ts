/**
 * Copyable embed codes for an image: the one implementation, used by the viewer page (the
 * server imports this file) and by the widget. Each code escapes for its own syntax, so a
 * hostile title or address can never break out of its place (an HTML attribute, a
 * Markdown link text or destination, a BBCode tag).
 */

/** What an embed code needs of an image record. */
export interface EmbeddableImage {
  title: string;
  url: string;
  /** Where transform URLs are made (the service's; `url` may be a bucket's). */
  transform_url?: string;
  url_viewer: string;
  /** Smaller variants; when given (and not the original itself) they get linked embeds. */
  thumb?: { url: string };
  medium?: { url: string };
  /** With the widths transform URLs take, a responsive HTML code is offered too. */
  width?: number;
  height?: number;
  image?: { extension: string };
}

/**
 * A srcset of transform URLs (`?w=<w>&format=<type>`) over `widths` below the image's own
 * width, then the image's own width; without `format`, the original's type. Made on
 * `transform_url` where the record has one: `url` may point at a bucket (S3_PUBLIC_URL),
 * which ignores the parameters and sends the whole original for every width.
 */
export function srcsetOf(
  image: { url: string; transform_url?: string; width: number },
  widths: readonly number[],
  format?: string,
): string {
  const img = { url: image.transform_url ?? image.url, width: image.width };
  const type = format ? `format=${format}` : "";
  const below = [...new Set(widths)].filter((w) => w < img.width).sort((a, b) =>
    a - b
  );
  // A URL may carry a query already (a password image's signed `access`).
  const q = img.url.includes("?") ? "&" : "?";
  const entries = below.map((w) =>
    `${img.url}${q}w=${w}${type ? `&${type}` : ""} ${w}w`
  );
  entries.push(`${type ? `${img.url}${q}${type}` : img.url} ${img.width}w`);
  return entries.join(", ");
}

/** Whether a type may hold an animation: it then gets no AVIF source (a first frame). */
export function mayAnimate(extension: string): boolean {
  return extension === "gif" || extension === "webp";
}

/**
 * A linked `<picture>`: AVIF and WebP sources and the original type, each a srcset of
 * transform URLs over `widths`, lazily loaded, at most 640 CSS px wide unless the page
 * styles it otherwise.
 */
export function responsiveEmbed(
  img: EmbeddableImage & { width: number; height: number },
  widths: readonly number[],
): string {
  const url = safeUrl(img.url);
  const at = { url: safeUrl(img.transform_url ?? img.url), width: img.width };
  const ext = img.image?.extension ?? "";
  const sizes = `(max-width: 640px) 100vw, 640px`;
  const source = (type: string, format: string) =>
    `<source type="${type}" srcset="${
      escapeHtml(srcsetOf(at, widths, format))
    }" sizes="${sizes}" />`;
  return `<a href="${escapeHtml(safeUrl(img.url_viewer))}"><picture>${
    mayAnimate(ext) ? "" : source("image/avif", "avif")
  }${ext === "webp" ? "" : source("image/webp", "webp")}<img src="${
    escapeHtml(url)
  }" srcset="${escapeHtml(srcsetOf(at, widths))}" sizes="${sizes}" width="${
    Math.round(img.width)
  }" height="${Math.round(img.height)}" alt="${
    escapeHtml(oneLine(img.title))
  }" loading="lazy" /></picture></a>`;
}

/** A title on one line: an embed code is pasted as one line, and line breaks mean nothing in alt text. */
function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, " ");
}

/** Escapes text for an HTML attribute value in double quotes (and for text content). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * An address safe in every embed syntax: only http(s) is kept (anything else becomes
 * `about:blank`), and characters that close a Markdown destination, a BBCode tag or an
 * attribute are percent-encoded.
 */
export function safeUrl(u: string): string {
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return "about:blank";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return "about:blank";
  }
  return parsed.href.replace(
    /[\s()<>[\]"'`\\]/g,
    (ch) => "%" + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"),
  );
}

/**
 * Markdown link or image text: the marks that could end the text, open a link, code span,
 * autolink, raw HTML, entity or emphasis are backslash-escaped; others stay readable.
 */
export function escapeMarkdownText(s: string): string {
  return oneLine(s).replace(
    /[\\`*_[\]()<>&!]/g,
    (ch) => `\\${ch}`,
  );
}

/** HTML `<a><img></a>` with the title as alt text. */
export function htmlEmbed(img: EmbeddableImage): string {
  return `<a href="${escapeHtml(safeUrl(img.url_viewer))}"><img src="${
    escapeHtml(safeUrl(img.url))
  }" alt="${escapeHtml(oneLine(img.title))}" /></a>`;
}

/** BBCode `[url][img][/url]` as forums expect. */
export function bbcodeEmbed(img: EmbeddableImage): string {
  return `[url=${safeUrl(img.url_viewer)}][img]${safeUrl(img.url)}[/img][/url]`;
}

/** Markdown image linking to the viewer page. */
export function markdownEmbed(img: EmbeddableImage): string {
  return `[![${escapeMarkdownText(img.title)}](${safeUrl(img.url)})](${
    safeUrl(img.url_viewer)
  })`;
}

/** Markdown image alone (no link). */
export function markdownImage(img: EmbeddableImage): string {
  return `![${escapeMarkdownText(img.title)}](${safeUrl(img.url)})`;
}

/**
 * The codes a viewer page offers, in order, by label: the full image, with `widths` a
 * responsive one, then (as Chevereto does) the medium and the thumbnail, each linked to
 * the viewer page, when they exist.
 */
export function embedCodes(
  img: EmbeddableImage,
  widths?: readonly number[],
): Record<string, string> {
  const codes: Record<string, string> = {
    "Direct link": img.url,
    "Viewer link": img.url_viewer,
    "HTML": htmlEmbed(img),
    "BBCode": bbcodeEmbed(img),
    "Markdown": markdownEmbed(img),
  };
  if (widths && img.width && img.height) {
    codes["HTML (responsive: AVIF, WebP, sizes)"] = responsiveEmbed(
      { ...img, width: img.width, height: img.height },
      widths,
    );
  }
  const variants: [string, { url: string } | undefined][] = [
    ["medium", img.medium],
    ["thumbnail", img.thumb],
  ];
  for (const [name, variant] of variants) {
    if (!variant || variant.url === img.url) continue;
    const small = { ...img, url: variant.url };
    codes[`HTML (${name}, linked)`] = htmlEmbed(small);
    codes[`BBCode (${name}, linked)`] = bbcodeEmbed(small);
    codes[`Markdown (${name}, linked)`] = markdownEmbed(small);
  }
  return codes;
}
