import { isIP } from "node:net";

/** One allow-list entry (FETCH_ALLOW_PRIVATE): a CIDR, or host:port. */
export interface AllowRule {
  cidr?: { base: string; bits: number; v6: boolean };
  hostPort?: { host: string; port: number };
}

/** Parses an allow list: comma-separated CIDRs and/or host:port pairs. */
export function parseAllowList(spec: string): AllowRule[] {
  return spec.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
    const cidr = s.match(/^(.+)\/(\d{1,3})$/);
    if (cidr && isIP(cidr[1])) {
      return {
        cidr: { base: cidr[1], bits: Number(cidr[2]), v6: isIP(cidr[1]) === 6 },
      };
    }
    const hp = s.match(/^\[?([^\]]+?)\]?:(\d{1,5})$/);
    if (hp) {
      return { hostPort: { host: hp[1].toLowerCase(), port: Number(hp[2]) } };
    }
    throw new Error(`FETCH_ALLOW_PRIVATE: cannot parse "${s}"`);
  });
}

/**
 * The non-public addresses outbound fetches (screenshots and URL imports) may reach:
 * FETCH_ALLOW_PRIVATE, plus the older SCREENSHOT_ALLOW_PRIVATE, still read so existing
 * deployments keep their allow list.
 */
export function allowRulesOf(config: {
  FETCH_ALLOW_PRIVATE: string;
  SCREENSHOT_ALLOW_PRIVATE: string;
}): AllowRule[] {
  return [
    ...parseAllowList(config.FETCH_ALLOW_PRIVATE),
    ...parseAllowList(config.SCREENSHOT_ALLOW_PRIVATE),
  ];
}
