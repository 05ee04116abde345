/** A viewport preset: CSS size, device pixel ratio, mobile/touch and user agent. */
export interface Preset {
  id: string;
  label: string;
  width: number;
  height: number;
  deviceScaleFactor: number;
  isMobile: boolean;
  hasTouch: boolean;
  userAgent?: string;
}

const CHROME_DESKTOP =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36";
const IOS = (v: string) =>
  `Mozilla/5.0 (iPhone; CPU iPhone OS ${v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${
    v.split("_")[0]
  }.0 Mobile/15E148 Safari/604.1`;
const IPAD =
  "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";
const ANDROID = (model: string) =>
  `Mozilla/5.0 (Linux; Android 14; ${model}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36`;

const desktop = (
  id: string,
  label: string,
  width: number,
  height: number,
): Preset => ({
  id,
  label,
  width,
  height,
  deviceScaleFactor: 1,
  isMobile: false,
  hasTouch: false,
  userAgent: CHROME_DESKTOP,
});

/** The one table of screenshot presets; the first is the default. */
export const PRESETS: readonly Preset[] = [
  desktop("desktop-1080p", "Desktop 1920×1080", 1920, 1080),
  desktop("desktop-720p", "Desktop 1280×720", 1280, 720),
  desktop("desktop-1440p", "Desktop 2560×1440", 2560, 1440),
  desktop("desktop-4k", "Desktop 3840×2160", 3840, 2160),
  desktop("laptop", "Laptop 1366×768", 1366, 768),
  {
    id: "iphone-se",
    label: "iPhone SE",
    width: 375,
    height: 667,
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    userAgent: IOS("15_0"),
  },
  {
    id: "iphone-14",
    label: "iPhone 14",
    width: 390,
    height: 844,
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    userAgent: IOS("16_0"),
  },
  {
    id: "iphone-14-pro",
    label: "iPhone 14 Pro",
    width: 393,
    height: 852,
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    userAgent: IOS("16_0"),
  },
  {
    id: "iphone-14-pro-max",
    label: "iPhone 14 Pro Max",
    width: 430,
    height: 932,
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    userAgent: IOS("16_0"),
  },
  {
    id: "iphone-15-pro",
    label: "iPhone 15 Pro",
    width: 393,
    height: 852,
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    userAgent: IOS("17_0"),
  },
  {
    id: "pixel-7",
    label: "Google Pixel 7",
    width: 412,
    height: 915,
    deviceScaleFactor: 2.625,
    isMobile: true,
    hasTouch: true,
    userAgent: ANDROID("Pixel 7"),
  },
  {
    id: "galaxy-s23",
    label: "Samsung Galaxy S23",
    width: 360,
    height: 780,
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    userAgent: ANDROID("SM-S911B"),
  },
  {
    id: "ipad-mini",
    label: "iPad mini",
    width: 768,
    height: 1024,
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    userAgent: IPAD,
  },
  {
    id: "ipad-air",
    label: "iPad Air",
    width: 820,
    height: 1180,
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    userAgent: IPAD,
  },
  {
    id: "ipad-pro",
    label: "iPad Pro 12.9",
    width: 1024,
    height: 1366,
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    userAgent: IPAD,
  },
];

/** Preset ids, in table order, for the request schema's enum. */
export const PRESET_IDS = PRESETS.map((p) => p.id) as [string, ...string[]];

/** The preset with this id (ids are validated by the schema first). */
export function presetById(id: string): Preset {
  const p = PRESETS.find((x) => x.id === id);
  if (!p) throw new Error(`unknown preset ${id}`);
  return p;
}
