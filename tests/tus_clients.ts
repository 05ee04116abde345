import { Buffer } from "node:buffer";
import * as tus from "tus-js-client";
import assert from "node:assert/strict";
import { type TestEnv, userWithKey } from "./helpers.ts";

/**
 * What the resumable-upload tests share: the app on loopback, a TCP proxy that cuts a
 * connection mid-body (a phone losing its network, or a balancer sending the retry to
 * another instance), and tus-js-client's upload as a promise.
 */

/** The app on loopback, noting the methods of its tus requests in `seen`; and its stop. */
export function serve(env: TestEnv, seen: string[] = []) {
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => {
    if (new URL(req.url).pathname.startsWith("/api/1/tus")) {
      seen.push(req.method);
    }
    return env.app.fetch(req);
  });
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    port: server.addr.port,
    async close() {
      ac.abort();
      await server.finished;
    },
  };
}

/**
 * A TCP proxy: the first connection goes to `first` and is cut once `cutAfter` bytes of
 * it went up (after `beforeCut`); every later one goes to `then`. `sent` lists each
 * connection's port; `cuts` is 1 once the cut was made.
 */
export function cuttingProxy(
  first: number,
  then: number,
  cutAfter: number,
  beforeCut: () => Promise<void> = () => Promise.resolve(),
) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const sent: number[] = [];
  let cuts = 0;
  (async () => {
    for await (const client of listener) {
      const n = sent.length;
      const port = n === 0 ? first : then;
      sent.push(port);
      (async () => {
        const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
        let passed = 0;
        const up = (async () => {
          const buf = new Uint8Array(64 * 1024);
          try {
            while (true) {
              const r = await client.read(buf);
              if (r === null) break;
              passed += r;
              if (n === 0 && passed > cutAfter) {
                await beforeCut();
                cuts++;
                break;
              }
              await upstream.write(buf.subarray(0, r));
            }
          } catch { /* closed */ }
          for (const c of [client, upstream]) {
            try {
              c.close();
            } catch { /* closed */ }
          }
        })();
        const down = (async () => {
          const buf = new Uint8Array(64 * 1024);
          try {
            while (true) {
              const r = await upstream.read(buf);
              if (r === null) break;
              await client.write(buf.subarray(0, r));
            }
          } catch { /* closed */ }
        })();
        await Promise.allSettled([up, down]);
      })();
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    sent,
    get cuts() {
      return cuts;
    },
    get connections() {
      return sent.length;
    },
    close: () => listener.close(),
  };
}

/** Uploads `bytes` with tus-js-client; the final answer's body, and the upload's URL. */
export function tusUpload(
  endpoint: string,
  key: string,
  bytes: Uint8Array,
  metadata: Record<string, string>,
  opts: Partial<tus.UploadOptions> = {},
): Promise<{ body: string; url: string }> {
  return new Promise((resolve, reject) => {
    const up = new tus.Upload(Buffer.from(bytes), {
      endpoint,
      headers: { authorization: `Bearer ${key}` },
      metadata,
      retryDelays: [0, 100, 300],
      ...opts,
      onError: reject,
      onSuccess: (p) =>
        resolve({ body: p.lastResponse.getBody(), url: up.url! }),
    });
    up.start();
  });
}

/**
 * Creations sent at the same moment to `env`'s app on loopback, with TUS_UPLOADS_AT_ONCE=3
 * and TUS_PENDING_MB=1: ten small ones by one account open three (seven 429/170), six of
 * 400 KB by another open two (four 413/130).
 */
export async function creationsAtOnce(env: TestEnv) {
  const http = serve(env);
  try {
    await creationsAgainst(env, http.origin);
  } finally {
    await http.close();
  }
}

async function creationsAgainst(env: TestEnv, origin: string) {
  const { key } = await userWithKey(env);
  const other = await userWithKey(env, "other@example.com");
  const create = (length: number, k: string) =>
    fetch(`${origin}/api/1/tus/`, {
      method: "POST",
      headers: {
        "tus-resumable": "1.0.0",
        "upload-length": String(length),
        authorization: `Bearer ${k}`,
      },
    });
  /** `n` creations at once: their statuses (and codes), sorted. */
  const statuses = async (n: number, length: number, k: string) => {
    const answers = await Promise.all(
      Array.from({ length: n }, () => create(length, k)),
    );
    const out = await Promise.all(answers.map(async (r) => {
      if (r.status === 201) {
        await r.body?.cancel();
        return "201";
      }
      return `${r.status}/${(await r.json()).error.code}`;
    }));
    return out.sort();
  };
  assert.deepEqual(
    await statuses(10, 100, key),
    ["201", "201", "201", ...Array(7).fill("429/170")],
  );
  assert.deepEqual(
    await statuses(6, 400 * 1024, other.key),
    ["201", "201", ...Array(4).fill("413/130")],
  );
}
