import type { Preset } from "../../schemas/presets.ts";

/** Options of one capture, after validation and preset lookup. */
export interface CaptureOptions {
  url: string;
  viewport: Pick<
    Preset,
    "width" | "height" | "deviceScaleFactor" | "isMobile" | "hasTouch"
  >;
  userAgent?: string;
  format: "png" | "jpeg" | "webp" | "pdf";
  /** jpeg and webp. */
  quality?: number;
  pdfPaper?: "A4" | "Letter";
  fullPage: boolean;
  selector?: string;
  clip?: { x: number; y: number; width: number; height: number };
  waitUntil?: "load" | "domcontentloaded" | "networkidle0" | "networkidle2";
  waitForSelector?: string;
  delay?: number;
  /** Whose capture it is (the account): slots are shared fairly among owners. */
  owner?: string;
  /** This capture's deadline in ms (at most the screenshotter's own). */
  timeoutMs?: number;
  /**
   * Stops the capture (its job was cancelled): it leaves the line, or its page is closed
   * as at its deadline; the capture rejects with the signal's reason.
   */
  signal?: AbortSignal;
  noAds: boolean;
  blockTrackers?: boolean;
  noCookie: boolean;
  hideSelectors?: string[];
  css?: string;
  js?: string;
  colorScheme: "default" | "light" | "dark";
  reducedMotion?: boolean;
  zoom: number;
  /** Sent with requests to the target's own origin only. */
  headers?: Record<string, string>;
  /** Set for the target URL's host. */
  cookies?: { name: string; value: string }[];
}

/** The encoded image (or PDF) of one capture, and what the page was. */
export interface CaptureResult {
  bytes: Uint8Array;
  width: number;
  height: number;
  title: string;
  /** The main document's final URL. */
  url: string;
  /** HTTP status of the final document; null when none was seen. */
  status: number | null;
}

/** Takes screenshots; the local Chromium pool and a remote browser both fit behind it. */
export interface Screenshotter {
  capture(opts: CaptureOptions): Promise<CaptureResult>;
  /** Captures waiting for a browser slot now (metrics). */
  queued?(): number;
  /** True when a browser is connected, or can be within timeoutMs (readiness). */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}
