import { imageEngine } from "../services/images/engine.ts";
import { ImagePipeline } from "../services/images/pipeline.ts";
import assert from "node:assert/strict";
import exifr from "exifr";
import sharp from "sharp";
import {
  databaseKinds,
  fetchBytes,
  json,
  scratchFiles,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
  waitUntil,
} from "./helpers.ts";
import {
  formWith,
  makeAnimatedGif,
  makeImage,
  makeJpegWithGps,
} from "./fixtures.ts";
import { sql } from "kysely";
import { sweepExpired } from "../services/images/records.ts";
import { openDatabase } from "../services/db/database.ts";
import { loadConfig } from "../schemas/config.ts";

async function storedFiles(env: TestEnv): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string) {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`);
      else out.push(`${dir}/${e.name}`);
    }
  }
  await walk(env.dataDir);
  return out;
}

test("a single JPEG upload returns the SPEC image record and its URL serves the stored bytes", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const jpeg = await makeImage("jpeg", { width: 64, height: 48 });
    const r = await upload(
      env,
      key,
      formWith([{ name: "photo.jpg", bytes: jpeg }]),
    );
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 200);
    assert.equal(r.body.success, true);
    const d = r.body.data;
    assert.match(d.id, /^[A-Za-z0-9_-]{12}$/);
    assert.equal(d.title, "photo.jpg");
    assert.equal(d.url_viewer, `http://localhost:8080/i/${d.id}`);
    assert.equal(d.url, `http://localhost:8080/${d.id}.jpg`);
    assert.equal(d.display_url, d.url);
    assert.deepEqual(d.image, {
      filename: `${d.id}.jpg`,
      name: d.id,
      mime: "image/jpeg",
      extension: "jpg",
      url: d.url,
    });
    assert.equal(d.thumb.url, `http://localhost:8080/${d.id}.th.jpg`);
    assert.deepEqual(d.medium, d.image); // no larger than the medium size: itself
    assert.equal(d.width, 64);
    assert.equal(d.height, 48);
    assert.equal(d.time, Math.floor(env.clock.t / 1000));
    assert.equal(d.expiration, 0);
    assert.match(
      d.delete_url,
      new RegExp(`^http://localhost:8080/delete/${d.id}/`),
    );

    const { res, bytes } = await fetchBytes(env, new URL(d.url).pathname);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "image/jpeg");
    assert.equal(Number(res.headers.get("content-length")), bytes.length);
    assert.equal(bytes.length, d.size);
    assert.equal(
      res.headers.get("cache-control"),
      "public, max-age=31536000, immutable",
    );
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.match(
      res.headers.get("content-security-policy")!,
      /default-src 'none'.*sandbox/,
    );
    // The served bytes decode to the uploaded picture.
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ["jpeg", 64, 48]);

    const thumb = await fetchBytes(env, new URL(d.thumb.url).pathname);
    assert.equal(thumb.res.status, 200);
    assert.equal((await sharp(thumb.bytes).metadata()).format, "jpeg");
  } finally {
    await env.close();
  }
});

test("PNG, animated GIF and WebP are accepted, typed from their bytes, and the GIF keeps its frames", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const gif = await makeAnimatedGif(3);
    const r = await upload(
      env,
      key,
      formWith([
        // Client names and types lie on purpose: detection must use the bytes.
        {
          name: "a.jpg",
          bytes: await makeImage("png", { width: 2000, height: 1000 }),
          type: "image/jpeg",
        },
        { name: "b.png", bytes: gif, type: "image/png" },
        { name: "c.bin", bytes: await makeImage("webp"), type: "text/plain" },
      ]),
    );
    assert.equal(r.status, 200);
    assert.equal(r.body.data.count, 3);
    assert.equal(r.body.data.errors, undefined);
    const [png, g, webp] = r.body.data.images;
    assert.equal(png.image.mime, "image/png");
    assert.equal(png.image.extension, "png");
    assert.equal(png.medium.url, `http://localhost:8080/${png.id}.md.png`);
    assert.equal(g.image.mime, "image/gif");
    assert.equal(webp.image.mime, "image/webp");
    const medium = await fetchBytes(env, new URL(png.medium.url).pathname);
    const mm = await sharp(medium.bytes).metadata();
    assert.deepEqual([mm.width, mm.height], [1024, 512]);
    const served = await fetchBytes(env, new URL(g.url).pathname);
    assert.deepEqual(served.bytes, gif);
    assert.equal((await sharp(served.bytes).metadata()).pages, 3);
    const gifThumb = await fetchBytes(env, new URL(g.thumb.url).pathname);
    assert.equal((await sharp(gifThumb.bytes).metadata()).pages, 3);
  } finally {
    await env.close();
  }
});

