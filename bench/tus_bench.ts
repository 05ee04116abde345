/**
 * Resumable uploads (issue #53): a 100 MB upload through the service's /api/1/tus/ against
 * `@tus/server` alone with the same store (bench/peers/tus_server.ts) in the same run, by
 * tus-js-client in 8 MB chunks, alternating; and the service's peak RSS growth while it
 * takes a 200 MB one. The transfer is timed up to the last chunk (what the protocol
 * costs); the last chunk, which runs the upload pipeline on the whole file, is reported
 * apart. Run: `deno task bench:tus` (`--quick`: 2 rounds).
 */
import { Buffer } from "node:buffer";
import * as tus from "tus-js-client";
import {
  freePort,
  noiseJpeg,
  rss,
  SERVICE_RUNTIME,
  spawnDeno,
  startService,
  table,
  uniqueJpeg,
  waitUp,
  watchdog,
} from "./lib.ts";

watchdog(10 * 60_000);
const quick = Deno.args.includes("--quick");
const ROUNDS = quick ? 2 : 4;
const MB = 1024 * 1024;
const CHUNK = 8 * MB;

/** Uploads `bytes`; ms until the last chunk began, and ms of the last chunk. */
function timed(
  endpoint: string,
  bytes: Uint8Array,
  headers: Record<string, string>,
): Promise<{ transfer: number; last: number; ok: boolean }> {
  const t0 = performance.now();
  let lastStart = 0;
  const chunks = Math.ceil(bytes.length / CHUNK);
  let done = 0;
  return new Promise((resolve, reject) => {
    const up = new tus.Upload(Buffer.from(bytes), {
      endpoint,
      headers,
      chunkSize: CHUNK,
      metadata: { filename: "big.jpg" },
      retryDelays: [],
      onChunkComplete: () => {
        done++;
        if (done === chunks - 1) lastStart = performance.now();
      },
      onError: (e) => {
        // The last chunk's refusal (the pipeline's answer) still ends a whole transfer.
        const status = (e as tus.DetailedError).originalResponse?.getStatus();
        if (done === chunks - 1 && status) {
          return resolve({
            transfer: lastStart - t0,
            last: performance.now() - lastStart,
            ok: false,
          });
        }
        reject(e);
      },
      onSuccess: (p) => {
        const end = performance.now();
        resolve({
          transfer: lastStart - t0,
          last: end - lastStart,
          ok: p.lastResponse.getStatus() < 300,
        });
      },
    });
    up.start();
  });
}

const photo = await noiseJpeg(100 * MB);
const svc = await startService({ TUS_MAX_FILE_BYTES: String(400 * MB) });
const peerDir = await Deno.makeTempDir({ prefix: "imagehost-tus-peer-" });
const peerPort = freePort();
// The peer runs as the service does (SERVICE_RUNTIME: one glibc arena, V8's small young
// generation), so the ratio is the service's own work, not its runtime settings.
const peer = spawnDeno(
  "bench/peers/tus_server.ts",
  { ...SERVICE_RUNTIME.env, PORT: String(peerPort), DIR: peerDir },
  [],
  SERVICE_RUNTIME.flags,
);
await waitUp(`http://127.0.0.1:${peerPort}/`);
const ours: number[] = [], bare: number[] = [], lasts: number[] = [];
const stored: boolean[] = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    const o = await timed(`${svc.url}/api/1/tus/`, uniqueJpeg(photo), {
      authorization: `Bearer ${svc.key}`,
    });
    stored.push(o.ok);
    ours.push(o.transfer);
    lasts.push(o.last);
    bare.push(
      (await timed(
        `http://127.0.0.1:${peerPort}/files/`,
        uniqueJpeg(photo),
        {},
      ))
        .transfer,
    );
  }
  // Peak RSS growth over a 200 MB upload (two 100 MB photos' bytes: refused at the end
  // as no image, after the whole transfer, which is what is measured here).
  const big = new Uint8Array(200 * MB);
  big.set(photo.subarray(0, 200 * MB - photo.length), photo.length);
  big.set(photo);
  const before = await rss(svc.pid);
  await Deno.writeTextFile(`/proc/${svc.pid}/clear_refs`, "5");
  await timed(`${svc.url}/api/1/tus/`, big, {
    authorization: `Bearer ${svc.key}`,
  }).catch(() => {});
  const after = await rss(svc.pid);
  const median = (xs: number[]) =>
    [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const mbps = (ms: number) =>
    ((photo.length - CHUNK) / MB / (ms / 1000)).toFixed(0);
  table([
    {
      what: "service /api/1/tus/",
      "p50 ms": median(ours).toFixed(0),
      "MB/s": mbps(median(ours)),
    },
    {
      what: "@tus/server alone",
      "p50 ms": median(bare).toFixed(0),
      "MB/s": mbps(median(bare)),
    },
    {
      what: "service: last chunk + pipeline",
      "p50 ms": median(lasts).toFixed(0),
      "MB/s": "",
    },
  ]);
  console.log(
    `ratio tus transfer (throughput, service / bare): ${
      (median(bare) / median(ours)).toFixed(2)
    }`,
  );
  console.log(
    `rss 200 MB upload: peak growth ${
      ((after.hwm - before.rss) / 1024).toFixed(1)
    } MB (before ${(before.rss / 1024).toFixed(0)} MB)`,
  );
} finally {
  await peer.stop();
  await svc.stop();
  await Deno.remove(peerDir, { recursive: true }).catch(() => {});
}
