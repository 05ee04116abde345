import { z } from "zod";
import { parseAllowList } from "../services/screenshots/address_guard.ts";

const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const httpUrl = z.string().url().refine(
  (u) => /^https?:$/.test(new URL(u).protocol),
  "must be an http(s) URL",
).transform((u) => u.replace(/\/+$/, ""));

/**
 * The one schema over the environment (DESIGN.md "Configuration"). Only main.ts reads the
 * environment; tests build a Config through {@link loadConfig} with their own values.
 */
export const ConfigSchema = z.object({
  PORT: int(8080, 0, 65535),
  HOST: z.string().default("0.0.0.0"),
  BASE_URL: httpUrl.optional(),
  IMAGE_HOST_URL: httpUrl.optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z.string().regex(
    /^postgres(ql)?:\/\//,
    "must start with postgres://",
  ).optional(),
  STORE: z.enum(["fs", "s3"]).default("fs"),
  S3_ENDPOINT: httpUrl.optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  S3_PUBLIC_URL: httpUrl.optional(),
  MAX_FILE_BYTES: int(32 * 1024 * 1024, 1),
  MAX_FILES: int(15, 1, 1000),
  MAX_IMAGE_PIXELS: int(100_000_000, 1),
  /** Memory for the bytes of hot images (each at most 1 MiB); 0 turns it off. */
  IMAGE_CACHE_MB: int(32, 0, 65_536),
  SCREENSHOTS: z.enum(["on", "off"]).default("on"),
  CHROMIUM_PATH: z.string().optional(),
  BROWSER_WS_ENDPOINT: z.string().regex(/^wss?:\/\//, "must be a ws:// URL")
    .optional(),
  SCREENSHOT_TIMEOUT_MS: int(30_000, 100, 600_000),
  SCREENSHOT_CONCURRENCY: int(2, 1, 64),
  SCREENSHOT_QUEUE: int(32, 0, 10_000),
  SCREENSHOT_RECYCLE_AFTER: int(200, 1),
  SCREENSHOT_ALLOW_PRIVATE: z.string().default("").refine((v) => {
    try {
      parseAllowList(v);
      return true;
    } catch {
      return false;
    }
  }, "must be comma-separated CIDRs or host:port pairs"),
  LOGIN_MAX_FAILURES: int(5, 1),
  RATE_LIMIT_PER_MINUTE: int(600, 0),
  LOG_REQUESTS: z.enum(["true", "false"]).default("true").transform((v) =>
    v === "true"
  ),
}).transform((c) => {
  const base = c.BASE_URL ?? `http://localhost:${c.PORT}`;
  return {
    ...c,
    BASE_URL: base,
    IMAGE_HOST_URL: c.IMAGE_HOST_URL ?? c.S3_PUBLIC_URL ?? base,
  };
}).superRefine((c, ctx) => {
  if (c.STORE === "s3") {
    for (const k of ["S3_ENDPOINT", "S3_BUCKET"] as const) {
      if (!c[k]) {
        ctx.addIssue({
          code: "custom",
          path: [k],
          message: "is required when STORE=s3",
        });
      }
    }
  }
});

/** Validated service configuration. */
export type Config = z.output<typeof ConfigSchema>;

/** Thrown when the environment holds a bad value; the message names each variable. */
export class ConfigError extends Error {}

/**
 * Validates an environment-like record. Empty strings count as unset so `FOO=` in a shell
 * falls back to the default instead of failing.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const clean = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ""),
  );
  const r = ConfigSchema.safeParse(clean);
  if (!r.success) {
    const lines = r.error.issues.map((i) =>
      `${i.path.join(".") || "config"}: ${i.message}${
        i.path.length && clean[String(i.path[0])] !== undefined
          ? ` (got ${JSON.stringify(clean[String(i.path[0])])})`
          : ""
      }`
    );
    throw new ConfigError(`Invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  return r.data;
}
