/**
 * Signs a transform URL with IMAGE_SIGNING_KEY, for values off IMAGE_WIDTHS and
 * IMAGE_QUALITIES: `IMAGE_SIGNING_KEY=… deno task sign-url "/aB3xK9pQ2m.jpg?w=333&format=webp"`
 * prints the same URL with its parameters in canonical order and `s` added.
 */
import {
  parseTransform,
  signingKey,
  transformQuery,
} from "../services/images/transforms.ts";

const secret = Deno.env.get("IMAGE_SIGNING_KEY");
const arg = Deno.args[0];
if (!secret || !arg) {
  console.error(
    'usage: IMAGE_SIGNING_KEY=… deno task sign-url "/<id>.<ext>?w=…&h=…&fit=…&format=…&q=…"',
  );
  Deno.exit(2);
}
const url = new URL(arg, "http://x");
// Every value is signed as given: the lists are what a signature is for going past.
const { transform } = parseTransform(url.pathname, url.searchParams, {
  widths: [],
  qualities: [],
});
const query = await transformQuery(
  url.pathname,
  transform,
  await signingKey(secret),
);
const base = /^https?:\/\//.test(arg) ? `${url.origin}` : "";
console.log(`${base}${url.pathname}?${query}`);
