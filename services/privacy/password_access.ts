import type { Kysely } from "kysely";
import type { DB } from "../db/schema.ts";
import type { Clock } from "../runtime/clock.ts";
import {
  hashPassword,
  hmac16,
  hmacKey,
  randomToken,
  safeEqual,
} from "../accounts/crypto.ts";
import { type ApiError, invalidField } from "../../schemas/errors.ts";
import { PasswordSchema, PRIVACY, type Privacy } from "../../schemas/image.ts";

/**
 * services/privacy/ — password-protected images and albums (issue #37). The page of a
 * `password` image or album asks for its password; given, the browser gets an unlock
 * cookie for that page alone, and the page's file URLs carry a short-lived signature
 * (`?access=<expiry>.<mac>`), which is what lets the image host send a file to someone
 * who is not its owner. Both are HMACs over the item's password hash too, so a new
 * password (a new salt) ends every URL and cookie made under the old one.
 */

/** What an unlock or a signed URL is for: an image's files and page, or an album's page. */
export type AccessKind = "file" | "image" | "album";

/** The privacy values that keep an item from anyone without the owner's rights. */
export function isRestricted(privacy: string): boolean {
  return privacy === "private" || privacy === "password";
}

/** The HMAC-SHA256 key shared by every instance: the `secrets` row, made once. */
async function loadKey(db: Kysely<DB>): Promise<CryptoKey> {
  await db.insertInto("secrets").values({
    name: "access",
    value: randomToken(32),
  }).onConflict((oc) => oc.column("name").doNothing()).execute();
  const row = await db.selectFrom("secrets").select("value")
    .where("name", "=", "access").executeTakeFirstOrThrow();
  return await hmacKey(row.value);
}

/** Signs and checks the unlock cookies and file URLs of password-protected items. */
export class PasswordAccess {
  #key?: Promise<CryptoKey>;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly seconds: { url: number; unlock: number },
  ) {}

  #keyOf(): Promise<CryptoKey> {
    // Kept once loaded; a failed load (the database away) is tried again next time.
    this.#key ??= loadKey(this.db).catch((e) => {
      this.#key = undefined;
      throw e;
    });
    return this.#key;
  }

  async #mac(kind: AccessKind, id: string, exp: number, hash: string) {
    return await hmac16(await this.#keyOf(), `${kind}:${id}:${exp}:${hash}`);
  }

  /** A token `<expiry>.<mac>` for `kind` of the item, good for `seconds`. */
  async #token(kind: AccessKind, id: string, hash: string, seconds: number) {
    const exp = Math.floor(this.clock.now().getTime() / 1000) + seconds;
    return `${exp}.${await this.#mac(kind, id, exp, hash)}`;
  }

  /** Whether `token` was made here for `kind` of the item and has not expired. */
  async valid(
    kind: AccessKind,
    id: string,
    hash: string | null,
    token: string | undefined | null,
  ): Promise<boolean> {
    if (!hash || !token) return false;
    const m = token.match(/^([0-9]{1,12})\.([A-Za-z0-9_-]{22})$/);
    if (!m) return false;
    const exp = Number(m[1]);
    if (exp * 1000 <= this.clock.now().getTime()) return false;
    return safeEqual(m[2], await this.#mac(kind, id, exp, hash));
  }

  /** The `access` value of an image's file URLs, good for PASSWORD_URL_SECONDS. */
  fileToken(id: string, hash: string): Promise<string> {
    return this.#token("file", id, hash, this.seconds.url);
  }

  /** The unlock cookie's value for an image's or an album's page. */
  unlockToken(kind: "image" | "album", id: string, hash: string) {
    return this.#token(kind, id, hash, this.seconds.unlock);
  }

  /** How long an unlock lasts (the cookie's Max-Age). */
  get unlockSeconds(): number {
    return this.seconds.unlock;
  }
}

/** `url` with the signed `access` parameter added (after any query it has). */
export function withAccess(url: string, token: string | undefined): string {
  if (!token) return url;
  return `${url}${url.includes("?") ? "&" : "?"}access=${token}`;
}

/** 160 for a password sent for an item that is not (and does not become) `password`. */
function passwordNotAsked(): ApiError {
  return invalidField("password", 'only with privacy "password"');
}

/** 160 for an item made `password` without one. */
function passwordMissing(): ApiError {
  return invalidField("password", 'required to make it privacy "password"');
}

/**
 * The privacy and password hash an edit leaves an item with. `password` is allowed only
 * when the item is (or becomes) `password`; becoming `password` needs one unless it
 * already has one. Leaving `password` drops the hash. Returns only what changes.
 */
export async function passwordEdit(
  current: { privacy: string; password_hash: string | null },
  privacy: Privacy | undefined,
  password: string | undefined,
): Promise<{ privacy?: Privacy; password_hash?: string | null }> {
  const next = privacy ?? current.privacy;
  if (next !== "password") {
    if (password !== undefined) throw passwordNotAsked();
    if (privacy === undefined) return {};
    return { privacy, password_hash: null };
  }
  if (password === undefined) {
    if (current.privacy === "password" && current.password_hash) {
      return privacy ? { privacy } : {};
    }
    throw passwordMissing();
  }
  return { privacy: "password", password_hash: await hashPassword(password) };
}

/** Who may see a new image, as its row stores it (see uploadAccess). */
export interface UploadAccess {
  privacy: Privacy;
  password_hash: string | null;
}

/**
 * What is wrong with the privacy an upload asks for (160 naming the field), checked as
 * PATCH checks it (passwordEdit's refusals, and the password's length): `privacy` one of
 * PRIVACY; `password` (4–128 characters) required with `password` and allowed only with
 * it. Synchronous, for a resumable upload's creation.
 */
export function accessProblem(
  privacy: string | undefined,
  password: string | undefined,
): ApiError | undefined {
  if (privacy && !(PRIVACY as readonly string[]).includes(privacy)) {
    return invalidField("privacy", `one of ${PRIVACY.join(", ")}`);
  }
  if (privacy !== "password") {
    return password === undefined ? undefined : passwordNotAsked();
  }
  if (password === undefined) return passwordMissing();
  const checked = PasswordSchema.safeParse(password);
  return checked.success
    ? undefined
    : invalidField("password", checked.error.issues[0].message);
}

/**
 * The privacy an upload asks for (a field or `?privacy=`, and `password` with
 * `password`), or undefined when it names none; 160 as accessProblem says. The row is
 * inserted with it, so an image asked private is never public, not even between its
 * insert and an edit after.
 */
export async function uploadAccess(
  privacy: string | undefined,
  password: string | undefined,
): Promise<UploadAccess | undefined> {
  if (!privacy && password === undefined) return undefined;
  const bad = accessProblem(privacy, password);
  if (bad) throw bad;
  return {
    privacy: (privacy || "public") as Privacy,
    password_hash: password === undefined ? null : await hashPassword(password),
  };
}

/** How far each privacy keeps an item from others: a higher one hides it more. */
const CLOSENESS: Record<Privacy, number> = {
  public: 0,
  unlisted: 1,
  password: 2,
  private: 3,
};

/**
 * What a re-upload's privacy does to the image it duplicates: only ever hides it more.
 * The site's uploader sends "public" by default, and a private image sent again from it
 * must not come out public; making one public again is PATCH's job.
 */
export function tighterAccess(
  current: Privacy,
  asked: UploadAccess | undefined,
): UploadAccess | undefined {
  return asked && CLOSENESS[asked.privacy] > CLOSENESS[current]
    ? asked
    : undefined;
}
