import assert from "node:assert/strict";
import { formWith, makeImage, makeNoiseJpeg } from "./fixtures.ts";
import {
  databaseKinds,
  json,
  test,
  type TestEnv,
  testEnv,
  upload,
  userWithKey,
} from "./helpers.ts";
import {
  createGuest,
  findGuest,
  sweepGuests,
} from "../services/accounts/guests.ts";

const ORIGIN = "http://localhost:8080";

/** A guest's upload from the home page: the guest token, our Origin, and its cookie. */
async function guestUpload(
  env: TestEnv,
  fd: FormData,
  opts: { cookie?: string; origin?: string; path?: string } = {},
) {
  const res = await env.app.request(opts.path ?? "/api/1/upload", {
    method: "POST",
    headers: {
      "x-csrf-token": "guest",
      origin: opts.origin ?? ORIGIN,
      ...(opts.cookie ? { cookie: opts.cookie } : {}),
    },
    body: fd,
  });
  const set = res.headers.get("set-cookie") ?? "";
  return { ...(await json(res)), setCookie: set };
}

/** The `guest=…` pair of a Set-Cookie. */
const guestPair = (set: string) => set.match(/guest=[^;]+/)?.[0];

async function png(width: number) {
  return formWith([{
    name: `g${width}.png`,
    bytes: await makeImage("png", { width, height: 40 }),
  }]);
}

async function userCount(env: TestEnv) {
  const r = await env.deps.database.db.selectFrom("users")
    .select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(r.n);
}

async function ownerOf(env: TestEnv, id: string) {
  return (await env.deps.database.db.selectFrom("images").select("user_id")
    .where("id", "=", id).executeTakeFirstOrThrow()).user_id;
}

test("with GUEST_UPLOADS off (the default) the home page invites sign-up and a guest upload is refused, making no user", async () => {
  const env = await testEnv();
  try {
    const home = await (await env.app.request("/")).text();
    assert.match(home, /Create a free account/);
    assert.ok(!home.includes('id="uploader"'));
    const users = await userCount(env);
    const res = await guestUpload(env, await png(100));
    assert.equal(res.status, 401);
    assert.equal(res.body.error.code, 110);
    assert.equal(await userCount(env), users);
  } finally {
    await env.close();
  }
});

