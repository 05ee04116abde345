import assert from "node:assert/strict";
import { drainAndStop, Lifecycle } from "../server/lifecycle.ts";
import { json, test, testEnv, userWithKey, waitUntil } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";

/** A multipart upload whose body arrives in `parts` pieces, `gapMs` apart. */
async function trickledUpload(
  url: string,
  key: string,
  bytes: Uint8Array,
  parts: number,
  gapMs: number,
) {
  const form = new Response(formWith([{ name: "slow.png", bytes }]));
  const type = form.headers.get("content-type")!;
  const all = new Uint8Array(await form.arrayBuffer());
  const size = Math.ceil(all.length / parts);
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      for (let i = 0; i < all.length; i += size) {
        c.enqueue(all.slice(i, i + size));
        await new Promise((r) => setTimeout(r, gapMs));
      }
      c.close();
    },
  });
  return fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": type },
    body,
  });
}

test("a SIGTERM while an upload body is still arriving lets it finish: the upload is answered 200 and stored, then the server stops", async () => {
  const lifecycle = new Lifecycle();
  const env = await testEnv({ lifecycle });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    lifecycle.track(env.app.fetch),
  );
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 300, height: 200 });
    const base = `http://127.0.0.1:${server.addr.port}`;
    const pending = trickledUpload(`${base}/api/1/upload`, key, png, 8, 100);
    await waitUntil(() => lifecycle.bodiesInFlight === 1);
    assert.equal(lifecycle.bodiesInFlight, 1, "the body is still arriving");

    const drained = await drainAndStop(server, lifecycle, {
      drainMs: 0,
      graceMs: 5000,
      log: env.log,
    });
    const res = await json(await pending);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(drained, true);
    assert.equal(lifecycle.bodiesInFlight, 0);
    const stored = await env.app.request(new URL(res.body.data.url).pathname);
    assert.equal(stored.status, 200);
    const bytes = new Uint8Array(await stored.arrayBuffer());
    assert.equal(bytes.length, res.body.data.size);
    await assert.rejects(fetch(`${base}/healthz`), "no longer accepting");
  } finally {
    await server.shutdown().catch(() => {});
    await env.close();
  }
});

test("a body the handler never reads stops counting once it has answered, and a stalled body holds the stop only as long as the grace period", async () => {
  const lifecycle = new Lifecycle();
  let release!: () => void;
  const handler = lifecycle.track(async (req) => {
    if (new URL(req.url).pathname === "/ignore") return new Response("no");
    await new Promise<void>((r) => release = r);
    return new Response(String((await req.arrayBuffer()).byteLength));
  });
  const info = {} as Deno.ServeHandlerInfo<Deno.NetAddr>;
  const post = (path: string, body: BodyInit) =>
    handler(new Request(`http://x${path}`, { method: "POST", body }), info);

  assert.equal(await (await post("/ignore", "abc")).text(), "no");
  assert.equal(lifecycle.bodiesInFlight, 0);

  const held = post("/hold", "twelve bytes");
  assert.equal(lifecycle.bodiesInFlight, 1);
  assert.equal(await lifecycle.whenNoBodyInFlight(50), false);
  const quiet = lifecycle.whenNoBodyInFlight(5000);
  release();
  assert.equal(await (await held).text(), "12");
  assert.equal(await quiet, true);
  assert.equal(lifecycle.bodiesInFlight, 0);
});
