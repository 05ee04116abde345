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
    url_viewer: string;
    /** Smaller variants; when given (and not the original itself) they get linked embeds. */
    thumb?: {
        url: string;
    };
    medium?: {
        url: string;
    };
}
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
 * The codes a viewer page offers, in order, by label: the full image, then (as Chevereto
 * does) the medium and the thumbnail, each linked to the viewer page, when they exist.
 */
export declare function embedCodes(img: EmbeddableImage): Record<string, string>;
