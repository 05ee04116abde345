import { createHash } from "node:crypto";
import { Server, type Upload } from "@tus/server";
import { newUploadId, type TusBackend } from "./tus_backends.ts";
import { openScratch } from "../runtime/scratch_files.ts";
import {
  ApiError,
  errorBody,
  type ErrorCode,
  invalidField,
} from "../../schemas/errors.ts";
import type { Config } from "../../schemas/config.ts";
import type { ImageRecord } from "../images/records.ts";
import type { IncomingImage } from "../images/pipeline_stages.ts";
import { resumableLimit, TUS_PATH } from "./tus_path.ts";
import { KeyedLine } from "../runtime/keyed_line.ts";
import {
  accessProblem,
  type UploadAccess,
  uploadAccess,
} from "../privacy/password_access.ts";

/**
 * The header the route sets on the request it hands to tus: the caller's account. A
 * client's own value is dropped first (the route builds a fresh request).
 */
const OWNER_HEADER = "x-imagehost-owner";

/**
 * The header the route sets on a creation it hands to tus: that request's reservation
 * (see ResumableUploads#reserved). A client's own value is dropped too.
 */
const CREATION_HEADER = "x-imagehost-creation";

/** What a finished upload is handed to: the upload pipeline (ImagePipeline#ingest). */
export type Ingest = (
  userId: string,
  file: IncomingImage,
  opts: {
    expiration?: number;
    albumId?: string;
    access?: UploadAccess;
    maxBytes: number;
  },
) => Promise<ImageRecord & { duplicate?: boolean }>;

/** What the resumable uploads need. */
export interface ResumableDeps {
  config: Pick<
    Config,
    | "TUS_MAX_FILE_BYTES"
    | "TUS_EXPIRE_HOURS"
    | "TUS_PENDING_MB"
    | "TUS_UPLOADS_AT_ONCE"
    | "SCRATCH"
    | "MEMORY_REQUEST_MB"
  >;
  /** Where the uploads' parts are kept: on disk, or in the bucket (tus_backends.ts). */
  backend: TusBackend;
  ingest: Ingest;
  /**
   * Throws 180 when `bytes` more would not fit the account's storage or image quota now
   * (checked at creation, so a file that cannot be kept is not sent first).
   */
  fits: (userId: string, bytes: number) => Promise<void>;
  /** An album id of the user's (the upload's `album` metadata), or 404/160. */
  albumOf: (userId: string, album: string) => Promise<string>;
  /** The envelope a finished or refused upload answers with. */
  answer: (body: unknown) => string;
  /** Hears a finished upload's failure that is no ApiError (a bug: answered 500). */
  onError: (e: unknown) => void;
}

/**
 * Resumable uploads on the tus 1.0 protocol (issue #53), through `@tus/server` with
 * `@tus/file-store`: creation (with upload), termination and expiration. The key is
 * checked by the API's middleware before anything reaches here; each upload belongs to
 * the account that created it (its `owner`, kept server-side in its info), and only that
 * account may continue, inspect or end it (404 to others, as for none). A finished upload
 * goes through the same pipeline as every upload (type from the bytes, pixel bounds,
 * metadata strip, record, duplicates); the final PATCH answers its record in the usual
 * envelope, and the upload's parts are removed whether it was stored or refused.
 */
export class ResumableUploads {
  readonly server: Server;
  readonly #limit: { bytes: number; setting: string };
  /** An account's creations are checked one after another (see #create). */
  readonly #line = new KeyedLine();
  /**
   * Uploads that passed their creation's check, by the creation's token, until its
   * request ends: by then tus has written the upload's info, where the next check counts
   * it. Counted with the written ones (once each), so a creation never waits on tus's
   * write to see the one before it.
   */
  readonly #reserved = new Map<
    string,
    { owner: string; id: string; size: number }
  >();

  constructor(private readonly deps: ResumableDeps) {
    this.#limit = resumableLimit(deps.config);
    this.server = new Server({
      path: TUS_PATH,
      datastore: deps.backend.datastore,
      namingFunction: () => newUploadId(),
      maxSize: this.#limit.bytes,
      // An upload's URL is a path (tus clients resolve it against their endpoint): right
      // at whatever address or proxy the client came by, with no Host or X-Forwarded-*
      // header to trust (issue #52).
      relativeLocation: true,
      onUploadCreate: (req, upload) => this.#create(req, upload),
      onUploadFinish: (req, upload) => this.#finish(req, upload),
    });
  }

