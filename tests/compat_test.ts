import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  fetchBytes,
  json,
  scratchFiles,
  test,
  testEnv,
  userWithKey,
} from "./helpers.ts";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
import { startFixture } from "./fixture_server.ts";

test("Chevereto V4's X-API-Key header authenticates, after Authorization and before body and query keys, and browsers may send it (CORS)", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const record = (headers: Record<string, string>, query = "") =>
      env.app.request(`/api/1/screenshot/presets${query}`, { headers });
    assert.equal((await record({ "x-api-key": key })).status, 200);
    // Authorization first: a good bearer wins over a bad X-API-Key, a bad one loses.
    assert.equal(
      (await record({ authorization: `Bearer ${key}`, "x-api-key": "ihk_bad" }))
        .status,
      200,
    );
    const bad = await json(
      await record({ authorization: "Bearer ihk_bad", "x-api-key": key }),
    );
    assert.deepEqual([bad.status, bad.body.error.code], [401, 110]);
    // Before the query key.
    assert.equal(
      (await record({ "x-api-key": key }, "?key=ihk_bad")).status,
      200,
    );
    // An upload with X-API-Key is checked before its body is read: a wrong one is 110.
    const png = await makeImage("png", { width: 51 });
    const wrong = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "x-api-key": "ihk_wrong" },
        body: formWith([{ name: "x.png", bytes: png }]),
      }),
    );
    assert.deepEqual([wrong.status, wrong.body.error.code], [401, 110]);
    const up = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "x-api-key": key },
        body: formWith([{ name: "x.png", bytes: png }]),
      }),
    );
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const preflight = await env.app.request("/api/1/upload", {
      method: "OPTIONS",
      headers: {
        origin: "https://blog.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-api-key",
      },
    });
    assert.match(
      preflight.headers.get("access-control-allow-headers") ?? "",
      /X-API-Key/i,
    );
  } finally {
    await env.close();
  }
});

test("format=txt answers the direct URL as text/plain, format=redirect 303s to the viewer, anything else is 160; errors stay JSON", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const auth = { authorization: `Bearer ${key}` };
    const post = (
      query: string,
      fields: Record<string, string>,
      width: number,
    ) =>
      makeImage("png", { width }).then((bytes) =>
        env.app.request(`/api/1/upload${query}`, {
          method: "POST",
          headers: auth,
          body: formWith([{ name: "f.png", bytes }], fields),
        })
      );

    const txt = await post("?format=txt", {}, 61);
    assert.equal(txt.status, 200);
    assert.match(txt.headers.get("content-type")!, /^text\/plain/);
    const url = (await txt.text()).trim();
    const served = await fetchBytes(env, new URL(url).pathname);
    assert.equal(served.res.status, 200);
    assert.equal(served.res.headers.get("content-type"), "image/png");

    // As a form field too, and with several files: one URL a line.
    const two = await env.app.request("/api/1/upload", {
      method: "POST",
      headers: auth,
      body: formWith([
        { name: "a.png", bytes: await makeImage("png", { width: 62 }) },
        { name: "b.png", bytes: await makeImage("png", { width: 63 }) },
      ], { format: "txt" }),
    });
    assert.equal((await two.text()).trim().split("\n").length, 2);

    const red = await post("", { format: "redirect" }, 64);
    assert.equal(red.status, 303);
    assert.match(red.headers.get("location")!, /^http:\/\/localhost:8080\/i\//);

    for (
      const [q, f] of [["?format=xml", {}], ["", { format: "html" }]] as const
    ) {
      const bad = await json(await post(q, f, 65));
      assert.deepEqual(
        [bad.status, bad.body.error.code, bad.body.error.details[0].path],
        [400, 160, "format"],
      );
    }
    // A failing upload in txt mode is still the envelope.
    const broken = await json(
      await env.app.request("/api/1/upload?format=txt", {
        method: "POST",
        headers: auth,
        body: formWith([{
          name: "x.png",
          bytes: new TextEncoder().encode("no"),
        }]),
      }),
    );
    assert.deepEqual([broken.status, broken.body.error.code], [415, 141]);
  } finally {
    await env.close();
  }
});

test("name (ImgBB) or title (Chevereto) sets the image's title instead of the file name", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    for (
      const [field, value] of [["name", "Holiday 2026"], ["title", "Beach"]]
    ) {
      const r = await json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: formWith(
            [{
              name: "IMG_0001.png",
              bytes: await makeImage("png", { width: 70 + value.length }),
            }],
            { [field]: value },
          ),
        }),
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data.title, value, field);
    }
  } finally {
    await env.close();
  }
});

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

