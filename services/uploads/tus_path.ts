import type { Config } from "../../schemas/config.ts";

/**
 * Where the tus endpoint answers (creation by POST here, each upload under it); its own
 * module, so the routes that only need the path do not load the tus server at start.
 */
export const TUS_PATH = "/api/1/tus";

/** Ids of resumable uploads: distinct from image keys, which the orphan sweep owns. */
export const TUS_ID_PREFIX = "tus-";

/**
 * The largest resumable upload this process can take, and the setting that bounds it:
 * TUS_MAX_FILE_BYTES, or with memory scratch (Deno Deploy) MEMORY_REQUEST_MB when that is
 * smaller, since a finished upload is read into the request's memory for the pipeline.
 * Refused at creation past it: a 200 MB file used to be sent whole into the bucket and
 * only then refused (130) at its last chunk.
 */
export function resumableLimit(
  config: Pick<
    Config,
    "TUS_MAX_FILE_BYTES" | "SCRATCH" | "MEMORY_REQUEST_MB"
  >,
): { bytes: number; setting: string } {
  const memory = config.MEMORY_REQUEST_MB * 1024 * 1024;
  return config.SCRATCH === "memory" && memory < config.TUS_MAX_FILE_BYTES
    ? { bytes: memory, setting: "MEMORY_REQUEST_MB" }
    : { bytes: config.TUS_MAX_FILE_BYTES, setting: "TUS_MAX_FILE_BYTES" };
}
