/**
 * image-uploader-widget: the browser SDK of the image service.
 * @module
 */
export { ServiceApp, setScriptOrigin } from "./service_app.ts";
export type { ServiceAppOptions } from "./service_app.ts";
export type {
  ImageFile,
  ImageRecord,
  MultiUploadResponse,
  Uploader,
  UploadFileError,
  UploadOptions,
  UploadResponse,
} from "./types.ts";
export { ACCEPTED_TYPES, createUploadWidget } from "./widget.ts";
export type { UploadWidget, WidgetOptions } from "./widget.ts";
export { ERROR_CODES, ServiceError } from "./errors.ts";
export { createApiClient } from "./client.ts";
export {
  bbcodeEmbed,
  embedCodes,
  htmlEmbed,
  markdownEmbed,
  markdownImage,
} from "./embed_codes.ts";
export type { EmbeddableImage } from "./embed_codes.ts";
export type {
  ApiClient,
  ApiClientOptions,
  DeleteResult,
  ImageListResult,
  ImageResult,
  PresetsResult,
  Schemas,
  ScreenshotRequest,
  ScreenshotResult,
  UploadResult,
} from "./client.ts";
