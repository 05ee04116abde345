import type { MultiUploadResponse, Uploader, UploadResponse } from "./types.js";
import { ServiceError } from "./errors.js";
/** Options of createUploadWidget (SPEC.md 4.3 plus a few of our own). */
export interface WidgetOptions {
    /** Allow selecting several files. */
    multiple?: boolean;
    onStart?: (files: File[]) => void;
    onProgress?: (percent: number) => void;
    onSuccess?: (response: UploadResponse | MultiUploadResponse, files: File[]) => void;
    onError?: (error: ServiceError, files: File[]) => void;
    /** Render inline inside this element instead of as a dialog. */
    container?: HTMLElement;
    /** Checked before sending; defaults match the service's. */
    maxFileSize?: number;
    /**
     * Files over this many MB go resumable (tus), each on its own, with a Pause / Resume
     * button on its row; their limit is `maxResumableFileSize`. Default 8; 0: never.
     */
    resumableFromMB?: number;
    /** The largest file sent resumable (the service's TUS_MAX_FILE_BYTES; 200 MB). */
    maxResumableFileSize?: number;
    maxFiles?: number;
    accept?: string[];
    title?: string;
    /** Seconds until uploads are deleted (fixed; see `expirationChoices` to let people pick). */
    expiration?: number;
    /** Show a "Delete after" picker (never, 1 hour … 6 months); starts at `expiration`. */
    expirationChoices?: boolean;
    /** Offer a field for image addresses the service downloads (one per line). */
    urlImport?: boolean;
    /**
     * The longest lifetime the picker offers (seconds); "Never" then goes, and the picker
     * starts at the longest it offers. For guests, whose uploads must expire.
     */
    maxExpiration?: number;
    /**
     * Show an "Album" picker of these albums (yours: id and title); uploads and imports go
     * into the one picked. The first choice is no album.
     */
    albums?: {
        id: string;
        title: string;
    }[];
    /**
     * Show a "Who can see it" picker (public, unlisted, private): uploads and imports are
     * stored so from their first moment. For signed-in people on the image host's pages.
     */
    privacyChoices?: boolean;
    /**
     * Show each upload's delete link (and offer "Delete links" in the codes box): for
     * guests, whose only handle on an upload it is.
     */
    deleteLinks?: boolean;
    /**
     * The widget runs on the image host's own pages with the session: a private or password
     * image's preview is fetched from this page's origin, where the session cookie goes,
     * whatever address BASE_URL or IMAGE_HOST_URL give its links.
     */
    sameOrigin?: boolean;
}
/** The lifetimes the picker offers, in seconds (0: kept for good). */
export declare const EXPIRATION_CHOICES: [number, string][];
/** Handle of an open widget. */
export interface UploadWidget {
    open(): void;
    close(): void;
    destroy(): void;
    /** The host element (its shadow root holds the widget). */
    readonly element: HTMLElement;
}
/** Types the service accepts (checked again, from the bytes, on the server). */
export declare const ACCEPTED_TYPES: string[];
/**
 * Builds the upload widget in a Shadow DOM, so page styles can't reach in and ours can't
 * leak out. Drop, paste and the file picker all feed the same checks and upload.
 */
export declare function createUploadWidget(app: Uploader, options?: WidgetOptions): UploadWidget;
