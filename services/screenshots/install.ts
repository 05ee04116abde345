import type { Logger } from "../runtime/logger.ts";

/** The project's one list of system packages (Chromium, fonts, socat). */
export const INSTALL_SCRIPT =
  new URL("../../scripts/install_system.sh", import.meta.url).pathname;

/**
 * First run on a fresh machine: when no Chromium is installed, installs Debian's
 * chromium-headless-shell and the fonts pages need, through the same script CI and the
 * Dockerfile run, so `deno task start` is the whole set-up. Without root or apt-get it only
 * says which command fixes it. True when a Chromium may now be found.
 */
export async function installChromium(
  log: Logger,
  can: { root: boolean; apt: boolean } = {
    root: Deno.uid?.() === 0,
    apt: hasAptGet(),
  },
): Promise<boolean> {
  if (!can.root || !can.apt) {
    log.info({
      msg:
        `screenshots unavailable: no Chromium found. Fix: sudo bash ${INSTALL_SCRIPT} runtime ` +
        `(or set CHROMIUM_PATH, BROWSER_WS_ENDPOINT, or SCREENSHOTS=off)`,
    });
    return false;
  }
  log.info({
    msg:
      "Chromium not found: installing chromium-headless-shell and fonts with apt-get (first run only)",
  });
  const out = await new Deno.Command("bash", {
    args: [INSTALL_SCRIPT, "runtime"],
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) {
    log.error({ msg: "Chromium install failed; screenshots answer 240" });
  }
  return out.success;
}

function hasAptGet(): boolean {
  try {
    return Deno.statSync("/usr/bin/apt-get").isFile;
  } catch {
    return false;
  }
}