  /**
   * Answers one tus request of `userId`: creation, or an upload of theirs (HEAD, PATCH,
   * DELETE). OPTIONS needs no account and is answered before the key check.
   */
  async handle(req: Request, userId: string): Promise<Response> {
    const id = uploadIdOf(new URL(req.url).pathname);
    const length = Number(req.headers.get("upload-length") ?? 0);
    const limit = this.#limit;
    if (req.method === "POST" && length > limit.bytes) {
      // Before tus's own plain-text 413, and before any byte is sent: the envelope,
      // naming the bound.
      return this.#refuse(
        413,
        new ApiError(130, {
          details: [{
            path: "Upload-Length",
            message:
              `a resumable upload may be at most ${limit.bytes} bytes here (${limit.setting})`,
          }],
        }),
      );
    }
    if (id !== undefined) {
      const owner = await this.#ownerOf(id);
      if (owner !== userId) return this.#refuse(404, new ApiError(404));
    }
    const headers = new Headers(req.headers);
    headers.set(OWNER_HEADER, userId);
    headers.delete(CREATION_HEADER);
    const creation = req.method === "POST" ? crypto.randomUUID() : undefined;
    if (creation) headers.set(CREATION_HEADER, creation);
    try {
      return await this.#enveloped(
        await this.server.handleWeb(
          // Built afresh, not from `req`: copying a request reads its signal, which Deno
          // warns about (legacy abort); a cut body already ends the write.
          new Request(req.url, {
            method: req.method,
            headers,
            body: req.body,
            // @ts-ignore: fetch's streaming body option, which Deno's types lack here.
            duplex: "half",
          }),
        ),
      );
    } finally {
      if (creation) this.#reserved.delete(creation);
    }
  }

  /**
   * tus's own refusals (plain text) in the envelope, at their status where a code has it:
   * 409 offset conflict (161) and 412 no Tus-Resumable (162) as tus clients expect them,
   * 413 as 130, 410 as 404, 423 (the upload busy) and a request a newer one took over
   * (tus's 400 "lock acquired") as 250 with Retry-After, which clients retry; 460
   * (checksum) and any other 4xx as 160.
   */
  async #enveloped(res: Response): Promise<Response> {
    const type = res.headers.get("content-type") ?? "";
    if (res.status < 400 || type.includes("application/json")) return res;
    // A hook's refusal (tusError) is the envelope already; tus sends it untyped.
    const text = await res.text();
    if (text.startsWith('{"status":')) {
      const out = new Response(text, {
        status: res.status,
        headers: res.headers,
      });
      out.headers.set("content-type", "application/json");
      return out;
    }
    // tus answers 400 "Request aborted due to lock acquired" to a request that a newer one
    // for the same upload took over (a retry after a cut): busy, retried, not a bad request.
    const busy = res.status === 400 && /lock/i.test(text);
    const code = busy ? 250 : ({
      400: 160,
      403: 403,
      404: 404,
      409: 161,
      410: 404,
      412: 162,
      413: 130,
      415: 415,
      423: 250,
      500: 500,
    } as Record<number, ErrorCode>)[res.status] ?? 160;
    const e = new ApiError(code, {
      details: [{ message: `tus: ${res.status} ${text.trim()}`.trim() }],
    });
    const out = this.#refuse(e.status, e);
    for (const h of ["Tus-Resumable", "Tus-Version", "Upload-Offset"]) {
      const v = res.headers.get(h);
      if (v) out.headers.set(h, v);
    }
    if (code === 250) out.headers.set("Retry-After", "1");
    return out;
  }

  /** An answer in the envelope, as tus clients read a refusal. */
  #refuse(status: number, e: ApiError): Response {
    return new Response(this.deps.answer(e), {
      status,
      headers: { "content-type": "application/json", "Tus-Resumable": "1.0.0" },
    });
  }

  /** Removes the parts of uploads unwritten for TUS_EXPIRE_HOURS; how many went. */
  async cleanUp(): Promise<number> {
    return await this.deps.backend.expire();
  }

  /** The account an upload was created by, or undefined when there is none. */
  async #ownerOf(id: string): Promise<string | undefined> {
    try {
      return (await this.deps.backend.datastore.getUpload(id)).metadata
        ?.owner ??
        undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * A creation: the account's bounds (TUS_UPLOADS_AT_ONCE, TUS_PENDING_MB), a known
   * length, and the owner written into the upload's info. An account's creations are
   * checked one at a time, each counting those that passed before it: sent at the same
   * moment, ten creations against a bound of three were all opened when each read the
   * count before any was written. (Across instances, each still checks alone: a burst
   * split over several can pass by a creation per instance while the others' are being
   * written.)
   */
  async #create(req: Request, upload: Upload) {
    const owner = req.headers.get(OWNER_HEADER)!;
    const creation = req.headers.get(CREATION_HEADER)!;
    return await this.#line.run(owner, async () => {
      const made = await this.#checkCreation(owner, upload);
      this.#reserved.set(creation, {
        owner,
        id: upload.id,
        size: upload.size!,
      });
      return made;
    });
  }

  async #checkCreation(owner: string, upload: Upload) {
    if (upload.sizeIsDeferred || upload.size === undefined) {
      throw tusError(
        invalidField("Upload-Length", "give the file's length"),
      );
    }
    // The reservations before the listing: one gone by the time it is read had its
    // request end, so its info was written before the listing began.
    const reserved = [...this.#reserved.values()].filter((r) =>
      r.owner === owner
    );
    const open = await this.#unfinishedOf(owner);
    const written = new Set(open.map((u) => u.id));
    for (const r of reserved) if (!written.has(r.id)) open.push(r);
    if (open.length >= this.deps.config.TUS_UPLOADS_AT_ONCE) {
      throw tusError(
        new ApiError(170, {
          details: [{
            path: "TUS_UPLOADS_AT_ONCE",
            message:
              `at most ${this.deps.config.TUS_UPLOADS_AT_ONCE} unfinished resumable uploads at once: finish or DELETE one`,
          }],
        }),
      );
    }
    const bad = metadataProblem(upload.metadata ?? {});
    if (bad) throw tusError(bad);
    const pending = open.reduce((n, u) => n + (u.size ?? 0), 0);
    if (pending + upload.size > this.deps.config.TUS_PENDING_MB * 1024 * 1024) {
      throw tusError(
        new ApiError(130, {
          details: [{
            path: "TUS_PENDING_MB",
            message:
              `unfinished resumable uploads may hold at most ${this.deps.config.TUS_PENDING_MB} MB per account`,
          }],
        }),
      );
    }
    try {
      await this.deps.fits(owner, upload.size);
    } catch (e) {
      if (e instanceof ApiError) throw tusError(e);
      throw e;
    }
    return { metadata: { ...upload.metadata, owner } };
  }

  /** The account's unfinished uploads. */
  async #unfinishedOf(
    owner: string,
  ): Promise<{ id: string; size?: number }[]> {
    const out: { id: string; size?: number }[] = [];
    const ids: string[] = [];
    for await (const id of this.deps.backend.ids()) ids.push(id);
    for (const id of ids) {
      const upload = await this.deps.backend.datastore.getUpload(id).catch(
        () => undefined,
      );
      if (
        upload?.metadata?.owner === owner && upload.offset !== upload.size
      ) out.push(upload);
    }
    return out;
  }

  /**
   * A finished upload: the pipeline stores it (or refuses it with its usual code); the
   * final PATCH answers the record or the error envelope; the parts go either way.
   */
  async #finish(req: Request, upload: Upload) {
    const owner = req.headers.get(OWNER_HEADER)!;
    const meta = upload.metadata ?? {};
    let file: { path: string; release(): Promise<void> } | undefined;
    try {
      const bad = metadataProblem(meta);
      if (bad) throw bad;
      const expiration = meta.expiration ? Number(meta.expiration) : undefined;
      const albumId = meta.album
        ? await this.deps.albumOf(owner, meta.album)
        : undefined;
      file = await this.deps.backend.finished(upload);
      const path = file.path;
      const record = await this.deps.ingest(owner, {
        path,
        filename: (meta.title || meta.filename || "image").slice(0, 255),
        size: upload.size!,
        sha256: await sha256Of(path),
      }, {
        expiration: expiration || undefined,
        albumId,
        // Stored with its privacy from the start (it was public until an edit after).
        access: await uploadAccess(
          meta.privacy ?? undefined,
          meta.password ?? undefined,
        ),
        maxBytes: this.#limit.bytes,
      });
      return {
        status_code: 200,
        headers: { "Content-Type": "application/json" },
        body: this.deps.answer(record),
      };
    } catch (e) {
      if (!(e instanceof ApiError)) this.deps.onError(e);
      const err = e instanceof ApiError ? e : new ApiError(500);
      return {
        status_code: err.status,
        headers: { "Content-Type": "application/json" },
        body: this.deps.answer(err),
      };
    } finally {
      // Stored or refused, its parts go.
      if (file) await file.release();
      else await this.deps.backend.datastore.remove(upload.id).catch(() => {});
    }
  }
}

