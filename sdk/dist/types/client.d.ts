import type { components, operations } from "./api_types.js";
type Json<T> = T extends {
    content: {
        "application/json": infer B;
    };
} ? B : never;
type Ok<Op extends keyof operations> = operations[Op]["responses"] extends {
    200: infer R;
} ? Json<R> : never;
type Accepted<Op extends keyof operations> = operations[Op]["responses"] extends {
    202: infer R;
} ? Json<R> : never;
/** Response envelopes of each operation, as openapi.yaml declares them. */
export type UploadResult = Ok<"postUpload">;
export type ImageResult = Ok<"getImage">;
export type ImageListResult = Ok<"listImages">;
export type DeleteResult = Ok<"deleteImage">;
export type AlbumResult = Ok<"getAlbum">;
export type AlbumListResult = Ok<"listAlbums">;
export type AlbumImagesResult = Ok<"listAlbumImages">;
/** Request body of PATCH /api/1/images/{id}. */
export type ImagePatch = Schemas["ImagePatch"];
/** Request bodies of POST /api/1/albums and PATCH /api/1/albums/{id}. */
export type AlbumCreate = Schemas["AlbumCreate"];
export type AlbumPatch = Schemas["AlbumPatch"];
export type ScreenshotResult = Ok<"postScreenshot">;
export type PresetsResult = Ok<"getPresets">;
/** An asynchronous capture's 202 (`data.job`). */
export type ScreenshotJobAccepted = Accepted<"postScreenshot">;
export type ScreenshotJobResult = Ok<"getScreenshotJob">;
export type ScreenshotJobListResult = Ok<"listScreenshotJobs">;
export type ScreenshotBatchAccepted = Accepted<"postScreenshotBatch">;
export type ScreenshotBatchResult = Ok<"getScreenshotBatch">;
export type WebhookAccountResult = Ok<"getWebhookAccount">;
export type ScheduleResult = Ok<"getScreenshotSchedule">;
export type ScheduleListResult = Ok<"listScreenshotSchedules">;
/** Request body of POST /api/1/screenshot/schedules. */
export type ScheduleCreate = Schemas["ScheduleCreate"];
/** One asynchronous capture, as the jobs' routes answer it. */
export type ScreenshotJob = Schemas["ScreenshotJob"];
/** Request body of POST /api/1/screenshot. */
export type ScreenshotRequest = NonNullable<operations["postScreenshot"]["requestBody"]>["content"]["application/json"];
/** Schemas of openapi.yaml, e.g. `Schemas["ImageRecord"]`. */
export type Schemas = components["schemas"];
/** Settings of the typed client. */
export interface ApiClientOptions {
    baseUrl: string;
    apiKey: string;
    /** A fetch to use (tests, Node without global fetch, retries…). */
    fetch?: typeof fetch;
}
/**
 * A thin typed client over fetch, its types generated from openapi.yaml
 * (`deno task sdk`). Failures throw ServiceError with the service's code.
 */
