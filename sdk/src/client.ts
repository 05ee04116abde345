import type { components, operations } from "./api_types.ts";
import { errorFromBody, ServiceError } from "./errors.ts";

type Json<T> = T extends { content: { "application/json": infer B } } ? B
  : never;
type Ok<Op extends keyof operations> = operations[Op]["responses"] extends
  { 200: infer R } ? Json<R> : never;
type Accepted<Op extends keyof operations> = operations[Op]["responses"] extends
  { 202: infer R } ? Json<R> : never;

/** Response envelopes of each operation, as openapi.yaml declares them. */
export type UploadResult = Ok<"postUpload">;
export type ImageResult = Ok<"getImage">;
export type ImageListResult = Ok<"listImages">;
export type DeleteResult = Ok<"deleteImage">;
export type AlbumResult = Ok<"getAlbum">;
export type AlbumListResult = Ok<"listAlbums">;
export type AlbumImagesResult = Ok<"listAlbumImages">;
/** Request body of PATCH /api/1/images/{id}. */
export type ImagePatch = Schemas["ImagePatch"];
/** Request bodies of POST /api/1/albums and PATCH /api/1/albums/{id}. */
export type AlbumCreate = Schemas["AlbumCreate"];
export type AlbumPatch = Schemas["AlbumPatch"];
export type ScreenshotResult = Ok<"postScreenshot">;
export type PresetsResult = Ok<"getPresets">;
/** An asynchronous capture's 202 (`data.job`). */
export type ScreenshotJobAccepted = Accepted<"postScreenshot">;
export type ScreenshotJobResult = Ok<"getScreenshotJob">;
export type ScreenshotJobListResult = Ok<"listScreenshotJobs">;
export type ScreenshotBatchAccepted = Accepted<"postScreenshotBatch">;
export type ScreenshotBatchResult = Ok<"getScreenshotBatch">;
export type WebhookAccountResult = Ok<"getWebhookAccount">;
export type ScheduleResult = Ok<"getScreenshotSchedule">;
export type ScheduleListResult = Ok<"listScreenshotSchedules">;
/** Request body of POST /api/1/screenshot/schedules. */
export type ScheduleCreate = Schemas["ScheduleCreate"];
/** One asynchronous capture, as the jobs' routes answer it. */
export type ScreenshotJob = Schemas["ScreenshotJob"];
/** Request body of POST /api/1/screenshot. */
export type ScreenshotRequest = NonNullable<
  operations["postScreenshot"]["requestBody"]
>["content"]["application/json"];
/** Schemas of openapi.yaml, e.g. `Schemas["ImageRecord"]`. */
export type Schemas = components["schemas"];

/**
 * A list call's query string: `page` and `per_page`, then any filter that is set; empty
 * when none is.
 */
function pageQuery(
  page?: number,
  perPage?: number,
  filters: Record<string, string | undefined> = {},
): string {
  const q = new URLSearchParams();
  if (page) q.set("page", String(page));
  if (perPage) q.set("per_page", String(perPage));
  for (const [name, value] of Object.entries(filters)) {
    if (value) q.set(name, value);
  }
  return q.size ? `?${q}` : "";
}

/** Settings of the typed client. */
export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /** A fetch to use (tests, Node without global fetch, retries…). */
  fetch?: typeof fetch;
}

/**
 * A thin typed client over fetch, its types generated from openapi.yaml
 * (`deno task sdk`). Failures throw ServiceError with the service's code.
 */
