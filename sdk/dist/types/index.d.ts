/**
 * image-uploader-widget: the browser SDK of the image service.
 * @module
 */
export { ServiceApp, setScriptOrigin } from "./service_app.js";
export type { ServiceAppOptions } from "./service_app.js";
export type { ImageFile, ImageRecord, MultiUploadResponse, Uploader, UploadFileError, UploadOptions, UploadResponse, } from "./types.js";
export { ACCEPTED_TYPES, createUploadWidget } from "./widget.js";
export type { UploadWidget, WidgetOptions } from "./widget.js";
export { ERROR_CODES, ServiceError } from "./errors.js";
export { createApiClient } from "./client.js";
export { bbcodeEmbed, embedCodes, htmlEmbed, markdownEmbed, markdownImage, } from "./embed_codes.js";
export type { EmbeddableImage } from "./embed_codes.js";
export type { ApiClient, ApiClientOptions, DeleteResult, ImageListResult, ImageResult, PresetsResult, Schemas, ScreenshotRequest, ScreenshotResult, UploadResult, } from "./client.js";
