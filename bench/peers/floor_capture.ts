/**
 * The floor of a cold capture: a bare puppeteer-core script, the service's Chromium and
 * flags, launch → page → viewport → goto (load) → PNG. Prints "done" when the image is in
 * hand (the benchmark times spawn → "done"), then closes the browser.
 * Usage: deno run -A bench/peers/floor_capture.ts <url> <chromium>
 */
import puppeteer from "puppeteer-core";
import { CHROMIUM_FLAGS } from "../../services/screenshots/chromium_launch.ts";

const [url, executablePath] = Deno.args;
const browser = await puppeteer.launch({
  executablePath,
  headless: true,
  args: [...CHROMIUM_FLAGS, ...(Deno.uid?.() === 0 ? ["--no-sandbox"] : [])],
});
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 720 });
await page.goto(url, { waitUntil: "load" });
const png = await page.screenshot({ type: "png" });
console.log(`done ${png.length}`);
await browser.close();