export function createApiClient(opts: ApiClientOptions) {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const f = opts.fetch ?? fetch;
  async function call<T>(
    method: string,
    path: string,
    body?: BodyInit,
    json = false,
    resend = false,
  ): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${opts.apiKey}`,
    };
    if (json) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await f(`${base}${path}`, { method, headers, body });
    } catch (e) {
      // No answer at all. A kept-alive connection that a proxy closed (an nginx reload)
      // just as this request went out on it ends so; browsers and curl send such a
      // request again, Deno's and Node's fetch do not. An upload may be sent twice
      // safely: the same bytes with the same key are answered with the stored image
      // (`duplicate: true`), never a second copy.
      if (resend) return call(method, path, body, json, false);
      throw new ServiceError(`Network error: ${(e as Error).message}`, 0, 0);
    }
    const data = await res.json().catch(() => undefined);
    if (!res.ok || !data?.success) {
      throw errorFromBody(res.status, data, res.headers.get("Retry-After"));
    }
    return data as T;
  }
  return {
    /**
     * POST /api/1/upload with one or more files. Sent once more if the first try got no
     * answer at all (see `call`): the service answers the same bytes with the same image.
     */
    upload(
      files: Blob[] | Blob,
      options: {
        expiration?: number;
        albumId?: string;
        /** Who may see them from their first moment (public without). */
        privacy?: components["schemas"]["ImageRecord"]["privacy"];
        /** With privacy "password": its password (4–128 characters). */
        password?: string;
      } = {},
    ): Promise<UploadResult> {
      const form = new FormData();
      for (const file of Array.isArray(files) ? files : [files]) {
        form.append("images", file, (file as File).name || "image");
      }
      if (options.expiration) {
        form.append("expiration", String(options.expiration));
      }
      if (options.albumId) form.append("album_id", options.albumId);
      if (options.privacy) form.append("privacy", options.privacy);
      if (options.password) form.append("password", options.password);
      return call("POST", "/api/1/upload", form, false, true);
    },
    /**
     * POST /api/1/upload with image addresses: the service downloads each one (public
     * http(s) only) and stores it as if uploaded.
     */
    importUrls(
      urls: string[] | string,
      options: { expiration?: number; title?: string } = {},
    ): Promise<UploadResult> {
      return call(
        "POST",
        "/api/1/upload",
        JSON.stringify({
          image: urls,
          ...(options.expiration ? { expiration: options.expiration } : {}),
          ...(options.title ? { title: options.title } : {}),
        }),
        true,
      );
    },
    /**
     * GET /api/1/images: a page of your images, newest first, or found by title words,
     * sorted by size or name, narrowed by album (`none`: in no album) or type.
     */
    listImages(
      options: {
        page?: number;
        perPage?: number;
        source?: "upload" | "screenshot";
        q?: string;
        sort?: "date" | "size" | "name";
        order?: "asc" | "desc";
        album?: string;
        type?: "jpg" | "png" | "gif" | "webp" | "avif" | "bmp" | "tiff";
      } = {},
    ): Promise<ImageListResult> {
      const { page, perPage, ...filters } = options;
      return call("GET", `/api/1/images${pageQuery(page, perPage, filters)}`);
    },
    /** PATCH /api/1/images/{id}: title, description, album, expiration. */
    updateImage(id: string, patch: ImagePatch): Promise<ImageResult> {
      return call(
        "PATCH",
        `/api/1/images/${encodeURIComponent(id)}`,
        JSON.stringify(patch),
        true,
      );
    },
    /** POST /api/1/albums. */
    createAlbum(album: AlbumCreate): Promise<AlbumResult> {
      return call("POST", "/api/1/albums", JSON.stringify(album), true);
    },
    /** GET /api/1/albums: yours, by position, then newest first. */
    listAlbums(): Promise<AlbumListResult> {
      return call("GET", "/api/1/albums");
    },
    /** GET /api/1/albums/{id}. */
    getAlbum(id: string): Promise<AlbumResult> {
      return call("GET", `/api/1/albums/${encodeURIComponent(id)}`);
    },
    /** PATCH /api/1/albums/{id}. */
    updateAlbum(id: string, patch: AlbumPatch): Promise<AlbumResult> {
      return call(
        "PATCH",
        `/api/1/albums/${encodeURIComponent(id)}`,
        JSON.stringify(patch),
        true,
      );
    },
    /** DELETE /api/1/albums/{id}; `withImages` deletes its images too. */
    deleteAlbum(
      id: string,
      options: { withImages?: boolean } = {},
    ): Promise<DeleteResult> {
      const query = options.withImages ? "?with_images=true" : "";
      return call("DELETE", `/api/1/albums/${encodeURIComponent(id)}${query}`);
    },
    /** GET /api/1/albums/{id}/images: a page of an album's images, newest first. */
    listAlbumImages(
      id: string,
      options: { page?: number; perPage?: number } = {},
    ): Promise<AlbumImagesResult> {
      return call(
        "GET",
        `/api/1/albums/${encodeURIComponent(id)}/images${
          pageQuery(options.page, options.perPage)
        }`,
      );
    },
    /** GET /api/1/images/{id}. */
    getImage(id: string): Promise<ImageResult> {
      return call("GET", `/api/1/images/${encodeURIComponent(id)}`);
    },
    /** DELETE /api/1/images/{id}. */
    deleteImage(id: string): Promise<DeleteResult> {
      return call("DELETE", `/api/1/images/${encodeURIComponent(id)}`);
    },
    /** POST /api/1/screenshot. */
    screenshot(request: ScreenshotRequest): Promise<ScreenshotResult> {
      return call("POST", "/api/1/screenshot", JSON.stringify(request), true);
    },
    /**
     * POST /api/1/screenshot/file: the capture's bytes (PNG, JPEG, WebP or PDF as
     * `format` asks), nothing stored.
     */
    async screenshotFile(
      request: Omit<ScreenshotRequest, "share" | "response">,
    ): Promise<Blob> {
      const res = await f(`${base}/api/1/screenshot/file`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${opts.apiKey}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(request),
      }).catch((e) => {
        throw new ServiceError(`Network error: ${(e as Error).message}`, 0, 0);
      });
      if (res.ok) return await res.blob();
      throw errorFromBody(
        res.status,
        await res.json().catch(() => undefined),
        res.headers.get("Retry-After"),
      );
    },
    /** GET /api/1/screenshot/presets. */
    presets(): Promise<PresetsResult> {
      return call("GET", "/api/1/screenshot/presets");
    },
    /**
     * POST /api/1/screenshot with `async: true`: answered at once (202) with the job;
     * follow it with getScreenshotJob or waitForScreenshotJob.
     */
    screenshotAsync(
      request: Omit<ScreenshotRequest, "async">,
    ): Promise<ScreenshotJobAccepted> {
      return call(
        "POST",
        "/api/1/screenshot",
        JSON.stringify({ ...request, async: true }),
        true,
      );
    },
    /** GET /api/1/screenshot/jobs/{id}. */
    getScreenshotJob(id: string): Promise<ScreenshotJobResult> {
      return call("GET", `/api/1/screenshot/jobs/${encodeURIComponent(id)}`);
    },
    /** GET /api/1/screenshot/jobs: yours, newest first. */
    listScreenshotJobs(
      options: { page?: number; perPage?: number; status?: string } = {},
    ): Promise<ScreenshotJobListResult> {
      return call(
        "GET",
        `/api/1/screenshot/jobs${
          pageQuery(options.page, options.perPage, { status: options.status })
        }`,
      );
    },
    /** DELETE /api/1/screenshot/jobs/{id}: cancels a queued job, or stops a running one. */
    cancelScreenshotJob(id: string): Promise<ScreenshotJobResult> {
      return call("DELETE", `/api/1/screenshot/jobs/${encodeURIComponent(id)}`);
    },
    /** POST /api/1/screenshot/batch: many captures queued at once (202). */
    screenshotBatch(
      requests: Omit<ScreenshotRequest, "async">[],
    ): Promise<ScreenshotBatchAccepted> {
      return call(
        "POST",
        "/api/1/screenshot/batch",
        JSON.stringify({ requests }),
        true,
      );
    },
    /** GET /api/1/screenshot/batches/{id}: counts by status and every job. */
    getScreenshotBatch(id: string): Promise<ScreenshotBatchResult> {
      return call(
        "GET",
        `/api/1/screenshot/batches/${encodeURIComponent(id)}`,
      );
    },
    /**
     * DELETE /api/1/screenshot/batches/{id}: cancels every job of the batch still queued
     * or running; the batch as it is then.
     */
    cancelScreenshotBatch(id: string): Promise<ScreenshotBatchResult> {
      return call(
        "DELETE",
        `/api/1/screenshot/batches/${encodeURIComponent(id)}`,
      );
    },
    /**
     * Polls job `id` until it is done, failed or cancelled (every `intervalMs`, 1 s by
     * default), and resolves to it; rejects after `timeoutMs` (5 min by default).
     */
    async waitForScreenshotJob(
      id: string,
      options: { intervalMs?: number; timeoutMs?: number } = {},
    ): Promise<ScreenshotJob> {
      const end = Date.now() + (options.timeoutMs ?? 300_000);
      for (;;) {
        const { data } = await call<ScreenshotJobResult>(
          "GET",
          `/api/1/screenshot/jobs/${encodeURIComponent(id)}`,
        );
        if (data.status !== "queued" && data.status !== "running") return data;
        if (Date.now() > end) {
          throw new ServiceError(`job ${id} is still ${data.status}`, 0, 0);
        }
        await new Promise((r) => setTimeout(r, options.intervalMs ?? 1_000));
      }
    },
    /** POST /api/1/screenshot/schedules: a capture run on a cron expression. */
    createSchedule(schedule: ScheduleCreate): Promise<ScheduleResult> {
      return call(
        "POST",
        "/api/1/screenshot/schedules",
        JSON.stringify(schedule),
        true,
      );
    },
    /** GET /api/1/screenshot/schedules: yours, with their next runs. */
    listSchedules(): Promise<ScheduleListResult> {
      return call("GET", "/api/1/screenshot/schedules");
    },
    /** PATCH /api/1/screenshot/schedules/{id}: pause (true) or resume (false). */
    pauseSchedule(id: string, paused = true): Promise<ScheduleResult> {
      return call(
        "PATCH",
        `/api/1/screenshot/schedules/${encodeURIComponent(id)}`,
        JSON.stringify({ paused }),
        true,
      );
    },
    /** DELETE /api/1/screenshot/schedules/{id}: no more runs (their images stay). */
    deleteSchedule(id: string): Promise<{ status: 200; success: true }> {
      return call(
        "DELETE",
        `/api/1/screenshot/schedules/${encodeURIComponent(id)}`,
      );
    },
    /** POST /api/1/screenshot/schedules/{id}/run: one run now (202, its job). */
    runSchedule(id: string): Promise<ScreenshotJobAccepted> {
      return call(
        "POST",
        `/api/1/screenshot/schedules/${encodeURIComponent(id)}/run`,
      );
    },
    /** GET /api/1/account/webhook: your webhook secret and its latest tries. */
    webhookAccount(): Promise<WebhookAccountResult> {
      return call("GET", "/api/1/account/webhook");
    },
  };
}

/** The typed client's type. */
export type ApiClient = ReturnType<typeof createApiClient>;
