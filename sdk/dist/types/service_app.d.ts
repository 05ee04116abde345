import { type UploadWidget, type WidgetOptions } from "./widget.js";
/** One stored file of a record (original, thumbnail or medium). */
export interface ImageFile {
    filename: string;
    name: string;
    mime: string;
    extension: string;
    url: string;
}
/** The image record of a stored upload. */
export interface ImageRecord {
    /** Tells a record from a batch answer (`"batch"`). */
    kind: "image";
    id: string;
    title: string;
    url_viewer: string;
    url: string;
    display_url: string;
    width: number;
    height: number;
    size: number;
    time: number;
    expiration: number;
    image: ImageFile;
    thumb: ImageFile;
    medium: ImageFile;
    delete_url: string;
    duplicate?: boolean;
}
/** A file of a multi-file upload that failed. */
export interface UploadFileError {
    index: number;
    filename: string;
    code: number;
    message: string;
}
/** What upload() resolves to: the envelope, plus `url` of the stored image at the top. */
export interface UploadResponse {
    status: 200;
    success: true;
    data: ImageRecord;
    url: string;
}
/** What uploadMultiple() resolves to. */
export interface MultiUploadResponse {
    status: 200;
    success: true;
    data: {
        kind: "batch";
        images: ImageRecord[];
        count: number;
        errors?: UploadFileError[];
    };
}
/** Per-call options. */
export interface UploadOptions {
    /** Called with 0..100 as the bytes go out. */
    onProgress?: (percent: number) => void;
    /**
     * Called with each file's own 0..100 as the request goes out (files are sent in order
     * in one request, so each one's share of the bytes sent is known).
     */
    onFileProgress?: (index: number, percent: number) => void;
    /** Abort the upload; the promise then rejects with code -1. */
    signal?: AbortSignal;
    /** Seconds until the image is deleted (60..15552000). */
    expiration?: number;
}
/** Constructor options. */
export interface ServiceAppOptions {
    /** Service address; defaults to where the script was loaded from, else the page origin. */
    baseUrl?: string;
}
/** Records the origin of the script tag that loaded the browser build. */
export declare function setScriptOrigin(origin: string | undefined): void;
/** The browser client of the image service (SPEC.md 4.3). */
export declare class ServiceApp {
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
        signal?: AbortSignal;
    }): Promise<MultiUploadResponse>;
    /** Uploads one file; resolves to the envelope with `url` at the top level. */
    upload(file: Blob, options?: UploadOptions): Promise<UploadResponse>;
    /** Uploads several files in one request; resolves to the multi-file envelope. */
    uploadMultiple(files: Iterable<Blob> | ArrayLike<Blob>, options?: UploadOptions): Promise<MultiUploadResponse>;
    /** Opens an upload widget (a dialog, or inline in `options.container`). */
    createUploadWidget(options?: WidgetOptions): UploadWidget;
}