/**
 * What is wrong with an upload's metadata, checked at its creation (before any byte is
 * sent) and again at its end: `privacy` and `password` as an upload's fields
 * (accessProblem); `expiration` whole seconds.
 */
function metadataProblem(
  meta: Record<string, string | null>,
): ApiError | undefined {
  const access = accessProblem(
    meta.privacy ?? undefined,
    meta.password ?? undefined,
  );
  if (access) return access;
  if (meta.expiration && !/^\d+$/.test(meta.expiration)) {
    return invalidField("expiration", "seconds, an integer");
  }
  return undefined;
}

/** The upload id of a tus URL (`/api/1/tus/<id>`), or undefined for the endpoint. */
export function uploadIdOf(pathname: string): string | undefined {
  const rest = pathname.slice(TUS_PATH.length).replace(/^\/+|\/+$/g, "");
  return rest ? rest : undefined;
}

/** A tus hook's refusal: tus answers its status and body. */
function tusError(e: ApiError) {
  return {
    status_code: e.status,
    body: JSON.stringify(errorBody(e.code, e.details, e.message)),
  };
}

/** The SHA-256 of a scratch file (on disk or in memory), read in chunks. */
async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  const f = await openScratch(path, { read: true });
  try {
    const buf = new Uint8Array(1 << 20);
    for (;;) {
      const n = await f.read(buf);
      if (n === null) break;
      hash.update(buf.subarray(0, n));
    }
  } finally {
    f.close();
  }
  return hash.digest("hex");
}
