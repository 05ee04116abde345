/**
 * services/net/ — every outbound fetch made for a user: which addresses are allowed
 * (this file, a pure classifier), a target's URL checked and resolved (target.ts), the
 * guard proxy every browser page load and URL import goes through, re-checking each
 * connection and redirect (guard_proxy.ts), and URL imports (url_import.ts).
 */
import { isIP } from "node:net";
import type { AllowRule } from "../../schemas/allow_list.ts";

function v4ToInt(ip: string): number {
  return ip.split(".").reduce((a, o) => (a << 8) + Number(o), 0) >>> 0;
}

// Non-public IPv4 ranges (RFC 6890 special-purpose registry and friends).
const V4_BLOCKED: [string, number][] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata lives here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved + broadcast
];

function v4Blocked(ip: string): boolean {
  const n = v4ToInt(ip);
  return V4_BLOCKED.some(([base, bits]) => {
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    return ((n & mask) >>> 0) === ((v4ToInt(base) & mask) >>> 0);
  });
}

/** Expands an IPv6 address to 8 numeric groups (handles :: and a dotted IPv4 tail). */
export function expandV6(ip: string): number[] {
  let s = ip.toLowerCase().replace(/^\[|\]$/g, "").split("%")[0];
  const tail = s.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (tail) {
    const n = v4ToInt(tail[1]);
    s = s.slice(0, -tail[1].length) +
      `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, rest] = s.split("::");
  const h = head ? head.split(":") : [];
  const r = rest !== undefined ? (rest ? rest.split(":") : []) : [];
  const fill = rest !== undefined ? 8 - h.length - r.length : 0;
  return [...h, ...Array(fill).fill("0"), ...r].map((g) =>
    parseInt(g, 16) || 0
  );
}

function v6Blocked(ip: string): boolean {
  const g = expandV6(ip);
  const all0 = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (all0(8)) return true; // ::
  if (all0(7) && g[7] === 1) return true; // ::1
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d: judge the IPv4 inside.
  if (all0(5) && (g[5] === 0xffff || g[5] === 0)) {
    return v4Blocked(`${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b) { // NAT64 64:ff9b::/96
    return v4Blocked(`${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`);
  }
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (g[0] === 0x2002) { // 6to4: embedded IPv4
    return v4Blocked(`${g[1] >> 8}.${g[1] & 255}.${g[2] >> 8}.${g[2] & 255}`);
  }
  if ((g[0] & 0xe000) !== 0x2000) return true; // only 2000::/3 is global unicast
  return false;
}

/** True when an IP literal is a public unicast address a screenshot may reach. */
export function isPublicAddress(ip: string): boolean {
  const v = isIP(ip.replace(/^\[|\]$/g, "").split("%")[0]);
  if (v === 4) return !v4Blocked(ip);
  if (v === 6) return !v6Blocked(ip);
  return false;
}

function inCidr(ip: string, c: NonNullable<AllowRule["cidr"]>): boolean {
  const v = isIP(ip);
  if (v === 4 && !c.v6) {
    const mask = c.bits === 0 ? 0 : (~0 << (32 - c.bits)) >>> 0;
    return ((v4ToInt(ip) & mask) >>> 0) === ((v4ToInt(c.base) & mask) >>> 0);
  }
  if (v === 6 && c.v6) {
    const a = expandV6(ip), b = expandV6(c.base);
    let bits = c.bits;
    for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
      const m = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
      if ((a[i] & m) !== (b[i] & m)) return false;
    }
    return true;
  }
  return false;
}

/**
 * Whether a connection to `ip:port` may be made: public addresses always; others only when
 * an allow rule names them (tests allow given loopback ports this way).
 */
export function isAllowedTarget(
  ip: string,
  port: number,
  rules: AllowRule[],
): boolean {
  if (isPublicAddress(ip)) return true;
  return rules.some((r) =>
    (r.cidr && inCidr(ip, r.cidr)) ||
    (r.hostPort && r.hostPort.port === port &&
      (r.hostPort.host === ip ||
        (r.hostPort.host === "localhost" && /^(127\.|::1$)/.test(ip))))
  );
}

/** Resolves a host name to every address (literal IPs pass through). */
export async function resolveHost(host: string): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIP(bare)) return [bare];
  const { lookup } = await import("node:dns/promises");
  const res = await lookup(bare, { all: true, verbatim: true });
  return res.map((r) => r.address);
}
