/**
 * sharp, loaded in this one place (the app's modules import it from here, never from
 * "sharp": tests/sharp_module_test.ts checks it). Its WebAssembly build (`--deny-ffi`,
 * Deno Deploy) writes a number into `process.env` as it loads (`VIPS_CONCURRENCY`, from
 * the emscripten glue), which Deno answered with a DEP0104 deprecation warning on stderr
 * at every start of the sandbox profile: a warning about a package's internals that an
 * operator can do nothing about. Deprecation warnings are silenced for that load only;
 * the value itself is stored as the string "1", which is what libvips reads.
 */
import "./quiet_deprecations.ts";
import sharp from "sharp";
import { endQuiet } from "./quiet_deprecations.ts";

endQuiet();

export default sharp;
