/**
 * The browser service's front door (`deno task browser`): one port on the browser's host
 * that app instances reach with a shared secret (BROWSER_TOKEN). Behind it, Chromium's
 * DevTools (relayed message by message) and the network guards of the captures, which run
 * here, beside the browser: every request a page makes leaves through a guard on this
 * host's loopback, so an instance needs no inbound port (Deno Deploy has none to open).
 *
 *   GET  /json/version              the DevTools ws URL (as Chromium's own endpoint)
 *   GET  /health                    guards and DevTools connections open now
 *   WS   /devtools/browser/<id>     DevTools, relayed to Chromium
 *   POST /guards                    a new guard: { id, url, username, password,
 *                                   expiresInMs (when the service will close it) }
 *   GET  /guards/<id>               what it refused: { events, allowed }
 *   PUT  /guards/<id>/filter-hosts  the hosts its capture filters out: { hosts }
 *   DELETE /guards/<id>
 *
 * Every request needs `Authorization: Bearer <BROWSER_TOKEN>`; a missing or wrong one is
 * 401 and logged. Guards belong to the DevTools connection that the same client id
 * (X-Browser-Client) holds: when it closes, they close.
 */
import { safeEqual } from "../accounts/crypto.ts";
import type { AllowRule } from "../../schemas/allow_list.ts";
import { type GuardProxy, startGuardProxy } from "../net/guard_proxy.ts";
import type { Logger } from "../runtime/logger.ts";

/** What the gateway needs: the token, Chromium's own ws URL, the guard's rules, a log. */
export interface GatewayOptions {
  token: string;
  /** Chromium's DevTools ws URL on this host (ws://127.0.0.1:<port>/devtools/browser/<id>). */
  innerWsUrl: () => string;
  rules: AllowRule[];
  log: Logger;
  /** Longest a guard lives without its client closing it (a lost instance's leftovers). */
  guardMaxAgeMs?: number;
}

/** A guard of one capture and who holds it. */
interface HeldGuard {
  guard: GuardProxy;
  client: string;
  timer: ReturnType<typeof setTimeout>;
}

/** The gateway's request handler and a close() for its guards and relays. */
export interface Gateway {
  fetch(req: Request, info: Deno.ServeHandlerInfo): Promise<Response>;
  /** Guards open now (tests: none may outlive their client). */
  readonly guardCount: number;
  close(): Promise<void>;
}

/** Builds the gateway around a running Chromium. */
export function browserGateway(opts: GatewayOptions): Gateway {
  const guards = new Map<string, HeldGuard>();
  const relays = new Set<WebSocket>();
  const maxAge = opts.guardMaxAgeMs ?? 10 * 60_000;
  const expected = `Bearer ${opts.token}`;

  const closeGuard = async (id: string) => {
    const held = guards.get(id);
    if (!held) return false;
    guards.delete(id);
    clearTimeout(held.timer);
    await held.guard.close();
    return true;
  };
  const closeGuardsOf = (client: string) => {
    for (const [id, held] of guards) {
      if (held.client === client) closeGuard(id);
    }
  };

  /** Relays one DevTools connection to Chromium, message by message. */
  const relay = (req: Request, client: string): Response => {
    const { socket, response } = Deno.upgradeWebSocket(req, {
      idleTimeout: 0,
    });
    const inner = new WebSocket(opts.innerWsUrl());
    const queued: (string | ArrayBuffer)[] = [];
    relays.add(socket);
    const end = () => {
      relays.delete(socket);
      if (socket.readyState < WebSocket.CLOSING) socket.close();
      if (inner.readyState < WebSocket.CLOSING) inner.close();
      closeGuardsOf(client);
    };
    inner.binaryType = "arraybuffer";
    inner.onopen = () => {
      for (const m of queued.splice(0)) inner.send(m);
    };
    inner.onmessage = (e) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(e.data);
    };
    socket.onmessage = (e) => {
      if (inner.readyState === WebSocket.OPEN) inner.send(e.data);
      else queued.push(e.data);
    };
    inner.onclose = end;
    inner.onerror = end;
    socket.onclose = end;
    socket.onerror = end;
    return response;
  };

  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json" },
    });

  return {
    get guardCount() {
      return guards.size;
    },
    async fetch(req, info) {
      const url = new URL(req.url);
      const given = req.headers.get("authorization") ?? "";
      if (!safeEqual(given, expected)) {
        const remote = info.remoteAddr as Deno.NetAddr;
        opts.log.error({
          msg: given ? "browser token refused" : "browser token missing",
          remote: remote.hostname,
          path: url.pathname,
        });
        await req.body?.cancel();
        return json({ error: "a valid BROWSER_TOKEN is required" }, 401);
      }
      const client = req.headers.get("x-browser-client") ?? "";
      if (url.pathname === "/json/version" && req.method === "GET") {
        const inner = new URL(opts.innerWsUrl());
        return json({
          webSocketDebuggerUrl: `ws://${url.host}${inner.pathname}`,
          guard: "browser",
        });
      }
      if (url.pathname.startsWith("/devtools/browser/")) {
        if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
          return json({ error: "a WebSocket upgrade is expected" }, 400);
        }
        return relay(req, client);
      }
      if (url.pathname === "/health" && req.method === "GET") {
        return json({ guards: guards.size, devtools: relays.size });
      }
      if (url.pathname === "/guards" && req.method === "POST") {
        const credentials = {
          username: crypto.randomUUID(),
          password: crypto.randomUUID(),
        };
        // On loopback beside Chromium; the credentials keep other local users out.
        const guard = await startGuardProxy(opts.rules, { credentials });
        const id = crypto.randomUUID();
        guards.set(id, {
          guard,
          client,
          timer: setTimeout(() => closeGuard(id), maxAge),
        });
        return json({
          id,
          url: guard.url,
          ...credentials,
          expiresInMs: maxAge,
        });
      }
      const m = url.pathname.match(/^\/guards\/([\w-]+)(\/filter-hosts)?$/);
      const held = m && guards.get(m[1]);
      if (!m || !held) return json({ error: "no such guard" }, 404);
      if (m[2] && req.method === "PUT") {
        const { hosts } = await req.json() as { hosts?: unknown };
        if (!Array.isArray(hosts) || hosts.some((h) => typeof h !== "string")) {
          return json({ error: "hosts must be a list of names" }, 400);
        }
        held.guard.setFilterHosts(hosts);
        return json({ ok: true });
      }
      if (!m[2] && req.method === "GET") {
        return json({
          events: held.guard.events,
          allowed: held.guard.allowed,
        });
      }
      if (!m[2] && req.method === "DELETE") {
        await closeGuard(m[1]);
        return json({ ok: true });
      }
      return json({ error: "method not allowed" }, 405);
    },
    async close() {
      for (const s of relays) s.close();
      await Promise.all([...guards.keys()].map(closeGuard));
    },
  };
}
