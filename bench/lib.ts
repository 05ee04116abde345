/** Shared pieces of the benchmarks: servers in subprocesses, load loops, percentiles. */

import { writeAll } from "../services/runtime/file_io.ts";
import { START_ENV, START_V8_FLAGS } from "../tests/start_task.ts";

/** The repository root: benchmarks run scripts from here. */
export const ROOT = new URL("..", import.meta.url).pathname;

/**
 * A temp dir for a bench server's received files, removed when the benchmark stops the
 * server (spawnDeno's stop sends SIGTERM).
 */
export async function receivingDir(prefix: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  Deno.addSignalListener("SIGTERM", () => {
    Deno.removeSync(dir, { recursive: true });
    Deno.exit(0);
  });
  return dir;
}

/** Serves `handler` on 127.0.0.1 at the PORT the benchmark gave this server. */
export function serveOnPort(handler: Deno.ServeHandler) {
  return Deno.serve({
    port: Number(Deno.env.get("PORT")),
    hostname: "127.0.0.1",
    onListen: () => {},
  }, handler);
}

/** A free loopback port. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
}

/** Waits until `url` answers 200, or throws after `ms`. */
export async function waitUp(url: string, ms = 60_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      await r.body?.cancel();
      if (r.ok) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** A running subprocess with its pid. */
export interface Proc {
  pid: number;
  stop(): Promise<void>;
}

/** Runs `deno run -A <script>` from the repo root with env, output discarded. */
export function spawnDeno(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
  denoFlags: string[] = [],
): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...denoFlags, script, ...args],
    cwd: ROOT,
    env,
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  return {
    pid: child.pid,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
    },
  };
}

/**
 * How `deno task start` runs the service, read from deno.json: one glibc arena, a small V8
 * young generation and a lower old-generation growth factor (README and BENCHMARKS.md
 * section 2 say why). Benchmarks run the service, and the upload floor reference, the same
 * way.
 */
export const SERVICE_RUNTIME = {
  env: START_ENV,
  flags: [`--v8-flags=${START_V8_FLAGS}`],
};

/**
 * Starts the service in its own process on a fresh data dir with one user; returns its key.
 * `denoFlags` are added to the service's own (e.g. `--deny-ffi`: the WebAssembly engine).
 */
export async function startService(
  extraEnv: Record<string, string> = {},
  denoFlags: string[] = [],
) {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-bench-" });
  const port = freePort();
  const env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    BASE_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    LOG_REQUESTS: "false",
    SCREENSHOTS: "off",
    ...extraEnv,
  };
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      // The service's flags: V8's cached code stays valid for the service's start.
      ...SERVICE_RUNTIME.flags,
      "scripts/user_create.ts",
      // Unique: a PostgreSQL the runs share keeps earlier runs' users.
      `bench-${crypto.randomUUID().slice(0, 8)}@example.com`,
      "bench password 123",
    ],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  const key = JSON.parse(new TextDecoder().decode(out.stdout))
    .api_key as string;
  const proc = spawnDeno(
    "main.ts",
    { ...SERVICE_RUNTIME.env, ...env },
    [],
    [...SERVICE_RUNTIME.flags, ...denoFlags],
  );
  await waitUp(`http://127.0.0.1:${port}/healthz`);
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    dataDir,
    pid: proc.pid,
    async stop() {
      await proc.stop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/** Percentile of sorted-or-not samples (nearest rank). */
export function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[
    Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  ];
}

/** Runs `total` calls of `fn` with `concurrency` workers; returns latencies (ms) and rate. */
export async function load(
  total: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<
  { rps: number; p50: number; p95: number; p99: number; lat: number[] }
> {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      const s = performance.now();
      await fn(i);
      lat.push(performance.now() - s);
    }
  }));
  const secs = (performance.now() - t0) / 1000;
  return {
    rps: total / secs,
    p50: pct(lat, 50),
    p95: pct(lat, 95),
    p99: pct(lat, 99),
    lat,
  };
}

/**
 * Busy CPU time of the whole machine so far, in ms (all cores, all processes, from
 * /proc/stat; USER_HZ is 100 on Linux). Differences over a run count work done in child
 * processes that have already exited, such as Chromium's per-page renderers.
 */
export function machineBusyMs(): number {
  return cpuTicks().busy * 10;
}

/**
 * Busy and all CPU ticks so far (USER_HZ) from /proc/stat: of the whole machine, or of
 * one core (`core`).
 */
export function cpuTicks(core?: number): { busy: number; all: number } {
  const line = Deno.readTextFileSync("/proc/stat").split("\n")[
    core === undefined ? 0 : core + 1
  ];
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  return {
    // user, nice, system, irq, softirq, steal (idle and iowait are not busy)
    busy: f[0] + f[1] + f[2] + f[5] + f[6] + f[7],
    all: f.reduce((a, b) => a + b),
  };
}

