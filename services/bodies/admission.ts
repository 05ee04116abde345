import type { BodyOptions } from "./received.ts";
import type { KeyHold } from "./key_hold.ts";
import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../schemas/errors.ts";

/**
 * How much of a body is read before the caller must have been admitted (see the `admit`
 * option), unless it may hold (the `hold` option): room for a `key` field and a few others
 * ahead of the files.
 */
export const KEY_PREFIX_BYTES = 64 * 1024;

/**
 * One body's admission (authentication), the same for every body type: it runs as soon as
 * a `key` field has come; without one, once an image has begun or KEY_PREFIX_BYTES have
 * come, unless the request may hold its bytes until the key comes (`hold`: clients send
 * `source` first and `key` last), which lasts while the hold's budgets and rate allow.
 * A client that falls below the rate is `stalled`: `stop` has cut its reader, and the
 * reader admits it as it stands.
 */
export class Admission {
  #done: boolean;
  readonly #hold: KeyHold | undefined;
  /** The client fell below the hold's rate: the reader was stopped, admission is due. */
  stalled = false;

  constructor(
    private readonly opts: Pick<BodyOptions, "admit" | "hold">,
    /** The body's plain fields, filled by its reader as they come. */
    private readonly fields: Record<string, string>,
    stop: () => void,
  ) {
    this.#done = !opts.admit;
    this.#hold = opts.admit && opts.hold
      ? opts.hold(() => {
        this.stalled = true;
        stop();
      })
      : undefined;
  }

  /** Whether admission has run (or is not asked for). */
  get admitted(): boolean {
    return this.#done;
  }

  /**
   * After each piece of the body, with `total` bytes read and whether an image has begun:
   * admits once a key has come, or once the body may not hold any longer.
   */
  async progress(total: number, imageBegun: boolean): Promise<void> {
    if (this.#done) return;
    if (this.fields.key) return await this.admit();
    if (!imageBegun && total <= KEY_PREFIX_BYTES) return;
    if (this.#hold?.mayWait(total)) return;
    const full = this.#hold?.full;
    if (full) {
      // Other bodies hold the room this one would wait in: say so (retry shortly), not
      // "no key" to a client whose key was still to come.
      this.#done = true;
      this.#hold?.release();
      throw new ApiError(250, {
        headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
        details: [{
          path: full === "process"
            ? "UNAUTH_HOLD_TOTAL_MB"
            : "UNAUTH_HOLD_ADDRESS_MB",
          message: full === "process"
            ? "too many bodies are waiting for their key on this server: send the key first (a header or ?key=), or try again shortly"
            : "your other requests hold all the room for bodies waiting for their key: send the key first (a header or ?key=), or try again shortly",
        }],
      });
    }
    await this.admit();
  }

  /** Runs the caller's admission once, with the fields seen so far. */
  async admit(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#hold?.release();
    await this.opts.admit!(this.fields);
  }

  /** Ends the hold (finished or failed): its bytes leave the budgets. */
  release(): void {
    this.#hold?.release();
  }
}
