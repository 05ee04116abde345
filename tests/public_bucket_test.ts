import assert from "node:assert/strict";
import sharp from "sharp";
import { apiCall, test, testEnv, upload, userWithKey } from "./helpers.ts";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";
import { startS3 } from "./s3_server.ts";

/** Every URL of an srcset attribute's entries. */
function srcsetUrls(html: string): string[] {
  return [...html.matchAll(/srcset="([^"]+)"/g)].flatMap((m) =>
    m[1].replaceAll("&amp;", "&").split(", ").map((e) => e.split(" ")[0])
  );
}

test("with S3_PUBLIC_URL a public original is linked at the bucket, which holds it, while thumbnails, mediums, every transform URL and srcset, and non-public images point at the service", async () => {
  const s3 = await startS3();
  const bucket = `${s3.endpoint}/images`;
  const env = await testEnv({
    store: s3.store,
    env: { ...s3.env, S3_PUBLIC_URL: bucket, IMAGE_NEGOTIATE: "on" },
  });
  const service = env.config.BASE_URL;
  try {
    const { key } = await userWithKey(env);
    const jpeg = await makeNoiseJpeg(1600, 1200);
    const up = await upload(
      env,
      key,
      formWith([{ name: "p.jpg", bytes: jpeg }]),
    );
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const rec = up.body.data;
    // The original is the bucket's: the bucket really holds those bytes.
    assert.ok(rec.url.startsWith(`${bucket}/`), rec.url);
    const held = await fetch(rec.url);
    assert.equal(held.status, 200);
    assert.equal((await held.arrayBuffer()).byteLength, rec.size);
    // What only the service makes is linked there.
    for (const u of [rec.transform_url, rec.thumb.url, rec.medium.url]) {
      assert.ok(u.startsWith(`${service}/`), u);
    }
    assert.equal(rec.display_url, `${rec.transform_url}?format=auto`);
    const path = new URL(rec.transform_url).pathname;
    const small = await env.app.request(`${path}?w=640&format=webp`);
    assert.equal(small.status, 200);
    const meta = await sharp(new Uint8Array(await small.arrayBuffer()))
      .metadata();
    assert.deepEqual([meta.format, meta.width], ["webp", 640]);
    const thumb = await env.app.request(new URL(rec.thumb.url).pathname);
    assert.equal(thumb.status, 200);
    await thumb.body?.cancel();
    // The viewer's picture and its responsive embed code: every width at the service
    // (the page's own as paths, issue #52: the page is the service's too).
    const page = await (await env.app.request(`/i/${rec.id}`)).text();
    const urls = srcsetUrls(page);
    assert.ok(urls.length >= 10, page);
    for (const u of urls) {
      assert.ok(u.startsWith(`${service}/`) || /^\/[^/]/.test(u), u);
    }
    assert.ok(urls.some((u) => u.includes("w=640&format=avif")));
    const embed = page.match(
      /&lt;source type=&quot;image\/avif&quot; srcset=&quot;([^&]+)/,
    );
    assert.ok(embed && embed[1].startsWith(`${service}/`), String(embed?.[1]));
    // A private image is the service's alone to answer: its file is never linked at the
    // bucket, which cannot tell its owner from anyone else.
    const made = await apiCall(env, key, "PATCH", `/api/1/images/${rec.id}`, {
      privacy: "private",
    });
    assert.equal(made.status, 200);
    assert.ok(made.body.data.url.startsWith(`${service}/`), made.body.data.url);
  } finally {
    await env.close();
    await s3.close();
  }
});
