import { testEnv, upload, userWithKey } from "./tests/helpers.ts";
import { formWith, makeFrameBombGif } from "./tests/fixtures.ts";
const env = await testEnv({
  env: {
    MAX_IMAGE_PIXELS: "2000000000",
    IMAGE_TIMEOUT_MS: "1000",
    IMAGE_WORKERS: "1",
    IMAGE_QUEUE: "0",
  },
});
const { key } = await userWithKey(env);
const g = makeFrameBombGif(4000, 4000, 90);
let t = performance.now();
let r = await upload(env, key, formWith([{ name: "b.gif", bytes: g }]));
console.log(
  "one",
  r.status,
  JSON.stringify(r.body.error),
  ((performance.now() - t) / 1000).toFixed(1),
  "s",
);
t = performance.now();
const two = await Promise.all(
  [1, 2].map((i) =>
    upload(
      env,
      key,
      formWith([{
        name: "b.gif",
        bytes: makeFrameBombGif(4000, 4000, 90 + i),
      }]),
    )
  ),
);
console.log(
  "two",
  two.map((x) => [x.status, x.body.error?.code, x.headers.get("retry-after")]),
  ((performance.now() - t) / 1000).toFixed(1),
  "s",
);
const env2 = await testEnv();
r = await upload(env2, key, formWith([{ name: "b.gif", bytes: g }]));
console.log("default", r.status, JSON.stringify(r.body.error));
await env.close();
await env2.close();
