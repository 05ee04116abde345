/**
 * Peak RSS growth of the service while it receives and processes one request of 15 files
 * of ~32 MB (real noise JPEGs, each unique). The body is streamed from disk by curl, the
 * service runs in its own process, and its kernel peak-RSS counter is reset just before each
 * request. Two requests are measured: the first after a small warm-up upload, and a second
 * one, which shows whether memory grows per request or is reserved once. Target: < 64 MB.
 */
import {
  noiseJpeg,
  rss,
  startService,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";
import { writeAll } from "../services/runtime/file_io.ts";

watchdog(10 * 60_000);

const FILES = 15;
const MB = 1024 * 1024;
// startService runs the service as `deno task start` does (one glibc arena, small V8
// young generation): see BENCHMARKS.md for what each setting does to this benchmark.
const svc = await startService();
const dir = await Deno.makeTempDir({ prefix: "imagehost-membench-" });
const enc = new TextEncoder();

/** Writes a multipart body of FILES unique copies of `jpeg`; returns its path and size. */
async function writeBody(jpeg: Uint8Array, boundary: string, name: string) {
  const path = `${dir}/${name}`;
  const f = await Deno.open(path, { write: true, create: true });
  for (let i = 0; i < FILES; i++) {
    await writeAll(
      f,
      enc.encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="big${i}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      ),
    );
    await writeAll(f, uniqueJpeg(jpeg));
    await writeAll(f, enc.encode("\r\n"));
  }
  await writeAll(f, enc.encode(`--${boundary}--\r\n`));
  f.close();
  return { path, size: (await Deno.stat(path)).size };
}

/** Sends one body with curl and returns the peak growth over the RSS just before it. */
async function measure(body: { path: string }, boundary: string) {
  const before = await rss(svc.pid);
  await Deno.writeTextFile(`/proc/${svc.pid}/clear_refs`, "5"); // reset VmHWM to current RSS
  // The kernel's peak counter is exact but not split by kind; a 5 ms sampler splits it into
  // anonymous memory and file-backed pages (files the process has mapped).
  let peakAnon = before.anon, peakFile = before.file;
  const sampler = setInterval(async () => {
    const now = await rss(svc.pid).catch(() => undefined);
    if (!now) return;
    peakAnon = Math.max(peakAnon, now.anon);
    peakFile = Math.max(peakFile, now.file);
  }, 5);
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
      `@${body.path}`,
      `${svc.url}/api/1/upload`,
    ],
    stdout: "piped",
  }).output();
  const secs = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const json = JSON.parse(new TextDecoder().decode(out.stdout));
  if (json.data?.count !== FILES) {
    throw new Error(`upload failed: ${JSON.stringify(json).slice(0, 300)}`);
  }
  const after = await rss(svc.pid);
  return {
    before: before.rss / 1024,
    peak: after.hwm / 1024,
    growth: (after.hwm - before.rss) / 1024,
    anon: (peakAnon - before.anon) / 1024,
    file: (peakFile - before.file) / 1024,
    secs,
  };
}

try {
  // ~31.5 MB: just under the 32 MiB default limit.
  const jpeg = await noiseJpeg(31.5e6);
  const boundary = `----bench${crypto.randomUUID()}`;
  const first = await writeBody(jpeg, boundary, "body1");
  const second = await writeBody(jpeg, boundary, "body2");

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

  const runs = [
    { name: "first", body: first, m: await measure(first, boundary) },
    { name: "second", body: second, m: await measure(second, boundary) },
  ];
  table(runs.map(({ name, body, m }) => ({
    request: `${name} 15 x 32 MB`,
    "body MB": body.size / MB,
    seconds: m.secs,
    "RSS before MB": m.before,
    "peak MB": m.peak,
    "growth MB": m.growth,
    "anon peak +MB": m.anon,
    "file-backed peak +MB": m.file,
  })));
  for (const { name, body, m } of runs) {
    console.log(
      `ratio memory (${name} request): peak RSS growth ${
        m.growth.toFixed(1)
      } MB for ${
        (body.size / MB).toFixed(0)
      } MB (target < 64 MB); sampled peaks: anonymous +${
        m.anon.toFixed(1)
      } MB, file-backed +${m.file.toFixed(1)} MB`,
    );
  }
} finally {
  await svc.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
