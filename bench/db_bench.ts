/**
 * Database rates: API key lookups (the authentication on every API call) and image-record
 * inserts, on embedded PGlite and on PostgreSQL. PostgreSQL comes from TEST_DATABASE_URL, or
 * a throwaway cluster started with scripts/test_postgres.sh when postgresql is installed.
 */
import { load, table, watchdog } from "./lib.ts";

watchdog(10 * 60_000);
import {
  type Database,
  migrate,
  openDatabase,
} from "../services/db/database.ts";
import {
  authenticateKey,
  createApiKey,
} from "../services/accounts/api_keys.ts";
import { createUser } from "../services/accounts/accounts.ts";
import { randomToken } from "../services/accounts/crypto.ts";
import { systemClock } from "../services/runtime/clock.ts";

const N = Deno.args.includes("--quick") ? 500 : 3000;
let pgUrl = Deno.env.get("TEST_DATABASE_URL");
let pgDir: string | undefined;
if (!pgUrl) {
  const out = await new Deno.Command("bash", {
    args: ["scripts/test_postgres.sh"],
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(out.stdout);
  pgUrl = text.match(/TEST_DATABASE_URL=(\S+)/)?.[1];
  pgDir = text.match(/TEST_PG_DIR=(\S+)/)?.[1];
  if (!pgUrl) {
    console.error(
      "PostgreSQL not available (apt-get install -y postgresql): measuring PGlite only",
    );
  }
}

async function measure(kind: string, database: Database) {
  await migrate(database.db);
  const db = database.db;
  const user = await createUser(
    db,
    `db${randomToken(4)}@example.com`,
    "benchmark password",
  );
  const keys = await Promise.all(
    Array.from({ length: 50 }, () => createApiKey(db, user.id, "b")),
  );
  const lookups = await load(N, 8, async (i) => {
    await authenticateKey(db, keys[i % keys.length].key, systemClock);
  });
  const inserts = await load(N, 8, async () => {
    await db.insertInto("images").values({
      id: randomToken(9),
      user_id: user.id,
      title: "bench.jpg",
      ext: "jpg",
      mime: "image/jpeg",
      size: 1000,
      width: 10,
      height: 10,
      sha256: randomToken(32),
      thumb_ext: "jpg",
      medium_ext: null,
      delete_token: randomToken(24),
      expires_at: null,
      deleted_at: null,
    }).execute();
  });
  return [
    {
      db: kind,
      op: "key lookup",
      "ops/s": lookups.rps,
      "p50 ms": lookups.p50,
      "p99 ms": lookups.p99,
    },
    {
      db: kind,
      op: "image insert",
      "ops/s": inserts.rps,
      "p50 ms": inserts.p50,
      "p99 ms": inserts.p99,
    },
  ];
}

const rows: Record<string, string | number>[] = [];
const dir = await Deno.makeTempDir({ prefix: "imagehost-dbbench-" });
try {
  const lite = await openDatabase({ dataDir: `${dir}/pgdata` });
  rows.push(...await measure("PGlite (on disk)", lite));
  await lite.close();
  if (pgUrl) {
    const pg = await openDatabase({ url: pgUrl });
    rows.push(...await measure("PostgreSQL", pg));
    await pg.close();
  }
} finally {
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  if (pgDir) {
    const bin = await new Deno.Command("bash", {
      args: ["-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1"],
      stdout: "piped",
    }).output();
    const pgctl = `${new TextDecoder().decode(bin.stdout).trim()}/pg_ctl`;
    await new Deno.Command("su", {
      args: [
        "postgres",
        "-s",
        "/bin/bash",
        "-c",
        `${pgctl} -D ${pgDir}/data stop -m fast`,
      ],
      stdout: "null",
      stderr: "null",
    }).output();
    await Deno.remove(pgDir, { recursive: true }).catch(() => {});
  }
}
table(rows);
const get = (db: string, op: string) =>
  rows.find((r) => r.db.toString().startsWith(db) && r.op === op)
    ?.["ops/s"] as number;
if (pgUrl) {
  console.log(
    `ratio db key lookup: PGlite ${
      (get("PGlite", "key lookup") / get("PostgreSQL", "key lookup")).toFixed(2)
    }x PostgreSQL`,
  );
  console.log(
    `ratio db image insert: PGlite ${
      (get("PGlite", "image insert") / get("PostgreSQL", "image insert"))
        .toFixed(2)
    }x PostgreSQL`,
  );
}
