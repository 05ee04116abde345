import { createHash } from "node:crypto";
import { appReady, appSettled, createApp } from "../app.ts";
import { type Config, loadConfig } from "../schemas/config.ts";
import {
  type Database,
  migrate,
  openDatabase,
  readMigrations,
} from "../services/db/database.ts";
import { type Clock } from "../services/runtime/clock.ts";
import { type AppDeps } from "../routes/deps.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import { FsStore } from "../services/store/fs_store.ts";
import type { BlobStore } from "../services/store/blob_store.ts";
import {
  createSession,
  createUser,
  getSession,
} from "../services/accounts/accounts.ts";
import { createApiKey } from "../services/accounts/api_keys.ts";
import { processTag } from "../services/runtime/scratch_dir.ts";
import { memoryFileNames } from "../services/runtime/scratch_files.ts";

/**
 * Deno.test without the op/resource sanitizers (PGlite and servers keep handles open).
 * The loop is held open while the test runs: sharp's WebAssembly engine (the suite's
 * `--deny-ffi` pass) works on threads Deno does not count as pending, so a test awaiting
 * only sharp would otherwise end with "Promise resolution is still pending". A server
 * keeps its own loop open with its listener.
 */
export function test(name: string, fn: () => Promise<void> | void) {
  Deno.test({
    name,
    fn: async () => {
      const hold = setInterval(() => {}, 60_000);
      try {
        await fn();
      } finally {
        clearInterval(hold);
      }
    },
    sanitizeOps: false,
    sanitizeResources: false,
  });
}

/** A clock tests can move. */
export class TestClock implements Clock {
  constructor(public t = Date.parse("2026-11-01T12:00:00Z")) {}
  now() {
    return new Date(this.t);
  }
  advance(ms: number) {
    this.t += ms;
  }
}

let warnedNoPostgres = false;

/**
 * Which databases the suite runs the database tests on: PGlite, and PostgreSQL when
 * TEST_DATABASE_URL names one (`deno task test` starts its own). Without it the PostgreSQL
 * pass is not silently missing: it says so, and with CI=true it is an error.
 */
export function databaseKinds(): ("pglite" | "postgres")[] {
  if (Deno.env.get("TEST_DATABASE_URL")) return ["pglite", "postgres"];
  if (Deno.env.get("CI") === "true") {
    throw new Error(
      "CI=true but TEST_DATABASE_URL is unset: the PostgreSQL pass would not run (use deno task test)",
    );
  }
  if (!warnedNoPostgres) {
    warnedNoPostgres = true;
    console.warn(
      "TEST_DATABASE_URL unset: the PostgreSQL variants are NOT run (deno task test starts a PostgreSQL)",
    );
  }
  return ["pglite"];
}

let template: Promise<Blob> | undefined;

/**
 * A migrated PGlite dump, made once per migration set and cached in the temp dir: a fresh
 * initdb costs seconds, loading a dump well under one.
 */
export function pgliteTemplate(): Promise<Blob> {
  return template ??= (async () => {
    const migs = await readMigrations();
    const hash = createHash("sha256").update(JSON.stringify(migs)).digest("hex")
      .slice(0, 16);
    const path = `${
      Deno.env.get("TMPDIR") ?? "/tmp"
    }/imagehost-pglite-${hash}.tar.gz`;
    try {
      return new Blob([await Deno.readFile(path)]);
    } catch {
      const db = await openDatabase({});
      await migrate(db.db);
      const dump = await db.pglite!.dumpDataDir("gzip");
      await db.close();
      const tmp = `${path}.${crypto.randomUUID()}`;
      await Deno.writeFile(tmp, new Uint8Array(await dump.arrayBuffer()));
      await Deno.rename(tmp, path);
      return dump;
    }
  })();
}

/**
 * A fresh migrated database: a PGlite clone of the template, or on PostgreSQL a new schema
 * of its own (dropped on close), so tests never see each other's rows.
 */
