import type * as PgBossModule from "pg-boss";

let loaded: typeof PgBossModule | undefined;

/**
 * pg-boss, imported when the job queue starts rather than with the app: ~90 ms of a cold
 * start's imports that its first upload need not wait for (issue #49).
 */
export async function loadPgBoss(): Promise<typeof PgBossModule> {
  return loaded ??= await import("pg-boss");
}

/**
 * pg-boss's handle on a Kysely database or transaction, for a send or a schedule inside
 * it. Only reached once a queue was started (its `boss` in hand), so pg-boss is loaded.
 */
export function queueDb(
  db: unknown,
): ReturnType<typeof PgBossModule.fromKysely> {
  if (!loaded) throw new Error("pg-boss is not loaded yet");
  return loaded.fromKysely(db as never);
}