test("a Chevereto client's urlencoded body (source=<base64>&key=…&format=json) and ImgBB's image=<base64> upload; data URIs, line breaks, unencoded '+' and several images work", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const form = async (body: string, query = "") =>
      json(
        await env.app.request(`/api/1/upload${query}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body,
        }),
      );
    const png = await makeImage("png", { width: 81 });
    // Key first, then the image (the key must come before the image in the body).
    let r = await form(
      `key=${key}&source=${encodeURIComponent(b64(png))}&format=json`,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const served = await fetchBytes(env, new URL(r.body.data.url).pathname);
    assert.deepEqual(served.bytes, png);

    // ImgBB: key in the query, image=data URI with line breaks, '+' left unencoded.
    const jpg = await makeImage("jpeg", { width: 82 });
    const wrapped = b64(jpg).replace(/(.{76})/g, "$1\r\n");
    r = await form(
      `image=${
        encodeURIComponent(`data:image/jpeg;base64,${wrapped}`).replace(
          /%2B/g,
          "+",
        )
      }&name=from+imgbb`,
      `?key=${key}`,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.title, "from imgbb");
    assert.equal(r.body.data.width, 82);

    // Several images: several records.
    const a = await makeImage("png", { width: 83 });
    const b = await makeImage("png", { width: 84 });
    r = await form(
      `key=${key}&images=${encodeURIComponent(b64(a))}&images=${
        encodeURIComponent(b64(b))
      }`,
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.count, 2);
  } finally {
    await env.close();
  }
});

test("a JSON body {image, key} uploads too, one image or a list", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const post = async (body: unknown) =>
      json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const png = await makeImage("png", { width: 91 });
    let r = await post({ key, image: b64(png), title: "json one" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.title, "json one");
    r = await post({
      key,
      images: [
        `data:image/png;base64,${b64(await makeImage("png", { width: 92 }))}`,
        b64(await makeImage("png", { width: 93 })),
      ],
    });
    assert.equal(r.body.data.count, 2);
  } finally {
    await env.close();
  }
});

test("base64 errors: bad base64 and a data URI of a non-image get 141, over MAX_FILE_BYTES 130, a URL to a denied address 210, no key 100; nothing is left on disk", async () => {
  const env = await testEnv({ env: { MAX_FILE_BYTES: "20000" } });
  try {
    const { key } = await userWithKey(env);
    const form = async (body: string) =>
      json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body,
        }),
      );
    const cases: [string, string, number, number | undefined][] = [
      ["bad base64", `key=${key}&image=%21%21not*base64%21%21`, 415, 141],
      [
        "text data URI",
        `key=${key}&image=${
          encodeURIComponent("data:text/plain;base64,aGVsbG8gd29ybGQ=")
        }`,
        415,
        141,
      ],
      [
        "not an image",
        `key=${key}&image=${
          encodeURIComponent(
            b64(new TextEncoder().encode("just some text, base64")),
          )
        }`,
        415,
        141,
      ],
      [
        "too big",
        `key=${key}&image=${
          encodeURIComponent(b64(crypto.getRandomValues(new Uint8Array(30000))))
        }`,
        413,
        130,
      ],
      // The boundary itself: one byte over the cap is too big, the cap itself is not
      // (random bytes, so 141 there).
      [
        "one byte over",
        `key=${key}&image=${
          encodeURIComponent(b64(crypto.getRandomValues(new Uint8Array(20001))))
        }`,
        413,
        130,
      ],
      [
        "exactly the cap",
        `key=${key}&image=${
          encodeURIComponent(b64(crypto.getRandomValues(new Uint8Array(20000))))
        }`,
        415,
        141,
      ],
      [
        "a URL",
        `key=${key}&source=${encodeURIComponent("http://127.0.0.1:1/x.png")}`,
        403,
        210,
      ],
      [
        "no key",
        `image=${encodeURIComponent(b64(await makeImage("png")))}`,
        401,
        100,
      ],
      [
        // Chevereto's clients send the key last: the image is held until it comes.
        "key after the image",
        `image=${
          encodeURIComponent(b64(await makeImage("png", { width: 95 })))
        }&key=${key}`,
        200,
        undefined,
      ],
      [
        "a wrong key after the image",
        `image=${
          encodeURIComponent(b64(await makeImage("png", { width: 96 })))
        }&key=ihk_wrong`,
        401,
        110,
      ],
    ];
    for (const [what, body, status, code] of cases) {
      const r = await form(body);
      assert.deepEqual(
        [r.status, r.body.error?.code],
        [status, code],
        `${what}: ${JSON.stringify(r.body)}`,
      );
    }
    const json400 = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"key":"${key}","image":`,
      }),
    );
    assert.deepEqual([json400.status, json400.body.error.code], [400, 160]);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});

