/**
 * Peak RSS growth of the service while it receives one ~32 MB JPEG as base64 (about 43 MB
 * of text): in an `application/x-www-form-urlencoded` body (`key=…&image=<base64>`, as
 * Chevereto and ImgBB clients send it; decoded as it streams in) and in a JSON body
 * (`{"key":…,"image":…}`; scanned as it streams in), and as a multipart text field
 * (`FormData.append("image", base64)`, as npm ImgBB clients send it). curl streams each body from disk; the
 * kernel's peak-RSS counter is reset just before each request. Target (issue #16): the
 * same bound as multipart, < 64 MB growth.
 */
import {
  noiseJpeg,
  rss,
  startService,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";
import { Buffer } from "node:buffer";

watchdog(10 * 60_000);

const MB = 1024 * 1024;
const svc = await startService();
const dir = await Deno.makeTempDir({ prefix: "imagehost-b64bench-" });

async function measure(path: string, type: string) {
  const before = await rss(svc.pid);
  await Deno.writeTextFile(`/proc/${svc.pid}/clear_refs`, "5");
  const t0 = performance.now();
  const out = await new Deno.Command("curl", {
    args: [
      "-s",
      "-H",
      `content-type: ${type}`,
      "--data-binary",
      `@${path}`,
      `${svc.url}/api/1/upload`,
    ],
    stdout: "piped",
  }).output();
  const secs = (performance.now() - t0) / 1000;
  const json = JSON.parse(new TextDecoder().decode(out.stdout));
  if (!json.success) {
    throw new Error(`upload failed: ${JSON.stringify(json).slice(0, 300)}`);
  }
  const after = await rss(svc.pid);
  return { growth: (after.hwm - before.rss) / 1024, secs };
}

try {
  const jpeg = await noiseJpeg(31.5e6);
  const form = `${dir}/form`, json = `${dir}/json`, multi = `${dir}/multi`;
  const b64 = () => Buffer.from(uniqueJpeg(jpeg)).toString("base64");
  await Deno.writeTextFile(
    form,
    `key=${svc.key}&image=${encodeURIComponent(b64())}`,
  );
  await Deno.writeTextFile(
    json,
    JSON.stringify({ key: svc.key, image: b64() }),
  );
  await Deno.writeTextFile(
    multi,
    `--B\r\nContent-Disposition: form-data; name="key"\r\n\r\n${svc.key}\r\n` +
      `--B\r\nContent-Disposition: form-data; name="image"\r\n\r\n${b64()}\r\n--B--\r\n`,
  );
  // Warm-up: a small urlencoded upload.
  const small = `${dir}/small`;
  await Deno.writeTextFile(
    small,
    `key=${svc.key}&image=${
      encodeURIComponent(
        Buffer.from(await noiseJpeg(50_000)).toString("base64"),
      )
    }`,
  );
  await measure(small, "application/x-www-form-urlencoded");
  const rows = [
    {
      body: "urlencoded",
      size: (await Deno.stat(form)).size,
      ...(await measure(form, "application/x-www-form-urlencoded")),
    },
    {
      body: "json",
      size: (await Deno.stat(json)).size,
      ...(await measure(json, "application/json")),
    },
    {
      body: "multipart text",
      size: (await Deno.stat(multi)).size,
      ...(await measure(multi, "multipart/form-data; boundary=B")),
    },
  ];
  table(
    rows.map((r) => ({
      body: r.body,
      "body MB": r.size / MB,
      seconds: r.secs,
      "growth MB": r.growth,
    })),
  );
  for (const r of rows) {
    console.log(
      `ratio memory base64 ${r.body}: peak RSS growth ${
        r.growth.toFixed(1)
      } MB for ${(r.size / MB).toFixed(0)} MB (target < 64 MB)`,
    );
  }
} finally {
  await svc.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
