/** Baseline for the upload benchmark: a bare Deno.serve that streams the body to disk. */
const dir = await Deno.makeTempDir({ prefix: "imagehost-baseline-" });
const port = Number(Deno.env.get("PORT"));
// The benchmark stops us with SIGTERM; take the received files with us.
Deno.addSignalListener("SIGTERM", () => {
  Deno.removeSync(dir, { recursive: true });
  Deno.exit(0);
});
Deno.serve({ port, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
  if (req.method !== "POST" || !req.body) return new Response("ok");
  const path = `${dir}/${crypto.randomUUID()}`;
  const f = await Deno.open(path, { write: true, createNew: true });
  await req.body.pipeTo(f.writable);
  return Response.json({ status: 200, success: true, data: { path } });
});