for (const kind of databaseKinds()) {
  test(`[${kind}] a guest uploads from the home page: the answer carries the delete link, every upload expires within GUEST_EXPIRATION, the browser keeps one guest, and signing up in it claims its images, kept for good where only the guest's life bounded them`, async () => {
    const env = await testEnv({
      kind,
      env: { GUEST_UPLOADS: "on", GUEST_EXPIRATION: "86400" },
    });
    try {
      const home = await (await env.app.request("/")).text();
      assert.match(home, /id="uploader"/);
      assert.match(home, /data-guest="86400"/);
      assert.match(home, /uploading as a guest/);

      const first = await guestUpload(env, await png(120));
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const rec = first.body.data;
      assert.equal(rec.expiration, 86400, "expires by default");
      assert.match(rec.delete_url, /\/delete\//);
      const cookie = guestPair(first.setCookie)!;
      assert.ok(cookie, first.setCookie);
      assert.match(first.setCookie, /HttpOnly/);
      assert.match(first.setCookie, /Max-Age=86400/);

      // Longer than GUEST_EXPIRATION (or never): GUEST_EXPIRATION. Shorter: as asked.
      const capped = await png(121);
      capped.append("expiration", "15552000");
      const second = await guestUpload(env, capped, { cookie });
      assert.equal(second.body.data.expiration, 86400);
      // The same guest: its cookie set again, as long-lived as this upload.
      assert.equal(guestPair(second.setCookie), cookie);
      const short = await png(122);
      short.append("expiration", "600");
      const third = await guestUpload(env, short, { cookie });
      assert.equal(third.body.data.expiration, 600);
      const guestId = await ownerOf(env, rec.id);
      for (const r of [second, third]) {
        assert.equal(await ownerOf(env, r.body.data.id), guestId);
      }
      // The files are there for anyone, as any public upload's.
      const file = await env.app.request(new URL(rec.url).pathname);
      assert.equal(file.status, 200);
      await file.body?.cancel();

      // A made-up or malformed cookie is nobody's guest: a new one, never another's.
      for (
        const forged of ["guest=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "guest=x"]
      ) {
        const other = await guestUpload(env, await png(123), {
          cookie: forged,
        });
        assert.equal(other.status, 200);
        assert.notEqual(await ownerOf(env, other.body.data.id), guestId);
      }

      // Signing up in this browser: its three images become the account's.
      const signup = await env.app.request("/signup", {
        method: "POST",
        headers: {
          origin: ORIGIN,
          cookie,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          email: "claimer@example.com",
          password: "correct horse battery",
        }),
      });
      assert.equal(signup.status, 303);
      assert.match(signup.headers.get("set-cookie") ?? "", /guest=;/);
      const user = await env.deps.database.db.selectFrom("users").select("id")
        .where("email", "=", "claimer@example.com").executeTakeFirstOrThrow();
      for (const r of [first, second, third]) {
        assert.equal(await ownerOf(env, r.body.data.id), user.id);
      }
      // The notice promised sign-up keeps them: what GUEST_EXPIRATION alone bounded no
      // longer expires; the 10 minutes asked for stay.
      const expiresAt = async (id: string) =>
        (await env.deps.database.db.selectFrom("images").select("expires_at")
          .where("id", "=", id).executeTakeFirstOrThrow()).expires_at;
      assert.equal(await expiresAt(first.body.data.id), null);
      assert.equal(await expiresAt(second.body.data.id), null);
      assert.notEqual(await expiresAt(third.body.data.id), null);
      const guest = await env.deps.database.db.selectFrom("users")
        .select(["deleted_at", "guest_token_hash"]).where("id", "=", guestId)
        .executeTakeFirstOrThrow();
      assert.ok(guest.deleted_at, "the guest is gone");
      assert.equal(guest.guest_token_hash, null);
      // The old cookie names no guest now: an upload with it makes a new one.
      const after = await guestUpload(env, await png(124), { cookie });
      assert.notEqual(await ownerOf(env, after.body.data.id), user.id);
      assert.notEqual(await ownerOf(env, after.body.data.id), guestId);
    } finally {
      await env.close();
    }
  });

  test(`[${kind}] a guest's bounds: uploads only, from our own pages, GUEST_MAX_FILE_BYTES per file, GUEST_UPLOADS_PER_MINUTE per address (429 before any guest is made), no albums; logging in claims only images the account does not have`, async () => {
    const env = await testEnv({
      kind,
      env: {
        GUEST_UPLOADS: "on",
        GUEST_MAX_FILE_BYTES: "3000",
        GUEST_UPLOADS_PER_MINUTE: "3",
      },
    });
    try {
      // Anything but an upload: 100, no guest made.
      const users = await userCount(env);
      const list = await env.app.request("/api/1/images", {
        headers: { "x-csrf-token": "guest", origin: ORIGIN },
      });
      assert.equal(list.status, 401);
      assert.equal((await list.json()).error.code, 100);
      // From another site's page: 403, no guest made.
      const foreign = await guestUpload(env, await png(130), {
        origin: "http://evil.localhost",
      });
      assert.equal(foreign.status, 403);
      assert.equal(await userCount(env), users);

      // Past GUEST_MAX_FILE_BYTES: 130 / 413; a keyed user may send the same file.
      const big = formWith([{
        name: "big.jpg",
        bytes: await makeNoiseJpeg(100, 100),
      }]);
      const tooBig = await guestUpload(env, big);
      assert.equal(tooBig.status, 413, JSON.stringify(tooBig.body));
      assert.equal(tooBig.body.error.code, 130);
      const cookie = guestPair(tooBig.setCookie);
      const { key } = await userWithKey(env, "keyed@example.com");
      const keyed = await upload(
        env,
        key,
        formWith([{
          name: "big.jpg",
          bytes: await makeNoiseJpeg(100, 100),
        }]),
      );
      assert.equal(keyed.status, 200);

      // No albums for guests: 160, nothing stored.
      const withAlbum = await png(131);
      withAlbum.append("album_id", "Ab12Cd34Ef");
      const albumed = await guestUpload(env, withAlbum, { cookie });
      assert.equal(albumed.body.error.code, 160);

      // Three requests a minute per address (the two above count): the third passes,
      // the fourth is 170 with Retry-After, and makes no guest.
      const third = await guestUpload(env, await png(132), { cookie });
      assert.equal(third.status, 200);
      const before = await userCount(env);
      const fourth = await guestUpload(env, await png(133));
      assert.equal(fourth.status, 429);
      assert.ok(Number(fourth.headers.get("retry-after")) > 0);
      assert.equal(fourth.body.error.code, 170);
      assert.equal(await userCount(env), before);
      env.clock.advance(61_000);
      const later = await guestUpload(env, await png(134), { cookie });
      assert.equal(later.status, 200);

      // Logging in claims what the account does not have; a file it has stays the guest's.
      const same = formWith([{
        name: "same.png",
        bytes: await makeImage("png", { width: 135, height: 40 }),
      }]);
      const mine = await upload(env, key, same);
      const theirs = await guestUpload(
        env,
        formWith([{
          name: "same.png",
          bytes: await makeImage("png", { width: 135, height: 40 }),
        }]),
        { cookie },
      );
      assert.equal(theirs.status, 200);
      const login = await env.app.request("/login", {
        method: "POST",
        headers: {
          origin: ORIGIN,
          cookie: cookie!,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({
          email: "keyed@example.com",
          password: "correct horse battery",
        }),
      });
      assert.equal(login.status, 303);
      const userId = await ownerOf(env, mine.body.data.id);
      assert.equal(await ownerOf(env, third.body.data.id), userId);
      assert.equal(await ownerOf(env, later.body.data.id), userId);
      assert.notEqual(await ownerOf(env, theirs.body.data.id), userId);
    } finally {
      await env.close();
    }
  });
}

test("a guest deletes an upload with the delete link its answer carried, without any account", async () => {
  const env = await testEnv({ env: { GUEST_UPLOADS: "on" } });
  try {
    const up = await guestUpload(env, await png(140));
    const path = new URL(up.body.data.delete_url).pathname;
    const asked = await env.app.request(path);
    assert.equal(asked.status, 200);
    await asked.body?.cancel();
    const done = await env.app.request(path, {
      method: "POST",
      headers: { origin: ORIGIN },
    });
    assert.equal(done.status, 200);
    await done.body?.cancel();
    const file = await env.app.request(new URL(up.body.data.url).pathname);
    assert.equal(file.status, 404);
    await file.body?.cancel();
  } finally {
    await env.close();
  }
});

for (const kind of databaseKinds()) {
  test(`[${kind}] guests with nothing left to claim are retired by the sweep once GUEST_EXPIRATION has passed; a guest with a live image stays`, async () => {
    const env = await testEnv({
      kind,
      env: { GUEST_UPLOADS: "on", GUEST_EXPIRATION: "3600" },
    });
    try {
      const { db } = env.deps.database;
      const early = await guestUpload(env, await png(150));
      const earlyGuest = await ownerOf(env, early.body.data.id);
      // Another guest, made at the same time, uploads again half an hour later.
      const first = await guestUpload(env, await png(153));
      const lateGuest = await ownerOf(env, first.body.data.id);
      env.clock.advance(1800_000);
      const late = await guestUpload(env, await png(151), {
        cookie: guestPair(first.setCookie),
      });
      assert.equal(await ownerOf(env, late.body.data.id), lateGuest);
      // Both guests are older than GUEST_EXPIRATION: the early one's image has
      // expired, the other's second one has not.
      env.clock.advance(1900_000);
      assert.equal(await sweepGuests(db, env.clock, 3600), 1);
      const rows = await db.selectFrom("users")
        .select(["id", "deleted_at", "guest_token_hash"])
        .where("id", "in", [earlyGuest, lateGuest]).execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.ok(byId.get(earlyGuest)!.deleted_at);
      assert.equal(byId.get(earlyGuest)!.guest_token_hash, null);
      assert.equal(byId.get(lateGuest)!.deleted_at, null);
      // Its cookie now names nobody: the next upload from that browser is a new guest.
      const again = await guestUpload(env, await png(152), {
        cookie: guestPair(early.setCookie),
      });
      assert.notEqual(await ownerOf(env, again.body.data.id), earlyGuest);
      // Once the late one's image expires too, it goes the same way.
      env.clock.advance(3600_000);
      assert.ok(await sweepGuests(db, env.clock, 3600) >= 1);
      const late2 = await db.selectFrom("users").select("deleted_at")
        .where("id", "=", lateGuest).executeTakeFirstOrThrow();
      assert.ok(late2.deleted_at);
    } finally {
      await env.close();
    }
  });
}

test("the sweep spares a guest younger than GUEST_EXPIRATION with no image yet (its first upload in flight), and retires it once older", async () => {
  const env = await testEnv({
    env: { GUEST_UPLOADS: "on", GUEST_EXPIRATION: "3600" },
  });
  try {
    const { db } = env.deps.database;
    const { userId, token } = await createGuest(db, env.clock);
    env.clock.advance(3_500_000);
    assert.equal(await sweepGuests(db, env.clock, 3600), 0);
    assert.equal(await findGuest(db, token), userId);
    env.clock.advance(200_000);
    assert.equal(await sweepGuests(db, env.clock, 3600), 1);
    assert.equal(await findGuest(db, token), undefined);
  } finally {
    await env.close();
  }
});
