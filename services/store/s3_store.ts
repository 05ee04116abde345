import { AwsClient } from "aws4fetch";
import {
  assertKey,
  type BlobBody,
  type BlobStat,
  type BlobStore,
  type ByteRange,
} from "./blob_store.ts";

/** Settings of an S3-compatible bucket (path-style addressing). */
export interface S3Options {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  timeoutMs?: number;
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

  constructor(opts: S3Options) {
    this.#aws = new AwsClient({
      accessKeyId: opts.accessKeyId,
      secretAccessKey: opts.secretAccessKey,
      region: opts.region,
      service: "s3",
    });
    this.#base = `${opts.endpoint.replace(/\/+$/, "")}/${opts.bucket}`;
    this.#timeout = opts.timeoutMs ?? 30_000;
  }

  #url(key: string) {
    assertKey(key);
    return `${this.#base}/${key}`;
  }

  async #fetch(url: string, init: RequestInit = {}): Promise<Response> {
    return await this.#aws.fetch(url, {
      ...init,
      signal: AbortSignal.timeout(this.#timeout),
    });
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
      },
    });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`S3 PUT ${key} failed: ${res.status}`);
  }

  /** Reads the file in one allocation of its exact size, PUTs it, then removes it. */
  async putFile(
    key: string,
    path: string,
    meta: { contentType: string },
  ): Promise<void> {
    const bytes = await Deno.readFile(path);
    await this.put(key, bytes, { ...meta, size: bytes.length });
    await Deno.remove(path).catch(() => {});
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
