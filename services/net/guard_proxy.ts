import { Buffer } from "node:buffer";
import { createServer, type Server, type Socket } from "node:net";
import { connect as netConnect } from "node:net";
import { safeEqual } from "../accounts/crypto.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { isAllowedTarget, resolveHost } from "./address_guard.ts";

/** A connection the guard refused or could not make. */
export interface GuardEvent {
  host: string;
  port: number;
  kind: "blocked" | "dns" | "connect" | "filtered";
}

/** A running guard: the proxy URL to give Chromium and what it refused. */
export interface GuardProxy {
  url: string;
  events: GuardEvent[];
  /** Connections allowed and made. */
  allowed: number;
  /**
   * Replaces the filtered hosts: a guard started ahead of its capture (a spare context's)
   * learns them when the capture takes it, before any request.
   */
  setFilterHosts(hosts: readonly string[]): void | Promise<void>;
  /**
   * Brings `events` and `allowed` up to date: a guard running beside a remote browser
   * (the browser service's) is asked; one in this process is always current.
   */
  refresh?(): Promise<void>;
  /**
   * When the guard stops working (this process's clock, ms), for one that another process
   * closes at its age (the browser service's); absent for one that lives until closed.
   */
  expiresAt?: number;
  close(): Promise<void>;
}

const MAX_HEAD = 64 * 1024;

/**
 * An HTTP proxy that every request of one capture goes through (top level, redirects,
 * subresources, frames, WebSockets via CONNECT). It resolves the host itself, refuses any
 * non-public address (unless an allow rule names it) and connects to the exact address it
 * checked, so DNS rebinding between check and connect has nothing to exploit.
 */
