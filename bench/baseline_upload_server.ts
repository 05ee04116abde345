/** Baseline for the upload benchmark: a bare Deno.serve that streams the body to disk. */
import { receivingDir, serveOnPort } from "./lib.ts";

const dir = await receivingDir("imagehost-baseline-");
serveOnPort(async (req) => {
  if (req.method !== "POST" || !req.body) return new Response("ok");
  const path = `${dir}/${crypto.randomUUID()}`;
  const f = await Deno.open(path, { write: true, createNew: true });
  await req.body.pipeTo(f.writable);
  return Response.json({ status: 200, success: true, data: { path } });
});
