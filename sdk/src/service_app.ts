import type { ResumableSend } from "./resumable.ts";
import { errorFromBody, ServiceError } from "./errors.ts";
import {
  createUploadWidget,
  type UploadWidget,
  type WidgetOptions,
} from "./widget.ts";
import type {
  ImageRecord,
  MultiUploadResponse,
  Uploader,
  UploadOptions,
  UploadResponse,
} from "./types.ts";

/** Constructor options. */
export interface ServiceAppOptions {
  /** Service address; defaults to where the script was loaded from, else the page origin. */
  baseUrl?: string;
}

/**
 * The multi-file envelope of an upload's answer: the service answers a single image with
 * its record, which becomes a batch of one, so callers get the shape they were promised.
 */
function asBatch(
  body: { status: 200; success: true; data: unknown },
): MultiUploadResponse {
  const data = body.data as ImageRecord | MultiUploadResponse["data"];
  if (data.kind === "image") {
    return {
      status: 200,
      success: true,
      data: { kind: "batch", images: [data], count: 1 },
    };
  }
  return body as MultiUploadResponse;
}

/**
 * The resumable sender (tus-js-client, ~60 KB), loaded from the service at the first
 * large file, so the SDK itself stays small: `<service>/service-sdk-resumable.mjs`.
 */
function resumableModule(base: string): Promise<{
  sendResumable(
    s: ResumableSend,
  ): Promise<{ status: 200; success: true; data: unknown }>;
}> {
  const url = `${base}/service-sdk-resumable.mjs`;
  return import(url);
}

let scriptOrigin: string | undefined;
/** Records the origin of the script tag that loaded the browser build. */
export function setScriptOrigin(origin: string | undefined) {
  scriptOrigin = origin;
}

/** The browser client of the image service (SPEC.md 4.3). */
export class ServiceApp implements Uploader {
  readonly apiKey: string;
  readonly baseUrl: string;
  /** The header that authenticates each call: the key, or the site session's token. */
  #auth: [string, string];

  constructor(apiKey: string, options: ServiceAppOptions = {}) {
    if (!apiKey || typeof apiKey !== "string") {
      throw new TypeError("ServiceApp needs an API key");
    }
    this.apiKey = apiKey;
    this.#auth = ["Authorization", `Bearer ${apiKey}`];
    const base = options.baseUrl ?? scriptOrigin ??
      (typeof location !== "undefined" ? location.origin : "");
    this.baseUrl = base.replace(/\/+$/, "");
  }

  /**
   * A client for the service's own pages: calls carry the signed-in session's cookie and
   * its form token (X-CSRF-Token) instead of an API key, so no key ever sits in a page.
   * The service accepts them from its own origin only.
   */
  static forSession(
    csrfToken: string,
    options: ServiceAppOptions = {},
  ): ServiceApp {
    if (!csrfToken || typeof csrfToken !== "string") {
      throw new TypeError("ServiceApp.forSession needs the session's token");
    }
    const app = new ServiceApp("session", options);
    app.#auth = ["X-CSRF-Token", csrfToken];
    return app;
  }

