/**
 * What the screenshot benchmarks share: the fixture page, the Chromium they all use, and
 * the bare puppeteer capture that is their floor.
 */
import type { Browser } from "puppeteer-core";
import { findChromium } from "../services/screenshots/chromium_launch.ts";

/** The benchmark page: 24 gradient cards and a paragraph of text. */
export const SCREENSHOT_PAGE =
  `<!doctype html><html><head><style>body{font:16px sans-serif;margin:40px}
.card{display:inline-block;width:200px;height:120px;margin:8px;background:linear-gradient(#4af,#a4f);border-radius:12px}</style>
</head><body><h1>Benchmark page</h1>${
    '<div class="card"></div>'.repeat(24)
  }<p>${"Lorem ipsum ".repeat(200)}</p></body></html>`;

/** The Chromium to measure (CHROMIUM_PATH, else Debian's); exits with a hint without one. */
export function benchChromium(): string {
  const chromium = findChromium(Deno.env.get("CHROMIUM_PATH"));
  if (!chromium) {
    console.error(
      "needs Chromium: apt-get install -y chromium chromium-headless-shell",
    );
    Deno.exit(1);
  }
  return chromium;
}

/** The floor of a warm capture: new page, 1280×720, goto (load), PNG, close. */
export async function bareCapture(browser: Browser, url: string) {
  const p = await browser.newPage();
  try {
    await p.setViewport({ width: 1280, height: 720 });
    await p.goto(url, { waitUntil: "load" });
    await p.screenshot({ type: "png" });
  } finally {
    await p.close();
  }
}
