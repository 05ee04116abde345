/** Controls of a resumable upload in progress (UploadOptions.onResumable). */
export interface ResumableControls {
    /** Stops sending; what arrived stays on the server. */
    pause(): void;
    /** Goes on from the server's offset. */
    resume(): void;
}
/** What a resumable send needs. */
export interface ResumableSend {
    endpoint: string;
    auth: [string, string];
    file: Blob;
    expiration?: number;
    album?: string;
    privacy?: string;
    password?: string;
    onProgress(percent: number): void;
    onResumable?: (controls: ResumableControls) => void;
    signal?: AbortSignal;
}
/**
 * Sends one file on the tus protocol to /api/1/tus/ (tus-js-client): a cut connection is
 * retried from the server's offset, and the upload survives a page reload (the client's
 * fingerprint store in localStorage: the same file picked again goes on from where it
 * stopped). Resolves to the envelope the last chunk answers (the image record).
 */
export declare function sendResumable(s: ResumableSend): Promise<{
    status: 200;
    success: true;
    data: unknown;
}>;
