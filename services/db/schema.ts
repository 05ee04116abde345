import type { Generated } from "kysely";

/** Row types of the tables created by services/db/migrations. */
export interface DB {
  users: {
    id: string;
    email: string;
    password_hash: string;
    created_at: Generated<Date>;
    disabled_at: Date | null;
    deleted_at: Date | null;
    /** A guest's: the hash of its browser's `guest` cookie (migration 011). */
    guest_token_hash: Generated<string | null>;
    /** `admin` or `user` (migration 012). */
    role: Generated<string>;
    /** Per-account quota overrides: null is the instance default, 0 none (migration 012). */
    quota_storage_mb: Generated<number | null>;
    quota_images: Generated<number | null>;
    quota_screenshots: Generated<number | null>;
    /** The HMAC key of the account's webhooks, made at first use (014). */
    webhook_secret: Generated<string | null>;
  };
  api_keys: {
    id: string;
    user_id: string;
    label: string;
    key_hash: string;
    last4: string;
    created_at: Generated<Date>;
    last_used_at: Date | null;
    revoked_at: Date | null;
  };
  sessions: {
    id_hash: string;
    user_id: string;
    csrf_token: string;
    created_at: Generated<Date>;
    expires_at: Date;
  };
  login_attempts: {
    /** Lower-cased e-mail. */
    email: string;
    window_start: Date;
    attempts: number;
  };
  images: {
    id: string;
    user_id: string;
    title: string;
    ext: string;
    mime: string;
    size: string | number;
    width: number;
    height: number;
    sha256: string;
    thumb_ext: string | null;
    medium_ext: string | null;
    source: Generated<string>;
    delete_token: string;
    created_at: Generated<Date>;
    expires_at: Date | null;
    deleted_at: Date | null;
    /** The album it is in (albums.id), if any. */
    album_id: Generated<string | null>;
    description: Generated<string>;
    /** `public`, `unlisted`, `private` or `password` (migrations 009, 010). */
    privacy: Generated<string>;
    /** The scrypt hash of a `password` image's password (migration 010). */
    password_hash: Generated<string | null>;
    /** Set with deleted_at when an admin took the image down: it answers 451 (012). */
    taken_down_at: Generated<Date | null>;
  };
  albums: {
    id: string;
    user_id: string;
    title: string;
    description: Generated<string>;
    /** `public` (listed), `unlisted` (the link works, never listed), `private` or `password`. */
    privacy: Generated<string>;
    /** The scrypt hash of a `password` album's password (migration 010). */
    password_hash: Generated<string | null>;
    cover_image_id: string | null;
    /** Where it comes among its owner's albums (ascending; then newest first). */
    position: Generated<number>;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
  };
  screenshot_cache: {
    user_id: string;
    request_hash: string;
    /** The result's JSON (without the inline image). */
    result: string;
    image_id: string | null;
    /** The bytes of an inline (share false) result. */
    body: Uint8Array | null;
    expires_at: Date;
  };
  rate_limits: {
    key_id: string;
    window_start: Date;
    count: number;
  };
  image_variants: {
    key: string;
    image_id: string;
    bytes: Generated<string | number>;
    state: Generated<string>;
    lease_until: Date | null;
    created_at: Generated<Date>;
  };
  /** Secrets every instance shares, made by the first that needs one (migration 010). */
  secrets: {
    name: string;
    value: string;
  };
  /** Bytes that may never be stored again (taken down), checked by a trigger (012). */
  blocked_hashes: {
    sha256: string;
    image_id: string | null;
    reason: Generated<string>;
    created_at: Generated<Date>;
  };
  /** Bytes an upload in flight counts against its account's quota (012). */
  quota_holds: {
    id: string;
    user_id: string;
    bytes: string | number;
    expires_at: Date;
  };
  /** Captures per account and UTC month, `YYYY-MM` (012). */
  screenshot_usage: {
    user_id: string;
    month: string;
    count: Generated<number>;
  };
  /** Sign-up invitations (SIGNUP=invite), the token stored hashed (012). */
  invites: {
    id: string;
    token_hash: string;
    created_by: string;
    max_uses: number;
    uses: Generated<number>;
    expires_at: Date | null;
    revoked_at: Generated<Date | null>;
    created_at: Generated<Date>;
  };
  /** Reports of images by anyone; the reporter only as a hash of the address (012). */
  reports: {
    id: string;
    image_id: string;
    reason: string;
    note: Generated<string>;
    reporter_hash: string;
    /** `open`, `dismissed` or `taken_down`. */
    state: Generated<string>;
    created_at: Generated<Date>;
    resolved_at: Generated<Date | null>;
    resolved_by: Generated<string | null>;
  };
  /** Every admin action (012). */
  audit_log: {
    id: Generated<string | number>;
    actor_id: string;
    actor_email: string;
    action: string;
    target: Generated<string>;
    details: Generated<string>;
    address: Generated<string>;
    at: Generated<Date>;
  };
  /** Asynchronous captures, one row per job; the queue is pg-boss's (013). */
  screenshot_jobs: {
    id: string;
    user_id: string;
    /** `queued`, `running`, `done`, `failed` or `cancelled`. */
    status: Generated<string>;
    request: unknown;
    /** The batch it came in, if any (015). */
    batch_id: Generated<string | null>;
    batch_index: Generated<number | null>;
    /** The schedule whose run it is, if any (016). */
    schedule_id: Generated<string | null>;
    /** A scheduled run's share of pixels unlike the run before (016). */
    changed: Generated<number | null>;
    result: Generated<unknown | null>;
    image_id: Generated<string | null>;
    error_code: Generated<number | null>;
    error_message: Generated<string | null>;
    attempts: Generated<number>;
    created_at: Generated<Date>;
    started_at: Generated<Date | null>;
    finished_at: Generated<Date | null>;
  };
  /** Captures run on a cron expression (016). */
  screenshot_schedules: {
    id: string;
    user_id: string;
    cron: string;
    request: unknown;
    paused: Generated<boolean>;
    notify_on_change: Generated<boolean>;
    change_threshold: Generated<number>;
    last_image_id: Generated<string | null>;
    runs: Generated<number>;
    last_run_at: Generated<Date | null>;
    created_at: Generated<Date>;
  };
  /** Every attempt to deliver a job's webhook (014). */
  webhook_deliveries: {
    id: Generated<string | number>;
    job_id: string;
    user_id: string;
    url: string;
    attempt: number;
    ok: boolean;
    status_code: number | null;
    error: string | null;
    at: Generated<Date>;
  };
  schema_migrations: {
    name: string;
    applied_at: Generated<Date>;
  };
}