  /**
   * Has the service download images from web addresses (public http(s) only) and store
   * them as if uploaded; resolves to the multi-file envelope, per-address errors included.
   */
  async importUrls(
    urls: string[],
    options: {
      expiration?: number;
      album?: string;
      privacy?: UploadOptions["privacy"];
      signal?: AbortSignal;
    } = {},
  ): Promise<MultiUploadResponse> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}/api/1/upload`, {
        method: "POST",
        headers: {
          [this.#auth[0]]: this.#auth[1],
          "Content-Type": "application/json",
        },
        body: JSON.stringify({
          image: urls,
          ...(options.expiration ? { expiration: options.expiration } : {}),
          ...(options.album ? { album_id: options.album } : {}),
          ...(options.privacy ? { privacy: options.privacy } : {}),
        }),
        signal: options.signal,
      });
    } catch (e) {
      if (options.signal?.aborted) {
        throw new ServiceError("Upload cancelled", -1, 0);
      }
      throw new ServiceError(
        `Network error: ${(e as Error).message ?? "unreachable"}`,
        0,
        0,
      );
    }
    const body = await res.json().catch(() => undefined);
    if (!res.ok || !body?.success) {
      throw errorFromBody(res.status, body, res.headers.get("Retry-After"));
    }
    return asBatch(body);
  }

  /**
   * Uploads one file; resolves to the envelope with `url` at the top level. A file over
   * `resumableFromMB` (8) goes resumable (tus): pause and resume it through
   * `onResumable`; a cut connection or a reload does not start it again from zero.
   */
  async upload(
    file: Blob,
    options: UploadOptions = {},
  ): Promise<UploadResponse> {
    const from = options.resumableFromMB ?? 8;
    const body = from > 0 && file.size > from * 1024 * 1024
      ? await (await resumableModule(this.baseUrl)).sendResumable({
        endpoint: `${this.baseUrl}/api/1/tus/`,
        auth: this.#auth,
        file,
        expiration: options.expiration,
        album: options.album,
        privacy: options.privacy,
        password: options.password,
        onProgress: (p) => {
          options.onProgress?.(Math.round(p));
          options.onFileProgress?.(0, Math.round(p));
        },
        onResumable: options.onResumable,
        signal: options.signal,
      })
      : await this.#send([file], options);
    const data = body.data as ImageRecord;
    return { ...(body as Omit<UploadResponse, "url">), url: data.url };
  }

  /** Uploads several files in one request; resolves to the multi-file envelope. */
  async uploadMultiple(
    files: Iterable<Blob> | ArrayLike<Blob>,
    options: UploadOptions = {},
  ): Promise<MultiUploadResponse> {
    const list = Array.from(files as ArrayLike<Blob>);
    return asBatch(await this.#send(list, options));
  }

  /** Opens an upload widget (a dialog, or inline in `options.container`). */
  createUploadWidget(options: WidgetOptions = {}): UploadWidget {
    return createUploadWidget(this, options);
  }

  #send(
    files: Blob[],
    options: UploadOptions,
  ): Promise<{ status: 200; success: true; data: unknown }> {
    if (files.length === 0) {
      return Promise.reject(new ServiceError("No image file provided", 140, 0));
    }
    const form = new FormData();
    if (options.expiration) {
      form.append("expiration", String(options.expiration));
    }
    if (options.album) form.append("album_id", options.album);
    if (options.privacy) form.append("privacy", options.privacy);
    if (options.password) form.append("password", options.password);
    for (const f of files) {
      form.append("images", f, (f as File).name || "image");
    }
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${this.baseUrl}/api/1/upload`);
      xhr.setRequestHeader(this.#auth[0], this.#auth[1]);
      xhr.responseType = "json";
      let last = -1;
      const progress = (p: number) => {
        p = Math.max(0, Math.min(100, Math.round(p)));
        if (p > last) {
          last = p;
          options.onProgress?.(p);
        }
      };
      // Where each file's bytes end in the body, as a share of it: the rest of the body
      // (part headers, the expiration field) is small and spread over every file alike.
      const sizes = files.map((f) => f.size);
      const all = sizes.reduce((a, b) => a + b, 0) || 1;
      const fileProgress = (share: number) => {
        if (!options.onFileProgress) return;
        let start = 0;
        sizes.forEach((size, i) => {
          const end = start + size / all;
          const p = share >= end
            ? 100
            : share <= start
            ? 0
            : ((share - start) / (end - start)) * 100;
          options.onFileProgress!(i, Math.round(p));
          start = end;
        });
      };
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable && e.total > 0) {
          progress((e.loaded / e.total) * 100);
          fileProgress(e.loaded / e.total);
        }
      };
      xhr.upload.onload = () => {
        progress(100);
        fileProgress(1);
      };
      xhr.onload = () => {
        const body = xhr.response;
        if (xhr.status === 200 && body?.success) {
          progress(100);
          resolve(body);
        } else {
          reject(
            errorFromBody(
              xhr.status,
              body,
              xhr.getResponseHeader("Retry-After"),
            ),
          );
        }
      };
      xhr.onerror = () =>
        reject(
          new ServiceError(
            "Network error: the service could not be reached",
            0,
            0,
          ),
        );
      xhr.onabort = () => reject(new ServiceError("Upload cancelled", -1, 0));
      if (options.signal) {
        if (options.signal.aborted) return xhr.abort();
        options.signal.addEventListener("abort", () => xhr.abort(), {
          once: true,
        });
      }
      progress(0);
      xhr.send(form);
    });
  }
}
