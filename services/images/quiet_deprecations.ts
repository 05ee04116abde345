import process from "node:process";

/**
 * Silences Node's deprecation warnings from this module's evaluation until
 * {@link endQuiet}: imported just before sharp by sharp_module.ts, so that only sharp's
 * load is quiet (see there). Later deprecations are printed as usual.
 */
const before = process.noDeprecation;
process.noDeprecation = true;

/** Puts deprecation warnings back as they were before this module was evaluated. */
export function endQuiet(): void {
  process.noDeprecation = before;
}
