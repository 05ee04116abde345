import assert from "node:assert/strict";
import { createClient } from "@hey-api/openapi-ts";
import { test, testEnv, upload, userWithKey } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";
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
import { deleteImage, getImage, postScreenshot, postUpload, postUploadEncoded } from "./sdk.gen.ts";
import type { GetImageErrors, PostUploadResponses } from "./types.gen.ts";

type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type GetImageCode = GetImageErrors[keyof GetImageErrors]["error"]["code"];
const codesTyped: Exact<GetImageCode, 100 | 110 | 120 | 160 | 170 | 250 | 403 | 404 | 405 | 500> = true;
type Answer = PostUploadResponses[200]["data"];
const kindsTyped: Exact<Answer["kind"], "image" | "batch"> = true;

const [base, key, png, page, catUrl, jpeg] = Deno.args;
// The generator's own way to give the key, for the one scheme it should go in: given as
// a string, hey-api puts it in every place an operation's security lists (docs/api.md).
client.setConfig({
  baseUrl: base,
  auth: (scheme) => scheme.scheme === "bearer" ? key : undefined,
});
const out: Record<string, unknown> = { codesTyped, kindsTyped };

/** One upload's record, or the error that stopped it. */
function record(r: Awaited<ReturnType<typeof postUpload>>, what: string) {
  if (!r.data) throw new Error(what + ": " + JSON.stringify(r.error));
  if (r.data.data.kind !== "image") throw new Error(what + ": one image, not a batch");
  return r.data.data;
}

// A file, a base64 string and a URL, each as the generated types have them: no cast, no
// header set by hand.
const bytes = Uint8Array.from(atob(png), (ch) => ch.charCodeAt(0));
const file = new File([bytes], "file.png", { type: "image/png" });
const rec = record(await postUpload({ body: { images: [file], title: "generated" } }), "file");
out.upload = { kind: rec.kind, title: rec.title, width: rec.width, medium: rec.medium.url };
const asText = record(await postUpload({ body: { source: [png] } }), "base64");
out.base64 = { sameImage: asText.id === rec.id, duplicate: asText.duplicate };
out.url = record(await postUpload({ body: { source: [catUrl] } }), "url").width;
// The urlencoded/JSON operation (ImgBB's path): hey-api sends it as JSON.
const enc = await postUploadEncoded({ body: { image: jpeg, name: "encoded" } });
if (!enc.data || enc.data.data.kind !== "image") throw new Error("encoded: " + JSON.stringify(enc.error));
out.encoded = { title: enc.data.data.title, mime: enc.data.data.image.mime };

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
// The operation also answers 202 with a job (async: true): the status tells them apart.
if (shot.data.status !== 200) throw new Error("screenshot: queued, not taken");
out.shot = {
  width: shot.data.data.width,
  inline: shot.data.data.display_url.startsWith("data:image/png;base64,"),
};

const bad = await postScreenshot({ body: { url: "ftp://x/" } });
out.badScreenshotCode = bad.error?.error.code;
console.log(JSON.stringify(out));
`;

test("a client made by a second generator (@hey-api/openapi-ts) from openapi.yaml compiles under strict and uploads a file, a base64 string and a URL through postUpload (multipart) and base64 through postUploadEncoded (JSON) with no cast or hand-set header, then round-trips record → delete → screenshot against a live server, its error branch typed by code, the key given once and sent in Authorization alone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-genclient-" });
  const cat = await makeImage("png", { width: 48 });
  const fixture = startFixture({
    "/page": `<!doctype html><body style="background:#08f"><h1>hi</h1></body>`,
    "/cat.png": () => new Response(cat as Uint8Array<ArrayBuffer>),
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
        `${fixture.origin}/cat.png`,
        Buffer.from(await makeImage("jpeg", { width: 30 })).toString("base64"),
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
      base64: { sameImage: true, duplicate: true },
      url: 48,
      encoded: { title: "encoded", mime: "image/jpeg" },
      sameUrl: true,
      deleted: true,
      goneCode: 404,
      goneStatus: 404,
      shot: { width: 1920, inline: true },
      badScreenshotCode: 200,
    });
    assert.match(out.upload.medium, /^http:\/\/localhost:8080\/[\w-]+\.png$/);
    // Each operation lists bearer, X-API-Key and ?key= as alternatives; given `auth` as a
    // function of the scheme, hey-api sends the key once, in Authorization.
    assert.deepEqual(leaks, []);
    assert.equal(bearer, 9, "every call carried Authorization");
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await shooter.close();
    await fixture.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A program against orval's fetch client made from openapi.yaml: a file, a base64 string
 * and a URL through `postUpload`, typed as orval types them, with no cast and no header
 * but the key's. `deno run --check` compiles it under strict first.
 */
const ORVAL_DRIVER = `
import { getImage, postScreenshot, postScreenshotFile, postUpload } from "./api.ts";

// A capture's record is typed as JSON, its file as a Blob (issue #51: with the bytes and
// the record under one operation, orval typed both as a Blob and read JSON as one).
type Ok<F extends (...a: never[]) => unknown> =
  Extract<Awaited<ReturnType<F>>, { status: 200 }> extends { data: infer D } ? D : never;
