import { type UploadWidget, type WidgetOptions } from "./widget.js";
import type { MultiUploadResponse, Uploader, UploadOptions, UploadResponse } from "./types.js";
/** Constructor options. */
export interface ServiceAppOptions {
    /** Service address; defaults to where the script was loaded from, else the page origin. */
    baseUrl?: string;
}
/** Records the origin of the script tag that loaded the browser build. */
export declare function setScriptOrigin(origin: string | undefined): void;
/** The browser client of the image service (SPEC.md 4.3). */
export declare class ServiceApp implements Uploader {
    #private;
    readonly apiKey: string;
    readonly baseUrl: string;
    constructor(apiKey: string, options?: ServiceAppOptions);
    /**
     * A client for the service's own pages: calls carry the signed-in session's cookie and
     * its form token (X-CSRF-Token) instead of an API key, so no key ever sits in a page.
     * The service accepts them from its own origin only.
     */
    static forSession(csrfToken: string, options?: ServiceAppOptions): ServiceApp;
    /**
     * Has the service download images from web addresses (public http(s) only) and store
     * them as if uploaded; resolves to the multi-file envelope, per-address errors included.
     */
    importUrls(urls: string[], options?: {
        expiration?: number;
        album?: string;
        privacy?: UploadOptions["privacy"];
        signal?: AbortSignal;
    }): Promise<MultiUploadResponse>;
    /**
     * Uploads one file; resolves to the envelope with `url` at the top level. A file over
     * `resumableFromMB` (8) goes resumable (tus): pause and resume it through
     * `onResumable`; a cut connection or a reload does not start it again from zero.
     */
    upload(file: Blob, options?: UploadOptions): Promise<UploadResponse>;
    /** Uploads several files in one request; resolves to the multi-file envelope. */
    uploadMultiple(files: Iterable<Blob> | ArrayLike<Blob>, options?: UploadOptions): Promise<MultiUploadResponse>;
    /** Opens an upload widget (a dialog, or inline in `options.container`). */
    createUploadWidget(options?: WidgetOptions): UploadWidget;
}