test("the requests of ImgBB's and Chevereto's documented examples work as written, host and key changed", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    // api.imgbb.com/1/upload?expiration=600&key=… with --form "image=<base64 of a GIF>":
    // the 1×1 GIF of ImgBB's own documentation.
    const gif = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";
    const fd = new FormData();
    fd.append("image", gif);
    // ImgBB's own path, so that only the host changes for its clients.
    let r = await json(
      await env.app.request(`/1/upload?expiration=600&key=${key}`, {
        method: "POST",
        body: fd,
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      [r.body.data.width, r.body.data.height, r.body.data.expiration],
      [1, 1, 600],
    );
    assert.equal(r.body.data.image.mime, "image/gif");
    // An ImgBB request gets ImgBB's answer alone: no Chevereto fields.
    assert.equal(r.body.status_code, undefined);
    assert.equal(r.body.image, undefined);
    const trailing = await env.app.request(`/1/upload/?key=${key}`, {
      method: "POST",
      body: formWith([{
        field: "image",
        name: "s.png",
        bytes: await makeImage("png", { width: 3 }),
      }]),
    });
    assert.equal(trailing.status, 200);
    // Chevereto V4: -H "X-API-Key: …" -F "source=@image.jpg"
    const chev = new FormData();
    chev.append(
      "source",
      new File([
        await makeImage("jpeg", { width: 33 }) as Uint8Array<ArrayBuffer>,
      ], "image.jpg"),
    );
    r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "x-api-key": key },
        body: chev,
      }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // Chevereto V1.1's answer beside ours: what its clients read (ShareX's
    // {json:image.url}, the uploaders' image.url / image.display_url).
    assert.equal(r.body.success, true);
    assert.deepEqual([r.body.status_code, r.body.status_txt], [200, "OK"]);
    const img = r.body.image;
    assert.equal(img.url, r.body.data.url);
    assert.equal(img.url_viewer, r.body.data.url_viewer);
    assert.equal(img.display_url, r.body.data.medium.url);
    assert.equal(img.thumb.url, r.body.data.thumb.url);
    assert.deepEqual(
      [img.name, img.extension, img.original_filename, img.width],
      ["image", "jpg", "image.jpg", 33],
    );
    assert.match(img.date, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const fetched = await env.app.request(new URL(img.url).pathname);
    assert.equal(fetched.status, 200);
    assert.equal(fetched.headers.get("content-type"), "image/jpeg");
    // An npm ImgBB client's FormData.append("image", base64) with a photo: megabytes of
    // text, streamed like a file (with MIME line breaks, and typed text/plain, too).
    const photo = await makeNoiseJpeg(1200, 900);
    const b64photo = b64(photo).replace(/.{76}/g, "$&\r\n");
    assert.ok(b64photo.length > 1_000_000, `${b64photo.length}`);
    const big = new FormData();
    big.append("key", key);
    big.append("image", b64photo);
    r = await json(
      await env.app.request("/api/1/upload", { method: "POST", body: big }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual([r.body.data.width, r.body.data.height], [1200, 900]);
    // A text part that says it is text/plain (some clients type every part).
    const typed = [
      `--XyZ\r\nContent-Disposition: form-data; name="key"\r\n\r\n${key}\r\n`,
      `--XyZ\r\nContent-Disposition: form-data; name="source"\r\n`,
      `Content-Type: text/plain; charset=utf-8\r\n\r\n`,
      `data:image/jpeg;base64,${b64(photo)}\r\n--XyZ--\r\n`,
    ].join("");
    const again = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { "content-type": "multipart/form-data; boundary=XyZ" },
        body: typed,
      }),
    );
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual([again.body.data.id, again.body.data.duplicate], [
      r.body.data.id,
      true,
    ]);
  } finally {
    await env.close();
  }
});

