/**
 * Transform URLs in the sandbox profile (issue #49): the service with FFI denied, so sharp
 * runs its WebAssembly build as on Deno Deploy, against `ipx` (native sharp) on the same
 * photos. For each of a corpus of 1600 px photo-like JPEGs, the first request of a 640 px
 * AVIF and of a 640 px WebP (target: our p50 ≤ 2× ipx's), at the engine's efforts
 * and at libvips' default 4 (IMAGE_AVIF_EFFORT=4, the setting before) in a second service
 * of the same run; then four first AVIF requests at once, which must all be answered
 * within IMAGE_TIMEOUT_MS (20 s). `deno run -A bench/sandbox_transform_bench.ts [--quick]`.
 */
import {
  freePort,
  multipartBody,
  photoJpeg,
  spawnDeno,
  startService,
  table,
  waitUp,
  watchdog,
} from "./lib.ts";

watchdog(20 * 60_000);
const quick = Deno.args.includes("--quick");
const N = quick ? 4 : 8;

const corpus = await Promise.all(
  Array.from({ length: N }, async (_, i) => await photoJpeg(i)),
);
const ipxDir = await Deno.makeTempDir({ prefix: "imagehost-ipx-" });

/** Uploads the corpus to a service; the stored originals, which ipx gets too. */
async function uploadAll(svc: { url: string; key: string }) {
  const paths: string[] = [];
  for (const [i, bytes] of corpus.entries()) {
    const { body, contentType } = multipartBody(bytes, `photo-${i}.jpg`);
    const r = await fetch(`${svc.url}/api/1/upload`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${svc.key}`,
        "content-type": contentType,
      },
      body,
    });
    const rec = (await r.json()).data;
    const path = new URL(rec.url).pathname;
    paths.push(path);
    const stored = new Uint8Array(
      await (await fetch(`${svc.url}${path}`)).arrayBuffer(),
    );
    await Deno.writeFile(`${ipxDir}${path}`, stored);
  }
  return paths;
}

/** ms until a whole answer, failing on anything but 200. */
async function timed(url: string): Promise<number> {
  const t = performance.now();
  const r = await fetch(url);
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
  return performance.now() - t;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const wasm = await startService({}, ["--deny-ffi"]);
const wasmEffort4 = await startService({ IMAGE_AVIF_EFFORT: "4" }, [
  "--deny-ffi",
]);
const ours = await uploadAll(wasm);
const before = await uploadAll(wasmEffort4);
const ipxPort = freePort();
const ipx = spawnDeno("bench/peers/ipx_server.ts", {
  PORT: String(ipxPort),
  DIR: ipxDir,
});
await waitUp(`http://127.0.0.1:${ipxPort}/w_16/${ours[0].slice(1)}`);

const results: Record<string, number[]> = {};
const add = (k: string, ms: number) => (results[k] ??= []).push(ms);
for (const [i, path] of ours.entries()) {
  // Alternating who goes first, so neither always meets a warmer page cache.
  const runs: [string, string][] = [
    ["ours avif", `${wasm.url}${path}?w=640&format=avif`],
    ["ours webp", `${wasm.url}${path}?w=640&format=webp`],
    ["effort 4 avif", `${wasmEffort4.url}${before[i]}?w=640&format=avif`],
    ["ipx avif", `http://127.0.0.1:${ipxPort}/w_640&f_avif${path}`],
    ["ipx webp", `http://127.0.0.1:${ipxPort}/w_640&f_webp${path}`],
  ];
  for (const [k, url] of i % 2 ? runs.reverse() : runs) {
    add(k, await timed(url));
  }
}

// What the lower efforts cost in bytes: the same variants, now stored, from both services.
const bytesOf = async (url: string) =>
  (await (await fetch(url)).arrayBuffer()).byteLength;
let avifBytes = 0, avif4Bytes = 0;
for (const [i, path] of ours.entries()) {
  avifBytes += await bytesOf(`${wasm.url}${path}?w=640&format=avif`);
  avif4Bytes += await bytesOf(
    `${wasmEffort4.url}${before[i]}?w=640&format=avif`,
  );
}

// Four first AVIF requests at once (widths not made yet for those photos), each within
// the engine's AVIF budget (IMAGE_ENCODE_MB: 64 there, about 1.1 MP; 1024 px is 0.7).
const t0 = performance.now();
const together = await Promise.all(
  ours.slice(0, 4).map(async (path, i) => {
    const r = await fetch(
      `${wasm.url}${path}?w=${[320, 1024, 1024, 160][i]}&format=avif`,
    );
    await r.arrayBuffer();
    return { status: r.status, ms: performance.now() - t0 };
  }),
);
// Past that budget (1600 px is 1.7 MP): an AVIF is refused at once, naming the size that
// fits, and format=auto answers WebP instead.
const past = await fetch(
  `${wasm.url}${ours[4 % ours.length]}?w=1600&format=avif`,
);
const pastBody = (await past.text()).slice(0, 300);
const auto = await fetch(
  `${wasm.url}${ours[5 % ours.length]}?w=1600&format=auto`,
  {
    headers: { accept: "image/avif,image/webp,*/*" },
  },
);
await auto.arrayBuffer();

table([
  {
    what: "first 640 px AVIF, p50 ms",
    "wasm (the engine's efforts)": median(results["ours avif"]).toFixed(0),
    "wasm effort 4": median(results["effort 4 avif"]).toFixed(0),
    "ipx (native)": median(results["ipx avif"]).toFixed(0),
  },
  {
    what: "first 640 px WebP, p50 ms",
    "wasm (the engine's efforts)": median(results["ours webp"]).toFixed(0),
    "wasm effort 4": "—",
    "ipx (native)": median(results["ipx webp"]).toFixed(0),
  },
]);
console.log(
  `four first AVIFs at once: ${
    together.map((t) => `${t.status} in ${t.ms.toFixed(0)} ms`).join(", ")
  }`,
);
const avif = median(results["ours avif"]) / median(results["ipx avif"]);
const webp = median(results["ours webp"]) / median(results["ipx webp"]);
const old = median(results["effort 4 avif"]) / median(results["ipx avif"]);
console.log(
  `ratio first 640 px AVIF: ${avif.toFixed(2)}x ipx (target <= 2.0; effort 4: ${
    old.toFixed(2)
  }x)`,
);
console.log(
  `640 px AVIF bytes, all photos: ${avifBytes} at the engine's effort, ${avif4Bytes} at 4 (${
    (100 * (avifBytes / avif4Bytes - 1)).toFixed(0)
  } % more)`,
);
console.log(`ratio first 640 px WebP: ${webp.toFixed(2)}x ipx (target <= 2.0)`);
console.log(
  `1600 px: format=avif ${past.status} ${pastBody}; format=auto ${auto.status} ${
    auto.headers.get("content-type")
  }`,
);
console.log(
  `four at once: all 200 within 20 s: ${
    together.every((t) => t.status === 200 && t.ms < 20_000)
  }`,
);
await ipx.stop();
await wasm.stop();
await wasmEffort4.stop();
await Deno.remove(ipxDir, { recursive: true });
Deno.exit(0);