test("the field names images[], image and source are accepted too", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    for (const field of ["images[]", "image", "source"]) {
      const r = await upload(
        env,
        key,
        formWith([{
          field,
          name: `${field}.png`,
          bytes: await makeImage("png", { color: "#0" + field.length + "0" }),
        }]),
      );
      assert.equal(r.status, 200, field);
      assert.equal(r.body.data.title, `${field}.png`);
    }
  } finally {
    await env.close();
  }
});

test("a multi-file upload with one bad file stores the others and lists the failure per file", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const r = await upload(
      env,
      key,
      formWith([
        { name: "one.png", bytes: await makeImage("png", { color: "red" }) },
        {
          name: "notes.txt",
          bytes: new TextEncoder().encode("just text, not an image"),
        },
        { name: "two.jpg", bytes: await makeImage("jpeg", { color: "green" }) },
      ]),
    );
    assert.equal(r.status, 200);
    assert.equal(r.body.data.count, 2);
    assert.deepEqual(
      r.body.data.images.map((i: { title: string }) => i.title),
      ["one.png", "two.jpg"],
    );
    assert.deepEqual(r.body.data.errors, [
      {
        index: 1,
        filename: "notes.txt",
        code: 141,
        message: "Unsupported image type",
      },
    ]);
    const rows = await env.deps.database.db.selectFrom("images").selectAll()
      .execute();
    assert.equal(rows.length, 2);
  } finally {
    await env.close();
  }
});

test("when every file of a multi-file upload fails the answer is 150 with details per file", async () => {
  const env = await testEnv({ env: { MAX_FILE_BYTES: "2000" } });
  try {
    const { key } = await userWithKey(env);
    const r = await upload(
      env,
      key,
      formWith([
        {
          name: "page.html",
          bytes: new TextEncoder().encode(
            "<!doctype html><html><body>hi</body></html>",
          ),
        },
        { name: "big.png", bytes: new Uint8Array(5000).fill(7) },
      ]),
    );
    assert.equal(r.status, 422);
    assert.equal(r.body.error.code, 150);
    assert.equal(r.body.error.message, "No files could be uploaded");
    assert.deepEqual(
      r.body.error.details.map((d: { code: number }) => d.code),
      [141, 130],
    );
    assert.equal(
      (await storedFiles(env)).filter((f) =>
        f.includes("/images/") && !f.includes(".tmp")
      ).length,
      0,
    );
  } finally {
    await env.close();
  }
});

test("a request without a file gets 140, and a non-multipart body too", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    let r = await upload(env, key, formWith([], { title: "nothing" }));
    assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
      400,
      140,
      "No image file provided",
    ]);
    r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
        },
        body: "{}",
      }),
    );
    assert.equal(r.body.error.code, 140);
  } finally {
    await env.close();
  }
});

test("upload of 16 files returns 131 and stores nothing", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png");
    const files = Array.from(
      { length: 16 },
      (_, i) => ({ name: `f${i}.png`, bytes: png }),
    );
    const r = await upload(env, key, formWith(files));
    assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
      400,
      131,
      "Too many files",
    ]);
    assert.deepEqual(await storedFiles(env), []);
    assert.equal(
      (await env.deps.database.db.selectFrom("images").selectAll().execute())
        .length,
      0,
    );
  } finally {
    await env.close();
  }
});

test("MAX_FILES is configurable: with 5, exactly five files are stored and six get 131", async () => {
  const env = await testEnv({ env: { MAX_FILES: "5" } });
  try {
    const { key } = await userWithKey(env);
    const pngs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => makeImage("png", { width: 20 + i })),
    );
    const files = (n: number) =>
      formWith(
        pngs.slice(0, n).map((bytes, i) => ({ name: `f${i}.png`, bytes })),
      );
    const atLimit = await upload(env, key, files(5));
    assert.equal(atLimit.status, 200, JSON.stringify(atLimit.body));
    assert.equal(atLimit.body.data.count, 5);
    const over = await upload(env, key, files(6));
    assert.deepEqual([over.status, over.body.error.code], [400, 131]);
  } finally {
    await env.close();
  }
});

test("a file over MAX_FILE_BYTES gets 130 with HTTP 413 and leaves no temp file", async () => {
  const env = await testEnv({ env: { MAX_FILE_BYTES: "1000" } });
  try {
    const { key } = await userWithKey(env);
    const big = await makeImage("png", {
      width: 400,
      height: 400,
      color: "#123456",
    });
    const noisy = new Uint8Array(5000);
    noisy.set(big.subarray(0, Math.min(big.length, 5000)));
    const r = await upload(
      env,
      key,
      formWith([{ name: "big.png", bytes: noisy }]),
    );
    assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
      413,
      130,
      "File size too large",
    ]);
    assert.deepEqual(await storedFiles(env), []);
  } finally {
    await env.close();
  }
});

