/**
 * The peer for bench/transform_bench.ts: `ipx` (npm, on the same sharp as the service)
 * serving a folder of originals, as its docs set it up (`/w_640&f_webp/<file>`). ipx keeps
 * no variants of its own (it is meant to sit behind a CDN), so each request makes one.
 * PORT and DIR from the environment.
 */
import { createIPX, createIPXWebServer, ipxFSStorage } from "ipx";

const ipx = createIPX({ storage: ipxFSStorage({ dir: Deno.env.get("DIR")! }) });
const handler = createIPXWebServer(ipx);
Deno.serve(
  {
    port: Number(Deno.env.get("PORT")),
    hostname: "127.0.0.1",
    onListen() {},
  },
  (req) => handler(req),
);
