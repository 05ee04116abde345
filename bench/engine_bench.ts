/**
 * sharp's two engines side by side (issue 33): the service with native libvips, and the same
 * service with FFI denied, where sharp runs its WebAssembly build (`@img/sharp-wasm32`), as
 * on Deno Deploy. Uploads of 200 KB and 5 MB JPEGs (1 and 2 clients) through each service,
 * and the thumbnail alone (decode + 320 px resize + WebP encode) in a process of each kind.
 * Reported as ratios only (no target): `deno run -A bench/engine_bench.ts [--quick]`.
 */
import {
  load,
  multipartBody,
  noiseJpeg,
  RawHttpClient,
  startService,
  table,
  uniqueJpeg,
  watchdog,
} from "./lib.ts";

watchdog(15 * 60_000);
const quick = Deno.args.includes("--quick");
const ROOT = new URL("..", import.meta.url).pathname;

/** Thumbnails of `file` made `n` times in a child process (FFI denied or not): ms each. */
async function thumbnails(file: string, n: number, wasm: boolean) {
  const script = `import sharp from "sharp";
const bytes = await Deno.readFile(${JSON.stringify(file)});
const keep = setInterval(() => {}, 1000);
await sharp(bytes).resize(320).webp().toBuffer();
const ms = [];
for (let i = 0; i < ${n}; i++) {
  const t = performance.now();
  await sharp(bytes).resize(320).webp().toBuffer();
  ms.push(performance.now() - t);
}
clearInterval(keep);
console.log(JSON.stringify({ engine: sharp.versions.emscripten ? "wasm" : "native", ms }));
`;
  const path = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(path, script);
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--config",
      `${ROOT}deno.json`,
      "--allow-read",
      "--allow-env",
      "--allow-sys",
      ...(wasm ? ["--deny-ffi"] : ["--allow-ffi"]),
      path,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(path);
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  const sorted = (r.ms as number[]).sort((a, b) => a - b);
  return { engine: r.engine, p50: sorted[Math.floor(sorted.length / 2)] };
}

const native = await startService();
const wasm = await startService({}, ["--deny-ffi"]);
const rows: Record<string, string | number>[] = [];
const ratios: string[] = [];
try {
  for (
    const size of [
      { label: "200KB", bytes: 200_000, n: quick ? 12 : 40 },
      { label: "5MB", bytes: 5_000_000, n: quick ? 4 : 10 },
    ]
  ) {
    const jpeg = await noiseJpeg(size.bytes);
    const file = await Deno.makeTempFile({ suffix: ".jpg" });
    await Deno.writeFile(file, jpeg);
    for (const c of [1, 2]) {
      const result: Record<string, { rps: number; p50: number }> = {};
      for (const [who, svc] of [["native", native], ["wasm", wasm]] as const) {
        const client = new RawHttpClient(Number(new URL(svc.url).port));
        const auth = { authorization: `Bearer ${svc.key}` };
        const bodies = Array.from(
          { length: size.n + 1 },
          () => multipartBody(uniqueJpeg(jpeg), "e.jpg"),
        );
        const post = async (i: number) => {
          const r = await client.post("/api/1/upload", {
            ...auth,
            "content-type": bodies[i].contentType,
          }, bodies[i].body);
          const j = JSON.parse(new TextDecoder().decode(r.body));
          if (!j.success) throw new Error(JSON.stringify(j));
        };
        await post(size.n); // warm: JIT, the engine's first call, the first insert
        const r = await load(size.n, c, post);
        client.close();
        result[who] = r;
        rows.push({
          what: `upload ${size.label}`,
          clients: c,
          engine: who,
          "req/s": r.rps,
          "p50 ms": r.p50,
        });
      }
      ratios.push(
        `engine upload ${size.label} c=${c}: wasm ${
          (result.wasm.rps / result.native.rps).toFixed(2)
        }x native req/s`,
      );
    }
    const tn = await thumbnails(file, quick ? 5 : 15, false);
    const tw = await thumbnails(file, quick ? 5 : 15, true);
    if (tn.engine !== "native" || tw.engine !== "wasm") {
      throw new Error(`engines: ${tn.engine}, ${tw.engine}`);
    }
    rows.push(
      {
        what: `thumbnail ${size.label}`,
        clients: 1,
        engine: "native",
        "req/s": "",
        "p50 ms": tn.p50.toFixed(1),
      },
      {
        what: `thumbnail ${size.label}`,
        clients: 1,
        engine: "wasm",
        "req/s": "",
        "p50 ms": tw.p50.toFixed(1),
      },
    );
    ratios.push(
      `engine thumbnail ${size.label}: wasm ${
        (tw.p50 / tn.p50).toFixed(2)
      }x native time (p50)`,
    );
    await Deno.remove(file);
  }
} finally {
  await native.stop();
  await wasm.stop();
}
table(rows);
for (const r of ratios) console.log(r);