test("an HTML file renamed .png and an SVG are refused with 141", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const html = new TextEncoder().encode(
      "<html><script>alert(1)</script></html>",
    );
    let r = await upload(
      env,
      key,
      formWith([{ name: "cat.png", bytes: html, type: "image/png" }]),
    );
    assert.deepEqual([r.status, r.body.error.code], [415, 141]);
    const svg = new TextEncoder().encode(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>',
    );
    r = await upload(
      env,
      key,
      formWith([{ name: "x.svg", bytes: svg, type: "image/svg+xml" }]),
    );
    assert.equal(r.body.error.code, 141);
    // A PNG header with garbage after it is found out by the real decode.
    const png = await makeImage("png", { width: 300, height: 300 });
    const broken = png.slice(0, 60);
    r = await upload(
      env,
      key,
      formWith([{ name: "broken.png", bytes: broken }]),
    );
    assert.equal(r.body.error.code, 141);
    assert.deepEqual(await storedFiles(env), []);
  } finally {
    await env.close();
  }
});

test("an image over MAX_IMAGE_PIXELS gets 142 before it is decoded", async () => {
  const env = await testEnv({ env: { MAX_IMAGE_PIXELS: "10000" } });
  try {
    const { key } = await userWithKey(env);
    const r = await upload(
      env,
      key,
      formWith([{
        name: "wide.png",
        bytes: await makeImage("png", { width: 200, height: 100 }),
      }]),
    );
    assert.deepEqual([r.status, r.body.error.code, r.body.error.message], [
      413,
      142,
      "Image dimensions too large",
    ]);
  } finally {
    await env.close();
  }
});

test("a WebP with GPS EXIF is re-encoded without it, orientation baked into the pixels, and its thumbnail made", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const webp = new Uint8Array(
      await sharp({
        create: { width: 80, height: 40, channels: 3, background: "#224488" },
      }).webp().withExif({
        IFD0: { Make: "TestCam" },
        IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 0/1" },
      }).withMetadata({ orientation: 6 }).toBuffer(),
    );
    assert.ok((await sharp(webp).metadata()).exif);
    const r = await upload(
      env,
      key,
      formWith([{ name: "gps.webp", bytes: webp }]),
    );
    assert.equal(r.status, 200);
    const d = r.body.data;
    assert.deepEqual([d.width, d.height], [40, 80]);
    const { bytes } = await fetchBytes(env, new URL(d.url).pathname);
    const meta = await sharp(bytes).metadata();
    assert.deepEqual(
      [meta.format, meta.width, meta.height, meta.exif, meta.orientation],
      ["webp", 40, 80, undefined, undefined],
    );
    const thumb = await fetchBytes(env, new URL(d.thumb.url).pathname);
    assert.equal(thumb.res.status, 200);
    assert.equal((await sharp(thumb.bytes).metadata()).format, "webp");
  } finally {
    await env.close();
  }
});

test("a JPEG with GPS EXIF is served without GPS or camera data, keeps its orientation, and its scan data is not re-encoded", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const jpeg = await makeJpegWithGps();
    assert.ok((await exifr.gps(jpeg))?.latitude);
    const r = await upload(
      env,
      key,
      formWith([{ name: "gps.jpg", bytes: jpeg }]),
    );
    assert.equal(r.status, 200);
    const d = r.body.data;
    // Orientation 6 rotates 80×40 to 40×80 as displayed.
    assert.deepEqual([d.width, d.height], [40, 80]);
    const { bytes } = await fetchBytes(env, new URL(d.url).pathname);
    assert.equal(await exifr.gps(bytes), undefined);
    const tags =
      await exifr.parse(bytes, { gps: true, xmp: true, iptc: true }) ?? {};
    assert.equal(tags.Make, undefined);
    assert.equal(tags.Artist, undefined);
    assert.equal(tags.latitude, undefined);
    assert.equal((await sharp(bytes).metadata()).orientation, 6);
    // Everything from the start-of-scan marker on is byte-identical to the upload.
    const sos = (b: Uint8Array) => {
      for (let i = 2; i < b.length - 1; i++) {
        if (b[i] === 0xff && b[i + 1] === 0xda) return i;
      }
      return -1;
    };
    assert.deepEqual(bytes.subarray(sos(bytes)), jpeg.subarray(sos(jpeg)));
  } finally {
    await env.close();
  }
});