export async function testDatabase(
  kind: "pglite" | "postgres" = "pglite",
): Promise<Database & { another?: () => Promise<Database> }> {
  if (kind === "pglite") {
    return await openDatabase({ loadDataDir: await pgliteTemplate() });
  }
  const url = Deno.env.get("TEST_DATABASE_URL");
  if (!url) throw new Error("TEST_DATABASE_URL is not set");
  const schema = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = await openDatabase({ url });
  const { sql } = await import("kysely");
  await sql.raw(`create schema ${schema}`).execute(admin.db);
  const db = await openDatabase({ url, searchPath: schema });
  await migrate(db.db);
  return {
    ...db,
    another: () => openDatabase({ url, searchPath: schema }),
    async close() {
      await db.close();
      await sql.raw(`drop schema ${schema} cascade`).execute(admin.db);
      await admin.close();
    },
  };
}

/** Everything a test app has, including the pieces tests poke at directly. */
export interface TestEnv {
  app: ReturnType<typeof createApp>;
  deps: AppDeps;
  config: Config;
  clock: TestClock;
  dataDir: string;
  log: ReturnType<typeof memoryLogger>;
  close(): Promise<void>;
}

/** Builds an app on a fresh database and temp data dir; env overrides config values. */
export async function testEnv(
  opts: {
    env?: Record<string, string | undefined>;
    database?: Database;
    kind?: "pglite" | "postgres";
    store?: BlobStore;
    screenshotter?: AppDeps["screenshotter"];
    lifecycle?: AppDeps["lifecycle"];
  } = {},
): Promise<TestEnv> {
  const dataDir = await Deno.makeTempDir({ prefix: "imagehost-test-" });
  const config = loadConfig({
    BASE_URL: "http://localhost:8080",
    DATA_DIR: dataDir,
    LOG_REQUESTS: "false",
    // TEST_SCRATCH=memory runs a suite with uploads received in memory, as on Deno Deploy.
    SCRATCH: Deno.env.get("TEST_SCRATCH") ?? "auto",
    ...opts.env,
  });
  const database = opts.database ?? await testDatabase(opts.kind);
  const store = opts.store ??
    await new FsStore(`${config.DATA_DIR}/images`).init();
  const clock = new TestClock();
  const log = memoryLogger();
  const deps: AppDeps = {
    config,
    database,
    store,
    clock,
    log,
    screenshotter: opts.screenshotter,
    lifecycle: opts.lifecycle,
  };
  const app = createApp(deps);
  await appReady(app);
  return {
    app,
    deps,
    config,
    clock,
    dataDir,
    log,
    async close() {
      // Variants answered before they were stored: their files and rows first.
      await appSettled(app);
      if (!opts.database) await database.close();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Polls `done` every 20 ms until it holds or `ms` pass; the caller asserts afterwards, so a
 * timeout shows as that assertion failing.
 */
export async function waitUntil(done: () => boolean, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Like {@link waitUntil} for a condition that must be awaited (a request, a probe). */
export async function waitUntilAsync(
  done: () => Promise<boolean>,
  ms = 3000,
  everyMs = 20,
) {
  const deadline = Date.now() + ms;
  while (!(await done()) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** True when `url` answers 2xx (its body discarded); false on any other answer or no answer. */
export async function answersOk(url: string): Promise<boolean> {
  return await fetch(url).then(async (r) => {
    await r.body?.cancel();
    return r.ok;
  }, () => false);
}

/** A new user with one API key. */
export async function userWithKey(env: TestEnv, email?: string) {
  const user = await createUser(
    env.deps.database.db,
    email ?? `u${crypto.randomUUID().slice(0, 8)}@example.com`,
    "correct horse battery",
  );
  const { key, info } = await createApiKey(
    env.deps.database.db,
    user.id,
    "test",
  );
  return { user, key, keyId: info.id };
}

/**
 * An account with a key and a signed-in browser (its cookie header and the session's
 * CSRF token): a user, or with `role: "admin"` an operator.
 */
export async function signedInAccount(
  env: TestEnv,
  opts: { role?: "admin" | "user"; email?: string } = {},
) {
  const db = env.deps.database.db;
  const user = await createUser(
    db,
    opts.email ?? `u${crypto.randomUUID().slice(0, 8)}@example.com`,
    "correct horse battery",
    opts.role ?? "user",
  );
  const { key } = await createApiKey(db, user.id, "test");
  const sid = await createSession(db, user.id, env.clock);
  const session = await getSession(db, sid, env.clock);
  return { user, key, cookie: `sid=${sid}`, token: session!.csrfToken };
}

/** Reads a JSON response with its status. */
export async function json(res: Response) {
  return {
    status: res.status,
    // deno-lint-ignore no-explicit-any
    body: await res.json() as any,
    headers: res.headers,
  };
}

/**
 * A filesystem store that counts the objects written under keys matching `pattern`
 * (made variants: how many encodes a test caused).
 */
export class CountingStore extends FsStore {
  puts = 0;
  constructor(dir: string, private readonly pattern: RegExp) {
    super(dir);
  }
  override put(
    key: string,
    body: ReadableStream<Uint8Array> | Uint8Array,
    meta?: { durable?: boolean },
  ) {
    if (this.pattern.test(key)) this.puts++;
    return super.put(key, body, meta);
  }
}

/** An API call with the key as Bearer and `body` as JSON; the answer with its status. */
export async function apiCall(
  env: TestEnv,
  key: string,
  method: string,
  path: string,
  body?: unknown,
) {
  return await json(
    await env.app.request(path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

/**
 * An admin (its `adminKey`) disables or enables account `userId` through the admin API,
 * as an operator would; fails the test unless it is answered 200.
 */
export async function setAccountDisabled(
  env: TestEnv,
  adminKey: string,
  userId: string,
  disabled: boolean,
): Promise<void> {
  const r = await apiCall(
    env,
    adminKey,
    "PATCH",
    `/api/1/admin/users/${userId}`,
    {
      disabled,
    },
  );
  if (r.status !== 200) {
    throw new Error(
      `admin PATCH disabled=${disabled}: ${JSON.stringify(r.body)}`,
    );
  }
}

/** POSTs a form to /api/1/upload with the key as Bearer; the JSON answer with its status. */
export async function upload(
  env: TestEnv,
  key: string,
  fd: FormData,
  query = "",
) {
  return await json(
    await env.app.request(`/api/1/upload${query}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    }),
  );
}

/**
 * As upload, but the form sent as bytes with its Content-Length, as browsers and curl
 * send it: the body's declared size then decides where it is received (requestScratch).
 */
export async function uploadDeclared(
  env: TestEnv,
  key: string,
  fd: FormData,
) {
  const form = new Response(fd);
  const body = new Uint8Array(await form.arrayBuffer());
  return await json(
    await env.app.request("/api/1/upload", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": form.headers.get("content-type")!,
        "content-length": String(body.length),
      },
      body,
    }),
  );
}

/** A request to the app with its body read as bytes. */
export async function fetchBytes(
  env: TestEnv,
  url: string,
  init?: RequestInit,
) {
  const res = await env.app.request(url, init);
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/**
 * Files left in this process's scratch folder (in the app's DATA_DIR, and in memory, where
 * small bodies go, and everything with SCRATCH=memory): upload temp files, and the TIFF a
 * BMP is rewritten to.
 */
export function scratchFiles(env: TestEnv): string[] {
  // Small bodies are held in memory on disk too (ImagePipeline#requestScratch).
  if (env.config.SCRATCH === "memory") return memoryFileNames();
  try {
    return [
      ...[...Deno.readDirSync(`${env.config.DATA_DIR}/tmp/${processTag()}`)]
        .map((e) => e.name),
      ...memoryFileNames(),
    ];
  } catch {
    return memoryFileNames(); // never created
  }
}

/** Every object key in a test app's store. */
export async function storedKeys(env: TestEnv): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of env.deps.store.list()) keys.push(k.key);
  return keys;
}
