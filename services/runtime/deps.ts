/**
 * What createApp is given (AppDeps). Only the composition and the app import this: the
 * leaves every layer needs (Clock, Logger) live in clock.ts and logger.ts, so the database
 * and the lifecycle can log without importing the whole composition back.
 */
import type { Config } from "../../schemas/config.ts";
import type { Database } from "../db/database.ts";
import type { BlobStore } from "../store/blob_store.ts";
import type { Screenshotter } from "../screenshots/screenshotter.ts";
import type { Clock } from "./clock.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Logger } from "./logger.ts";
import type { Metrics } from "../metrics/metrics.ts";

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
  /**
   * The app's metrics; createApp makes one when none is given (each app its own
   * registry), and every part of the app records into it.
   */
  metrics?: Metrics;
}