test("Range requests get 206 with the slice, If-None-Match gets 304, HEAD gets headers only and a bad range 416", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { width: 100, height: 100 });
    const d =
      (await upload(env, key, formWith([{ name: "r.png", bytes: png }]))).body
        .data;
    const path = new URL(d.url).pathname;
    const full = (await fetchBytes(env, path)).bytes;

    const part = await fetchBytes(env, path, {
      headers: { range: "bytes=10-19" },
    });
    assert.equal(part.res.status, 206);
    assert.equal(
      part.res.headers.get("content-range"),
      `bytes 10-19/${full.length}`,
    );
    assert.deepEqual(part.bytes, full.subarray(10, 20));
    const suffix = await fetchBytes(env, path, {
      headers: { range: "bytes=-5" },
    });
    assert.deepEqual(suffix.bytes, full.subarray(full.length - 5));

    const etag = part.res.headers.get("etag")!;
    const cached = await env.app.request(path, {
      headers: { "if-none-match": etag },
    });
    assert.equal(cached.status, 304);
    assert.equal(await cached.text(), "");

    const head = await env.app.request(path, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(Number(head.headers.get("content-length")), full.length);

    const bad = await env.app.request(path, {
      headers: { range: `bytes=${full.length + 10}-` },
    });
    assert.equal(bad.status, 416);
    assert.equal(bad.headers.get("content-range"), `bytes */${full.length}`);

    const missing = await json(await env.app.request("/AAAAAAAAAAAA.png"));
    assert.deepEqual([missing.status, missing.body.error.code], [404, 404]);
    // The right id with the wrong extension is not served either.
    assert.equal((await env.app.request(`/${d.id}.jpg`)).status, 404);
  } finally {
    await env.close();
  }
});

test("uploading the same bytes twice returns the existing record marked duplicate", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { color: "#abcdef" });
    const a = await upload(env, key, formWith([{ name: "a.png", bytes: png }]));
    const b = await upload(env, key, formWith([{ name: "b.png", bytes: png }]));
    assert.equal(b.body.data.id, a.body.data.id);
    assert.equal(b.body.data.duplicate, true);
    assert.equal(
      (await env.deps.database.db.selectFrom("images").selectAll().execute())
        .length,
      1,
    );
    // Another user uploading the same bytes gets their own image.
    const other = await userWithKey(env);
    const c = await upload(
      env,
      other.key,
      formWith([{ name: "c.png", bytes: png }]),
    );
    assert.notEqual(c.body.data.id, a.body.data.id);
  } finally {
    await env.close();
  }
});

/** Names of the files in the fs store's folder. */
async function imageFiles(env: TestEnv): Promise<string[]> {
  const root = `${env.dataDir}/images/`;
  return (await storedFiles(env)).filter((p) => p.startsWith(root))
    .map((p) => p.slice(p.lastIndexOf("/") + 1)).sort();
}

test("a duplicate is found by the row's unique index after the work: its files are dropped from the store, and two uploads of the same bytes at once give one image", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { color: "#123456" });
    const a = await upload(env, key, formWith([{ name: "a.png", bytes: png }]));
    const files = await imageFiles(env);
    assert.deepEqual(files, [`${a.body.data.id}.png`], "the original alone");
    const b = await upload(env, key, formWith([{ name: "b.png", bytes: png }]));
    assert.equal(b.body.data.id, a.body.data.id);
    assert.equal(b.body.data.duplicate, true);
    assert.deepEqual(await imageFiles(env), files);

    const jpg = await makeImage("jpeg", { color: "#654321" });
    const both = await Promise.all(
      [0, 1].map((i) =>
        upload(env, key, formWith([{ name: `${i}.jpg`, bytes: jpg }]))
      ),
    );
    assert.deepEqual(both.map((r) => r.status), [200, 200]);
    assert.equal(both[0].body.data.id, both[1].body.data.id);
    assert.equal(
      both.filter((r) => r.body.data.duplicate === true).length,
      1,
    );
    const live = await env.deps.database.db.selectFrom("images").select("id")
      .where("deleted_at", "is", null).execute();
    assert.equal(live.length, 2);
    const id = both[0].body.data.id;
    assert.equal(
      (await imageFiles(env)).filter((f) => f.startsWith(`${id}.`)).length,
      (await imageFiles(env)).filter((f) => f.startsWith(`${a.body.data.id}.`))
        .length,
      "one set of files for the image made twice at once",
    );
  } finally {
    await env.close();
  }
});

