import assert from "node:assert/strict";
import { test, testEnv, userWithKey } from "./helpers.ts";

/**
 * Facts about real devices, written down here from the makers' specifications and not
 * read from the service's own preset table, so a wrong entry in that table fails.
 * (CSS pixels and device pixel ratio.)
 */
const KNOWN: Record<
  string,
  { width: number; height: number; dpr: number; touch: boolean; ua: RegExp }
> = {
  "desktop-1080p": {
    width: 1920,
    height: 1080,
    dpr: 1,
    touch: false,
    ua: /Windows NT|Macintosh|X11/,
  },
  "desktop-720p": {
    width: 1280,
    height: 720,
    dpr: 1,
    touch: false,
    ua: /Chrome\//,
  },
  "iphone-se": { width: 375, height: 667, dpr: 2, touch: true, ua: /iPhone/ },
  "iphone-14": { width: 390, height: 844, dpr: 3, touch: true, ua: /iPhone/ },
  "iphone-14-pro": {
    width: 393,
    height: 852,
    dpr: 3,
    touch: true,
    ua: /iPhone/,
  },
  "ipad-mini": { width: 768, height: 1024, dpr: 2, touch: true, ua: /iPad/ },
  "pixel-7": {
    width: 412,
    height: 915,
    dpr: 2.625,
    touch: true,
    ua: /Android.*Pixel 7/,
  },
};

test("the preset list names the SPEC's examples with their real devices' sizes, ratios, touch and user agents; desktop-1080p is the default", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const res = await env.app.request("/api/1/screenshot/presets", {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    const presets: {
      id: string;
      width: number;
      height: number;
      deviceScaleFactor: number;
      hasTouch: boolean;
      userAgent?: string;
      default: boolean;
    }[] = (await res.json()).data;
    for (const [id, want] of Object.entries(KNOWN)) {
      const p = presets.find((x) => x.id === id);
      assert.ok(p, `${id} is offered`);
      assert.deepEqual(
        [p.width, p.height, p.deviceScaleFactor, p.hasTouch],
        [want.width, want.height, want.dpr, want.touch],
        id,
      );
      assert.match(p.userAgent ?? "", want.ua, id);
    }
    assert.deepEqual(presets.filter((p) => p.default).map((p) => p.id), [
      "desktop-1080p",
    ]);
    assert.equal(new Set(presets.map((p) => p.id)).size, presets.length);
  } finally {
    await env.close();
  }
});
