import assert from "node:assert/strict";
import fc from "fast-check";
import { test, type TestEnv, testEnv, userWithKey } from "./helpers.ts";
import { formWith, makeImage } from "./fixtures.ts";
import { ERRORS } from "../schemas/errors.ts";
import Ajv2020 from "ajv/dist/2020.js";

/**
 * Property-based fuzzing of every operation in the OpenAPI document (which the zod schemas
 * generate): requests built from each operation's own schemas, then bent (wrong types,
 * missing and extra fields, odd strings, random bytes, every way of sending a key). Every
 * answer must be documented for its operation, never a 500, and on /api an envelope whose
 * code matches its HTTP status; a JSON body must validate against the schema documented
 * for its status (Ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses), and the headers the
 * document promises (X-Request-Id, Allow, Retry-After) must be there.
 */

// deno-lint-ignore no-explicit-any
type Schema = any;

/**
 * Text that never names a host: an image field or `?source=` holding `scheme://host` is a
 * URL import, and a made-up host name would be looked up in DNS (the network rule forbids
 * it). URL-shaped values come only from {@link safeUrl}'s literals.
 */
const text = (o: { maxLength?: number } = {}) =>
  fc.string(o).filter((s) => !/[a-z][a-z0-9+.-]*:\/\//i.test(s));

/** Strings an attacker reaches for first. */
const nasty = fc.constantFrom(
  "",
  " ",
  "\0",
  "null",
  "-1",
  "1e309",
  "NaN",
  "0x10",
  "../../etc/passwd",
  "%00",
  "'; drop table users; --",
  "<script>alert(1)</script>",
  "\u202e\u0000\uffff",
  "😀".repeat(50),
  "a".repeat(5000),
);

/** A URL that needs no name lookup: loopback literals, or strings that are no URL at all. */
const safeUrl = fc.oneof(
  fc.constantFrom(
    "http://127.0.0.1:1/",
    "http://[::1]:1/x",
    "http://2130706433:1/",
    "http://0x7f.0.0.1:1/",
    "https://127.0.0.1/",
    "ftp://127.0.0.1/",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/html,<h1>x</h1>",
    "http://",
    "//",
  ),
  text(),
);

/** Resolves a local $ref of the document. */
function deref(doc: Schema, s: Schema): Schema {
  let out = s;
  while (out?.$ref) {
    out = out.$ref.replace(/^#\//, "").split("/").reduce(
      (o: Schema, k: string) => o[k],
      doc,
    );
  }
  return out;
}

/** An arbitrary of values for a JSON Schema, bent now and then. */
function fromSchema(
  doc: Schema,
  raw: Schema,
  name = "",
): fc.Arbitrary<unknown> {
  const s = deref(doc, raw) ?? {};
  if (/url|^source$/i.test(name)) return safeUrl;
  let good: fc.Arbitrary<unknown>;
  if (s.enum) good = fc.constantFrom(...s.enum);
  else if (s.anyOf || s.oneOf) {
    good = fc.oneof(
      ...(s.anyOf ?? s.oneOf).map((x: Schema) => fromSchema(doc, x, name)),
    );
  } else if (s.type === "object" || s.properties) {
    const props = s.properties ?? {};
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [k, v] of Object.entries(props)) {
      model[k] = fromSchema(doc, v, k);
    }
    good = fc.tuple(
      fc.record(model, { requiredKeys: [] }),
      fc.dictionary(text({ maxLength: 8 }), fc.jsonValue(), {
        maxKeys: 2,
      }),
      fc.boolean(),
    ).map(([known, extra, addExtra]) =>
      addExtra ? { ...extra, ...known } : known
    );
  } else if (s.type === "array") {
    good = fc.array(fromSchema(doc, s.items ?? {}, name), { maxLength: 4 });
  } else if (s.type === "integer") {
    good = fc.oneof(
      fc.integer({ min: s.minimum ?? -10, max: s.maximum ?? 100_000 }),
      fc.integer(),
    );
  } else if (s.type === "number") {
    good = fc.oneof(
      fc.double({ min: s.minimum ?? -10, max: s.maximum ?? 1e6, noNaN: true }),
      fc.double(),
    );
  } else if (s.type === "boolean") good = fc.boolean();
  else if (s.type === "string") {
    good = s.pattern
      ? fc.oneof(fc.stringMatching(new RegExp(s.pattern)), text())
      : text({ maxLength: 300 });
  } else good = fc.jsonValue();
  // One value in five is not what the schema says at all.
  return fc.oneof(
    { weight: 4, arbitrary: good },
    { weight: 1, arbitrary: fc.oneof(fc.jsonValue(), nasty) },
  );
}