test("an upload whose bytes keep meeting a live row that is expired when looked up gives up after three tries with 503 (250) and Retry-After, keeping none of its files", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png", { color: "#0d0e0f" });
    const first = await upload(
      env,
      key,
      formWith([{ name: "a.png", bytes: png }], { expiration: "60" }),
    );
    assert.equal(first.status, 200);
    // Each deletion of an image makes an expired live copy of it: every insert of the
    // same bytes conflicts, and every lookup finds only an expired row, which it deletes.
    const db = env.deps.database.db;
    await sql`create function imagehost_test_copy() returns trigger as $$
      declare r images%rowtype;
      begin
        r := old;
        r.id := substr(md5(random()::text), 1, 12);
        r.delete_token := md5(random()::text);
        insert into images select (r).*;
        return null;
      end $$ language plpgsql`.execute(db);
    await sql`create trigger imagehost_test_copy after update of deleted_at
      on images for each row
      when (old.deleted_at is null and new.deleted_at is not null)
      execute function imagehost_test_copy()`.execute(db);
    env.clock.advance(61_000);
    const before = await imageFiles(env);
    const again = await upload(
      env,
      key,
      formWith([{ name: "a.png", bytes: png }]),
    );
    assert.equal(again.status, 503);
    assert.equal(again.body.error.code, 250);
    assert.ok(again.headers.get("retry-after"));
    assert.deepEqual(
      (await imageFiles(env)).filter((f) => !before.includes(f)),
      [],
    );
    // Three lookups, three expired rows deleted (the first one and two copies).
    const deleted = await db.selectFrom("images").select("id")
      .where("deleted_at", "is not", null).execute();
    assert.equal(deleted.length, 3);
  } finally {
    await env.close();
  }
});

test("an image with expiration is gone after that many seconds and the sweeper removes its bytes", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const r = await upload(
      env,
      key,
      formWith([{ name: "e.png", bytes: await makeImage("png") }], {
        expiration: "60",
      }),
    );
    assert.equal(r.body.data.expiration, 60);
    const path = new URL(r.body.data.url).pathname;
    const res = await env.app.request(path);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("cache-control")!, /max-age=60$/);
    await res.body?.cancel();
    env.clock.advance(61_000);
    assert.equal((await env.app.request(path)).status, 404);
    assert.equal(
      await sweepExpired(env.deps.database.db, env.deps.store, env.clock),
      1,
    );
    assert.equal(await env.deps.store.stat(`${r.body.data.id}.png`), null);

    // The same bytes again, after expiry but before any sweep, make a new image.
    const png = await makeImage("png", { color: "#405060" });
    const first = await upload(
      env,
      key,
      formWith([{ name: "x.png", bytes: png }], { expiration: "60" }),
    );
    env.clock.advance(61_000);
    const again = await upload(
      env,
      key,
      formWith([{ name: "x.png", bytes: png }]),
    );
    assert.equal(again.status, 200);
    assert.notEqual(again.body.data.id, first.body.data.id);
    assert.equal(again.body.data.duplicate, undefined);
    assert.equal(again.body.data.expiration, 0);
    assert.equal(
      (await env.app.request(new URL(again.body.data.url).pathname)).status,
      200,
    );
    const old = await env.app.request(new URL(first.body.data.url).pathname);
    assert.equal(old.status, 404);
    await old.body?.cancel();
    assert.ok(
      !(await imageFiles(env)).some((f) =>
        f.startsWith(`${first.body.data.id}.`)
      ),
      "the expired image's files are gone",
    );

    const bad = await upload(
      env,
      key,
      formWith([{ name: "e.png", bytes: await makeImage("png") }], {
        expiration: "5",
      }),
    );
    assert.deepEqual([
      bad.status,
      bad.body.error.code,
      bad.body.error.details[0].path,
    ], [400, 160, "expiration"]);
  } finally {
    await env.close();
  }
});

