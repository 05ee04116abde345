import { AwsClient } from "aws4fetch";
import {
  assertKey,
  type BlobBody,
  type BlobStat,
  type BlobStore,
  type ByteRange,
} from "./blob_store.ts";
import { readFull } from "../runtime/file_io.ts";
import { bigBuffer } from "../runtime/big_buffer.ts";
import { unavailable } from "../../schemas/errors.ts";
import {
  isMemoryPath,
  openScratch,
  readScratch,
  removeScratch,
} from "../runtime/scratch_files.ts";

/**
 * A PUT's body is not hashed into its signature (S3's UNSIGNED-PAYLOAD, which every
 * S3-compatible server takes): hashing handed the whole body to WebCrypto, one more copy
 * of every image stored; the transport's own checks and the ETag still guard it.
 */
const UNSIGNED = { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };

/** Settings of an S3-compatible bucket (path-style addressing). */
export interface S3Options {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  timeoutMs?: number;
  /** Files larger than this go up as multipart uploads of parts this size (≥ 5 MiB on S3). */
  partSize?: number;
}

/**
 * S3-compatible store over signed fetch. S3 PUT is atomic per object, so a failed upload
 * leaves nothing behind. Every call has a timeout.
 */
export class S3Store implements BlobStore {
  readonly kind = "s3";
  readonly #aws: AwsClient;
  readonly #base: string;
  readonly #timeout: number;
  readonly #partSize: number;