type Auth = "header" | "query" | "body" | "bad" | "none" | "malformed";

interface Op {
  method: string;
  path: string;
  op: Schema;
}

/** A request for an operation, as an arbitrary. */
function requestFor(doc: Schema, { method, path, op }: Op, env: Ctx) {
  const params: Schema[] = op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === "path");
  const queryParams = params.filter((p) =>
    p.in === "query" && p.name !== "key"
  );
  const bodyTypes = Object.keys(op.requestBody?.content ?? {});
  const str = (v: unknown) => typeof v === "string" ? v : JSON.stringify(v);
  return fc.record({
    pathValues: fc.tuple(
      ...pathParams.map((p) =>
        fc.oneof(
          fromSchema(doc, p.schema, p.name),
          fc.constant(env.imageId),
        ).map(str)
      ),
    ),
    query: fc.tuple(
      ...queryParams.map((p) =>
        fc.option(fromSchema(doc, p.schema, p.name).map(str))
      ),
    ),
    auth: fc.constantFrom<Auth>(
      "header",
      "query",
      "body",
      "bad",
      "none",
      "malformed",
    ),
    // One of the operation's body types, tagged with it.
    body: bodyTypes.length === 0 ? fc.constant(undefined) : fc.oneof(
      ...bodyTypes.map((t) =>
        t === "multipart/form-data"
          ? (fc.record({
            fields: fc.dictionary(
              fc.constantFrom("expiration", "key", "title", "images", "x"),
              fc.oneof(text({ maxLength: 20 }), nasty),
              { maxKeys: 3 },
            ),
            files: fc.array(
              fc.record({
                field: fc.constantFrom(
                  "images",
                  "images[]",
                  "image",
                  "source",
                  "other",
                ),
                name: fc.oneof(text({ maxLength: 30 }), nasty),
                bytes: fc.oneof(
                  fc.uint8Array({ maxLength: 2048 }),
                  fc.constant(env.png),
                  fc.integer({ min: 1, max: env.png.length - 1 }).map((n) =>
                    env.png.subarray(0, n)
                  ),
                ),
              }),
              { maxLength: 3 },
            ),
          })).map((value) => ({ type: t, value }))
          : t === "application/json"
          ? (fc.oneof(
            {
              weight: 5,
              arbitrary: fromSchema(
                doc,
                op.requestBody.content["application/json"].schema,
              ),
            },
            { weight: 1, arbitrary: text() }, // not JSON at all
          )).map((value) => ({ type: t, value }))
          : fc.dictionary(
            fc.constantFrom("image", "source", "key", "format", "name"),
            fc.oneof(text({ maxLength: 40 }), nasty, fc.constant(b64Png)),
            { maxKeys: 3 },
          ).map((value) => ({ type: t, value }))
      ),
    ),
    contentType: fc.constantFrom(
      "auto",
      "application/json",
      "text/plain",
      "application/x-www-form-urlencoded",
    ),
  }).map((r) => {
    let url = path;
    pathParams.forEach((p, i) => {
      url = url.replace(`{${p.name}}`, encodeURIComponent(r.pathValues[i]));
    });
    const qs = new URLSearchParams();
    queryParams.forEach((p, i) => {
      const v = r.query[i];
      if (v !== null) qs.set(p.name, v);
    });
    const headers: Record<string, string> = {};
    if (r.auth === "header") headers.authorization = `Bearer ${env.key}`;
    if (r.auth === "bad") headers.authorization = "Bearer ihk_nope";
    if (r.auth === "malformed") headers.authorization = "Basic Zm9vOmJhcg==";
    if (r.auth === "query") qs.set("key", env.key);
    let body: BodyInit | undefined;
    if (r.body !== undefined && method !== "get") {
      const { type, value } = r.body as { type: string; value: unknown };
      if (type === "multipart/form-data") {
        const b = value as {
          fields: Record<string, string>;
          files: { field: string; name: string; bytes: Uint8Array }[];
        };
        const fields = { ...b.fields };
        if (r.auth === "body") fields.key = env.key;
        body = formWith(b.files, fields);
      } else if (type === "application/x-www-form-urlencoded") {
        const fields = { ...(value as Record<string, string>) };
        if (r.auth === "body") fields.key = env.key;
        body = new URLSearchParams(fields).toString();
        headers["content-type"] = type;
      } else {
        let v = value;
        if (r.auth === "body" && v && typeof v === "object") {
          v = { ...v, key: env.key };
        }
        body = typeof v === "string" ? v : JSON.stringify(v);
        headers["content-type"] = r.contentType === "auto"
          ? "application/json"
          : r.contentType;
      }
    }
    const q = qs.toString();
    return {
      method: method.toUpperCase(),
      url: q ? `${url}?${q}` : url,
      headers,
      body,
    };
  }).filter((req) =>
    // Belt and braces over `text`: no request may name a host a lookup would resolve.
    !namesHost(req.url) &&
    !(typeof req.body === "string" && namesHost(req.body))
  );
}

