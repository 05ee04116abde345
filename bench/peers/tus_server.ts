/**
 * The anchor of bench/tus_bench.ts: `@tus/server` alone with `@tus/file-store`, on
 * Deno.serve, with nothing of the service around it (no key, no pipeline).
 * Env: PORT, DIR.
 */
import { Server } from "@tus/server";
import { FileStore } from "@tus/file-store";

const server = new Server({
  path: "/files",
  datastore: new FileStore({ directory: Deno.env.get("DIR")! }),
  maxSize: 1024 * 1024 * 1024,
});
Deno.serve(
  {
    port: Number(Deno.env.get("PORT")),
    hostname: "127.0.0.1",
    onListen: () => {},
  },
  (req) =>
    req.method === "GET" ? new Response("ok") : server.handleWeb(
      new Request(req.url, {
        method: req.method,
        headers: req.headers,
        body: req.body,
        // @ts-ignore: fetch's streaming body option.
        duplex: "half",
      }),
    ),
);