test("the delete link and the API delete remove an image, and only its owner can use the API", async () => {
  const env = await testEnv();
  try {
    const owner = await userWithKey(env);
    const other = await userWithKey(env);
    const a = (await upload(
      env,
      owner.key,
      formWith([{
        name: "a.png",
        bytes: await makeImage("png", { color: "red" }),
      }]),
    )).body.data;
    const b = (await upload(
      env,
      owner.key,
      formWith([{
        name: "b.png",
        bytes: await makeImage("png", { color: "blue" }),
      }]),
    )).body.data;

    const deletePath = new URL(a.delete_url).pathname;
    const page = await env.app.request(deletePath);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Delete “a.png”/);
    assert.equal(
      (await env.app.request(deletePath.replace(/\/[^/]+$/, "/wrongtoken")))
        .status,
      404,
    );
    const del = await env.app.request(deletePath, {
      method: "POST",
      headers: { origin: "http://localhost:8080" },
    });
    assert.equal(del.status, 200);
    assert.equal((await env.app.request(new URL(a.url).pathname)).status, 404);
    assert.equal(await env.deps.store.stat(`${a.id}.png`), null);

    const notMine = await json(
      await env.app.request(`/api/1/images/${b.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${other.key}` },
      }),
    );
    assert.equal(notMine.status, 404);
    const got = await json(
      await env.app.request(`/api/1/images/${b.id}`, {
        headers: { authorization: `Bearer ${owner.key}` },
      }),
    );
    assert.equal(got.body.data.url, b.url);
    const mine = await json(
      await env.app.request(`/api/1/images/${b.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${owner.key}` },
      }),
    );
    assert.deepEqual(mine.body.data, { id: b.id, deleted: true });
    assert.equal((await env.app.request(new URL(b.url).pathname)).status, 404);
  } finally {
    await env.close();
  }
});

test("the viewer page shows the image, its facts, embed codes and preview tags", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const d = (await upload(
      env,
      key,
      formWith([{
        name: "view me.png",
        bytes: await makeImage("png", { width: 120, height: 90 }),
      }]),
    )).body.data;
    const res = await env.app.request(`/i/${d.id}`);
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.ok(html.includes(`<meta property="og:image" content="${d.url}"`));
    assert.ok(
      html.includes('<meta name="twitter:card" content="summary_large_image"'),
    );
    assert.ok(html.includes("120×90"));
    assert.ok(html.includes(`[img]${d.url}[/img]`));
    assert.ok(html.includes(`[![view me.png](${d.url})](${d.url_viewer})`));
    assert.ok(html.includes("&lt;img src=")); // the HTML embed, escaped into a value
    assert.equal((await env.app.request("/i/nonexistent1")).status, 404);
  } finally {
    await env.close();
  }
});

test("libvips gets the cores shared among IMAGE_WORKERS as threads per image (at least one), IMAGE_THREADS overrides that, and the pipeline applies it process-wide", async () => {
  const cores = navigator.hardwareConcurrency;
  assert.equal(loadConfig({ IMAGE_WORKERS: "1" }).IMAGE_THREADS, cores);
  assert.equal(
    loadConfig({ IMAGE_WORKERS: String(cores * 4) }).IMAGE_THREADS,
    1,
  );
  // By default one worker per core, so one thread each.
  assert.equal(loadConfig({}).IMAGE_WORKERS, cores);
  assert.equal(loadConfig({}).IMAGE_THREADS, 1);
  assert.equal(loadConfig({ IMAGE_THREADS: "3" }).IMAGE_THREADS, 3);
  assert.throws(() => loadConfig({ IMAGE_THREADS: "-1" }), /IMAGE_THREADS/);
  const before = sharp.concurrency();
  const env = await testEnv({ env: { IMAGE_THREADS: "3" } });
  try {
    // Natively as configured; the WebAssembly engine (the --deny-ffi pass) runs one. Read
    // as the pipeline is made, not after testEnv's awaits: libvips' setting is the
    // process's, and test files running beside this one set it as they make their apps.
    new ImagePipeline(env.deps);
    assert.equal(sharp.concurrency(), imageEngine() === "wasm" ? 1 : 3);
    const { key } = await userWithKey(env);
    const r = await upload(
      env,
      key,
      formWith([{
        name: "t.jpg",
        bytes: await makeImage("jpeg", { width: 1500, height: 900 }),
      }]),
    );
    assert.equal(r.status, 200);
    const medium = await env.app.request(`/${r.body.data.medium.filename}`);
    const meta = await sharp(new Uint8Array(await medium.arrayBuffer()))
      .metadata();
    assert.deepEqual([meta.width, meta.height], [1024, 614]);
  } finally {
    await env.close();
    sharp.concurrency(before);
  }
});

