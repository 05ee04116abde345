import type { Preset } from "./presets.ts";

/** Options of one capture, after validation and preset lookup. */
export interface CaptureOptions {
  url: string;
  viewport: Pick<
    Preset,
    "width" | "height" | "deviceScaleFactor" | "isMobile" | "hasTouch"
  >;
  userAgent?: string;
  format: "png" | "jpeg";
  fullPage: boolean;
  noAds: boolean;
  noCookie: boolean;
  colorScheme: "default" | "light" | "dark";
  zoom: number;
}

/** The encoded image of one capture. */
export interface CaptureResult {
  bytes: Uint8Array;
  width: number;
  height: number;
}

/** Takes screenshots; the local Chromium pool and a remote browser both fit behind it. */
export interface Screenshotter {
  capture(opts: CaptureOptions): Promise<CaptureResult>;
  /** True when a browser is connected, or can be within timeoutMs (readiness). */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}
