/**
 * capture-website (npm, the peer users compare us with) on the same Chromium and flags:
 * its puppeteer downloads no browser (Deno runs no install scripts). Prints "done" when
 * the image is in hand. With `--repeat N --concurrency C` it captures N times with C at
 * once and prints the latencies as JSON instead.
 * Usage: deno run -A bench/peers/capture_website.ts <url> <chromium> [--repeat N --concurrency C]
 */
import captureWebsite from "capture-website";
import { CHROMIUM_FLAGS } from "../../services/screenshots/chromium_launch.ts";

const [url, executablePath] = Deno.args;
const opt = (name: string, def: number) => {
  const i = Deno.args.indexOf(name);
  return i < 0 ? def : Number(Deno.args[i + 1]);
};
const capture = () =>
  captureWebsite.buffer(url, {
    width: 1280,
    height: 720,
    launchOptions: {
      executablePath,
      args: [
        ...CHROMIUM_FLAGS,
        ...(Deno.uid?.() === 0 ? ["--no-sandbox"] : []),
      ],
    },
  });
const repeat = opt("--repeat", 0);
if (!repeat) {
  const png = await capture();
  console.log(`done ${png.length}`);
} else {
  const lat: number[] = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: opt("--concurrency", 1) }, async () => {
      while (next++ < repeat) {
        const s = performance.now();
        await capture();
        lat.push(performance.now() - s);
      }
    }),
  );
  console.log(
    JSON.stringify({ lat, seconds: (performance.now() - t0) / 1000 }),
  );
}
