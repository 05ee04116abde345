import { TUS_PATH } from "../services/uploads/tus_path.ts";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../schemas/errors.ts";
import type { AppEnv } from "./env.ts";

/** Routes that stream their own body with their own bounds (uploads): never read whole. */
export const STREAMED_BODY_PATHS = new Set(["/api/1/upload"]);

/**
 * Every other body is read whole by its route (a screenshot's JSON, the site's forms, the
 * key check of a keyless JSON request): at most BODY_MAX_KB, else 413 before more is read.
 * Without it a keyless 200 MB JSON body to /api/1/screenshot was read in full (~1 s and
 * its size in memory) before the 401.
 */
export function wholeBodyLimit(maxKb: number): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxKb * 1024,
    onError: () => {
      throw new ApiError(413, {
        details: [{
          message:
            `a body of this kind may be at most ${maxKb} KB (BODY_MAX_KB)`,
        }],
      });
    },
  });
  return async (c, next) => {
    if (c.req.method === "POST" && STREAMED_BODY_PATHS.has(c.req.path)) {
      return await next();
    }
    // A resumable upload's chunks are streamed to its parts by tus, within its bounds.
    if (c.req.path.startsWith(TUS_PATH)) return await next();
    return await limit(c, next);
  };
}
