import { Upload } from "tus-js-client";
import { errorFromBody, ServiceError } from "./errors.ts";

/** Controls of a resumable upload in progress (UploadOptions.onResumable). */
export interface ResumableControls {
  /** Stops sending; what arrived stays on the server. */
  pause(): void;
  /** Goes on from the server's offset. */
  resume(): void;
}

/** What a resumable send needs. */
export interface ResumableSend {
  endpoint: string;
  auth: [string, string];
  file: Blob;
  expiration?: number;
  album?: string;
  privacy?: string;
  password?: string;
  onProgress(percent: number): void;
  onResumable?: (controls: ResumableControls) => void;
  signal?: AbortSignal;
}

/**
 * Sends one file on the tus protocol to /api/1/tus/ (tus-js-client): a cut connection is
 * retried from the server's offset, and the upload survives a page reload (the client's
 * fingerprint store in localStorage: the same file picked again goes on from where it
 * stopped). Resolves to the envelope the last chunk answers (the image record).
 */
export function sendResumable(
  s: ResumableSend,
): Promise<{ status: 200; success: true; data: unknown }> {
  return new Promise((resolve, reject) => {
    const metadata: Record<string, string> = {
      filename: (s.file as File).name || "image",
    };
    if (s.expiration) metadata.expiration = String(s.expiration);
    if (s.album) metadata.album = s.album;
    if (s.privacy) metadata.privacy = s.privacy;
    if (s.password) metadata.password = s.password;
    const upload = new Upload(s.file, {
      endpoint: s.endpoint,
      headers: { [s.auth[0]]: s.auth[1] },
      metadata,
      chunkSize: 8 * 1024 * 1024,
      retryDelays: [0, 1000, 3000, 5000, 10000],
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onProgress: (sent, total) =>
        s.onProgress(total ? (sent / total) * 100 : 0),
      onError: (e) => {
        const res = (e as {
          originalResponse?: {
            getStatus(): number;
            getBody(): string;
            getHeader(name: string): string | undefined;
          };
        })
          .originalResponse;
        if (!res) {
          return reject(new ServiceError(`Network error: ${e.message}`, 0, 0));
        }
        let body: unknown;
        try {
          body = JSON.parse(res.getBody());
        } catch { /* not JSON */ }
        reject(
          errorFromBody(res.getStatus(), body, res.getHeader("Retry-After")),
        );
      },
      onSuccess: (p) => {
        try {
          resolve(JSON.parse(p.lastResponse.getBody()));
        } catch {
          reject(
            new ServiceError("The upload's answer was not readable", 0, 0),
          );
        }
      },
    });
    s.signal?.addEventListener("abort", () => {
      upload.abort(true).catch(() => {});
      reject(new ServiceError("Upload cancelled", -1, 0));
    });
    s.onResumable?.({
      pause: () => void upload.abort(false),
      resume: () => upload.start(),
    });
    // The same file picked again (after a reload) goes on from the server's offset.
    upload.findPreviousUploads().then((previous) => {
      if (previous.length) upload.resumeFromPreviousUpload(previous[0]);
      upload.start();
    }, () => upload.start());
  });
}
