/**
 * The browser bundle of Uppy with its tus plugin that tests/uppy_test.ts loads in
 * Chromium (bundled by `deno bundle` at the test's start): Uppy's own client, not ours.
 */
import Uppy from "@uppy/core";
import Tus from "@uppy/tus";

const g = globalThis as Record<string, unknown>;
g.Uppy = Uppy;
g.UppyTus = Tus;