/** Prints rows as an aligned table. */
export function table(rows: Record<string, string | number>[]) {
  if (!rows.length) return;
  const cols = Object.keys(rows[0]);
  const fmt = (v: string | number) =>
    typeof v === "number"
      ? (Number.isInteger(v) ? String(v) : v.toFixed(1))
      : v;
  const w = cols.map((c) =>
    Math.max(c.length, ...rows.map((r) => fmt(r[c]).length))
  );
  console.log(cols.map((c, i) => c.padEnd(w[i])).join("  "));
  for (const r of rows) {
    console.log(cols.map((c, i) => fmt(r[c]).padEnd(w[i])).join("  "));
  }
}

/** Reads a process's current and peak resident memory (KiB) from /proc. */
export async function rss(
  pid: number,
): Promise<{ rss: number; hwm: number; anon: number; file: number }> {
  const s = await Deno.readTextFile(`/proc/${pid}/status`);
  const get = (k: string) =>
    Number(s.match(new RegExp(`${k}:\\s+(\\d+)`))?.[1] ?? 0);
  return {
    rss: get("VmRSS"),
    hwm: get("VmHWM"),
    anon: get("RssAnon"),
    file: get("RssFile"),
  };
}

/** A JPEG made unique by a random comment segment after SOI (pixels unchanged). */
export function uniqueJpeg(jpeg: Uint8Array): Uint8Array {
  const tag = crypto.getRandomValues(new Uint8Array(16));
  const seg = new Uint8Array([0xff, 0xfe, 0x00, 18, ...tag]);
  const out = new Uint8Array(jpeg.length + seg.length);
  out.set(jpeg.subarray(0, 2));
  out.set(seg, 2);
  out.set(jpeg.subarray(2), 2 + seg.length);
  return out;
}

/** A noise JPEG of about `targetBytes` (noise defeats compression). */
export async function noiseJpeg(targetBytes: number): Promise<Uint8Array> {
  const { default: sharp } = await import("sharp");
  const make = async (px: number) => {
    const w = Math.round(Math.sqrt(px * 4 / 3)), h = Math.round(px / w);
    const raw = new Uint8Array(w * h * 3);
    for (let i = 0; i < raw.length; i += 65536) {
      crypto.getRandomValues(raw.subarray(i, Math.min(raw.length, i + 65536)));
    }
    return new Uint8Array(
      await sharp(raw, { raw: { width: w, height: h, channels: 3 } }).jpeg({
        quality: 90,
      }).toBuffer(),
    );
  };
  // Guess, then correct once by the measured bytes per pixel.
  let px = Math.round(targetBytes / 1.5);
  const first = await make(px);
  px = Math.round(px * targetBytes / first.length);
  return await make(px);
}

/** Ends the benchmark process if it runs longer than `ms`: a bench always stops by itself. */
export function watchdog(ms: number) {
  const t = setTimeout(() => {
    console.error(`benchmark exceeded ${ms / 1000}s; stopping`);
    Deno.exit(1);
  }, ms);
  Deno.unrefTimer(t);
}

/**
 * A minimal HTTP/1.1 client for loopback benchmarks: keep-alive connections with Nagle's
 * algorithm off, each request written in one piece. The Deno `fetch` client left some
 * requests waiting ~40 ms for a delayed ACK, which swamped a baseline that answers in 1 ms.
 */
export class RawHttpClient {
  #idle: Deno.TcpConn[] = [];
  #all: Deno.TcpConn[] = [];
  constructor(private readonly port: number) {}

  /** POSTs `body` and returns the status and the response body. */
  async post(
    path: string,
    headers: Record<string, string>,
    body: Uint8Array,
  ): Promise<{ status: number; body: Uint8Array }> {
    let conn = this.#idle.pop();
    if (!conn) {
      conn = await Deno.connect({ hostname: "127.0.0.1", port: this.port });
      conn.setNoDelay(true);
      this.#all.push(conn);
    }
    const head = `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${this.port}\r\n${
      Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
    }content-length: ${body.length}\r\n\r\n`;
    const req = new Uint8Array(head.length + body.length);
    req.set(new TextEncoder().encode(head));
    req.set(body, head.length);
    await writeAll(conn, req);
    const res = await readResponse(conn);
    this.#idle.push(conn);
    return res;
  }

  /** GETs `path` on a kept-alive connection; the status and the response body. */
  async get(
    path: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Uint8Array }> {
    let conn = this.#idle.pop();
    if (!conn) {
      conn = await Deno.connect({ hostname: "127.0.0.1", port: this.port });
      conn.setNoDelay(true);
      this.#all.push(conn);
    }
    await writeAll(
      conn,
      new TextEncoder().encode(
        `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${this.port}\r\n${
          Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
        }\r\n`,
      ),
    );
    const res = await readResponse(conn);
    this.#idle.push(conn);
    return res;
  }

