/**
 * Where the tus endpoint answers (creation by POST here, each upload under it); its own
 * module, so the routes that only need the path do not load the tus server at start.
 */
export const TUS_PATH = "/api/1/tus";

/** Ids of resumable uploads: distinct from image keys, which the orphan sweep owns. */
export const TUS_ID_PREFIX = "tus-";
