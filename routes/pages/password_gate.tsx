import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { AppDeps } from "../deps.ts";
import type { PasswordAccess } from "../../services/privacy/password_access.ts";
import { AddressThrottle } from "../../services/accounts/address_throttle.ts";
import { verifyPassword } from "../../services/accounts/crypto.ts";
import { ApiError } from "../../schemas/errors.ts";
import { clientAddress } from "../client_address.ts";
import { Layout } from "./layout.tsx";

/**
 * The password gate of a `password` image's or album's page (issue #37): the page asks
 * for the password, and once given the browser holds an unlock cookie scoped to that
 * page's path alone (`/i/<id>` or `/a/<id>`), HttpOnly and SameSite=Lax. Nothing of the
 * item (not even its title) is shown before. Attempts are counted per client address,
 * every item together, as log-ins are.
 */

/** The cookie holding a page's unlock (one per page path, so one name serves all). */
const UNLOCK_COOKIE = "unlock";

/** A password-protected item: its kind, id and hash. */
export interface Locked {
  kind: "image" | "album";
  id: string;
  hash: string | null;
}

function pathOf(item: Locked): string {
  return `/${item.kind === "image" ? "i" : "a"}/${item.id}`;
}

/** The form a locked page shows (200 when asked, 403 after a wrong password). */
function GateForm(props: { item: Locked; error?: string }) {
  const what = props.item.kind === "image" ? "image" : "album";
  return (
    <Layout title={`Password-protected ${what}`}>
      <h1>This {what} is password-protected</h1>
      {props.error && <p class="error" role="alert">{props.error}</p>}
      <form method="post" action={pathOf(props.item)}>
        <label for="unlock-password">Password</label>
        <input
          id="unlock-password"
          name="password"
          type="password"
          required
          maxlength={128}
          autocomplete="current-password"
        />
        <button type="submit">Unlock</button>
      </form>
    </Layout>
  );
}

/** Asks for and checks the passwords of locked pages. */
export class PasswordGate {
  readonly #attempts: AddressThrottle;
  readonly #secure: boolean;

  constructor(private readonly deps: AppDeps, readonly access: PasswordAccess) {
    this.#attempts = new AddressThrottle(
      deps.database.db,
      deps.clock,
      "password",
      deps.config.PASSWORD_ATTEMPTS_PER_MINUTE,
    );
    this.#secure = deps.config.BASE_URL.startsWith("https:");
  }

  /** Whether this browser unlocked the item (a valid cookie for its current password). */
  async unlocked(c: Context, item: Locked): Promise<boolean> {
    return await this.access.valid(
      item.kind,
      item.id,
      item.hash,
      getCookie(c, UNLOCK_COOKIE),
    );
  }

  /** The locked page: the form, never cached, never indexed. */
  ask(c: Context, item: Locked, error?: string): Response {
    c.header("Cache-Control", "private, no-store");
    c.header("X-Robots-Tag", "noindex");
    return c.html(
      <GateForm item={item} error={error} />,
      error ? 403 : 200,
    ) as Response;
  }

  /**
   * The form's post: a right password sets the unlock cookie and sends the browser back
   * to the page (303); a wrong one shows the form again (403); too many from one address
   * is 429 with Retry-After, before any hashing.
   */
  async unlock(c: Context, item: Locked): Promise<Response> {
    const body = await c.req.parseBody();
    const password = typeof body.password === "string" ? body.password : "";
    try {
      await this.#attempts.count(
        clientAddress(c, this.deps.config.TRUST_PROXY),
      );
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 170) throw e;
      c.header("Retry-After", e.headers?.["Retry-After"] ?? "60");
      c.header("Cache-Control", "private, no-store");
      return c.html(
        <GateForm item={item} error="Too many attempts. Try again soon." />,
        429,
      ) as Response;
    }
    const right = item.hash && password.length <= 128 &&
      await verifyPassword(password, item.hash);
    if (!right) return this.ask(c, item, "That password is not right.");
    setCookie(
      c,
      UNLOCK_COOKIE,
      await this.access.unlockToken(item.kind, item.id, item.hash!),
      {
        httpOnly: true,
        sameSite: "Lax",
        secure: this.#secure,
        path: pathOf(item),
        maxAge: this.access.unlockSeconds,
      },
    );
    c.header("Cache-Control", "no-store");
    return c.redirect(pathOf(item), 303);
  }
}
