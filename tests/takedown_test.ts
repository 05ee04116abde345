/**
 * Takedown (issue #47): every URL form of a taken-down image answers 451 (on both stores,
 * and behind nginx with IMAGE_SERVE=proxy), its bytes and variants leave the store, its
 * reports close, the audit log has it, the same bytes are refused to anyone (182), and
 * all of it survives a restart.
 */
import assert from "node:assert/strict";
import { formWith, makeNoiseJpeg } from "./fixtures.ts";
import {
  apiCall,
  json,
  signedInAccount,
  storedKeys,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import { startS3 } from "./s3_server.ts";
import { startNginx } from "./nginx.ts";

/** An admin's key. */
async function adminKey(env: TestEnv): Promise<string> {
  return (await signedInAccount(env, {
    role: "admin",
    email: "root@example.com",
  })).key;
}

/** Every URL form of an image: files, fixed variants, transforms, page and record. */
function urlForms(rec: { id: string; image: { filename: string } }) {
  const file = `/${rec.image.filename}`;
  const ext = rec.image.filename.split(".").pop();
  return [
    file,
    `/${rec.id}.th.${ext}`,
    `/${rec.id}.md.${ext}`,
    `${file}?w=320`,
    `${file}?w=160&format=webp`,
    `/i/${rec.id}`,
    `/api/1/images/${rec.id}`,
  ];
}

/** Uploads a photo into a public album and opens every URL form once (variants made). */
async function photoInAlbum(env: TestEnv, key: string) {
  const album = await apiCall(env, key, "POST", "/api/1/albums", {
    title: "Holiday",
  });
  assert.equal(album.status, 200);
  const bytes = await makeNoiseJpeg(1300, 900);
  const up = await upload(
    env,
    key,
    formWith([{ name: "beach.jpg", bytes }], {
      album_id: album.body.data.id,
    }),
  );
  assert.equal(up.status, 200);
  const rec = up.body.data;
  // Its album's set cover: once it is taken down the album must still answer.
  const cover = await apiCall(
    env,
    key,
    "PATCH",
    `/api/1/albums/${album.body.data.id}`,
    {
      cover_image_id: rec.id,
    },
  );
  assert.equal(cover.status, 200, JSON.stringify(cover.body));
  for (const path of urlForms(rec)) {
    const res = await env.app.request(path, {
      headers: { authorization: `Bearer ${key}` },
    });
    await res.arrayBuffer();
    assert.equal(res.status, 200, path);
  }
  return { rec, bytes, albumId: album.body.data.id as string };
}

for (const storeKind of ["fs", "s3"] as const) {
  test(`[${storeKind}] a taken-down image answers 451 at every URL form, for its owner too, its bytes and variants leave the store, its reports close, the audit log records it, and nobody may upload the same bytes again, also after a restart`, async () => {
    const s3 = storeKind === "s3" ? await startS3() : undefined;
    const env = await testEnv({ store: s3?.store });
    try {
      const root = await adminKey(env);
      const owner = await userWithKey(env);
      const other = await userWithKey(env);
      const { rec, bytes, albumId } = await photoInAlbum(env, owner.key);
      await env.app.request(`/api/1/images/${rec.id}`); // (a stranger's 401)
      const mine = (await storedKeys(env)).filter((k) => k.includes(rec.id));
      assert.ok(
        mine.length >= 4,
        `original, two fixed and transforms: ${mine}`,
      );

      const report = await json(
        await env.app.request("/api/1/reports", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            image_id: rec.id,
            reason: "copyright",
            note: "mine",
          }),
        }),
      );
      assert.equal(report.status, 200);

      const down = await apiCall(
        env,
        root,
        "POST",
        `/api/1/admin/images/${rec.id}/takedown`,
        { reason: "DMCA 118" },
      );
      assert.equal(down.status, 200);
      assert.equal(down.body.data.changed, true);
      assert.equal(down.body.data.reports_closed, 1);
      assert.equal(down.body.data.owner_id, owner.user.id);

      const check = async (e: TestEnv, who: string) => {
        for (const path of urlForms(rec)) {
          const asked: Record<string, string>[] = [
            {},
            { authorization: `Bearer ${owner.key}` },
            { accept: "text/html" },
          ];
          for (const headers of asked) {
            const res = await e.app.request(path, { headers });
            const body = await res.text();
            if (path.startsWith("/api/") && !("authorization" in headers)) {
              assert.equal(res.status, 401, `${who} ${path}`);
              continue;
            }
            assert.equal(
              res.status,
              451,
              `${who} ${path} ${JSON.stringify(headers)}`,
            );
            if ("accept" in headers && !path.startsWith("/api/")) {
              assert.match(body, /taken down/);
            } else assert.equal(JSON.parse(body).error.code, 451);
          }
        }
        // The album's page no longer lists it, nor counts it, nor has it as cover.
        const page = await e.app.request(`/a/${albumId}`);
        assert.equal(page.status, 200);
        const record = await apiCall(
          e,
          owner.key,
          "GET",
          `/api/1/albums/${albumId}`,
        );
        assert.equal(record.status, 200);
        assert.equal(record.body.data.image_count, 0);
        assert.equal(record.body.data.cover_url, null);
        assert.ok(!(await page.text()).includes(rec.id), "album page");
        const list = await apiCall(e, owner.key, "GET", "/api/1/images");
        assert.equal(list.body.data.total, 0);
      };
      await check(env, "live");
      assert.deepEqual(
        (await storedKeys(env)).filter((k) => k.includes(rec.id)),
        [],
      );

      for (const who of [owner, other]) {
        const again = await upload(
          env,
          who.key,
          formWith([{ name: "again.jpg", bytes }]),
        );
        assert.equal(again.status, 403);
        assert.equal(again.body.error.code, 182);
      }
      // Other bytes are welcome, and nothing of the refused ones was kept.
      const fresh = await upload(
        env,
        other.key,
        formWith([{ name: "new.jpg", bytes: await makeNoiseJpeg(64, 64) }]),
      );
      assert.equal(fresh.status, 200);
      assert.deepEqual(
        (await storedKeys(env)).filter((k) => !k.includes(fresh.body.data.id)),
        [],
      );

      const reports = await apiCall(
        env,
        root,
        "GET",
        "/api/1/admin/reports?state=all",
      );
      assert.equal(reports.body.data.reports[0].state, "taken_down");
      assert.equal(reports.body.data.reports[0].image, null);
      const audit = await apiCall(
        env,
        root,
        "GET",
        "/api/1/admin/audit?action=image.takedown",
      );
      assert.equal(audit.body.data.total, 1);
      const line = audit.body.data.entries[0];
      assert.equal(line.target, rec.id);
      assert.equal(line.actor_email, "root@example.com");
      assert.match(line.details, /DMCA 118/);

      // Again: nothing more happens.
      const twice = await apiCall(
        env,
        root,
        "POST",
        `/api/1/admin/images/${rec.id}/takedown`,
        {},
      );
      assert.equal(twice.body.data.changed, false);

      // A new instance on the same database and store: still 451, still blocked.
      const restarted = await testEnv({
        database: env.deps.database,
        store: env.deps.store,
      });
      try {
        await check(restarted, "restarted");
        const third = await upload(
          restarted,
          other.key,
          formWith([{ name: "third.jpg", bytes }]),
        );
        assert.equal(third.body.error.code, 182);
      } finally {
        await restarted.close();
      }
    } finally {
      await env.close();
      await s3?.close();
    }
  });
}

