/** A loopback web server for screenshot and SDK tests that records every request it gets. */
export interface FixtureServer {
  port: number;
  origin: string;
  requests: { path: string; search: string; headers: Record<string, string> }[];
  reports: Record<string, string>[];
  close(): Promise<void>;
}

/**
 * Serves `pages` (path → html or handler) on `hostname` (127.0.0.1; another loopback
 * address is another site to the browser) at a free port.
 */
export function startFixture(
  pages: Record<
    string,
    string | ((req: Request, f: FixtureServer) => Response | Promise<Response>)
  > = {},
  hostname = "127.0.0.1",
): FixtureServer {
  const f = { requests: [], reports: [] } as unknown as FixtureServer;
  const ac = new AbortController();
  const server = Deno.serve(
    { port: 0, hostname, signal: ac.signal, onListen: () => {} },
    async (req) => {
      const u = new URL(req.url);
      f.requests.push({
        path: u.pathname,
        search: u.search,
        headers: Object.fromEntries(req.headers),
      });
      if (u.pathname === "/report") {
        f.reports.push(Object.fromEntries(u.searchParams));
        return new Response("ok", {
          headers: { "access-control-allow-origin": "*" },
        });
      }
      const page = pages[u.pathname];
      if (page === undefined) return new Response("not found", { status: 404 });
      if (typeof page === "function") return await page(req, f);
      return new Response(page, {
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    },
  );
  f.port = server.addr.port;
  f.origin = `http://${hostname}:${server.addr.port}`;
  f.close = async () => {
    ac.abort();
    await server.finished;
  };
  return f;
}

/**
 * A bare loopback listener that counts every TCP connection it accepts: the port a guard
 * denies, where a test asserts nothing even connected.
 */
export function countingListener(hostname = "127.0.0.1") {
  const listener = Deno.listen({ hostname, port: 0 });
  const state = { accepted: 0 };
  const accepting = (async () => {
    for await (const conn of listener) {
      state.accepted++;
      conn.close();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get accepted() {
      return state.accepted;
    },
    async close() {
      listener.close();
      await accepting.catch(() => {});
    },
  };
}