test("an image over 1 MB is decoded from its file and a smaller one from memory, with the same variants either way", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const small = await makeImage("jpeg", { width: 1400, height: 700 });
    // The same pixels behind 17 comment segments of 64 KB: over 1 MB on disk.
    const com = new Uint8Array(4 + 65_531).fill(0x20);
    com.set([0xff, 0xfe, 0xff, 0xfd]);
    const parts = [
      small.subarray(0, 2),
      ...Array(17).fill(com),
      small.subarray(2),
    ];
    const big = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (big.set(p, at), at + p.length), 0);
    assert.ok(small.length < 1024 * 1024 && big.length > 1024 * 1024);
    const variants = async (bytes: Uint8Array, name: string) => {
      const r = await upload(env, key, formWith([{ name, bytes }]));
      assert.equal(r.status, 200, name);
      const d = r.body.data;
      return await Promise.all([d.thumb.filename, d.medium.filename].map(
        async (f: string) =>
          new Uint8Array(await (await env.app.request(`/${f}`)).arrayBuffer()),
      ));
    };
    const [fromMemory, fromFile] = [
      await variants(small, "small.jpg"),
      await variants(big, "big.jpg"),
    ];
    assert.ok(fromMemory[0].length > 0 && fromMemory[1].length > 0);
    assert.deepEqual(fromFile, fromMemory);
  } finally {
    await env.close();
  }
});

test("every kind of upload leaves the temp folder empty: a stripped JPEG large enough for a medium, a PNG, a stripped GIF, a WebP turned by its EXIF re-encoded, a duplicate and refused files", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const jpeg = await makeImage("jpeg", { width: 1500, height: 900 });
    const webp = new Uint8Array(
      await sharp(await makeImage("png")).withMetadata({ orientation: 3 })
        .webp().toBuffer(),
    );
    const cases: [string, Uint8Array, number][] = [
      ["big.jpg", jpeg, 200],
      ["exif.jpg", await makeJpegWithGps(), 200],
      ["p.png", await makeImage("png"), 200],
      ["g.gif", await makeImage("gif"), 200],
      ["m.webp", webp, 200],
      ["again.jpg", jpeg, 200],
      ["bad.png", new TextEncoder().encode("not an image"), 415],
      // Sniffed and measured as a JPEG, refused by the decode: its temps go too.
      ["cut.jpg", jpeg.subarray(0, jpeg.length >> 1), 415],
    ];
    for (const [name, bytes, status] of cases) {
      const r = await upload(env, key, formWith([{ name, bytes }]));
      assert.equal(r.status, status, name);
      assert.deepEqual(scratchFiles(env), [], name);
    }
    const live = await env.deps.database.db.selectFrom("images")
      .select(["ext", "medium_ext"]).orderBy("created_at").execute();
    assert.deepEqual(live.map((r) => r.ext), [
      "jpg",
      "jpg",
      "png",
      "gif",
      "webp",
    ]);
    assert.equal(live[0].medium_ext, "jpg");
    // Five originals; their thumbnails and the medium are made when asked for.
    const files = (await storedFiles(env)).filter((f) =>
      f.includes("/images/")
    );
    assert.equal(files.length, 5, files.join("\n"));
    assert.ok(!files.some((f) => /\.(th|md)\./.test(f)), files.join("\n"));
  } finally {
    await env.close();
  }
});

test("a key sent as a form field authenticates the upload, and a bad one gets 110 with nothing left on disk", async () => {
  const env = await testEnv();
  try {
    const { key } = await userWithKey(env);
    const png = await makeImage("png");
    let r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        body: formWith([{ name: "k.png", bytes: png }], { key }),
      }),
    );
    assert.equal(r.status, 200);
    r = await json(
      await env.app.request(`/api/1/upload?key=${key}`, {
        method: "POST",
        body: formWith([{ name: "k.png", bytes: png }], { key: "ihk_bad" }),
      }),
    );
    assert.equal(r.body.error.code, 110);
    r = await json(
      await env.app.request("/api/1/upload", {
        method: "POST",
        body: formWith([{ name: "k.png", bytes: png }]),
      }),
    );
    assert.equal(r.body.error.code, 100);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});

test("with IMAGE_HOST_URL on another origin the records point there", async () => {
  const env = await testEnv({
    env: { IMAGE_HOST_URL: "https://cdn.example.net/i" },
  });
  try {
    const { key } = await userWithKey(env);
    const d = (await upload(
      env,
      key,
      formWith([{ name: "c.png", bytes: await makeImage("png") }]),
    )).body.data;
    assert.equal(d.url, `https://cdn.example.net/i/${d.id}.png`);
    assert.equal(d.thumb.url, `https://cdn.example.net/i/${d.id}.th.png`);
    assert.equal(d.url_viewer, `http://localhost:8080/i/${d.id}`);
  } finally {
    await env.close();
  }
});