test("with IMAGE_SERVE=proxy behind nginx, a taken-down image answers 451 at every URL form and nginx sends none of its bytes", async () => {
  const env = await testEnv({ env: { IMAGE_SERVE: "proxy" } });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (req, info) => env.app.fetch(req, info),
  );
  const snippet = (await Deno.readTextFile(
    new URL("../deploy/nginx-images.conf", import.meta.url),
  )).replace("alias /data/images/;", `alias ${env.dataDir}/images/;`);
  const nginx = await startNginx(`  server {
    listen LISTEN;
    location / {
      proxy_pass http://127.0.0.1:${server.addr.port};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
${snippet}
  }`);
  try {
    const root = await adminKey(env);
    const owner = await userWithKey(env);
    const { rec } = await photoInAlbum(env, owner.key);
    for (const path of urlForms(rec).slice(0, 5)) {
      const res = await fetch(`${nginx.base}${path}`);
      await res.arrayBuffer();
      assert.equal(res.status, 200, `before ${path}`);
    }
    const down = await apiCall(
      env,
      root,
      "POST",
      `/api/1/admin/images/${rec.id}/takedown`,
      {},
    );
    assert.equal(down.status, 200);
    for (const path of urlForms(rec)) {
      const res = await fetch(`${nginx.base}${path}`, {
        headers: { authorization: `Bearer ${owner.key}` },
      });
      const body = await res.text();
      assert.equal(res.status, 451, path);
      assert.equal(JSON.parse(body).error.code, 451, path);
    }
  } finally {
    await nginx.close();
    await server.shutdown();
    await env.close();
  }
});