  constructor(opts: S3Options) {
    this.#aws = new AwsClient({
      accessKeyId: opts.accessKeyId,
      secretAccessKey: opts.secretAccessKey,
      region: opts.region,
      service: "s3",
    });
    this.#base = `${opts.endpoint.replace(/\/+$/, "")}/${opts.bucket}`;
    this.#timeout = opts.timeoutMs ?? 10_000;
    this.#partSize = opts.partSize ?? 8 * 1024 * 1024;
  }

  #url(key: string) {
    assertKey(key);
    return `${this.#base}/${key}`;
  }

  /**
   * One signed request, bounded until its answer's headers arrive (a PUT's body is sent
   * before that, so uploads are bounded whole; a GET's body then streams at the reader's
   * pace). A refused connection, a timeout or a 5xx is an outage: 250 / HTTP 503.
   */
  async #fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const ctl = new AbortController();
    const timer = setTimeout(
      () => ctl.abort(new Error("S3 timeout")),
      this.#timeout,
    );
    let res: Response;
    try {
      res = await this.#aws.fetch(url, { ...init, signal: ctl.signal });
    } catch (e) {
      throw unavailable("store", e);
    } finally {
      clearTimeout(timer);
    }
    if (res.status >= 500) {
      await res.body?.cancel();
      throw unavailable("store", new Error(`S3 answered ${res.status}`));
    }
    return res;
  }

  /**
   * Creates the bucket when it does not exist yet (a fresh MinIO or s3rver), so a new
   * deployment needs no separate set-up step. Failures are left to readiness to report.
   */
  async ensureBucket(): Promise<void> {
    if (await this.ping()) return;
    const res = await this.#fetch(`${this.#base}`, { method: "PUT" });
    await res.body?.cancel();
  }

  /** True when the bucket answers within timeoutMs. */
  async ping(timeoutMs = 2000): Promise<boolean> {
    try {
      const res = await this.#aws.fetch(`${this.#base}/`, {
        method: "HEAD",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  }

  /** Every object with its last modification (ListObjectsV2, a page at a time). */
  async *list(): AsyncIterable<{ key: string; modified: Date }> {
    let token: string | undefined;
    do {
      const q = new URLSearchParams({ "list-type": "2", "max-keys": "1000" });
      if (token) q.set("continuation-token", token);
      const res = await this.#fetch(`${this.#base}/?${q}`);
      const xml = await res.text();
      if (!res.ok) throw new Error(`S3 list failed: ${res.status}`);
      for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const key = m[1].match(/<Key>([^<]+)<\/Key>/)?.[1];
        const at = m[1].match(/<LastModified>([^<]+)<\/LastModified>/)?.[1];
        if (key && at) yield { key: xmlText(key), modified: new Date(at) };
      }
      token = /<IsTruncated>true<\/IsTruncated>/.test(xml)
        ? xml.match(/<NextContinuationToken>([^<]+)<\/NextContinuationToken>/)
          ?.[1]
        : undefined;
      if (token) token = xmlText(token);
    } while (token);
  }

  async put(
    key: string,
    body: ReadableStream<Uint8Array> | Uint8Array,
    meta: { contentType: string; size: number },
  ): Promise<void> {
    // Signed PUTs need a known length and many S3 servers refuse chunked bodies, so a
    // stream is collected first; images are bounded by MAX_FILE_BYTES.
    const bytes = body instanceof Uint8Array
      ? body
      : new Uint8Array(await new Response(body).arrayBuffer());
    const res = await this.#fetch(this.#url(key), {
      method: "PUT",
      body: bytes as Uint8Array<ArrayBuffer>,
      headers: {
        "content-type": meta.contentType,
        "content-length": String(bytes.length),
        ...UNSIGNED,
      },
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`S3 PUT ${key} failed: ${res.status}`);
  }

  /**
   * PUTs a small file in one request; a larger one as a multipart upload of `partSize`
   * pieces: from disk read into one reused buffer, so memory per upload stays at one part
   * whatever the file's size (Deno's fetch sends stream bodies chunked, which S3 refuses
   * for a PUT); from memory as views of the file's bytes. The file is removed once stored.
   */
  async putFile(
    key: string,
    path: string,
    meta: { contentType: string },
  ): Promise<void> {
    if (isMemoryPath(path)) {
      // A memory file's own bytes, and its parts views of them, not copies (issue #49:
      // every copy of a body is RSS at the upload's peak; a part buffer was 8 MB of it).
      const bytes = await readScratch(path);
      if (bytes.length <= this.#partSize) {
        await this.put(key, bytes, { ...meta, size: bytes.length });
      } else {
        await this.#multipart(
          key,
          bytes.length,
          meta.contentType,
          (off, len) => Promise.resolve(bytes.subarray(off, off + len)),
        );
      }
      await removeScratch(path).catch(() => {});
      return;
    }
    const f = await openScratch(path, { read: true });
    try {
      const { size } = await f.stat();
      if (size <= this.#partSize) {
        const bytes = bigBuffer(size);
        if (await readFull(f, bytes) < size) {
          throw new Error("file ended early");
        }
        await this.put(key, bytes, { ...meta, size });
      } else {
        // Parts read in turn into one reused buffer: one part's memory per upload.
        const buf = bigBuffer(this.#partSize);
        await this.#multipart(key, size, meta.contentType, async (_, len) => {
          const part = buf.subarray(0, len);
          if (await readFull(f, part) < len) {
            throw new Error("file ended early");
          }
          return part;
        });
      }
    } finally {
      f.close();
    }
    await removeScratch(path).catch(() => {});
  }

  /**
   * A multipart upload of `size` bytes in `partSize` pieces, each asked of `part` (its
   * offset and length) just before it is sent; aborted on any failure.
   */
  async #multipart(
    key: string,
    size: number,
    contentType: string,
    part: (offset: number, length: number) => Promise<Uint8Array>,
  ) {
    const url = this.#url(key);
    const init = await this.#fetch(`${url}?uploads`, {
      method: "POST",
      headers: { "content-type": contentType },
    });
    const xml = await init.text();
    const uploadId = xml.match(/<UploadId>([^<]+)<\/UploadId>/)?.[1];
    if (!init.ok || !uploadId) {
      throw new Error(`S3 multipart start ${key} failed: ${init.status}`);
    }
    const id = encodeURIComponent(uploadId);
    try {
      const etags: string[] = [];
      for (let off = 0, n = 1; off < size; off += this.#partSize, n++) {
        const bytes = await part(off, Math.min(this.#partSize, size - off));
        const res = await this.#fetch(`${url}?partNumber=${n}&uploadId=${id}`, {
          method: "PUT",
          body: bytes as Uint8Array<ArrayBuffer>,
          headers: { "content-length": String(bytes.length), ...UNSIGNED },
        });
        await res.body?.cancel();
        const etag = res.headers.get("etag");
        if (!res.ok || !etag) {
          throw new Error(`S3 part ${n} of ${key} failed: ${res.status}`);
        }
        etags.push(etag);
      }
      const done = await this.#fetch(`${url}?uploadId=${id}`, {
        method: "POST",
        headers: { "content-type": "application/xml" },
        body: `<CompleteMultipartUpload>${
          etags.map((e, i) =>
            `<Part><PartNumber>${i + 1}</PartNumber><ETag>${
              e.replace(/&/g, "&amp;").replace(/</g, "&lt;")
            }</ETag></Part>`
          ).join("")
        }</CompleteMultipartUpload>`,
      });
      // S3 can answer 200 with an <Error> body when completing fails late.
      const body = await done.text();
      if (!done.ok || body.includes("<Error>")) {
        throw new Error(`S3 multipart completion of ${key} failed`);
      }
    } catch (e) {
      // Parts of an abandoned upload are billed until aborted.
      await this.#fetch(`${url}?uploadId=${id}`, { method: "DELETE" })
        .then((r) => r.body?.cancel()).catch(() => {});
      throw e;
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    const res = await this.#fetch(this.#url(key), { method: "HEAD" });
    await res.body?.cancel();
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(`S3 HEAD ${key} failed: ${res.status}`);
    return { size: Number(res.headers.get("content-length") ?? 0) };
  }

  async get(key: string, range?: ByteRange): Promise<BlobBody | null> {
    const res = await this.#fetch(this.#url(key), {
      headers: range ? { range: `bytes=${range.start}-${range.end}` } : {},
    });
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new Error(`S3 GET ${key} failed: ${res.status}`);
    }
    const total = res.headers.get("content-range")?.split("/")[1];
    return {
      size: Number(total ?? res.headers.get("content-length") ?? 0),
      body: res.body,
    };
  }

  async delete(key: string): Promise<void> {
    const res = await this.#fetch(this.#url(key), { method: "DELETE" });
    await res.body?.cancel();
    if (!res.ok && res.status !== 404) {
      throw new Error(`S3 DELETE ${key} failed: ${res.status}`);
    }
  }
}

function xmlText(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}
