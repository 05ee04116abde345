/**
 * services/metrics/ — what the operator scrapes (issue #47): one prom-client registry per
 * app, labelled by route template (never the raw path) and other bounded values
 * (DESIGN.md "Operating in public"), served as Prometheus text at /metrics behind
 * METRICS_TOKEN and/or on METRICS_LISTEN.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { FastCounter, FastHistogram } from "./request_stats.ts";

/** Where the gauges read their values at scrape time (each optional). */
export interface MetricSources {
  /** PostgreSQL's pool (absent on the embedded database). */
  pool?: () => { inUse: number; waiting: number };
  /** Captures waiting for a browser slot. */
  captureQueue?: () => number;
  /** Bytes of keyless bodies held until their key comes (key_hold.ts). */
  heldBytes?: () => number;
}

const SECONDS = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
];
const CAPTURE_SECONDS = [0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60];

/** Bounded label values: an unknown method is "OTHER". */
const METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);

/**
 * The service's metrics. Each app has its own registry (tests run many apps in one
 * process); the hot paths bind their label sets once and only add to them.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new FastCounter(
    "imagehost_http_requests_total",
    "HTTP requests answered, by route template, method and status",
  );
  readonly #duration = new FastHistogram(
    "imagehost_http_request_duration_seconds",
    "Time to the answer's headers, by route template and method",
    SECONDS,
  );
  readonly #uploads: Counter<"source">;
  readonly #uploadBytes: Counter<"source">;
  readonly #variants: Counter<"result">;
  readonly #captures: Counter<"result">;
  readonly #captureSeconds: Histogram<"result">;
  readonly #storeErrors: Counter<"op">;
  /**
   * A request's two label-set keys by route, method and status, made once each: nested
   * maps on the strings the router and the request already hold, so a request builds no
   * string (a concatenated key cost ~0.1 µs of a ~0.3 µs record).
   */
  readonly #keys = new Map<
    string,
    Map<string, Map<number, [string, string]>>
  >();
  #keyCount = 0;
  #sources: MetricSources = {};
  #lagSeconds = 0;
  #lagTimer?: ReturnType<typeof setInterval>;

  /** False: nothing is recorded (METRICS=off); every record call returns at once. */
  readonly enabled: boolean;

  constructor(enabled = true) {
    this.enabled = enabled;
    const registers = [this.registry];
    this.registry.registerMetric(this.#requests as never);
    this.registry.registerMetric(this.#duration as never);
    this.#uploads = new Counter({
      name: "imagehost_uploads_total",
      help:
        "Images stored (duplicates not counted), by source: upload or screenshot",
      labelNames: ["source"],
      registers,
    });
    this.#uploadBytes = new Counter({
      name: "imagehost_upload_bytes_total",
      help: "Bytes of the originals stored, by source",
      labelNames: ["source"],
      registers,
    });
    this.#variants = new Counter({
      name: "imagehost_variants_total",
      help:
        "Variant requests: made (encoded now) or hit (served from the store or memory)",
      labelNames: ["result"],
      registers,
    });
    this.#captures = new Counter({
      name: "imagehost_captures_total",
      help: "Screenshots taken, by result: ok, or the error code of a failure",
      labelNames: ["result"],
      registers,
    });
    this.#captureSeconds = new Histogram({
      name: "imagehost_capture_duration_seconds",
      help: "Time of a capture in the browser, by result",
      labelNames: ["result"],
      buckets: CAPTURE_SECONDS,
      registers,
    });
    this.#storeErrors = new Counter({
      name: "imagehost_store_errors_total",
      help: "Store operations that failed, by operation",
      labelNames: ["op"],
      registers,
    });
    const gauge = (
      name: string,
      help: string,
      read: () => number | undefined,
    ) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const v = read();
          if (v !== undefined) this.set(v);
        },
      });
    gauge(
      "imagehost_db_pool_in_use",
      "PostgreSQL connections handed out (0 on the embedded database)",
      () => this.#sources.pool?.().inUse ?? 0,
    );
    gauge(
      "imagehost_db_pool_waiting",
      "Requests waiting for a PostgreSQL connection",
      () => this.#sources.pool?.().waiting ?? 0,
    );
    gauge(
      "imagehost_capture_queue_length",
      "Captures waiting for a browser slot",
      () => this.#sources.captureQueue?.() ?? 0,
    );
    gauge(
      "imagehost_keyless_held_bytes",
      "Bytes of bodies held until their key arrives",
      () => this.#sources.heldBytes?.() ?? 0,
    );
    gauge(
      "process_resident_memory_bytes",
      "Resident memory size in bytes",
      () => Deno.memoryUsage().rss,
    );
    gauge(
      "process_heap_used_bytes",
      "V8 heap in use, bytes",
      () => Deno.memoryUsage().heapUsed,
    );
    gauge(
      "process_heap_total_bytes",
      "V8 heap reserved, bytes",
      () => Deno.memoryUsage().heapTotal,
    );
    gauge(
      "process_external_memory_bytes",
      "Memory of ArrayBuffers and other objects outside the V8 heap (request bodies, image bytes), bytes",
      () => Deno.memoryUsage().external,
    );
    gauge(
      "imagehost_event_loop_lag_seconds",
      "How late a 500 ms timer fired, most recently",
      () => this.#lagSeconds,
    );
  }

  /** Sets where the gauges read from (what the app has: pool, browser, holds). */
  bind(sources: MetricSources): void {
    this.#sources = { ...this.#sources, ...sources };
  }

  /**
   * Measures the event loop's lag: a timer every 500 ms, how late it ran. Unref'd, so it
   * never keeps a process alive.
   */
  start(): void {
    if (this.#lagTimer !== undefined) return;
    let expected = performance.now() + 500;
    this.#lagTimer = setInterval(() => {
      const now = performance.now();
      this.#lagSeconds = Math.max(0, now - expected) / 1000;
      expected = now + 500;
    }, 500);
    Deno.unrefTimer(this.#lagTimer as unknown as number);
  }

  /** One answered request: its route template, method, status and seconds taken. */
  request(
    route: string,
    method: string,
    status: number,
    seconds: number,
  ): void {
    if (!this.enabled) return;
    const m = METHODS.has(method) ? method : "OTHER";
    let byMethod = this.#keys.get(route);
    if (!byMethod) this.#keys.set(route, byMethod = new Map());
    let byStatus = byMethod.get(m);
    if (!byStatus) byMethod.set(m, byStatus = new Map());
    let keys = byStatus.get(status);
    if (!keys) {
      // Bounded: routes are the app's, methods seven, statuses the error table's.
      if (++this.#keyCount > 5000) {
        this.#keys.clear();
        this.#keyCount = 0;
      }
      keys = [`${route}\u0000${m}\u0000${status}`, `${route}\u0000${m}`];
      byStatus.set(status, keys);
    }
    this.#requests.inc(
      keys[0],
      () => ({ route, method: m, status: String(status) }),
    );
    this.#duration.observe(keys[1], () => ({ route, method: m }), seconds);
  }

  /** An image stored. */
  stored(source: string, bytes: number): void {
    if (!this.enabled) return;
    const s = source === "screenshot" ? "screenshot" : "upload";
    this.#uploads.labels(s).inc();
    this.#uploadBytes.labels(s).inc(bytes);
  }

  /** A variant request: made now, or a hit. */
  variant(result: "made" | "hit"): void {
    if (!this.enabled) return;
    this.#variants.labels(result).inc();
  }

  /** A capture's end: ok, or the code it failed with. */
  capture(result: string, seconds: number): void {
    if (!this.enabled) return;
    this.#captures.labels(result).inc();
    this.#captureSeconds.labels(result).observe(seconds);
  }

  /** A store operation that failed. */
  storeError(op: string): void {
    if (!this.enabled) return;
    this.#storeErrors.labels(op).inc();
  }

  /** The Prometheus text exposition. */
  async text(): Promise<string> {
    return await this.registry.metrics();
  }

  /** The exposition's Content-Type. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
