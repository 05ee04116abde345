import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { WorkSlots } from "../runtime/work_slots.ts";

/** URL-safe random token of `bytes` bytes of entropy (IDs, keys, session ids). */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}

/** An HMAC-SHA256 signing key made of a secret string. */
export function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
}

/**
 * The first 16 bytes of `text`'s HMAC-SHA256 under `key`, base64url (22 characters): the
 * signature of signed transform URLs and of password pages' tokens.
 */
export async function hmac16(key: CryptoKey, text: string): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(text),
  );
  return Buffer.from(new Uint8Array(mac).subarray(0, 16)).toString(
    "base64url",
  );
}

/** Hex SHA-256, used for high-entropy secrets (API keys, session ids) stored at rest. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Constant-time string equality (lengths are compared first; they are not secret). */
export function safeEqual(a: string, b: string): boolean {
  const ab = new TextEncoder().encode(a);
  const bb = new TextEncoder().encode(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

// scrypt N=2^15, r=8, p=1: ~32 MiB and tens of ms per hash, the OWASP baseline.
const N = 32768, R = 8, P = 1, LEN = 32;

/**
 * One password hash at a time per process: each takes 32 MiB and a core, and the runtime
 * would otherwise run as many at once as are asked for, on threads of their own (a login
 * flood of 20 clients grew RSS by 650 MB). One at a time is still ~15 logins a second;
 * past 64 waiting, or after 10 s in line, the attempt is refused with 250 / HTTP 503.
 */
export const hashSlots = new WorkSlots(1, 64, "passwords");

function scryptAsync(
  pw: string,
  salt: Buffer,
  n: number,
  r: number,
  p: number,
) {
  return hashSlots.run(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        scrypt(
          pw,
          salt,
          LEN,
          { N: n, r, p, maxmem: 128 * n * r * 2 },
          (e, k) => e ? reject(e) : resolve(k),
        )
      ),
    10_000,
  );
}

/** Hashes a password with scrypt; the result carries its parameters and salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64url")}$${
    key.toString("base64url")
  }`;
}

/** Checks a password against a stored scrypt hash in constant time. */
export async function verifyPassword(
  password: string,
  stored: string,
): Promise<boolean> {
  const [alg, n, r, p, salt, key] = stored.split("$");
  if (alg !== "scrypt" || !key) return false;
  const got = await scryptAsync(
    password,
    Buffer.from(salt, "base64url"),
    Number(n),
    Number(r),
    Number(p),
  );
  const want = Buffer.from(key, "base64url");
  return got.length === want.length && timingSafeEqual(got, want);
}