  close() {
    for (const c of this.#all) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  }
}

async function readResponse(conn: Deno.TcpConn) {
  let buf = new Uint8Array(0);
  const more = async () => {
    const chunk = new Uint8Array(64 * 1024);
    const n = await conn.read(chunk);
    if (n === null) throw new Error("connection closed");
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
  };
  const find = (s: string, from = 0) => {
    const b = new TextEncoder().encode(s);
    outer: for (let i = from; i + b.length <= buf.length; i++) {
      for (let j = 0; j < b.length; j++) {
        if (buf[i + j] !== b[j]) continue outer;
      }
      return i;
    }
    return -1;
  };
  let end;
  while ((end = find("\r\n\r\n")) < 0) await more();
  const head = new TextDecoder().decode(buf.subarray(0, end));
  const status = Number(head.split(" ")[1]);
  const len = head.match(/\r\ncontent-length:\s*(\d+)/i);
  let pos = end + 4;
  // A 304 or 204 has no body, and says no length.
  if (status === 304 || status === 204) {
    return { status, body: new Uint8Array() };
  }
  if (len) {
    while (buf.length < pos + Number(len[1])) await more();
    return { status, body: buf.slice(pos, pos + Number(len[1])) };
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    throw new Error("response without length");
  }
  const parts: Uint8Array[] = [];
  while (true) {
    let eol;
    while ((eol = find("\r\n", pos)) < 0) await more();
    const size = parseInt(new TextDecoder().decode(buf.subarray(pos, eol)), 16);
    pos = eol + 2;
    while (buf.length < pos + size + 2) await more();
    if (size === 0) break;
    parts.push(buf.slice(pos, pos + size));
    pos += size + 2;
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return { status, body: out };
}

/** A multipart/form-data body with one file in `images`, as bytes, and its content type. */
export function multipartBody(file: Uint8Array, filename: string) {
  const boundary = `----bench${crypto.randomUUID()}`;
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="${filename}"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const body = new Uint8Array(head.length + file.length + tail.length);
  body.set(head);
  body.set(file, head.length);
  body.set(tail, head.length + file.length);
  return {
    body,
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

/** A photo-like image: two-colour gradient, soft discs and grain. */
export async function photoJpeg(i: number): Promise<Uint8Array> {
  // Loaded here: most benches never need sharp in their own process.
  const { default: sharp } = await import("sharp");
  const { Buffer } = await import("node:buffer");
  const w = 1600, h = 1067;
  const hue = (i * 47) % 360;
  const discs = Array.from(
    { length: 6 },
    (_, k) =>
      `<circle cx="${(k * 397 + i * 131) % w}" cy="${
        (k * 211 + i * 89) % h
      }" r="${120 + ((k * 53 + i * 17) % 200)}" fill="hsl(${
        (hue + k * 40) % 360
      },55%,${40 + k * 5}%)" fill-opacity="0.55"/>`,
  ).join("");
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
      <stop offset="0" stop-color="hsl(${hue},60%,70%)"/>
      <stop offset="1" stop-color="hsl(${
      (hue + 120) % 360
    },50%,25%)"/></linearGradient>
      <filter id="b"><feGaussianBlur stdDeviation="30"/></filter></defs>
    <rect width="100%" height="100%" fill="url(#g)"/><g filter="url(#b)">${discs}</g></svg>`;
  const grain = await sharp({
    create: {
      width: w,
      height: h,
      channels: 3,
      background: "#808080",
      noise: { type: "gaussian", mean: 128, sigma: 4 },
    },
  }).png().toBuffer();
  return new Uint8Array(
    await sharp(Buffer.from(svg)).composite([{
      input: grain,
      blend: "overlay",
    }]).jpeg({ quality: 90 }).toBuffer(),
  );
}

/**
 * A throwaway PostgreSQL database for a bench, made on BENCH_DATABASE_URL or
 * TEST_DATABASE_URL (exits with a message when neither is set): its URL, and `drop`.
 */
export async function throwawayDatabase(
  bench: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const base = Deno.env.get("BENCH_DATABASE_URL") ??
    Deno.env.get("TEST_DATABASE_URL");
  if (!base) {
    console.error(
      `${bench} bench: set BENCH_DATABASE_URL or TEST_DATABASE_URL`,
    );
    Deno.exit(2);
  }
  const { sql } = await import("kysely");
  const { openDatabase } = await import("../services/db/database.ts");
  const name = `bench_${bench}_${crypto.randomUUID().slice(0, 8)}`;
  const admin = await openDatabase({ url: base });
  await sql.raw(`create database ${name}`).execute(admin.db);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await sql.raw(`drop database ${name} with (force)`).execute(admin.db);
      await admin.close();
    },
  };
}
