import { createHash, type Hash } from "node:crypto";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { ApiError } from "../../schemas/errors.ts";
import { writeAll } from "../runtime/file_io.ts";
import type { ReceivedFile } from "./received.ts";
import { openScratch, type ScratchFile } from "../runtime/scratch_files.ts";

const BASE64 = /^[A-Za-z0-9+/]*$/;
/** What may be left over after whole groups on the fast path (no padding). */
const CARRY = /^[A-Za-z0-9+/_-]*$/;

/** Longest image URL accepted in a body (browsers' practical limit is about this). */
export const MAX_URL_LENGTH = 8192;

/**
 * One image sent as base64 text (ImgBB's `image=<base64>`, Chevereto's `source`), decoded
 * as it arrives into a temp file: an optional `data:image/…;base64,` prefix is dropped,
 * line breaks are ignored, a space is read as the `+` a form encoding turned into one, and
 * URL-safe `-`/`_` are accepted. A value that starts like an address (`https://…`) is kept
 * as `rec.url` instead, for the caller to import once the body is read. Past `maxBytes` it stops writing and marks itself
 * truncated (130); a character outside base64 is 141.
 */
export class Base64File {
  readonly rec: ReceivedFile;
  #file: Promise<ScratchFile>;
  #hash: Hash = createHash("sha256");
  #carry = "";
  #head: string | undefined = "";
  #ended = false;
  /** Set once the value turned out to be an address rather than base64. */
  #url: string | undefined;
  #writing: Promise<void> = Promise.resolve();
  error?: unknown;

  constructor(
    index: number,
    field: string,
    tmpDir: string,
    private readonly maxBytes: number,
  ) {
    this.rec = {
      index,
      field,
      filename: "image",
      path: join(tmpDir, `b64-${crypto.randomUUID()}`),
      size: 0,
      sha256: "",
      truncated: false,
    };
    this.#file = openScratch(this.rec.path, {
      write: true,
      createNew: true,
    });
    this.#file.catch((e) => this.error ??= e);
  }

  /** Takes more of the value's (already percent-decoded) text; `final` at its end. */
  push(text: string, final = false) {
    if (text === "" && !final) return;
    if (this.#head !== undefined) {
      // The start decides what the value is: a data URI (header up to its comma), an
      // address (refused), or plain base64.
      this.#head += text;
      const h = this.#head;
      if (h.length < 8 && !final) return;
      if (/^data:/i.test(h)) {
        const comma = h.indexOf(",");
        if (comma < 0) {
          if (h.length > 200 || final) throw bad("the data URI has no comma");
          return;
        }
        if (!/;base64$/i.test(h.slice(0, comma))) {
          throw bad("only base64 data URIs are accepted");
        }
        text = h.slice(comma + 1);
      } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(h)) {
        // An address: the image is fetched from it after the body (URL import).
        this.#url = "";
        text = h;
      } else text = h;
      this.#head = undefined;
    }
    if (this.#url !== undefined) {
      this.#url += text;
      if (this.#url.length > MAX_URL_LENGTH) {
        throw new ApiError(200, {
          details: [{
            path: this.rec.field,
            message: `URL longer than ${MAX_URL_LENGTH} characters`,
          }],
        });
      }
      return;
    }
    const joined = this.#carry + text;
    if (!this.#ended && this.#plain(joined)) return;
    const clean = joined.replace(/[\r\n\t]/g, "")
      .replace(/ /g, "+").replace(/-/g, "+").replace(/_/g, "/");
    if (!clean) return;
    const body = clean.replace(/=+$/, "");
    if (this.#ended || !BASE64.test(body)) {
      throw bad("the image is not valid base64");
    }
    // Padding ends the value once its group is whole: a piece may end between the two
    // "=" of "QQ==" (the value cut there was refused with 141).
    if (body.length < clean.length && clean.length % 4 === 0) {
      this.#ended = true;
    }
    const whole = clean.length - (clean.length % 4);
    this.#carry = clean.slice(whole);
    if (whole) this.#write(Buffer.from(clean.slice(0, whole), "base64"));
  }

  /**
   * The usual case, plain base64 in whole groups: decoded in one pass and checked by the
   * decoded length, since the decoder skips any character outside the alphabet (and reads
   * "-" and "_" as "+" and "/", as the mapping below does). False, having done nothing,
   * when the text needs that slower path: line breaks, spaces, other characters, or text
   * after the padding. A regex test and four replaces over every piece were ~1.4 ms of a
   * 200 KB upload's main thread.
   */
  #plain(text: string): boolean {
    const whole = text.length - (text.length % 4);
    const carry = text.slice(whole);
    if (!CARRY.test(carry)) return false;
    const piece = whole === text.length ? text : text.slice(0, whole);
    const pad = piece.endsWith("==") ? 2 : piece.endsWith("=") ? 1 : 0;
    if (pad && carry) return false;
    const bytes = Buffer.from(piece, "base64");
    if (bytes.length !== (whole / 4) * 3 - pad) return false;
    this.#carry = carry;
    if (pad) this.#ended = true; // padding ends the value
    if (bytes.length) this.#write(bytes);
    return true;
  }

  #write(bytes: Uint8Array) {
    if (this.rec.truncated) return;
    if (this.rec.size + bytes.length > this.maxBytes) {
      this.rec.truncated = true;
      return;
    }
    this.rec.size += bytes.length;
    this.#hash.update(bytes);
    // A decoded Buffer may be a view into a shared pool (small ones are): only those
    // are copied before the write that runs later.
    const copy = bytes.byteOffset === 0 &&
        bytes.byteLength === bytes.buffer.byteLength
      ? bytes
      : bytes.slice();
    this.#writing = this.#writing.then(async () => {
      try {
        await writeAll(await this.#file, copy);
      } catch (e) {
        this.error ??= e;
      }
    });
  }

  /** Backpressure: resolves when what was pushed is on disk. */
  drained(): Promise<void> {
    return this.#writing;
  }

  /**
   * After a failure: waits until the temp file exists (its creation may still be under
   * way) and every write has ended, then closes it, so removing it afterwards is final.
   */
  async abandon(): Promise<void> {
    const f = await this.#file.catch(() => undefined);
    await this.#writing;
    try {
      f?.close();
    } catch { /* closed by finish() */ }
  }

  /** Decodes what is left and closes the file. */
  async finish(): Promise<void> {
    if (this.#head !== undefined) this.push("", true);
    if (this.#url !== undefined) {
      (await this.#file.catch(() => undefined))?.close();
      if (this.error) throw this.error;
      this.rec.url = this.#url.trim();
      return;
    }
    if (this.#carry) {
      const rest = this.#carry.replace(/=+$/, "");
      if (rest.length % 4 === 1) throw bad("the image is not valid base64");
      this.#write(Buffer.from(rest, "base64"));
      this.#carry = "";
    }
    await this.#writing;
    (await this.#file.catch(() => undefined))?.close();
    if (this.error) throw this.error;
    if (this.rec.size === 0 && !this.rec.truncated) {
      // Nothing at all, not even whitespace-only base64: the field is absent.
      this.rec.empty = true;
      return;
    }
    this.rec.sha256 = this.#hash.digest("hex");
  }
}

function bad(message: string): ApiError {
  return new ApiError(141, { details: [{ path: "image", message }] });
}
