import type { components, operations } from "./api_types.js";
type Json<T> = T extends {
    content: {
        "application/json": infer B;
    };
} ? B : never;
type Ok<Op extends keyof operations> = Json<operations[Op]["responses"][200]>;
/** Response envelopes of each operation, as openapi.yaml declares them. */
export type UploadResult = Ok<"postUpload">;
export type ImageResult = Ok<"getImage">;
export type ImageListResult = Ok<"listImages">;
export type DeleteResult = Ok<"deleteImage">;
export type ScreenshotResult = Ok<"postScreenshot">;
export type PresetsResult = Ok<"getPresets">;
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
    }): Promise<UploadResult>;
    /**
     * POST /api/1/upload with image addresses: the service downloads each one (public
     * http(s) only) and stores it as if uploaded.
     */
    importUrls(urls: string[] | string, options?: {
        expiration?: number;
        title?: string;
    }): Promise<UploadResult>;
    /** GET /api/1/images: a page of your images, newest first. */
    listImages(options?: {
        page?: number;
        perPage?: number;
        source?: "upload" | "screenshot";
    }): Promise<ImageListResult>;
    /** GET /api/1/images/{id}. */
    getImage(id: string): Promise<ImageResult>;
    /** DELETE /api/1/images/{id}. */
    deleteImage(id: string): Promise<DeleteResult>;
    /** POST /api/1/screenshot. */
    screenshot(request: ScreenshotRequest): Promise<ScreenshotResult>;
    /** GET /api/1/screenshot/presets. */
    presets(): Promise<PresetsResult>;
};
/** The typed client's type. */
export type ApiClient = ReturnType<typeof createApiClient>;
export {};
