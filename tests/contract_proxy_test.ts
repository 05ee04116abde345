import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { parse } from "yaml";
import { test, testEnv, userWithKey, waitUntilAsync } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { startFixture } from "./fixture_server.ts";
import { testScreenshotter } from "./browser_service.ts";
import { freePort } from "./pg_cluster.ts";
import Ajv2020 from "ajv/dist/2020.js";

/**
 * The service's exchanges through Stoplight Prism's validating proxy (issue #51: a tester
 * ran 289 exchanges through it and found undeclared keys, statuses and headers). Prism
 * checks every request and answer against openapi.yaml and names each violation in an
 * log line; beside that, each answer's own headers are checked against those the document
 * declares for that operation and status. Prism's proxy re-encodes binary request bodies
 * as text (stoplightio/prism#2349, open), so requests carrying a file part go to the
 * service directly and their JSON answers are checked against the documented schema here
 * (Ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses).
 */

// deno-lint-ignore no-explicit-any
type Doc = any;

/** Headers any HTTP answer may carry without an API documenting them. */
const GENERIC = new Set([
  "content-type",
  "content-length",
  "date",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "vary",
  "access-control-allow-origin",
  "access-control-expose-headers",
  "access-control-allow-credentials",
  "sl-violations",
  // Prism's own CORS answer.
  "access-control-allow-headers",
  "access-control-allow-methods",
  "x-powered-by",
  // The security headers every answer carries (the document's description says so).
  "content-security-policy",
  "cross-origin-opener-policy",
  "cross-origin-resource-policy",
  "origin-agent-cluster",
  "referrer-policy",
  "strict-transport-security",
  "x-content-type-options",
  "x-dns-prefetch-control",
  "x-download-options",
  "x-frame-options",
  "x-permitted-cross-domain-policies",
  "x-xss-protection",
]);

/** The document's operation for a method and a concrete path, with its template. */
function operationOf(doc: Doc, method: string, path: string) {
  const candidates = Object.keys(doc.paths).map((t) => ({
    t,
    re: new RegExp(
      "^" + t.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+") + "$",
    ),
    literal: t.replace(/\{[^}]+\}/g, "").length,
  })).filter((c) => c.re.test(path)).sort((a, b) => b.literal - a.literal);
  for (const c of candidates) {
    const op = doc.paths[c.t][method.toLowerCase()];
    if (op) return { template: c.t, op };
  }
  return undefined;
}

/** The headers an answer carries that its operation does not declare for its status. */
function undeclaredHeaders(
  doc: Doc,
  method: string,
  path: string,
  res: Response,
): string[] {
  const found = operationOf(doc, method === "HEAD" ? "head" : method, path);
  if (!found) return [`no operation for ${method} ${path}`];
  const response = found.op.responses[String(res.status)] ??
    found.op.responses.default;
  if (!response) return [`status ${res.status} not declared`];
  const deref = (r: Doc) =>
    r.$ref
      ? r.$ref.replace(/^#\//, "").split("/").reduce(
        (o: Doc, k: string) => o[k],
        doc,
      )
      : r;
  const declared = new Set(
    Object.keys(deref(response).headers ?? {}).map((h) => h.toLowerCase()),
  );
  return [...res.headers.keys()].filter((h) =>
    !GENERIC.has(h) && !declared.has(h)
  );
}