/** True when some `scheme://host` in `s` (percent-decoded too) has a host name, not an IP. */
function namesHost(s: string): boolean {
  let decoded = s;
  try {
    decoded = decodeURIComponent(s.replace(/\+/g, " "));
  } catch { /* keep it as is */ }
  return [s, decoded].some((v) =>
    [...v.matchAll(/[a-z][a-z0-9+.-]*:\/\/\[?([^/\]:?#\s\\@]*)/gi)].some((
      m,
    ) =>
      m[1] !== "" &&
      !/^(0x[0-9a-f]*|\d+)(\.(0x[0-9a-f]*|\d+)){0,3}$/i.test(m[1])
    )
  );
}

/** A small real PNG as base64 (set once the fuzz test has made it). */
let b64Png = "";

interface Ctx {
  env: TestEnv;
  key: string;
  imageId: string;
  png: Uint8Array;
}

/** Validators of documented response bodies, compiled once per operation and status. */
class ResponseSchemas {
  // deno-lint-ignore no-explicit-any
  #ajv: any;
  // deno-lint-ignore no-explicit-any
  #cache = new Map<string, any>();

  constructor(doc: Schema) {
    // deno-lint-ignore no-explicit-any
    this.#ajv = new (Ajv2020 as any)({
      strict: false,
      allErrors: true,
      validateFormats: false,
      logger: false,
    });
    this.#ajv.addSchema({ ...doc, $id: "api" });
  }

  /** Errors of `body` against the documented JSON schema; undefined when it conforms. */
  errors(op: Op, status: number, body: unknown): string | undefined {
    const id = `${op.path} ${op.method} ${status}`;
    let validate = this.#cache.get(id);
    if (!validate) {
      const ptr = ["paths", op.path, op.method, "responses", String(status)]
        .concat(["content", "application/json", "schema"])
        .map((s) => s.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
      validate = this.#ajv.compile({ $ref: `api#/${ptr}` });
      this.#cache.set(id, validate);
    }
    return validate(body) ? undefined : JSON.stringify(validate.errors);
  }
}

/** Checks one answer against the operation's contract. */
async function check(
  res: Response,
  op: Op | undefined,
  what: string,
  schemas?: ResponseSchemas,
): Promise<number> {
  const status = res.status;
  assert.notEqual(status, 500, what);
  const documented = op?.op.responses[String(status)];
  if (op) {
    assert.ok(
      documented,
      `${what}: ${status} is not documented (${Object.keys(op.op.responses)})`,
    );
    for (const h of ["X-Request-Id", "Allow", "Retry-After"]) {
      if (documented.headers?.[h]) {
        assert.ok(res.headers.has(h), `${what}: ${status} without ${h}`);
      }
    }
  }
  const type = res.headers.get("content-type") ?? "";
  // A HEAD answer has the headers of the GET one and no body.
  if (type.includes("application/json") && !what.startsWith("HEAD ")) {
    // deno-lint-ignore no-explicit-any
    const body: any = await res.json();
    if (op && schemas && documented.content?.["application/json"]) {
      const errors = schemas.errors(op, status, body);
      assert.equal(errors, undefined, `${what}: ${status} body: ${errors}`);
    }
    assert.equal(typeof body.success, "boolean", what);
    assert.equal(body.status, status, what);
    if (!body.success) {
      const code = body.error?.code as keyof typeof ERRORS;
      assert.ok(code in ERRORS, `${what}: unknown code ${code}`);
      assert.equal(ERRORS[code].status, status, `${what}: code ${code}`);
    }
  } else {
    await res.body?.cancel();
    // Not JSON: only where the operation documents it (format=txt, a 303 redirect).
    const types = Object.keys(documented?.content ?? {});
    assert.ok(
      !new URL(what.split(" ")[1], "http://x").pathname.startsWith("/api/") ||
        status === 303 || types.some((t) => type.startsWith(t)) ||
        // An answer documented with no body (a tus 204).
        (documented && !documented.content && !type),
      `${what}: ${status} ${type} is not an envelope`,
    );
  }
  return status;
}

test("fuzzing every API operation from its own schemas gives only documented answers, never a 500, always the envelope", async () => {
  const env = await testEnv({ env: { RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 40, height: 30 });
    const first = await env.app.request("/api/1/upload", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: formWith([{ name: "seed.png", bytes: png }]),
    });
    const imageId = (await first.json()).data.id;
    const ctx: Ctx = { env, key, imageId, png };
    b64Png = btoa(String.fromCharCode(...png));
    const doc = await (await env.app.request("/openapi.json")).json();
    const ops: Op[] = [];
    for (const [path, byMethod] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(byMethod as Schema)) {
        ops.push({ method, path, op });
      }
    }
    assert.ok(ops.length >= 7, `${ops.length} operations`);
    const schemas = new ResponseSchemas(doc);
    const tally: Record<string, number> = {};
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(requestFor(doc, op, ctx), async (req) => {
          const what = `${req.method} ${req.url}`;
          const res = await env.app.request(req.url, {
            method: req.method,
            headers: req.headers,
            body: req.body,
          });
          const status = await check(res, op, what, schemas);
          tally[status] = (tally[status] ?? 0) + 1;
        }),
        { numRuns: 150 },
      );
    }
    console.log(`fuzz: ${JSON.stringify(tally)}`);
    assert.equal(tally["500"], undefined);
  } finally {
    await env.close();
  }
});

