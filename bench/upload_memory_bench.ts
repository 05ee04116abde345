/**
 * Peak RSS growth of the service while it receives and processes one request of 15 files
 * of ~32 MB (real noise JPEGs, each unique). The body is streamed from disk by the client,
 * the service runs in its own process, and its kernel peak-RSS counter is reset just before
 * the request. Target: growth < 64 MB.
 */
import {
  noiseJpeg,
  rss,
  startService,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";

watchdog(10 * 60_000);

const FILES = 15;
const MB = 1024 * 1024;
// As `deno task start` runs it: glibc arenas capped (libvips threads otherwise fragment memory).
const svc = await startService({ MALLOC_ARENA_MAX: "2" });
const dir = await Deno.makeTempDir({ prefix: "imagehost-membench-" });
try {
  // ~31.5 MB: just under the 32 MiB default limit.
  const jpeg = await noiseJpeg(31.5e6);
  const boundary = `----bench${crypto.randomUUID()}`;
  const bodyPath = `${dir}/body`;
  const f = await Deno.open(bodyPath, { write: true, create: true });
  const enc = new TextEncoder();
  const writeAll = async (b: Uint8Array) => {
    let o = 0;
    while (o < b.length) o += await f.write(b.subarray(o));
  };
  for (let i = 0; i < FILES; i++) {
    await writeAll(enc.encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="big${i}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ));
    await writeAll(uniqueJpeg(jpeg));
    await writeAll(enc.encode("\r\n"));
  }
  await writeAll(enc.encode(`--${boundary}--\r\n`));
  f.close();
  const bodySize = (await Deno.stat(bodyPath)).size;

  // Warm the service (first sharp call, first insert) with a small upload.
  const small = new FormData();
  small.append(
    "images",
    new File([(await noiseJpeg(50_000)) as Uint8Array<ArrayBuffer>], "w.jpg"),
  );
  const w = await fetch(`${svc.url}/api/1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${svc.key}` },
    body: small,
  });
  await w.body?.cancel();
  await new Promise((r) => setTimeout(r, 500));

  const before = await rss(svc.pid);
  await Deno.writeTextFile(`/proc/${svc.pid}/clear_refs`, "5"); // reset VmHWM to current RSS
  let sampledPeak = before.rss;
  const sampler = setInterval(async () => {
    sampledPeak = Math.max(
      sampledPeak,
      (await rss(svc.pid).catch(() => before)).rss,
    );
  }, 25);
  const t0 = performance.now();
  // curl streams the body from disk with a Content-Length, as a browser or CLI would.
  const out = await new Deno.Command("curl", {
    args: [
      "-s",
      "-H",
      `authorization: Bearer ${svc.key}`,
      "-H",
      `content-type: multipart/form-data; boundary=${boundary}`,
      "--data-binary",
      `@${bodyPath}`,
      `${svc.url}/api/1/upload`,
    ],
    stdout: "piped",
  }).output();
  const json = JSON.parse(new TextDecoder().decode(out.stdout));
  const secs = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const after = await rss(svc.pid);
  if (json.data?.count !== FILES) {
    throw new Error(`upload failed: ${JSON.stringify(json).slice(0, 300)}`);
  }
  const growth = (after.hwm - before.rss) / 1024;
  table([
    { what: "request body", MB: bodySize / MB },
    { what: "files stored", MB: FILES },
    { what: "seconds", MB: secs },
    { what: "RSS before", MB: before.rss / 1024 },
    { what: "peak RSS during (kernel VmHWM)", MB: after.hwm / 1024 },
    { what: "peak RSS during (25 ms samples)", MB: sampledPeak / 1024 },
    { what: "peak growth", MB: growth },
  ]);
  console.log(
    `ratio memory: peak RSS growth ${growth.toFixed(1)} MB for a ${
      (bodySize / MB).toFixed(0)
    } MB request = ${
      (growth / (bodySize / MB)).toFixed(3)
    }x the body (target < 64 MB)`,
  );
} finally {
  await svc.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
