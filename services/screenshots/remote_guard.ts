import type { GuardEvent, GuardProxy } from "../net/guard_proxy.ts";

/** Where a browser service is and how this instance presents itself to it. */
export interface BrowserServiceAccess {
  /** The service's http://host:port (its BROWSER_WS_ENDPOINT entry). */
  endpoint: string;
  /** BROWSER_TOKEN, sent as a bearer token on every request and on DevTools. */
  token: string;
  /** This pool's id: the service closes our guards when our DevTools connection ends. */
  client: string;
}

/** The headers every request to the browser service carries. */
export function serviceHeaders(
  a: BrowserServiceAccess,
): Record<string, string> {
  return { authorization: `Bearer ${a.token}`, "x-browser-client": a.client };
}

/**
 * A capture's network guard run by the browser service beside its Chromium (see
 * browser_gateway.ts): the same guard as a local one, asked over HTTP. Its proxy URL is
 * on the browser host's loopback, with credentials the page answers.
 */
export async function startRemoteGuard(
  access: BrowserServiceAccess,
  timeoutMs = 5000,
): Promise<
  GuardProxy & { credentials: { username: string; password: string } }
> {
  const call = async (path: string, init: RequestInit = {}) => {
    // The signal bounds the whole call, the answer's body included.
    const res = await fetch(new URL(path, access.endpoint), {
      ...init,
      headers: { ...serviceHeaders(access), ...init.headers },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`the browser service answered ${res.status} to ${path}`);
    }
    return await res.json();
  };
  // Taken before the call: the service's clock for the guard starts no earlier.
  const asked = Date.now();
  const made = await call("/guards", { method: "POST" }) as {
    id: string;
    url: string;
    username: string;
    password: string;
    expiresInMs?: number;
  };
  const events: GuardEvent[] = [];
  let allowed = 0;
  const at = `/guards/${encodeURIComponent(made.id)}`;
  return {
    url: made.url,
    credentials: { username: made.username, password: made.password },
    expiresAt: typeof made.expiresInMs === "number"
      ? asked + made.expiresInMs
      : undefined,
    events,
    get allowed() {
      return allowed;
    },
    async setFilterHosts(hosts) {
      await call(`${at}/filter-hosts`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ hosts }),
      });
    },
    async refresh() {
      const now = await call(at) as { events: GuardEvent[]; allowed: number };
      events.splice(0, events.length, ...now.events);
      allowed = now.allowed;
    },
    async close() {
      await call(at, { method: "DELETE" }).catch(() => {});
    },
  };
}