test("fuzzing paths, methods and headers outside the API (image files, viewer, delete links, pages) gives no 500", async () => {
  const env = await testEnv();
  try {
    const seg = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_-]{1,70}$/),
      text({ maxLength: 20 }).map(encodeURIComponent),
      nasty.map(encodeURIComponent),
    );
    const path = fc.oneof(
      fc.tuple(
        seg,
        fc.constantFrom(
          ".png",
          ".jpg",
          ".th.png",
          ".md.webp",
          ".PNG",
          "",
          ".a.b",
        ),
      ).map(([a, b]) => `/${a}${b}`),
      seg.map((a) => `/i/${a}`),
      fc.tuple(seg, seg).map(([a, b]) => `/delete/${a}/${b}`),
      fc.constantFrom(
        "/",
        "/login",
        "/signup",
        "/account",
        "/docs",
        "/sdk/service-sdk.min.js",
        "/openapi.json",
      ),
      fc.array(seg, { maxLength: 4 }).map((s) => `/${s.join("/")}`),
    );
    const tally: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(
        path,
        fc.constantFrom(
          "GET",
          "HEAD",
          "POST",
          "PUT",
          "DELETE",
          "OPTIONS",
          "PATCH",
        ),
        fc.dictionary(
          fc.constantFrom(
            "range",
            "if-none-match",
            "origin",
            "cookie",
            "content-type",
            "accept",
            "x-request-id",
          ),
          fc.oneof(text({ maxLength: 40 }), nasty).map((v) =>
            v.replace(/[\0\r\n]/g, "")
          ),
          { maxKeys: 3 },
        ),
        fc.option(text({ maxLength: 200 })),
        async (p, method, headers, body) => {
          let res: Response;
          try {
            res = await env.app.request(p, {
              method,
              headers,
              body: method === "GET" || method === "HEAD"
                ? undefined
                : body ?? undefined,
            });
          } catch (e) {
            // Headers a client could not send at all (invalid characters) are not a test.
            if (e instanceof TypeError) return;
            throw e;
          }
          tally[res.status] = (tally[res.status] ?? 0) + 1;
          assert.ok(
            res.status < 500,
            `${method} ${p} ${JSON.stringify(headers)}: ${res.status}`,
          );
          await res.body?.cancel();
        },
      ),
      { numRuns: 1000 },
    );
    console.log(`path fuzz: ${JSON.stringify(tally)}`);
  } finally {
    await env.close();
  }
});