test("every exchange through Prism's validating proxy (keys in each accepted place, uploads of each body, files with ranges and revalidation, transform URLs, password pages, albums, guest uploads, captures, and their errors) has no violation and no undeclared header", async () => {
  const doc = parse(
    await Deno.readTextFile(new URL("../openapi.yaml", import.meta.url)),
  );
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
    env: {
      FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}`,
      GUEST_UPLOADS: "on",
      MAX_FILE_BYTES: String(2 * 1024 * 1024),
    },
  });
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: () => {},
  }, (req) => env.app.fetch(req));
  const port = freePort();
  const prism = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "npm:@stoplight/prism-cli",
      "proxy",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--errors",
      "false",
      new URL("../openapi.yaml", import.meta.url).pathname,
      `http://127.0.0.1:${server.addr.port}`,
    ],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const prismOut = Promise.all([
    new Response(prism.stdout).text(),
    new Response(prism.stderr).text(),
  ]);
  const base = `http://127.0.0.1:${port}`;
  const problems: string[] = [];
  const log: { where: string; invalid: boolean }[] = [];
  let exchanges = 0;
  /** One exchange through the proxy; its answer, body read. */
  // deno-lint-ignore no-explicit-any
  const ajv = new (Ajv2020 as any)({
    strict: false,
    allErrors: true,
    validateFormats: false,
    logger: false,
  });
  ajv.addSchema({ ...doc, $id: "api" });
  /** A direct answer's JSON body against its operation's documented schema. */
  const schemaErrors = (
    method: string,
    path: string,
    res: Response,
    body: Uint8Array,
  ) => {
    if (!(res.headers.get("content-type") ?? "").includes("application/json")) {
      return undefined;
    }
    const found = operationOf(doc, method, path);
    if (!found) return "no operation";
    const ptr = ["paths", found.template, method.toLowerCase(), "responses"]
      .concat([String(res.status), "content", "application/json", "schema"])
      .map((s) => s.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
    const validate = ajv.compile({ $ref: `api#/${ptr}` });
    return validate(JSON.parse(new TextDecoder().decode(body)))
      ? undefined
      : JSON.stringify(validate.errors).slice(0, 400);
  };
  /**
   * `invalid`: the request breaks the contract on purpose (a wrong Content-Type, no such
   * route) to see the error answer: Prism's finding on the request is expected, not on
   * the answer.
   */
  const call = async (
    method: string,
    path: string,
    init: RequestInit = {},
    expect?: number,
    invalid = false,
  ) => {
    // A body with a file part bypasses Prism (see above); so does a body that is no JSON
    // at all, which Prism's proxy never answers, and a request answered by a redirect,
    // which Prism's proxy follows and then checks the page it led to.
    const direct = (init.body instanceof FormData &&
      [...init.body.values()].some((v) => v instanceof File)) ||
      (typeof init.body === "string" && init.body.startsWith("{not")) ||
      expect === 303;
    const res = await fetch(
      (direct ? `http://127.0.0.1:${server.addr.port}` : base) + path,
      {
        method,
        redirect: "manual",
        signal: AbortSignal.timeout(60_000),
        ...init,
      },
    ).catch((e) => {
      throw new Error(`${method} ${path}: ${e}`);
    });
    const body = new Uint8Array(await res.arrayBuffer());
    exchanges++;
    const where = `${method} ${path.slice(0, 80)} → ${res.status}`;
    if (direct) {
      const e = schemaErrors(method, path.split("?")[0], res, body);
      if (e) problems.push(`${where}: ${e}`);
    } else log.push({ where, invalid });
    if (!invalid || operationOf(doc, method, path.split("?")[0])) {
      for (const h of undeclaredHeaders(doc, method, path.split("?")[0], res)) {
        problems.push(`${where}: undeclared header ${h}`);
      }
    }
    if (expect !== undefined && res.status !== expect) {
      problems.push(
        `${where}: expected ${expect} (${
          new TextDecoder().decode(body.slice(0, 200))
        })`,
      );
    }
    return { res, body, text: () => new TextDecoder().decode(body) };
  };
  try {
    await waitUntilAsync(async () => {
      try {
        await (await fetch(`${base}/healthz`)).body?.cancel();
        return true;
      } catch {
        return false;
      }
    }, 120_000);
    const { key } = await userWithKey(env);
    const bearer = { authorization: `Bearer ${key}` };
    // A password form's post, as a browser sends it from the page.
    const form = {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
    };
    const png = await makeImage("png", { width: 64 });
    const jpeg = await makeImage("jpeg", { width: 1200, height: 800 });
    const b64 = Buffer.from(png).toString("base64");

    await call("GET", "/healthz", {}, 200);
    await call("GET", "/readyz", {}, 200);
    // Uploads: each body, each place for the key.
    const up = await call("POST", "/api/1/upload", {
      headers: bearer,
      body: formWith([{ name: "a.jpg", bytes: jpeg }]),
    }, 200);
    const rec = JSON.parse(up.text()).data;
    assert.ok(rec?.id, `${up.res.status} ${up.text().slice(0, 300)}`);
    await call("POST", "/api/1/upload", {
      headers: { "x-api-key": key },
      body: formWith([{ name: "a.png", bytes: png }]),
    }, 200);
    await call("POST", `/1/upload?key=${key}`, {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ image: b64, name: "imgbb" }),
    }, 200);
    await call("POST", "/1/upload", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ image: b64, title: "json" }),
    }, 200);
    await call(
      "GET",
      `/api/1/upload?key=${key}&source=${
        encodeURIComponent(`${fixture.origin}/cat.png`)
      }&format=json`,
      {},
      200,
    );
    await call("POST", "/api/1/upload", {
      body: formWith([{ name: "a.png", bytes: png }]),
    }, 401);
    await call("POST", "/api/1/upload", {
      headers: bearer,
      body: formWith([{
        name: "a.txt",
        bytes: new TextEncoder().encode("hi"),
      }]),
    }, 415);
    await call("POST", "/api/1/upload", {
      headers: bearer,
      body: formWith([{
        name: "big.png",
        bytes: new Uint8Array(3 * 1024 * 1024),
      }]),
    }, 413);
    await call("POST", "/1/upload", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ title: "nothing" }),
    }, 400);
    // Guest upload, as the home page sends it.
    await call("POST", "/api/1/upload", {
      headers: { "x-csrf-token": "guest", "sec-fetch-site": "same-origin" },
      body: formWith([{ name: "g.png", bytes: png }]),
    }, 200);
    // Records.
    await call("GET", "/api/1/images", { headers: bearer }, 200);
    await call("GET", `/api/1/images/${rec.id}`, { headers: bearer }, 200);
    await call("GET", `/api/1/images/${rec.id}?key=${key}`, {}, 200);
    await call("GET", "/api/1/images/nosuchimage1", { headers: bearer }, 404);
    await call("PATCH", `/api/1/images/${rec.id}`, {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ title: "renamed" }),
    }, 200);
    await call(
      "PATCH",
      `/api/1/images/${rec.id}`,
      {
        headers: { ...bearer, "content-type": "text/plain" },
        body: "title=x",
      },
      415,
      true,
    );
    await call("GET", "/api/1/nope", {}, 404, true);
    await call("PUT", "/api/1/upload", { headers: bearer }, 405, true);
    // Albums, and a password album's page.
    const album = await call("POST", "/api/1/albums", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({
        title: "trip",
        privacy: "password",
        password: "open sesame",
      }),
    }, 200);
    const albumId = JSON.parse(album.text()).data.id;
    await call("GET", "/api/1/albums", { headers: bearer }, 200);
    await call("GET", `/api/1/albums/${albumId}`, { headers: bearer }, 200);
    await call("GET", `/a/${albumId}`, {}, 200);
    const wrongAlbum = await call("POST", `/a/${albumId}`, {
      headers: form,
      body: "password=nope",
    }, 403);
    if (!wrongAlbum.text().includes("not right")) {
      problems.push("a wrong album password does not say so");
    }
    const rightAlbum = await call("POST", `/a/${albumId}`, {
      headers: form,
      body: "password=open+sesame",
    }, 303);
    await call("GET", `/a/${albumId}`, {
      headers: {
        cookie: (rightAlbum.res.headers.get("set-cookie") ?? "").split(";")[0],
      },
    }, 200);
    // Files: whole, revalidated, ranges, a transform URL, HEAD.
    const file = new URL(rec.url).pathname;
    const whole = await call("GET", file, {}, 200);
    const etag = whole.res.headers.get("etag")!;
    await call("GET", file, { headers: { "if-none-match": etag } }, 304);
    await call("GET", file, { headers: { range: "bytes=0-9" } }, 206);
    await call("GET", file, { headers: { range: "bytes=999999999-" } }, 416);
    await call("HEAD", file, {}, 200);
    await call("GET", `${file}?w=320&format=webp`, {}, 200);
    await call("GET", `${file}?w=333`, {}, 400);
    await call(
      "POST",
      "/1/upload",
      {
        headers: { ...bearer, "content-type": "application/json" },
        body: "{not json",
      },
      400,
      true,
    );
    await call("GET", new URL(rec.thumb.url).pathname, {}, 200);
    await call("GET", "/nosuchimage1.png", {}, 404);
    // A password image: its page, the gate, and its file by the page's signed URL.
    const locked = await call("POST", "/api/1/upload", {
      headers: bearer,
      body: formWith([{ name: "l.png", bytes: cat }]),
    }, 200);
    const lockedRec = JSON.parse(locked.text()).data;
    await call("PATCH", `/api/1/images/${lockedRec.id}`, {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ privacy: "password", password: "let me in" }),
    }, 200);
    await call("GET", `/i/${lockedRec.id}`, {}, 200);
    await call("POST", `/i/${lockedRec.id}`, {
      headers: form,
      body: "password=nope",
    }, 403);
    const unlocked = await call("POST", `/i/${lockedRec.id}`, {
      headers: form,
      body: "password=let+me+in",
    }, 303);
    const page = await call("GET", `/i/${lockedRec.id}`, {
      headers: {
        cookie: (unlocked.res.headers.get("set-cookie") ?? "").split(";")[0],
      },
    }, 200);
    const signed = page.text().match(/\/[\w-]+\.png\?access=[\w.~-]+/)?.[0];
    if (signed) await call("GET", signed.replaceAll("&amp;", "&"), {}, 200);
    else problems.push("the unlocked page links no file by a signed URL");
    await call("GET", new URL(lockedRec.url).pathname, {}, 404);
    // The viewer and the delete link.
    await call("GET", `/i/${rec.id}`, {}, 200);
    const del = new URL(rec.delete_url).pathname;
    await call("GET", del, {}, 200);
    // Captures: the image, a shared record, and a refused address.
    await call("POST", "/api/1/screenshot", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ url: `${fixture.origin}/page`, share: false }),
    }, 200);
    await call("POST", "/api/1/screenshot", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ url: `${fixture.origin}/page`, share: true }),
    }, 200);
    await call("POST", "/api/1/screenshot", {
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:1/" }),
    }, 403);
    // The file operation: the bytes alone, a PDF too (share is not its to give).
    for (
      const [format, type, magic] of [
        ["jpeg", "image/jpeg", [0xff, 0xd8]],
        ["pdf", "application/pdf", [0x25, 0x50]],
      ] as const
    ) {
      const shot = await call("POST", "/api/1/screenshot/file", {
        headers: { ...bearer, "content-type": "application/json" },
        body: JSON.stringify({ url: `${fixture.origin}/page`, format }),
      }, 200);
      // A refusal's envelope names why (one chance failure under the parallel suite
      // answered JSON for the PDF).
      assert.equal(
        shot.res.headers.get("content-type"),
        type,
        `${shot.res.status} ${shot.text().slice(0, 300)}`,
      );
      assert.equal(shot.res.headers.get("cache-control"), "no-store");
      // Prism's proxy passes binary answers on as text: the bytes are checked first hand.
      const bytes = new Uint8Array(
        await (await env.app.request("/api/1/screenshot/file", {
          method: "POST",
          headers: { ...bearer, "content-type": "application/json" },
          body: JSON.stringify({ url: `${fixture.origin}/page`, format }),
        })).arrayBuffer(),
      );
      assert.deepEqual([...bytes.slice(0, 2)], [...magic]);
    }
    await call(
      "POST",
      "/api/1/screenshot/file",
      {
        headers: { ...bearer, "content-type": "application/json" },
        body: JSON.stringify({ url: `${fixture.origin}/page`, share: true }),
      },
      400,
      true,
    );
    // Deletion, then the record is gone.
    await call("DELETE", `/api/1/images/${rec.id}`, { headers: bearer }, 200);
    await call("GET", `/api/1/images/${rec.id}`, { headers: bearer }, 404);
    await call("GET", file, {}, 404);
    await call("DELETE", `/api/1/albums/${albumId}`, { headers: bearer }, 200);
  } finally {
    prism.kill("SIGTERM");
    await prism.status;
  }
  try {
    // Prism's proxy logs each violation after the request it belongs to; the exchanges
    // were made one at a time, so each request's block holds its own.
    const [out] = await prismOut;
    // The first requests were the readiness probes, before the exchanges.
    const received = out.split("\n").filter((l) =>
      /\[HTTP SERVER\] \w+ \S+ .*Request received/.test(l) ||
      /Violation: /.test(l)
    );
    let n = log.length - received.filter((l) => !/Violation: /.test(l)).length -
      1;
    for (const line of received) {
      const v = line.match(/Violation: (.*)$/);
      if (!v) n++;
      else if (!(log[n]?.invalid && v[1].startsWith("request"))) {
        problems.push(`${log[n]?.where}: ${v[1]}`);
      }
    }
    assert.deepEqual(problems, [], `${problems.length} of ${exchanges}`);
    assert.ok(exchanges >= 50, `${exchanges} exchanges`);
  } finally {
    ac.abort();
    await server.finished;
    await env.close();
    await shooter.close();
    await fixture.close();
  }
});
