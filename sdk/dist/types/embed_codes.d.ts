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
    thumb?: {
        url: string;
    };
    medium?: {
        url: string;
    };
    /** With the widths transform URLs take, a responsive HTML code is offered too. */
    width?: number;
    height?: number;
    image?: {
        extension: string;
    };
}
/**
 * A srcset of transform URLs (`?w=<w>&format=<type>`) over `widths` below the image's own
 * width, then the image's own width; without `format`, the original's type. Made on
 * `transform_url` where the record has one: `url` may point at a bucket (S3_PUBLIC_URL),
 * which ignores the parameters and sends the whole original for every width.
 */
export declare function srcsetOf(image: {
    url: string;
    transform_url?: string;
    width: number;
}, widths: readonly number[], format?: string): string;
/** Whether a type may hold an animation: it then gets no AVIF source (a first frame). */
export declare function mayAnimate(extension: string): boolean;
/**
 * A linked `<picture>`: AVIF and WebP sources and the original type, each a srcset of
 * transform URLs over `widths`, lazily loaded, at most 640 CSS px wide unless the page
 * styles it otherwise.
 */
export declare function responsiveEmbed(img: EmbeddableImage & {
    width: number;
    height: number;
}, widths: readonly number[]): string;
/** Escapes text for an HTML attribute value in double quotes (and for text content). */
export declare function escapeHtml(s: string): string;
/**
 * An address safe in every embed syntax: only http(s) is kept (anything else becomes
 * `about:blank`), and characters that close a Markdown destination, a BBCode tag or an
 * attribute are percent-encoded.
 */
export declare function safeUrl(u: string): string;
/**
 * Markdown link or image text: the marks that could end the text, open a link, code span,
 * autolink, raw HTML, entity or emphasis are backslash-escaped; others stay readable.
 */
export declare function escapeMarkdownText(s: string): string;
/** HTML `<a><img></a>` with the title as alt text. */
export declare function htmlEmbed(img: EmbeddableImage): string;
/** BBCode `[url][img][/url]` as forums expect. */
export declare function bbcodeEmbed(img: EmbeddableImage): string;
/** Markdown image linking to the viewer page. */
export declare function markdownEmbed(img: EmbeddableImage): string;
/** Markdown image alone (no link). */
export declare function markdownImage(img: EmbeddableImage): string;
/**
 * The codes a viewer page offers, in order, by label: the full image, with `widths` a
 * responsive one, then (as Chevereto does) the medium and the thumbnail, each linked to
 * the viewer page, when they exist.
 */
export declare function embedCodes(img: EmbeddableImage, widths?: readonly number[]): Record<string, string>;
