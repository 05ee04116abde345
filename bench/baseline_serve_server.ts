/**
 * Reference for the serve benchmark: a bare Deno.serve answering one file from memory with
 * the same headers and ETag logic — the ceiling of the runtime, without our app around it.
 */
const bytes = await Deno.readFile(Deno.env.get("FILE")!);
const etag = `"bare"`;
Deno.serve({
  port: Number(Deno.env.get("PORT")),
  hostname: "127.0.0.1",
  onListen: () => {},
}, (req) => {
  const headers = {
    "content-type": "image/jpeg",
    "etag": etag,
    "cache-control": "public, max-age=31536000, immutable",
  };
  if (req.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(bytes, { headers });
});