test("every body type × every image encoding × every key location uploads the same image (40 combinations)", async () => {
  const png = await makeImage("png", { width: 77, height: 9 });
  const fixture = startFixture({
    "/m.png": () => new Response(png as Uint8Array<ArrayBuffer>),
  });
  const env = await testEnv({
    env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}` },
  });
  try {
    const { key } = await userWithKey(env);
    const encodings: Record<string, string> = {
      base64: b64(png),
      "data URI": `data:image/png;base64,${b64(png)}`,
      "base64, MIME lines": b64(png).replace(/.{76}/g, "$&\r\n"),
      URL: `${fixture.origin}/m.png`,
    };
    type Place = "bearer" | "x-api-key" | "body" | "query";
    const places: Place[] = ["bearer", "x-api-key", "body", "query"];
    const request = (
      body: "multipart" | "urlencoded" | "json",
      value: string | File,
      place: Place,
    ): Request => {
      const headers: Record<string, string> = {};
      if (place === "bearer") headers.authorization = `Bearer ${key}`;
      if (place === "x-api-key") headers["x-api-key"] = key;
      const url = `http://localhost/api/1/upload${
        place === "query" ? `?key=${key}` : ""
      }`;
      const bodyKey = place === "body" ? key : undefined;
      if (body === "multipart") {
        const f = new FormData();
        if (bodyKey) f.append("key", bodyKey);
        f.append("image", value);
        return new Request(url, { method: "POST", headers, body: f });
      }
      if (body === "urlencoded") {
        headers["content-type"] = "application/x-www-form-urlencoded";
        return new Request(url, {
          method: "POST",
          headers,
          body: new URLSearchParams({
            ...(bodyKey ? { key: bodyKey } : {}),
            image: value as string,
          }).toString(),
        });
      }
      headers["content-type"] = "application/json";
      return new Request(url, {
        method: "POST",
        headers,
        body: JSON.stringify({
          ...(bodyKey ? { key: bodyKey } : {}),
          image: value,
        }),
      });
    };
    const cases: [string, Request][] = [];
    for (const place of places) {
      cases.push([
        `multipart file, key ${place}`,
        request(
          "multipart",
          new File([png as Uint8Array<ArrayBuffer>], "m.png"),
          place,
        ),
      ]);
      for (const body of ["multipart", "urlencoded", "json"] as const) {
        for (const [encoding, value] of Object.entries(encodings)) {
          if (body === "json" && encoding.includes("MIME")) continue;
          cases.push([
            `${body}, ${encoding}, key ${place}`,
            request(body, value, place),
          ]);
        }
      }
    }
    assert.equal(cases.length, 4 * (1 + 3 * 4 - 1));
    let id: string | undefined;
    for (const [what, req] of cases) {
      const r = await json(await env.app.request(req));
      assert.equal(r.status, 200, `${what}: ${JSON.stringify(r.body)}`);
      assert.deepEqual([r.body.data.width, r.body.data.height], [77, 9], what);
      id ??= r.body.data.id;
      assert.equal(r.body.data.id, id, `${what}: the same bytes, one image`);
    }
  } finally {
    await env.close();
    await fixture.close();
  }
});

test("Chevereto's documented GET example (/api/1/upload/?key=…&source=<url>&format=json, trailing slash and all) imports the image", async () => {
  const png = await makeImage("png", { width: 21 });
  const fixture = startFixture({
    "/someimage.png": () => new Response(png as Uint8Array<ArrayBuffer>),
  });
  const env = await testEnv({
    env: { FETCH_ALLOW_PRIVATE: `127.0.0.1:${fixture.port}` },
  });
  try {
    const { key } = await userWithKey(env);
    const r = await json(
      await env.app.request(
        `/api/1/upload/?key=${key}&source=${fixture.origin}/someimage.png&format=json`,
      ),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.width, 21);
    // format=txt the same way: the direct URL as text.
    const txt = await env.app.request(
      `/api/1/upload/?key=${key}&source=${fixture.origin}/someimage.png&format=txt`,
    );
    assert.equal(await txt.text(), `${r.body.data.url}\n`);
  } finally {
    await env.close();
    await fixture.close();
  }
});

/**
 * What ShareX does with a custom uploader (.sxcu): Parameters go in the query, Headers as
 * given, Arguments as form fields before the file, the file under FileFormName; then each
 * output template (`{json:a.b}`, or the older `$json:a.b$`) is read out of the answer.
 */
async function shareX(
  request: (url: string, init: RequestInit) => Promise<Response>,
  sxcu: Record<string, unknown>,
  file: File,
) {
  const url = new URL(sxcu.RequestURL as string);
  for (const [k, v] of Object.entries(sxcu.Parameters ?? {})) {
    url.searchParams.set(k, String(v));
  }
  const form = new FormData();
  for (const [k, v] of Object.entries(sxcu.Arguments ?? {})) {
    form.append(k, String(v));
  }
  form.append(sxcu.FileFormName as string, file);
  const res = await request(url.pathname + url.search, {
    method: sxcu.RequestMethod as string,
    headers: sxcu.Headers as Record<string, string>,
    body: form,
  });
  const answer = await res.json();
  const read = (template: string) => {
    const path = /^(?:\{json:([\w.]+)\}|\$json:([\w.]+)\$)$/.exec(template);
    assert.ok(path, `a template ShareX reads: ${template}`);
    return (path[1] ?? path[2]).split(".").reduce(
      // deno-lint-ignore no-explicit-any
      (o: any, k) => o?.[k],
      answer,
    );
  };
  return { status: res.status, read };
}

test("a ShareX uploader written for Chevereto (X-API-Key, the file in `source`, its {json:image.…} paths, old and new syntax) works with only the host changed", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 300 });
    // Chevereto's own ShareX uploader, as its docs hand it out, host and key changed;
    // the older `$json:…$` spelling of ShareX before 13.7 beside it.
    const chevereto = {
      Version: "14.1.0",
      Name: "Chevereto",
      DestinationType: "ImageUploader",
      RequestMethod: "POST",
      RequestURL: "http://localhost:8080/api/1/upload",
      Headers: { "X-API-Key": key },
      Body: "MultipartFormData",
      Arguments: { format: "json" },
      FileFormName: "source",
      URL: "{json:image.url}",
      ThumbnailURL: "{json:image.thumb.url}",
      DeletionURL: "{json:image.delete_url}",
      ErrorMessage: "{json:error.message}",
    };
    const legacy = {
      ...chevereto,
      Headers: {},
      RequestURL: "http://localhost:8080/api/1/upload",
      Arguments: { key, format: "json" },
      URL: "$json:image.url$",
      ThumbnailURL: "$json:image.medium.url$",
      DeletionURL: "$json:image.delete_url$",
      ErrorMessage: "$json:error.message$",
    };
    for (const sxcu of [chevereto, legacy]) {
      const r = await shareX(
        (u, i) => Promise.resolve(env.app.request(u, i)),
        sxcu,
        new File([png as Uint8Array<ArrayBuffer>], "Screenshot 1.png"),
      );
      assert.equal(r.status, 200);
      const url = r.read(sxcu.URL);
      assert.match(url, /^http:\/\/localhost:8080\/[\w-]+\.png$/);
      // Each link ShareX keeps answers: the bytes uploaded, a smaller copy, the delete page.
      const got = await fetchBytes(env, new URL(url).pathname);
      assert.equal(got.res.status, 200);
      assert.deepEqual(got.bytes, png);
      const small = await env.app.request(
        new URL(r.read(sxcu.ThumbnailURL)).pathname,
      );
      assert.equal(small.status, 200);
      assert.equal(small.headers.get("content-type"), "image/png");
      await small.body?.cancel();
      assert.match(r.read(sxcu.DeletionURL), /\/delete\/[\w-]+\/[\w-]+$/);
    }
    // A wrong key: ShareX shows ErrorMessage's path, which our error envelope fills.
    const bad = await shareX(
      (u, i) => Promise.resolve(env.app.request(u, i)),
      { ...chevereto, Headers: { "X-API-Key": "not-a-key" } },
      new File([png as Uint8Array<ArrayBuffer>], "x.png"),
    );
    assert.equal(bad.status, 401);
    assert.match(bad.read(chevereto.ErrorMessage), /key/i);
  } finally {
    await env.close();
  }
});

test("an empty image text field counts as absent, as an empty key does: Swagger UI's Try it out (a file and source='') uploads the file; an empty field alone is 140 in every body type", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { color: "#123456" });
    // What /docs sends: the file, and the operation's other text field left empty.
    const fd = formWith([{ field: "images", name: "a.png", bytes: png }], {
      source: "",
    });
    const tried = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: fd,
      }),
    );
    assert.equal(tried.status, 200, JSON.stringify(tried.body));
    assert.equal(tried.body.data.kind, "image");
    assert.equal(tried.body.data.size, png.length);
    const empties: [string, RequestInit][] = [
      ["multipart", {
        body: formWith([], { source: "" }),
      }],
      ["urlencoded", {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "source=",
      }],
      ["JSON", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ image: "" }),
      }],
    ];
    for (const [kind, init] of empties) {
      const r = await json(
        await env.app.request("/api/1/upload", {
          method: "POST",
          ...init,
          headers: {
            authorization: `Bearer ${key}`,
            ...(init.headers as Record<string, string> ?? {}),
          },
        }),
      );
      assert.deepEqual([r.status, r.body.error?.code], [400, 140], kind);
    }
  } finally {
    await env.close();
  }
});
