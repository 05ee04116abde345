import { createApp } from "../app.ts";
import { loadConfig } from "../schemas/config.ts";
import { systemClock } from "../services/runtime/clock.ts";
import { memoryLogger } from "../services/runtime/logger.ts";
import type { Database } from "../services/db/database.ts";
import type { BlobStore } from "../services/store/blob_store.ts";

/**
 * An app built only to read its OpenAPI document: routes register without touching the
 * database or the store, so inert stand-ins that refuse use are enough.
 */
export function documentApp() {
  const refuse = () => {
    throw new Error("documentation app: no database or store");
  };
  const database = {
    kind: "pglite",
    db: new Proxy({}, { get: refuse }),
    ping: refuse,
    close: refuse,
    // Subscribing is harmless: nothing is ever notified.
    listen: () => Promise.resolve(() => Promise.resolve()),
  } as unknown as Database;
  const store = {
    kind: "none",
    put: refuse,
    get: refuse,
    stat: refuse,
    delete: refuse,
  } as unknown as BlobStore;
  const app = createApp({
    config: loadConfig({ BASE_URL: "http://localhost:8080" }),
    database,
    store,
    clock: systemClock,
    log: memoryLogger(),
  });
  return Promise.resolve({ app, close: () => Promise.resolve() });
}
