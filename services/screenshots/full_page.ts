/**
 * A full-page capture's size: the page scrolled through so lazy images load, measured,
 * and cut to the caps (CSS pixels tall and wide, device pixels in all).
 */
import type { Page } from "puppeteer-core";

/**
 * A full-page capture: scrolls through the page so lazy images load, lets the network
 * settle, then measures it; the clip when it is over a cap, else undefined.
 */
export async function measureFullPage(
  page: Page,
  caps: {
    /** Tallest, CSS pixels (16384). */
    maxFullPageHeight?: number;
    /** Widest, CSS pixels (16384). */
    maxFullPageWidth?: number;
    /** Most device pixels (100 M). */
    maxPixels?: number;
  },
) {
  const maxHeight = caps.maxFullPageHeight ?? 16_384;
  const maxWidth = caps.maxFullPageWidth ?? 16_384;
  await page.evaluate(async (cap: number) => {
    const step = Math.max(200, innerHeight * 0.8);
    for (
      let y = 0;
      y < Math.min(document.documentElement.scrollHeight, cap);
      y += step
    ) {
      scrollTo(0, y);
      await new Promise((r) => setTimeout(r, 60));
    }
    scrollTo(0, 0);
  }, maxHeight);
  await page.waitForNetworkIdle({ idleTime: 250, timeout: 3000 }).catch(
    () => {},
  );
  await page.evaluate(() =>
    Promise.all(
      Array.from(document.images).filter((i) => !i.complete).map((i) =>
        new Promise((r) => {
          i.onload = i.onerror = r;
        })
      ),
    )
  ).catch(() => {});
  const size = await page.evaluate(() => ({
    width: Math.max(
      document.documentElement.scrollWidth,
      document.body?.scrollWidth ?? 0,
    ),
    height: Math.max(
      document.documentElement.scrollHeight,
      document.body?.scrollHeight ?? 0,
    ),
  }));
  return fullPageClip(size, page.viewport()!, {
    maxWidth,
    maxHeight,
    maxPixels: caps.maxPixels ?? 100_000_000,
  });
}

/**
 * The clip of a full-page capture when the page is over a cap, else undefined (the whole
 * page is captured): at most `maxWidth` × `maxHeight` CSS pixels from the top left (and
 * 16384 device pixels wide), and at most `maxPixels` device pixels (the height gives way
 * first), so neither Chromium ("Page is too large") nor the image limits refuse it.
 */
export function fullPageClip(
  page: { width: number; height: number },
  viewport: { width: number; deviceScaleFactor?: number },
  caps: { maxWidth: number; maxHeight: number; maxPixels: number },
): { x: 0; y: 0; width: number; height: number } | undefined {
  const dpr = viewport.deviceScaleFactor ?? 1;
  // Also at most 16384 device pixels wide, the widest image Chromium encodes reliably.
  const width = Math.max(
    1,
    Math.min(page.width, caps.maxWidth, Math.floor(16_384 / dpr)),
  );
  let height = Math.max(1, Math.min(page.height, caps.maxHeight));
  const budget = Math.floor(caps.maxPixels / (width * dpr * dpr));
  if (height > budget) height = Math.max(1, budget);
  if (width === page.width && height === page.height) return undefined;
  return { x: 0, y: 0, width, height };
}
