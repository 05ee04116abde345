/**
 * The pieces of the cluster test that the rolling-restart loop (rolling_loop.ts) shares
 * with it: nginx's balancer configuration as deploy/nginx.conf has it, an upload client,
 * upload load while something disrupts the cluster, and the rolling restart itself as
 * README's Deploy section prescribes it.
 */
import { makeImage } from "../fixtures.ts";
import type { startNginx } from "../nginx.ts";
import { probe, startService, Tally } from "../service_process.ts";

/** One service process of the cluster. */
export type Service = Awaited<ReturnType<typeof startService>>;
/** The balancer in front of the instances. */
export type Balancer = Awaited<ReturnType<typeof startNginx>>;

/**
 * The balancer's `http` body, as deploy/nginx.conf has it (without TLS): HTTP/1.1 with
 * kept-alive connections to the instances, retries of connections that fail on the other
 * instance. Instances on `down` ports are out of rotation.
 */
export function balancerConfig(
  ports: number[],
  down: number[] = [],
  opts: { keepalive?: boolean } = {},
): string {
  const ka = opts.keepalive ?? false;
  return `  upstream imagehost {
    ${
    ports.map((p) =>
      `server 127.0.0.1:${p} max_fails=1 fail_timeout=2s${
        down.includes(p) ? " down" : ""
      };`
    ).join("\n    ")
  }
    ${ka ? "keepalive 32;" : ""}
  }
  server {
    listen LISTEN;
    client_max_body_size 100m;
    proxy_request_buffering off;
    location / {
      proxy_pass http://imagehost;
      ${ka ? 'proxy_http_version 1.1; proxy_set_header Connection "";' : ""}
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries 2;
    }
  }`;
}

/** What one upload got: the HTTP status (0: no answer at all) and, for 0, why. */
export interface UploadResult {
  status: number;
  id?: string;
  error?: string;
  /** performance.now() when it was sent, to line it up with the logs. */
  sentAt: number;
  /** Sent a second time because its kept-alive connection closed before any answer. */
  resent?: boolean;
  /** For a resent upload: the first try's error. */
  firstError?: string;
}

/**
 * The error of a request whose connection died before any byte of the answer came. Behind
 * nginx it is what a reload does to a client's idle kept-alive connection the client has
 * just reused: the old worker closes it as it exits, and never read the request. Deno's
 * fetch words it two ways: hyper's IncompleteMessage ("connection closed before message
 * completed") when the close came before the request, or "Connection reset by peer" when
 * the request's bytes reached a socket nginx had closed (the kernel answers unread data
 * with a reset; issue 39's second face, 1 run in 40 of the rolling-restart step). A write
 * into the closed socket ("Broken pipe") is the same race caught earlier. Chromium resends
 * on all three when the connection was a reused one (ERR_CONNECTION_CLOSED, _RESET,
 * _ABORTED), as does curl.
 */
export function closedBeforeAnswer(error: string | undefined): boolean {
  return /connection closed before message completed|Connection reset by peer|Broken pipe/
    .test(error ?? "");
}

async function uploadOnce(
  base: string,
  png: Uint8Array,
  seed: number,
  key: string,
): Promise<UploadResult> {
  const fd = new FormData();
  fd.append("images", new Blob([png as BlobPart]), `s${seed}.png`);
  const sentAt = performance.now();
  try {
    const r = await fetch(`${base}/api/1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: fd,
      signal: AbortSignal.timeout(15_000),
    });
    const body = await r.json().catch(() => ({}));
    return { status: r.status, id: body?.data?.id, sentAt };
  } catch (e) {
    const err = e as Error;
    const cause = (err.cause as Error | undefined)?.message;
    return {
      status: 0,
      error: `${err.name}: ${err.message}${cause ? ` (${cause})` : ""}`,
      sentAt,
    };
  }
}

/**
 * Uploads one small PNG (its size from `seed`) with the bearer `key`, as a browser or
 * curl does: a request whose reused connection closed before any byte of the answer is
 * sent once more (Chromium, Firefox and curl all resend then; Deno's fetch does not). That
 * is safe for an upload: the same bytes from the same user are answered with the stored
 * image (`duplicate: true`), and the live-row unique index on (user, sha256) makes two
 * copies impossible even if the first had been stored. With `resend: false` the first
 * failure is the answer (the rolling-restart loop uses it to count the closes).
 */
export async function uploadTo(
  base: string,
  seed: number,
  key: string,
  opts: { resend?: boolean } = {},
): Promise<UploadResult> {
  const png = await makeImage("png", {
    width: 20 + (seed % 50),
    height: 10 + (seed % 37),
  });
  const first = await uploadOnce(base, png, seed, key);
  if (opts.resend === false || !closedBeforeAnswer(first.error)) return first;
  return {
    ...await uploadOnce(base, png, seed, key),
    resent: true,
    firstError: first.error,
  };
}

/**
 * Four clients uploading through the balancer from before `disrupt` starts until it ends
 * (each at most 2000 uploads, a bound no run comes near); afterwards every acknowledged
 * upload is read back through the balancer.
 */
export async function uploadsWhile(
  lbBase: string,
  keys: string[],
  disrupt: () => Promise<void>,
  opts: { seed?: { next: number }; resend?: boolean } = {},
) {
  const seed = opts.seed ?? { next: 100 };
  const tally = new Tally();
  const acked: string[] = [];
  const failures: UploadResult[] = [];
  /** Uploads sent twice because a reused connection closed before any answer. */
  const resent: UploadResult[] = [];
  /** When the first and the last answered upload were sent (performance.now()). */
  const span = { first: Infinity, last: -Infinity };
  let stop = false;
  const clients = Array.from({ length: 4 }, async (_, c) => {
    for (let i = 0; i < 2000 && !stop; i++) {
      const t = performance.now();
      const r = await uploadTo(lbBase, seed.next++, keys[c % keys.length], {
        resend: opts.resend,
      });
      tally.add(r.status, performance.now() - t);
      if (r.resent) resent.push(r);
      if (r.status === 200) {
        span.first = Math.min(span.first, r.sentAt);
        span.last = Math.max(span.last, r.sentAt);
      }
      if (r.status === 200 && r.id) acked.push(r.id);
      else failures.push(r);
    }
  });
  await disrupt();
  stop = true;
  await Promise.all(clients);
  let lost = 0;
  for (const id of acked) {
    if ((await probe(`${lbBase}/${id}.png`)) !== 200) lost++;
  }
  return { tally, acked, lost, failures, resent, span };
}

/**
 * Restarts `services[i]` as README's Deploy section says to behind nginx's open-source
 * build: out of rotation (reload), SIGTERM, exit 0 within 8 s, the new process started on
 * the same port and data dir, back in rotation (reload). Returns the old process's exit
 * code and the times of each step (performance.now()).
 */
export async function rollingRestart(
  lb: Balancer,
  services: Service[],
  i: number,
  env: Record<string, string>,
  opts: { keepalive?: boolean } = {},
) {
  const ports = services.map((s) => s.port);
  const steps: Record<string, number> = {};
  steps.out = performance.now();
  await lb.reload(balancerConfig(ports, [services[i].port], opts));
  steps.sigterm = performance.now();
  services[i].proc.kill("SIGTERM");
  const exit = await services[i].exitWithin(8000);
  steps.exited = performance.now();
  const old = services[i];
  services[i] = await startService(env, {
    dataDir: old.dataDir,
    port: old.port,
  });
  steps.started = performance.now();
  await lb.reload(balancerConfig(ports, [], opts));
  steps.back = performance.now();
  return { exit, steps, oldLog: old.log() };
}
