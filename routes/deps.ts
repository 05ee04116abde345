/**
 * What createApp is given (AppDeps). The composition (server/composition.ts) builds it and
 * the app and its routes read it; it lives beside the routes so that neither they nor the
 * services ever import the composition back. Services take the narrower slices they use.
 */
import type { Config } from "../schemas/config.ts";
import type { Database } from "../services/db/database.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import type { Screenshotter } from "../services/screenshots/screenshotter.ts";
import type { Clock } from "../services/runtime/clock.ts";
import type { Logger } from "../services/runtime/logger.ts";
import type { Metrics } from "../services/metrics/metrics.ts";

/**
 * The one thing the app asks of the process's life: whether it is draining (SIGTERM), so
 * /readyz says 503 and kept-alive connections are asked to close. server/lifecycle.ts's
 * Lifecycle is the implementation main.ts passes.
 */
export interface DrainState {
  readonly draining: boolean;
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
  /** Set by main.ts: on SIGTERM the app drains (see server/lifecycle.ts). Tests may pass their own. */
  lifecycle?: DrainState;
  /**
   * The app's metrics; createApp makes one when none is given (each app its own
   * registry), and every part of the app records into it.
   */
  metrics?: Metrics;
}