export async function startGuardProxy(
  rules: AllowRule[],
  opts: {
    connectTimeoutMs?: number;
    /** Address to listen on: loopback for a local browser, one a remote browser reaches. */
    listenHost?: string;
    /** Host put in the proxy URL given to the browser (defaults to listenHost). */
    advertiseHost?: string;
    /**
     * Basic credentials every request must carry (Proxy-Authorization), so that on a
     * non-loopback address nobody but this capture's browser context can use the proxy.
     */
    credentials?: { username: string; password: string };
    /**
     * Hosts (and their subdomains) this capture filters out (noAds, blockTrackers): every
     * connection to them is refused, whichever frame or process of the page asks.
     */
    filterHosts?: readonly string[];
  } = {},
): Promise<GuardProxy> {
  const events: GuardEvent[] = [];
  const expectedAuth = opts.credentials
    ? `Basic ${
      Buffer.from(`${opts.credentials.username}:${opts.credentials.password}`)
        .toString("base64")
    }`
    : undefined;
  const sockets = new Set<Socket>();
  const state = { allowed: 0 };
  const timeout = opts.connectTimeoutMs ?? 10_000;

  const refuse = (client: Socket, status: string, tag: string) => {
    client.end(
      `HTTP/1.1 ${status}\r\nX-Screenshot-Guard: ${tag}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    );
  };

  let filterHosts = opts.filterHosts ?? [];
  const filtered = (host: string) => {
    const h = host.toLowerCase().replace(/\.$/, "");
    return filterHosts.some((f) => h === f || h.endsWith("." + f));
  };

  async function open(
    host: string,
    port: number,
    client: Socket,
  ): Promise<Socket | null> {
    if (filtered(host)) {
      events.push({ host, port, kind: "filtered" });
      refuse(client, "403 Forbidden", "filtered");
      return null;
    }
    let addrs: string[];
    try {
      addrs = await resolveHost(host);
    } catch {
      events.push({ host, port, kind: "dns" });
      refuse(client, "502 Bad Gateway", "dns");
      return null;
    }
    const bad = addrs.length === 0 ||
      addrs.some((a) => !isAllowedTarget(a, port, rules));
    if (bad) {
      events.push({ host, port, kind: "blocked" });
      refuse(client, "403 Forbidden", "blocked");
      return null;
    }
    return await new Promise((resolve) => {
      const upstream = netConnect({ host: addrs[0], port, timeout });
      sockets.add(upstream);
      upstream.once("connect", () => {
        upstream.setTimeout(0);
        state.allowed++;
        resolve(upstream);
      });
      const fail = () => {
        upstream.destroy();
        events.push({ host, port, kind: "connect" });
        refuse(client, "502 Bad Gateway", "connect");
        resolve(null);
      };
      upstream.once("timeout", fail);
      upstream.once("error", fail);
      upstream.on("close", () => sockets.delete(upstream));
    });
  }

  function pipeBoth(a: Socket, b: Socket) {
    a.pipe(b);
    b.pipe(a);
    const end = () => {
      a.destroy();
      b.destroy();
    };
    a.on("error", end);
    b.on("error", end);
    a.on("close", end);
    b.on("close", end);
  }

  async function handle(client: Socket, head: Buffer, rest: Buffer) {
    const text = head.toString("latin1");
    const [requestLine, ...headerLines] = text.split("\r\n");
    const [method, target, version] = requestLine.split(" ");
    if (!method || !target) return refuse(client, "400 Bad Request", "bad");
    if (expectedAuth) {
      const given = headerLines.find((l) => /^proxy-authorization:/i.test(l))
        ?.slice("proxy-authorization:".length).trim();
      if (!given || !safeEqual(given, expectedAuth)) {
        return client.end(
          `HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="capture"\r\nX-Screenshot-Guard: auth\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
        );
      }
    }
    if (method === "CONNECT") {
      const m = target.match(/^\[?([^\]]+?)\]?:(\d+)$/);
      if (!m) return refuse(client, "400 Bad Request", "bad");
      const upstream = await open(m[1], Number(m[2]), client);
      if (!upstream) return;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (rest.length) upstream.write(rest);
      pipeBoth(client, upstream);
      return;
    }
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return refuse(client, "400 Bad Request", "bad");
    }
    if (url.protocol !== "http:") {
      return refuse(client, "403 Forbidden", "blocked");
    }
    const port = Number(url.port || 80);
    const upstream = await open(url.hostname, port, client);
    if (!upstream) return;
    // One request per upstream connection: the next request may name another host.
    const headers = headerLines.filter((l) =>
      l &&
      !/^(proxy-connection|proxy-authorization|connection|keep-alive):/i.test(l)
    );
    upstream.write(
      `${method} ${url.pathname}${url.search} ${version}\r\n${
        headers.join("\r\n")
      }\r\nConnection: close\r\n\r\n`,
    );
    if (rest.length) upstream.write(rest);
    pipeBoth(client, upstream);
  }

  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) {
        if (buf.length > MAX_HEAD) {
          refuse(client, "431 Request Header Fields Too Large", "bad");
        }
        return;
      }
      client.off("data", onData);
      client.pause();
      handle(client, buf.subarray(0, end), buf.subarray(end + 4)).catch(() =>
        client.destroy()
      )
        .finally(() => client.resume());
    };
    client.on("data", onData);
  });
  const listenHost = (opts.listenHost ?? "127.0.0.1").replace(/^\[|\]$/g, "");
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, listenHost, () => resolve());
  });
  const addr = server.address() as { port: number };
  const advertised = opts.advertiseHost ?? listenHost;
  const urlHost = advertised.includes(":") && !advertised.startsWith("[")
    ? `[${advertised}]`
    : advertised;
  return {
    url: `http://${urlHost}:${addr.port}`,
    events,
    get allowed() {
      return state.allowed;
    },
    setFilterHosts(hosts) {
      filterHosts = hosts;
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A fetch client whose connections all go through a guard of its own. */
export interface GuardedClient {
  client: Deno.HttpClient;
  guard: GuardProxy;
  /** Closes the client, then its guard. */
  close(): Promise<void>;
}

/**
 * A one-use fetch client behind a fresh guard (URL imports, webhooks): random proxy
 * credentials, so nothing else may use the guard, and no pooled connection, so each
 * request gets its own, checked and pinned by the guard.
 */
export async function guardedClient(
  rules: AllowRule[],
  opts: { connectTimeoutMs: number; username: string },
): Promise<GuardedClient> {
  const credentials = {
    username: opts.username,
    password: crypto.randomUUID(),
  };
  const guard = await startGuardProxy(rules, {
    connectTimeoutMs: opts.connectTimeoutMs,
    credentials,
  });
  const client = Deno.createHttpClient({
    proxy: { url: guard.url, basicAuth: credentials },
    poolMaxIdlePerHost: 0,
  });
  return {
    client,
    guard,
    async close() {
      client.close();
      await guard.close();
    },
  };
}
