import assert from "node:assert/strict";
import { createClient } from "@hey-api/openapi-ts";
import { test, testEnv, userWithKey } from "./helpers.ts";
import { makeImage } from "./fixtures.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { Buffer } from "node:buffer";

/**
 * A program written against a client that @hey-api/openapi-ts (a generator the SDK does not
 * use) makes from the committed openapi.yaml. `deno run --check` compiles it under strict
 * first: the type assertions at its top fail the compile if an operation's error codes are
 * typed as a plain number, or the upload answer cannot be told apart by `kind`.
 */
const DRIVER = `
import { client } from "./client.gen.ts";
import { deleteImage, getImage, postScreenshot, postUpload } from "./sdk.gen.ts";
import type { GetImageErrors, PostUploadResponses } from "./types.gen.ts";

type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type GetImageCode = GetImageErrors[keyof GetImageErrors]["error"]["code"];
const codesTyped: Exact<GetImageCode, 100 | 110 | 120 | 160 | 170 | 250 | 403 | 404 | 405 | 500> = true;
type Answer = PostUploadResponses[200]["data"];
const kindsTyped: Exact<Answer["kind"], "image" | "batch"> = true;

const [base, key, png, page] = Deno.args;
// The generator's own way to give the key: it puts it where each operation's security says.
client.setConfig({ baseUrl: base, auth: key });
const out: Record<string, unknown> = { codesTyped, kindsTyped };

const up = await postUpload({ body: { image: png, title: "generated" } });
if (!up.data) throw new Error("upload: " + JSON.stringify(up.error));
const rec = up.data.data;
if (rec.kind !== "image") throw new Error("one image, not a batch");
out.upload = { kind: rec.kind, title: rec.title, width: rec.width, medium: rec.medium.url };

const got = await getImage({ path: { id: rec.id } });
if (!got.data) throw new Error("get: " + JSON.stringify(got.error));
out.sameUrl = got.data.data.url === rec.url;

const del = await deleteImage({ path: { id: rec.id } });
out.deleted = del.data?.data.deleted;

const gone = await getImage({ path: { id: rec.id } });
if (gone.error) {
  const code: GetImageCode = gone.error.error.code;
  out.goneCode = code;
  out.goneStatus = gone.response?.status;
}

const shot = await postScreenshot({ body: { url: page, share: false, format: "png" } });
if (!shot.data) throw new Error("screenshot: " + JSON.stringify(shot.error));
out.shot = {
  width: shot.data.data.width,
  inline: shot.data.data.display_url.startsWith("data:image/png;base64,"),
};

const bad = await postScreenshot({ body: { url: "ftp://x/" } });
out.badScreenshotCode = bad.error?.error.code;
console.log(JSON.stringify(out));
`;

test("a client made by a second generator (@hey-api/openapi-ts) from openapi.yaml compiles under strict and round-trips upload → record → delete → screenshot against a live server, its error branch typed by code, the key given once and sent in Authorization alone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-genclient-" });
  const fixture = startFixture({
    "/page": `<!doctype html><body style="background:#08f"><h1>hi</h1></body>`,
  });
  const shooter = testScreenshotter(`127.0.0.1:${fixture.port}`, {
    concurrency: 1,
    queueMax: 4,
    recycleAfter: 100,
    timeoutMs: 20_000,
  });
  const env = await testEnv({
    screenshotter: shooter,
    env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}` },
  });
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => {
    // Where the key travelled: it should be in Authorization alone.
    const u = new URL(req.url);
    const places = [
      ...(u.searchParams.has("key") ? ["?key="] : []),
      ...["x-api-key", "cookie", "x-csrf-token"].filter((h) =>
        req.headers.has(h)
      ),
    ];
    if (places.length) leaks.push(`${req.method} ${u.pathname}: ${places}`);
    if (req.headers.get("authorization")) bearer++;
    return env.app.fetch(req);
  });
  const leaks: string[] = [];
  let bearer = 0;
  try {
    await createClient({
      input: new URL("../openapi.yaml", import.meta.url).pathname,
      output: { path: dir, importFileExtension: ".ts" },
      logs: { level: "silent" },
    });
    await Deno.writeTextFile(`${dir}/driver.ts`, DRIVER);
    const { key } = await userWithKey(env);
    const png = Buffer.from(await makeImage("png", { width: 64 })).toString(
      "base64",
    );
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--check",
        `--allow-net=127.0.0.1:${server.addr.port}`,
        `${dir}/driver.ts`,
        `http://127.0.0.1:${server.addr.port}`,
        key,
        png,
        `${fixture.origin}/page`,
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assert.equal(run.code, 0, stderr);
    const out = JSON.parse(new TextDecoder().decode(run.stdout));
    assert.deepEqual(out, {
      codesTyped: true,
      kindsTyped: true,
      upload: {
        kind: "image",
        title: "generated",
        width: 64,
        medium: out.upload.medium,
      },
      sameUrl: true,
      deleted: true,
      goneCode: 404,
      goneStatus: 404,
      shot: { width: 1920, inline: true },
      badScreenshotCode: 200,
    });
    assert.match(out.upload.medium, /^http:\/\/localhost:8080\/[\w-]+\.png$/);
    // Each operation lists bearer alone (the site's session is not an API scheme): with
    // `auth` set, hey-api sent the key in Authorization, X-API-Key, a cookie, X-CSRF-Token
    // and ?key= at once.
    assert.deepEqual(leaks, []);
    assert.equal(bearer, 6, "every call carried Authorization");
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await shooter.close();
    await fixture.close();
    await Deno.remove(dir, { recursive: true });
  }
});
