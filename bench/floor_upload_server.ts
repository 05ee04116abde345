/**
 * Reference for the upload benchmark, not its baseline: the least any server can do and
 * still keep the contract that an acknowledged upload is a sound image safely on disk.
 * It writes the file, fsyncs it and fully decodes it once into one variant, as the
 * service does (shrink-on-load to 1024 px, or to 320 px when the image is no larger than
 * 1024). No auth, database, type sniffing, metadata strip or second variant. The
 * service's distance to this floor is the part of the gap that is ours; the floor's
 * distance to the bare baseline is the contract's.
 */
import sharp from "sharp";
import { receivingDir, serveOnPort } from "./lib.ts";
import { writeAll } from "../services/runtime/file_io.ts";

sharp.cache(false);
const dir = await receivingDir("imagehost-floor-");
serveOnPort(async (req) => {
  if (req.method !== "POST") return new Response("ok");
  const file = (await req.formData()).get("images");
  if (!(file instanceof File)) return new Response("no file", { status: 400 });
  const path = `${dir}/${crypto.randomUUID()}`;
  const f = await Deno.open(path, { write: true, createNew: true });
  try {
    await writeAll(f, new Uint8Array(await file.arrayBuffer()));
    await f.syncData();
  } finally {
    f.close();
  }
  try {
    const { width = 0, height = 0 } = await sharp(path).metadata();
    const size = Math.max(width, height) > 1024 ? 1024 : 320;
    await sharp(path, { failOn: "error" }).rotate()
      .resize(size, size, { fit: "inside", withoutEnlargement: true })
      .jpeg({ quality: 85 }).toFile(`${path}.v.jpg`);
  } catch {
    return Response.json({ success: false }, { status: 400 });
  }
  return Response.json({ status: 200, success: true, data: { path } });
});
