import type { Context } from "hono";

/**
 * The client's address: the first X-Forwarded-For hop when the service sits behind a proxy
 * it trusts (TRUST_PROXY=true), else the peer of the connection. Untrusted, the header is
 * ignored: any client could write it.
 */
export function clientAddress(
  c: Context,
  trustProxy: boolean,
): string | undefined {
  if (trustProxy) {
    const first = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first;
  }
  // Deno.serve hands its ServeHandlerInfo to Hono as the env.
  const info = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return info?.remoteAddr?.hostname;
}