const shotIsJson: Ok<typeof postScreenshot> extends Blob ? false : true = true;
const fileIsBlob: Ok<typeof postScreenshotFile> extends Blob ? true : false = true;
const shotUrl = (d: Ok<typeof postScreenshot>) => d.data.width;

const [key, png, catUrl] = Deno.args;
const auth: RequestInit = { headers: { Authorization: "Bearer " + key } };

/** The record of a one-image upload, or the error that stopped it. */
function record(r: Awaited<ReturnType<typeof postUpload>>, what: string) {
  if (r.status !== 200 || typeof r.data === "string" || r.data.data.kind !== "image") {
    throw new Error(what + ": " + r.status + " " + JSON.stringify(r.data));
  }
  return r.data.data;
}

const bytes = Uint8Array.from(atob(png), (ch) => ch.charCodeAt(0));
const file = new File([bytes], "orval.png", { type: "image/png" });
const a = record(await postUpload({ images: [file], title: "orval" }, undefined, auth), "file");
const b = record(await postUpload({ source: [png] }, undefined, auth), "base64");
const c = record(await postUpload({ source: [catUrl] }, { format: "json" }, auth), "url");
const got = await getImage(a.id, auth);
console.log(JSON.stringify({
  file: { title: a.title, width: a.width },
  base64: { sameImage: b.id === a.id, duplicate: b.duplicate },
  url: c.width,
  read: got.status === 200 && got.data.data.id === a.id,
  typed: shotIsJson && fileIsBlob && typeof shotUrl === "function",
}));
`;

test("a client made by orval (fetch) from openapi.yaml compiles under strict, types a capture's record as JSON and its file as a Blob, and uploads a file, a base64 string and a URL through postUpload (multipart) with no cast and no hand-set content type, against a live server", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-orval-" });
  const cat = await makeImage("png", { width: 52 });
  const fixture = startFixture({
    "/cat.png": () => new Response(cat as Uint8Array<ArrayBuffer>),
  });
  const env = await testEnv({
    env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}` },
  });
  const ac = new AbortController();
  const contentTypes: string[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => {
    if (req.method === "POST") {
      contentTypes.push(req.headers.get("content-type")?.split(";")[0] ?? "");
    }
    return env.app.fetch(req);
  });
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    await Deno.writeTextFile(
      `${dir}/orval.config.cjs`,
      `module.exports = { api: { input: { target: ${
        JSON.stringify(new URL("../openapi.yaml", import.meta.url).pathname)
      } }, output: { target: "./api.ts", client: "fetch", mode: "single", baseUrl: ${
        JSON.stringify(base)
      } } } };`,
    );
    const gen = await new Deno.Command("npx", {
      args: ["-y", "orval@8.38.0", "--config", "orval.config.cjs"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(gen.success, new TextDecoder().decode(gen.stderr));
    await Deno.writeTextFile(`${dir}/driver.ts`, ORVAL_DRIVER);
    const { key } = await userWithKey(env);
    const png = Buffer.from(await makeImage("png", { width: 70 })).toString(
      "base64",
    );
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--check",
        `--allow-net=127.0.0.1:${server.addr.port}`,
        `${dir}/driver.ts`,
        key,
        png,
        `${fixture.origin}/cat.png`,
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(run.stdout)), {
      file: { title: "orval", width: 70 },
      base64: { sameImage: true, duplicate: true },
      url: 52,
      read: true,
      typed: true,
    });
    // orval sent each upload as multipart, with the boundary fetch chose.
    assert.deepEqual(contentTypes, [
      "multipart/form-data",
      "multipart/form-data",
      "multipart/form-data",
    ]);
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await fixture.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A program against swagger-typescript-api's client: reads a record, typed. */
const STA_DRIVER = `
import { Api } from "./api.ts";
const [base, key, id] = Deno.args;
const api = new Api({ baseUrl: base, baseApiParams: { headers: { Authorization: "Bearer " + key } } });
const got = await api.api.getImage(id);
const title: string = got.data.data.title;
console.log(JSON.stringify({ status: got.status, title }));
`;

test("a client made by a third generator (swagger-typescript-api) reads openapi.yaml (no YAML aliases, every route), compiles under strict and reads a record against a live server", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-sta-" });
  const env = await testEnv();
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => env.app.fetch(req));
  try {
    const gen = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "npm:swagger-typescript-api",
        "generate",
        "-p",
        new URL("../openapi.yaml", import.meta.url).pathname,
        "-o",
        dir,
        "-n",
        "api.ts",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(gen.success, new TextDecoder().decode(gen.stderr));
    const api = await Deno.readTextFile(`${dir}/api.ts`);
    for (
      const route of [
        "POST:/i/{id}",
        "POST:/a/{id}",
        "POST:/api/1/screenshot/file",
      ]
    ) {
      assert.ok(api.includes(`@request ${route}`), route);
    }
    await Deno.writeTextFile(`${dir}/driver.ts`, STA_DRIVER);
    const { key } = await userWithKey(env);
    const up = await upload(
      env,
      key,
      formWith([{
        name: "sta.png",
        bytes: await makeImage("png", { width: 40 }),
      }]),
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
        up.body.data.id,
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(run.stdout)), {
      status: 200,
      title: "sta.png",
    });
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await Deno.remove(dir, { recursive: true });
  }
});