export declare function createApiClient(opts: ApiClientOptions): {
    /**
     * POST /api/1/upload with one or more files. Sent once more if the first try got no
     * answer at all (see `call`): the service answers the same bytes with the same image.
     */
    upload(files: Blob[] | Blob, options?: {
        expiration?: number;
        albumId?: string;
        /** Who may see them from their first moment (public without). */
        privacy?: components["schemas"]["ImageRecord"]["privacy"];
        /** With privacy "password": its password (4–128 characters). */
        password?: string;
    }): Promise<UploadResult>;
    /**
     * POST /api/1/upload with image addresses: the service downloads each one (public
     * http(s) only) and stores it as if uploaded.
     */
    importUrls(urls: string[] | string, options?: {
        expiration?: number;
        title?: string;
    }): Promise<UploadResult>;
    /**
     * GET /api/1/images: a page of your images, newest first, or found by title words,
     * sorted by size or name, narrowed by album (`none`: in no album) or type.
     */
    listImages(options?: {
        page?: number;
        perPage?: number;
        source?: "upload" | "screenshot";
        q?: string;
        sort?: "date" | "size" | "name";
        order?: "asc" | "desc";
        album?: string;
        type?: "jpg" | "png" | "gif" | "webp" | "avif" | "bmp" | "tiff";
    }): Promise<ImageListResult>;
    /** PATCH /api/1/images/{id}: title, description, album, expiration. */
    updateImage(id: string, patch: ImagePatch): Promise<ImageResult>;
    /** POST /api/1/albums. */
    createAlbum(album: AlbumCreate): Promise<AlbumResult>;
    /** GET /api/1/albums: yours, by position, then newest first. */
    listAlbums(): Promise<AlbumListResult>;
    /** GET /api/1/albums/{id}. */
    getAlbum(id: string): Promise<AlbumResult>;
    /** PATCH /api/1/albums/{id}. */
    updateAlbum(id: string, patch: AlbumPatch): Promise<AlbumResult>;
    /** DELETE /api/1/albums/{id}; `withImages` deletes its images too. */
    deleteAlbum(id: string, options?: {
        withImages?: boolean;
    }): Promise<DeleteResult>;
    /** GET /api/1/albums/{id}/images: a page of an album's images, newest first. */
    listAlbumImages(id: string, options?: {
        page?: number;
        perPage?: number;
    }): Promise<AlbumImagesResult>;
    /** GET /api/1/images/{id}. */
    getImage(id: string): Promise<ImageResult>;
    /** DELETE /api/1/images/{id}. */
    deleteImage(id: string): Promise<DeleteResult>;
    /** POST /api/1/screenshot. */
    screenshot(request: ScreenshotRequest): Promise<ScreenshotResult>;
    /**
     * POST /api/1/screenshot/file: the capture's bytes (PNG, JPEG, WebP or PDF as
     * `format` asks), nothing stored.
     */
    screenshotFile(request: Omit<ScreenshotRequest, "share" | "response">): Promise<Blob>;
    /** GET /api/1/screenshot/presets. */
    presets(): Promise<PresetsResult>;
    /**
     * POST /api/1/screenshot with `async: true`: answered at once (202) with the job;
     * follow it with getScreenshotJob or waitForScreenshotJob.
     */
    screenshotAsync(request: Omit<ScreenshotRequest, "async">): Promise<ScreenshotJobAccepted>;
    /** GET /api/1/screenshot/jobs/{id}. */
    getScreenshotJob(id: string): Promise<ScreenshotJobResult>;
    /** GET /api/1/screenshot/jobs: yours, newest first. */
    listScreenshotJobs(options?: {
        page?: number;
        perPage?: number;
        status?: string;
    }): Promise<ScreenshotJobListResult>;
    /** DELETE /api/1/screenshot/jobs/{id}: cancels a queued job, or stops a running one. */
    cancelScreenshotJob(id: string): Promise<ScreenshotJobResult>;
    /** POST /api/1/screenshot/batch: many captures queued at once (202). */
    screenshotBatch(requests: Omit<ScreenshotRequest, "async">[]): Promise<ScreenshotBatchAccepted>;
    /** GET /api/1/screenshot/batches/{id}: counts by status and every job. */
    getScreenshotBatch(id: string): Promise<ScreenshotBatchResult>;
    /**
     * DELETE /api/1/screenshot/batches/{id}: cancels every job of the batch still queued
     * or running; the batch as it is then.
     */
    cancelScreenshotBatch(id: string): Promise<ScreenshotBatchResult>;
    /**
     * Polls job `id` until it is done, failed or cancelled (every `intervalMs`, 1 s by
     * default), and resolves to it; rejects after `timeoutMs` (5 min by default).
     */
    waitForScreenshotJob(id: string, options?: {
        intervalMs?: number;
        timeoutMs?: number;
    }): Promise<ScreenshotJob>;
    /** POST /api/1/screenshot/schedules: a capture run on a cron expression. */
    createSchedule(schedule: ScheduleCreate): Promise<ScheduleResult>;
    /** GET /api/1/screenshot/schedules: yours, with their next runs. */
    listSchedules(): Promise<ScheduleListResult>;
    /** PATCH /api/1/screenshot/schedules/{id}: pause (true) or resume (false). */
    pauseSchedule(id: string, paused?: boolean): Promise<ScheduleResult>;
    /** DELETE /api/1/screenshot/schedules/{id}: no more runs (their images stay). */
    deleteSchedule(id: string): Promise<{
        status: 200;
        success: true;
    }>;
    /** POST /api/1/screenshot/schedules/{id}/run: one run now (202, its job). */
    runSchedule(id: string): Promise<ScreenshotJobAccepted>;
    /** GET /api/1/account/webhook: your webhook secret and its latest tries. */
    webhookAccount(): Promise<WebhookAccountResult>;
};
/** The typed client's type. */
export type ApiClient = ReturnType<typeof createApiClient>;
export {};
