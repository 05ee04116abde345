/**
 * The shapes the browser client and the widget share: records, upload answers and
 * options, and `Uploader`, what the widget needs of a client. A leaf, so the client can
 * make widgets and the widget can drive the client without importing each other.
 */
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
    /**
     * The image where transform parameters (`?w=&format=`) are read: the service's, also
     * where `url` points at a bucket.
     */
    transform_url: string;
    width: number;
    height: number;
    size: number;
    time: number;
    expiration: number;
    image: ImageFile;
    thumb: ImageFile;
    medium: ImageFile;
    delete_url: string;
    /** Who may see it: a private or password image's files answer only its owner. */
    privacy: "public" | "unlisted" | "private" | "password";
    /** The album it is in, if any. */
    album_id: string | null;
    description: string;
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
    /** The id of one of your albums to put the images in. */
    album?: string;
    /**
     * Who may see the images, from their first moment: public (default), unlisted,
     * private, or password with `password`.
     */
    privacy?: ImageRecord["privacy"];
    /** The password of `privacy: "password"` (4–128 characters). */
    password?: string;
    /**
     * Files larger than this many MB go resumable (tus, /api/1/tus/): a cut connection
     * goes on from what arrived, and the same file picked again after a reload too.
     * Default 8; 0 sends every file in one request.
     */
    resumableFromMB?: number;
    /** A resumable upload's pause and resume, given as it starts. */
    onResumable?: (controls: {
        pause(): void;
        resume(): void;
    }) => void;
}
/** What the upload widget needs of a client (ServiceApp is one). */
export interface Uploader {
    /** Uploads one file. */
    upload(file: Blob, options?: UploadOptions): Promise<UploadResponse>;
    /** Uploads several files in one request. */
    uploadMultiple(files: Iterable<Blob> | ArrayLike<Blob>, options?: UploadOptions): Promise<MultiUploadResponse>;
    /** Has the service fetch and store images from their addresses. */
    importUrls(urls: string[], options?: Pick<UploadOptions, "expiration" | "album" | "privacy" | "signal">): Promise<MultiUploadResponse>;
}