test("a restart keeps images: a new app on the same data dir and PGlite directory serves them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-restart-" });
  try {
    const seed = await testEnv();
    const dump = await seed.deps.database.pglite!.dumpDataDir("gzip");
    await seed.close();
    const open = () => openDatabase({ dataDir: `${dir}/pgdata` });
    const first = await openDatabase({
      dataDir: `${dir}/pgdata`,
      loadDataDir: dump,
    });
    const env1 = await testEnv({ database: first, env: { DATA_DIR: dir } });
    const { key } = await userWithKey(env1);
    const png = await makeImage("png", { color: "#112233" });
    const d =
      (await upload(env1, key, formWith([{ name: "keep.png", bytes: png }])))
        .body.data;
    await env1.close(); // its own temp dir only: the database was handed in
    await first.close();

    const second = await open();
    const env2 = await testEnv({ database: second, env: { DATA_DIR: dir } });
    const { res, bytes } = await fetchBytes(env2, new URL(d.url).pathname);
    assert.equal(res.status, 200);
    assert.equal(bytes.length, d.size);
    const again = await upload(
      env2,
      key,
      formWith([{ name: "keep.png", bytes: png }]),
    );
    assert.equal(again.body.data.id, d.id);
    await env2.close();
    await second.close();
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

for (const kind of databaseKinds().filter((k) => k === "postgres")) {
  test(`[${kind}] uploads, duplicates, deletion and serving work on PostgreSQL`, async () => {
    const env = await testEnv({ kind });
    try {
      const { key } = await userWithKey(env);
      const png = await makeImage("png", { width: 1200, height: 600 });
      const a = await upload(
        env,
        key,
        formWith([{ name: "pg.png", bytes: png }]),
      );
      assert.equal(a.status, 200);
      assert.equal(typeof a.body.data.size, "number");
      assert.equal(a.body.data.time, Math.floor(env.clock.t / 1000));
      const b = await upload(
        env,
        key,
        formWith([{ name: "pg.png", bytes: png }]),
      );
      assert.equal(b.body.data.id, a.body.data.id);
      const served = await fetchBytes(
        env,
        new URL(a.body.data.medium.url).pathname,
      );
      assert.equal(served.res.status, 200);
      const del = await json(
        await env.app.request(`/api/1/images/${a.body.data.id}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      assert.equal(del.status, 200);
      assert.equal(
        (await env.app.request(new URL(a.body.data.url).pathname)).status,
        404,
      );
    } finally {
      await env.close();
    }
  });
}

test("a client that hangs up mid-upload leaves no temp file, stores nothing, and the server keeps serving", async () => {
  const env = await testEnv();
  const { key } = await userWithKey(env);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    env.app.fetch,
  );
  try {
    const boundary = "----gone";
    const conn = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.addr.port,
    });
    const head = new TextEncoder().encode(
      `POST /api/1/upload HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n` +
        `content-type: multipart/form-data; boundary=${boundary}\r\n` +
        `content-length: 5000000\r\n\r\n--${boundary}\r\n` +
        `Content-Disposition: form-data; name="images"; filename="a.jpg"\r\n\r\n`,
    );
    await conn.write(head);
    // 1 MB of the promised 5 MB, then the client is gone.
    await conn.write(new Uint8Array(1_000_000).fill(0xab));
    const names = () => scratchFiles(env);
    await waitUntil(() => names().length === 1, 5000);
    assert.equal(names().length, 1, "the part is being written to a temp file");
    conn.close();
    // The temp folder empties once the server notices.
    await waitUntil(() => names().length === 0, 2500);
    assert.deepEqual(names(), []);
    const rows = await env.deps.database.db.selectFrom("images").select("id")
      .execute();
    assert.equal(rows.length, 0);
    const ok = await fetch(
      `http://127.0.0.1:${server.addr.port}/api/1/upload`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: formWith([{ name: "b.png", bytes: await makeImage("png") }]),
      },
    );
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).success, true);
  } finally {
    await server.shutdown();
    await env.close();
  }
});

test("a body over the whole-request cap is refused with HTTP 413 and code 413, and nothing is left on disk", async () => {
  const env = await testEnv({
    env: { MAX_FILES: "1", MAX_FILE_BYTES: "1000" },
  });
  try {
    const { key } = await userWithKey(env);
    // The cap is MAX_FILES × MAX_FILE_BYTES + 4 MiB for fields: 5 MiB of fields is over.
    const r = await upload(
      env,
      key,
      formWith([], { notes: "x".repeat(60_000) }),
    );
    // Under the cap, a form without a file is 140, not 413.
    assert.deepEqual([r.status, r.body.error.code], [400, 140]);
    const fd = new FormData();
    for (let i = 0; i < 90; i++) fd.append(`f${i}`, "y".repeat(60_000));
    const big = await upload(env, key, fd);
    assert.deepEqual([big.status, big.body.error.code], [413, 413]);
    assert.deepEqual(scratchFiles(env), []);
  } finally {
    await env.close();
  }
});
