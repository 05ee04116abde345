import type { Config } from "../schemas/config.ts";

/**
 * What the platform lets this process do. Deno Deploy and any sandbox like it refuse
 * native code (FFI), subprocesses and disk writes; the embedded profile needs the last two.
 */
export interface Capabilities {
  /** May load native code (sharp's native libvips; without it, its WebAssembly build). */
  ffi: boolean;
  /** May start processes (a local Chromium). */
  run: boolean;
  /** May write DATA_DIR (the embedded database, STORE=fs, upload scratch files). */
  writeDataDir: boolean;
}

/** What this process may do, asked of Deno's permissions (no prompt). */
export function capabilities(dataDir: string): Capabilities {
  const granted = (d: Deno.PermissionDescriptor) => {
    try {
      return Deno.permissions.querySync(d).state === "granted";
    } catch {
      return false;
    }
  };
  return {
    ffi: granted({ name: "ffi" }),
    run: granted({ name: "run" }),
    writeDataDir: granted({ name: "write", path: dataDir }),
  };
}

/**
 * The first setting this configuration needs that the platform refuses, as one line that
 * names the variable to set; undefined when the configuration fits. (FFI alone is never a
 * reason: sharp then runs its WebAssembly build.)
 */
export function profileProblem(
  config: Config,
  can: Capabilities,
): string | undefined {
  if (!can.writeDataDir) {
    const why = `DATA_DIR (${config.DATA_DIR}) may not be written here`;
    if (!config.DATABASE_URL) {
      return `${why}, so the embedded database cannot run: set DATABASE_URL to a PostgreSQL (postgres://…)`;
    }
    // (IMAGE_SERVE=proxy needs STORE=fs, which the config schema already says.)
    if (config.STORE === "fs") {
      return `${why}, so images cannot be stored on disk: set STORE=s3 with S3_ENDPOINT and S3_BUCKET`;
    }
    if (config.SCRATCH === "disk") {
      return `${why}, so uploads cannot be received on disk: set SCRATCH=memory (or auto), with MEMORY_BODY_MB`;
    }
  }
  if (
    !can.run && config.SCREENSHOTS === "on" && !config.BROWSER_WS_ENDPOINT
  ) {
    return "starting processes is refused here, so a local Chromium cannot run: set BROWSER_WS_ENDPOINT to a browser service, or SCREENSHOTS=off";
  }
  return undefined;
}

/**
 * The configuration as this platform runs it: SCRATCH=auto becomes memory where DATA_DIR
 * may not be written, else disk.
 */
export function resolveProfile<C extends Pick<Config, "SCRATCH">>(
  config: C,
  can: Capabilities,
): C {
  if (config.SCRATCH !== "auto") return config;
  return { ...config, SCRATCH: can.writeDataDir ? "disk" : "memory" };
}
