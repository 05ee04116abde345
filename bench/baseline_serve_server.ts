/**
 * Reference for the serve benchmark: a bare Deno.serve answering one file from memory with
 * the same headers and ETag logic — the ceiling of the runtime, without our app around it.
 * With ACCEL set it answers every GET as IMAGE_SERVE=proxy does, with headers only and
 * `X-Accel-Redirect: <ACCEL>`: behind nginx, the ceiling of the deploy path.
 */
const bytes = await Deno.readFile(Deno.env.get("FILE")!);
const accel = Deno.env.get("ACCEL");
const etag = `"bare"`;
Deno.serve({
  port: Number(Deno.env.get("PORT")),
  hostname: "127.0.0.1",
  onListen: () => {},
}, (req) => {
  const headers: Record<string, string> = {
    "content-type": "image/jpeg",
    "etag": etag,
    "cache-control": "public, max-age=31536000, immutable",
  };
  if (req.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers });
  }
  if (accel) {
    headers["x-accel-redirect"] = accel;
    return new Response(null, { headers });
  }
  return new Response(bytes, { headers });
});
