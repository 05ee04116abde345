import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { CheveretoImageSchema } from "../schemas/chevereto.ts";
import type { ReceivedFile } from "../services/bodies/received.ts";
import type { ImageRecord } from "../services/images/records.ts";
import type { AppEnv } from "./env.ts";

/**
 * True when a request is Chevereto's: its key in X-API-Key (Chevereto V4's header), its
 * image in `source` (Chevereto's field), or `format=json` asked for (Chevereto's answer
 * type). Such a request's one-image answer also carries Chevereto's fields.
 */
export function cheveretoShaped(
  c: Context<AppEnv>,
  files: ReceivedFile[],
  format: string | undefined,
): boolean {
  return c.req.header("x-api-key") !== undefined ||
    files.some((f) => f.field === "source") || format === "json";
}

/** "YYYY-MM-DD HH:MM:SS" in UTC, as Chevereto writes its dates. */
function cheveretoDate(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(0, 19).replace(
    "T",
    " ",
  );
}

/** Chevereto V1.1's fields for one stored image, to go beside our envelope. */
export function cheveretoFields(rec: ImageRecord) {
  const date = cheveretoDate(rec.time);
  const file = (f: ImageRecord["thumb"]) => ({
    filename: f.filename,
    name: f.name,
    mime: f.mime,
    extension: f.extension,
    url: f.url,
  });
  const image: z.infer<typeof CheveretoImageSchema> = {
    name: rec.title.replace(/\.[^.]*$/, "") || rec.id,
    extension: rec.image.extension,
    filename: rec.image.filename,
    original_filename: rec.title,
    mime: rec.image.mime,
    size: rec.size,
    width: rec.width,
    height: rec.height,
    date,
    date_gmt: date,
    id_encoded: rec.id,
    url: rec.url,
    url_viewer: rec.url_viewer,
    display_url: rec.medium.url,
    thumb: file(rec.thumb),
    medium: file(rec.medium),
    delete_url: rec.delete_url,
    expiration: rec.expiration,
  };
  return { status_code: 200 as const, status_txt: "OK" as const, image };
}
