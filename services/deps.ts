import type { Config } from "../schemas/config.ts";
import type { Database } from "./db/database.ts";
import type { BlobStore } from "./store/blob_store.ts";
import type { Screenshotter } from "./screenshots/screenshotter.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** Time source, injected so tests can move time (expiry, sessions, throttling). */
export interface Clock {
  now(): Date;
}

/** Structured log sink: one JSON object per line in production, silent in tests. */
export interface Logger {
  info(event: Record<string, unknown>): void;
  error(event: Record<string, unknown>): void;
}

/** Everything createApp needs; built by main.ts or by a test. */
export interface AppDeps {
  config: Config;
  database: Database;
  store: BlobStore;
  /** Absent when no browser could be started: screenshot calls then answer 240. */
  screenshotter?: Screenshotter;
  clock: Clock;
  log: Logger;
  /** Set by main.ts: on SIGTERM the app drains (see Lifecycle). Tests may pass their own. */
  lifecycle?: Lifecycle;
}

/** The real clock. */
export const systemClock: Clock = { now: () => new Date() };

/** JSON-lines logger to stdout/stderr. */
export const jsonLogger: Logger = {
  info: (e) =>
    console.log(JSON.stringify({ t: new Date().toISOString(), ...e })),
  error: (e) =>
    console.error(
      JSON.stringify({ t: new Date().toISOString(), level: "error", ...e }),
    ),
};

/** A logger that drops everything (tests) but can remember lines for assertions. */
export function memoryLogger(): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { lines, info: (e) => lines.push(e), error: (e) => lines.push(e) };
}
