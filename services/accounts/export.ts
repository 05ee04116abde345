import type { Kysely } from "kysely";
import { makeZip } from "client-zip";
import type { DB } from "../db/schema.ts";
import type { Config } from "../../schemas/config.ts";
import type { Clock } from "../runtime/clock.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { ApiError } from "../../schemas/errors.ts";
import {
  blobKeys,
  type ImageRow,
  liveImages,
  toImageRecord,
} from "../images/records.ts";
import { listAlbums, toAlbumRecord } from "../albums/albums.ts";
import { keepRequestOrigin } from "../runtime/link_base.ts";

/**
 * "Export my data" (issue #52): one zip of every original the account stores, under
 * `images/<id>.<ext>`, and `manifest.json` with the account, its albums and every image's
 * record (title, description, privacy, album, expiry, links). Streamed with client-zip
 * (stored, not deflated: images are compressed already), pulled a page of rows and one
 * file at a time, so an instance's memory does not grow with the account's size.
 */

/** Rows read at a time, for the files and again for the manifest. */
const PAGE = 200;

/** What an export needs. */
export interface ExportDeps {
  db: Kysely<DB>;
  store: BlobStore;
  config: Config;
  clock: Clock;
  /** Told when a download ends short (the store or database failed mid-stream). */
  onError?: (e: unknown) => void;
}

/**
 * Accounts with an export under way in this process, per database (so per app): one at
 * a time each.
 */
const runningBy = new WeakMap<object, Set<string>>();

/** The account's live images after `after` (by id), a page of them. */
function imagePage(deps: ExportDeps, userId: string, after: string) {
  return liveImages(deps.db, deps.clock).selectAll()
    .where("user_id", "=", userId).where("id", ">", after)
    .orderBy("id").limit(PAGE).execute();
}

/** Every live image of the account, page by page. */
async function* allImages(
  deps: ExportDeps,
  userId: string,
  first: ImageRow[],
): AsyncGenerator<ImageRow> {
  let page = first;
  while (page.length) {
    yield* page;
    if (page.length < PAGE) return;
    page = await imagePage(deps, userId, page[page.length - 1].id);
  }
}

/** The zip's path of an image's original. */
function pathOf(row: ImageRow): string {
  return `images/${blobKeys(row).original}`;
}

/**
 * The export of `userId`'s account as a zip stream and its file name. The account, its
 * albums and the first page of images are read before anything is answered, so a
 * database that is away is an error answer (503), not a broken download; a second export
 * of the same account while one runs here is 429/170.
 */
export async function exportAccount(
  deps: ExportDeps,
  userId: string,
): Promise<{ stream: ReadableStream<Uint8Array>; filename: string }> {
  let running = runningBy.get(deps.db);
  if (!running) runningBy.set(deps.db, running = new Set());
  if (running.has(userId)) {
    throw new ApiError(170, {
      details: [{
        path: "export",
        message: "an export of this account is under way: one at a time",
      }],
    });
  }
  // Taken before the first await: two requests at the same moment both passed the check
  // when it was taken once the zip was ready.
  running.add(userId);
  const release = () => running.delete(userId);
  try {
    return await zipOf(deps, userId, release);
  } catch (e) {
    release();
    throw e;
  }
}

/**
 * The account's zip, streamed; `release` is called once the stream ends, is cancelled or
 * fails.
 */
async function zipOf(
  deps: ExportDeps,
  userId: string,
  release: () => void,
): Promise<{ stream: ReadableStream<Uint8Array>; filename: string }> {
  const account = await deps.db.selectFrom("users")
    .select(["id", "email", "role", "created_at"])
    .where("id", "=", userId).executeTakeFirst();
  if (!account) throw new ApiError(110);
  const albums = await listAlbums(deps.db, userId, deps.clock);
  const first = await imagePage(deps, userId, "");
  const now = deps.clock.now();
  // Records are built while the server pulls the body, after the handler returned:
  // their links keep the address the request came to.
  const here = keepRequestOrigin();
  /**
   * Images whose original is in the zip. Any other (its bytes gone from the store, or
   * uploaded while the files were written) is `file: null` in the manifest.
   */
  const included = new Set<string>();

  async function* files() {
    for await (const row of allImages(deps, userId, first)) {
      const blob = await deps.store.get(blobKeys(row).original);
      if (!blob) continue;
      included.add(row.id);
      yield {
        name: pathOf(row),
        input: blob.body,
        size: blob.size,
        lastModified: new Date(row.created_at),
      };
    }
    yield {
      name: "manifest.json",
      input: manifest(),
      lastModified: now,
    };
  }

  /** The manifest, written as its image records are read (a page at a time). */
  async function* manifest(): AsyncGenerator<string> {
    const head = {
      exported_at: now.toISOString(),
      account: {
        id: account!.id,
        email: account!.email,
        role: account!.role,
        created_at: new Date(account!.created_at).toISOString(),
      },
      albums: here(() => albums.map((v) => toAlbumRecord(deps.config, v))),
    };
    const text = JSON.stringify(head, null, 2);
    yield `${text.slice(0, -2)},\n  "images": [`;
    let n = 0;
    const again = await imagePage(deps, userId, "");
    for await (const row of allImages(deps, userId, again)) {
      const entry = {
        ...here(() => toImageRecord(deps.config, row)),
        file: included.has(row.id) ? pathOf(row) : null,
        expires_at: row.expires_at
          ? new Date(row.expires_at).toISOString()
          : null,
      };
      yield `${n++ ? "," : ""}\n    ${JSON.stringify(entry)}`;
    }
    yield `${n ? "\n  " : ""}]\n}\n`;
  }

  const zip = makeZip(files(), { buffersAreUTF8: true });
  return {
    stream: releasing(zip, (e) => {
      release();
      if (e !== undefined) deps.onError?.(e);
    }),
    filename: `image-host-export-${now.toISOString().slice(0, 10)}.zip`,
  };
}

/**
 * `stream`, calling `done` once when it ends, is cancelled by the client, or fails (then
 * with the error).
 */
function releasing(
  stream: ReadableStream<Uint8Array>,
  done: (error?: unknown) => void,
): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          done();
          ctl.close();
        } else ctl.enqueue(value);
      } catch (e) {
        done(e);
        ctl.error(e);
      }
    },
    async cancel(reason) {
      done();
      // The client went away: what the zip's own cancel says of it changes nothing.
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
