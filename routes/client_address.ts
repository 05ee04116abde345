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
  // Deno.serve hands its ServeHandlerInfo to Hono as the env.
  return addressOf(c.req.raw, c.env, trustProxy);
}

/**
 * {@link clientAddress} from the request and Deno.serve's handler info, for code that runs
 * before Hono (the revalidation fast path).
 */
export function addressOf(
  req: Request,
  info: unknown,
  trustProxy: boolean,
): string | undefined {
  if (trustProxy) {
    const first = req.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
    if (first) return first;
  }
  return (info as { remoteAddr?: { hostname?: string } } | undefined)
    ?.remoteAddr?.hostname;
}
