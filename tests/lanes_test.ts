import assert from "node:assert/strict";
import { test } from "./helpers.ts";
import { desktopShot } from "./browser_service.ts";
import { isHeavy, LaneScreenshotter } from "../services/screenshots/lanes.ts";
import type {
  CaptureOptions,
  CaptureResult,
  Screenshotter,
} from "../services/screenshots/screenshotter.ts";

/** A screenshotter that records what it was given. */
class Recorder implements Screenshotter {
  taken: string[] = [];
  closed = false;
  constructor(readonly name: string, readonly up = true) {}
  capture(opts: CaptureOptions): Promise<CaptureResult> {
    this.taken.push(opts.url);
    return Promise.resolve({
      bytes: new Uint8Array([1]),
      width: 1,
      height: 1,
      title: this.name,
      url: opts.url,
      status: 200,
    });
  }
  queued() {
    return this.taken.length;
  }
  ready() {
    return Promise.resolve(this.up);
  }
  close() {
    this.closed = true;
    return Promise.resolve();
  }
}

const base = (over: Partial<CaptureOptions>): CaptureOptions => ({
  ...desktopShot("http://example.test/"),
  ...over,
});

test("a full page, a PDF, or more device pixels than the bound is heavy; a viewport or clip under it is light", () => {
  const bound = 4_000_000;
  assert.equal(isHeavy(base({}), bound), false);
  assert.equal(isHeavy(base({ fullPage: true }), bound), true);
  assert.equal(isHeavy(base({ format: "pdf" }), bound), true);
  const v = base({}).viewport;
  // 1280 × 720 at ratio 3: 8.3 M device pixels.
  assert.equal(
    isHeavy(base({ viewport: { ...v, deviceScaleFactor: 3 } }), bound),
    true,
  );
  assert.equal(
    isHeavy(base({ viewport: { ...v, width: 2000, height: 2000 } }), bound),
    false,
  );
  assert.equal(
    isHeavy(base({ viewport: { ...v, width: 2001, height: 2000 } }), bound),
    true,
  );
  // A clip counts its own area, not the viewport's.
  assert.equal(
    isHeavy(
      base({
        viewport: { ...v, width: 4000, height: 4000 },
        clip: { x: 0, y: 0, width: 100, height: 100 },
      }),
      bound,
    ),
    false,
  );
});

test("the lanes send heavy captures to the heavy browser and the rest to the light one, are ready only when both are, and close both", async () => {
  const light = new Recorder("light");
  const heavy = new Recorder("heavy");
  const lanes = new LaneScreenshotter(light, heavy, 4_000_000);
  assert.equal(
    (await lanes.capture(base({ url: "http://a.test/" }))).title,
    "light",
  );
  assert.equal(
    (await lanes.capture(base({ url: "http://b.test/", fullPage: true })))
      .title,
    "heavy",
  );
  assert.deepEqual(light.taken, ["http://a.test/"]);
  assert.deepEqual(heavy.taken, ["http://b.test/"]);
  assert.equal(lanes.queued(), 2);
  assert.equal(await lanes.ready(100), true);
  const down = new LaneScreenshotter(light, new Recorder("x", false), 1);
  assert.equal(await down.ready(100), false);
  await lanes.close();
  assert.ok(light.closed && heavy.closed);
});
