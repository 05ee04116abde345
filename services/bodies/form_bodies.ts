import { ApiError, invalidField } from "../../schemas/errors.ts";
import { Base64File } from "./base64_file.ts";
import { FILE_FIELDS } from "./multipart.ts";
import { Admission } from "./admission.ts";
import {
  type BodyOptions,
  presentFiles,
  type ReceivedForm,
} from "./received.ts";
import {
  bodyCap,
  DEFAULT_MAX_FIELDS,
  DEFAULT_MAX_TOKEN,
  tooManyFields,
} from "./budgets.ts";
import { removeScratch } from "../runtime/scratch_files.ts";

const FIELD_MAX = 64 * 1024;

/**
 * What both text-body readers keep: the plain fields, the images decoded so far, and the
 * one admission (admission.ts).
 */
class TextForm {
  readonly fields: Record<string, string> = {};
  readonly images: Base64File[] = [];
  readonly #admission: Admission;
  #count = 0;
  #total = 0;
  #imageStarted = false;

  constructor(private readonly opts: BodyOptions, stop: () => void) {
    this.#admission = new Admission(opts, this.fields, stop);
  }

  /** The client fell below the hold's rate: the reader was stopped, admission is due. */
  get stalled(): boolean {
    return this.#admission.stalled;
  }

  /** After each piece of the body (`n` more bytes): admits when admission says so. */
  async progress(n = 0): Promise<void> {
    this.#total += n;
    await this.#admission.progress(this.#total, this.#imageStarted);
  }

  /** Keeps a plain field; past the field budget, 160 (each one counts, repeats too). */
  setField(name: string, value: string): void {
    this.countField();
    this.fields[name] = value;
  }

  /** Counts a member that is not kept (true, false, null) against the same budget. */
  countField(): void {
    const max = this.opts.maxFields ?? DEFAULT_MAX_FIELDS;
    if (++this.#count > max) throw tooManyFields(max);
  }

  /** Runs the caller's admission once, with the fields seen so far. */
  admit(): Promise<void> {
    return this.#admission.admit();
  }

  /** Admits (or holds: see progress), then starts the next image (131 past MAX_FILES). */
  async startImage(field: string): Promise<Base64File> {
    this.#imageStarted = true;
    await this.progress();
    if (this.images.length >= this.opts.maxFiles) {
      throw new ApiError(131, {
        details: [{
          message: `At most ${this.opts.maxFiles} files per request`,
        }],
      });
    }
    const img = new Base64File(
      this.images.length,
      field,
      this.opts.tmpDir,
      this.opts.maxFileBytes,
    );
    this.images.push(img);
    return img;
  }

  cleanup = async () => {
    await Promise.all(
      this.images.map((f) => removeScratch(f.rec.path).catch(() => {})),
    );
  };

  /** After a failure: waits for writes in flight, removes every temp file, rethrows. */
  async fail(e: unknown): Promise<never> {
    this.#admission.release();
    await Promise.allSettled(this.images.map((f) => f.abandon()));
    await this.cleanup();
    throw e;
  }

  result(): ReceivedForm {
    this.#admission.release();
    return {
      files: presentFiles(this.images.map((f) => f.rec)),
      fields: this.fields,
      cleanup: this.cleanup,
    };
  }
}

/** The escapes a form encoding gives base64's "+", "/" and "=", in either case. */
const BASE64_ESCAPES: [string, string][] = [
  ["%2B", "+"],
  ["%2b", "+"],
  ["%2F", "/"],
  ["%2f", "/"],
  ["%3D", "="],
  ["%3d", "="],
];

/** One hexadecimal digit. */
const HEX = /^[0-9A-Fa-f]$/;

/**
 * A form-encoded name or value, decoded ("+" is a space; 160 when an escape is
 * malformed): what `decodeURIComponent(s.replace(/\+/g, " "))` gives, faster on a base64
 * value. Its own escapes, whole ASCII ones, are replaced as strings first (decoding 270
 * KB of them took ~0.5 ms); any other escape is then decoded as before.
 */
export function decodeForm(s: string): string {
  if (s.includes("+")) s = s.replace(/\+/g, " ");
  for (const [escape, char] of BASE64_ESCAPES) {
    if (s.includes(escape)) s = s.replaceAll(escape, char);
  }
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    throw new ApiError(160, {
      details: [{ message: "malformed form body (bad % escape)" }],
    });
  }
}

/**
 * Streams an `application/x-www-form-urlencoded` body (Chevereto clients send
 * `source=<base64>&key=…&format=json`): plain fields are kept (64 KB each), image fields
 * (`images`, `images[]`, `image`, `source`) are base64-decoded into temp files as they
 * arrive, so a 32 MB image never sits in memory whole. Authentication (`admit`) runs, as
 * for multipart, when the first image begins or after 64 KB: a key in the body must come
 * before the image. Errors: 131 too many images, 130 via `truncated`, 141 bad base64,
 * 160 for a URL or a malformed body, 413 over the whole-body cap.
 */
export async function receiveUrlencoded(
  body: ReadableStream<Uint8Array>,
  opts: BodyOptions,
): Promise<ReceivedForm> {
  const maxTotal = bodyCap("urlencoded", opts);
  const form = new TextForm(opts, () => reader.cancel().catch(() => {}));
  // Parser state: the current name, or the current value (plain text or an image).
  let name = "";
  let inValue = false;
  let plain = "";
  let image: Base64File | undefined;
  let pendingEscape = ""; // a %XX cut by a chunk boundary
  let total = 0;
  const decoder = new TextDecoder();

  /** Percent-decodes; a streamed image value may end in half an escape, kept for later. */
  const percentDecode = (s: string): string => {
    s = pendingEscape + s;
    pendingEscape = "";
    // Half an escape at the end ("%" or "%X") waits for the next chunk. Read from the
    // end: a regex anchored there tried every "%" of a 270 KB base64 value.
    const cut = s.endsWith("%")
      ? 1
      : s.length >= 2 && s[s.length - 2] === "%" && HEX.test(s[s.length - 1])
      ? 2
      : 0;
    if (cut) {
      pendingEscape = s.slice(-cut);
      s = s.slice(0, -cut);
    }
    return decodeForm(s);
  };
  const endValue = async () => {
    if (!inValue) {
      if (name) form.setField(decodeForm(name).slice(0, 100), "");
    } else if (image) {
      if (pendingEscape) {
        throw new ApiError(160, {
          details: [{ message: "malformed form body (bad % escape)" }],
        });
      }
      await image.finish();
      image = undefined;
    } else {
      form.setField(name, decodeForm(plain));
    }
    name = "";
    plain = "";
    inValue = false;
  };
  const startValue = async () => {
    name = decodeForm(name).slice(0, 100);
    inValue = true;
    if (FILE_FIELDS.has(name)) {
      image = await form.startImage(name);
    }
  };
  const takeValue = async (raw: string) => {
    if (image) {
      image.push(percentDecode(raw));
      await image.drained();
    } else {
      // Kept raw and decoded whole at its end: a UTF-8 character's escapes may be split.
      plain += raw;
      if (plain.length > FIELD_MAX * 3) {
        throw invalidField(name, "field longer than 64 KB");
      }
    }
  };

  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxTotal) throw new ApiError(413);
      await form.progress(value.length);
      const chunk = decoder.decode(value, { stream: true });
      let start = 0;
      // The next "&" (and, in a name, "="), found by indexOf: a character loop in JS was
      // ~0.8 ms of a 200 KB base64 upload's main thread. Where the next "=" is, is kept
      // until it is passed: searched again at each "&", a body of "&&&…" took time in
      // the square of its chunk's length.
      let eqAt = -2; // not searched yet; -1: none left in this chunk
      for (;;) {
        const amp = chunk.indexOf("&", start);
        if (!inValue && eqAt !== -1 && eqAt < start) {
          eqAt = chunk.indexOf("=", start);
        }
        const eq = inValue ? -1 : eqAt;
        const i = eq >= 0 && (amp < 0 || eq < amp) ? eq : amp;
        if (i < 0) break;
        if (i === amp) {
          if (inValue) await takeValue(chunk.slice(start, i));
          else name += chunk.slice(start, i);
          await endValue();
        } else {
          name += chunk.slice(start, i);
          if (name.length > 300) {
            throw new ApiError(160, {
              details: [{ message: "field name too long" }],
            });
          }
          await startValue();
        }
        start = i + 1;
      }
      if (inValue) await takeValue(chunk.slice(start));
      else {
        name += chunk.slice(start);
        if (name.length > 300) {
          throw new ApiError(160, {
            details: [{ message: "field name too long" }],
          });
        }
      }
    }
    // A client that stalled while its key had not come: refused as it stands.
    if (form.stalled) await form.admit();
    if (inValue || name) await endValue();
    await form.admit();
  } catch (e) {
    await reader.cancel().catch(() => {});
    return await form.fail(e);
  } finally {
    reader.releaseLock();
  }
  return form.result();
}

/**
 * An `application/json` body (`{"key": "…", "image": "<base64>"}`; an image field may hold a
 * list of strings). Scanned as it streams in, like a form: plain members are kept (64 KB
 * each), image strings are base64-decoded into temp files as they arrive, so a 32 MB image
 * never sits in memory whole. The body must be one flat object (lists only of images);
 * anything else is 160. Authentication runs when the first image begins or after 64 KB.
 */
export async function receiveJson(
  body: ReadableStream<Uint8Array>,
  opts: BodyOptions,
): Promise<ReceivedForm> {
  const maxTotal = bodyCap("json", opts);
  const form = new TextForm(opts, () => reader.cancel().catch(() => {}));
  const { fields, images } = form;
  const malformed = (why: string) =>
    new ApiError(160, {
      details: [{ message: `malformed JSON body: ${why}` }],
    });

  type State =
    | "start"
    | "key"
    | "colon"
    | "value"
    | "afterValue"
    | "arrayItem"
    | "afterItem"
    | "end";
  // (Typed wide: closures change it, which flow analysis does not follow.)
  let state = "start" as State;
  let inString: "key" | "plain" | "image" | undefined;
  let escape = ""; // a backslash sequence cut by a chunk boundary
  let key = "";
  let plain = "";
  let literal = "";
  let image: Base64File | undefined;
  let total = 0;

  /** Receives decoded string text for the string being read. */
  const emit = (text: string) => {
    if (inString === "key") {
      key += text;
      if (key.length > 300) throw malformed("member name too long");
    } else if (inString === "plain") {
      plain += text;
      if (plain.length > FIELD_MAX) {
        throw invalidField(key, "member longer than 64 KB");
      }
    } else image!.push(text);
  };
  const unescape = (seq: string): string => {
    if (seq[1] === "u") return String.fromCharCode(parseInt(seq.slice(2), 16));
    const map: Record<string, string> = {
      '"': '"',
      "\\": "\\",
      "/": "/",
      b: "\b",
      f: "\f",
      n: "\n",
      r: "\r",
      t: "\t",
    };
    const out = map[seq[1]];
    if (out === undefined) throw malformed("bad escape");
    return out;
  };
  /** Reads string text from `i`; true when its closing quote was passed (at `pos.i`). */
  const readString = (chunk: string, pos: { i: number }): boolean => {
    let i = pos.i;
    while (i < chunk.length) {
      if (escape) {
        escape += chunk[i++];
        const need = escape[1] === "u" ? 6 : 2;
        if (escape.length < need) continue;
        if (need === 6 && !/^\\u[0-9A-Fa-f]{4}$/.test(escape)) {
          throw malformed("bad \\u escape");
        }
        emit(unescape(escape));
        escape = "";
        continue;
      }
      const q = chunk.indexOf('"', i), b = chunk.indexOf("\\", i);
      const j = q < 0 ? b : b < 0 ? q : Math.min(q, b);
      if (j < 0) {
        emit(chunk.slice(i));
        pos.i = chunk.length;
        return false;
      }
      if (j > i) emit(chunk.slice(i, j));
      if (chunk[j] === '"') {
        pos.i = j + 1;
        return true;
      }
      escape = "\\";
      i = j + 1;
    }
    pos.i = i;
    return false;
  };
  const startImage = async () => {
    image = await form.startImage(key);
  };
  const endString = async () => {
    if (inString === "key") {
      key = key.slice(0, 100);
      state = "colon";
    } else if (inString === "plain") {
      form.setField(key, plain);
      plain = "";
      state = "afterValue";
    } else {
      await image!.finish();
      image = undefined;
      state = state === "arrayItem" ? "afterItem" : "afterValue";
    }
    inString = undefined;
  };
  const maxToken = opts.maxToken ?? DEFAULT_MAX_TOKEN;
  /** One more character of a number or true/false/null, within the token budget. */
  const addToLiteral = (ch: string) => {
    literal += ch;
    if (literal.length > maxToken) {
      throw invalidField(key, `a value longer than ${maxToken} characters`);
    }
  };
  const endLiteral = () => {
    if (!literal) return;
    if (!/^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)$/.test(literal)) {
      throw malformed("bad value");
    }
    if (/^-?\d/.test(literal)) form.setField(key, literal);
    else form.countField();
    literal = "";
    state = "afterValue";
  };

  const reader = body.pipeThrough(
    new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>,
  ).getReader();
  try {
    for (;;) {
      const { value: chunk, done } = await reader.read();
      if (done) break;
      total += chunk.length;
      if (total > maxTotal) throw new ApiError(413);
      await form.progress(chunk.length);
      const pos = { i: 0 };
      while (pos.i < chunk.length) {
        if (inString) {
          if (readString(chunk, pos)) await endString();
          if (image) await image.drained();
          continue;
        }
        const ch = chunk[pos.i];
        if (literal && /[\s,}\]]/.test(ch)) endLiteral();
        if (/\s/.test(ch)) {
          pos.i++;
          continue;
        }
        pos.i++;
        switch (state) {
          case "start":
            if (ch !== "{") throw malformed("expected an object");
            state = "key";
            break;
          case "key":
            if (
              ch === "}" && Object.keys(fields).length + images.length === 0
            ) {
              state = "end";
            } else if (ch === '"') {
              key = "";
              inString = "key";
            } else throw malformed("expected a member name");
            break;
          case "colon":
            if (ch !== ":") throw malformed("expected ':'");
            state = "value";
            break;
          case "value":
            if (ch === '"') {
              if (FILE_FIELDS.has(key)) {
                await startImage();
                inString = "image";
              } else inString = "plain";
            } else if (ch === "[" && FILE_FIELDS.has(key)) state = "arrayItem";
            else if (ch === "{" || ch === "[") {
              throw malformed(`"${key}" must be a string`);
            } else addToLiteral(ch);
            break;
          case "arrayItem":
            if (ch === '"') {
              await startImage();
              inString = "image";
            } else if (ch === "]") state = "afterValue";
            else throw malformed("an image list holds strings");
            break;
          case "afterItem":
            if (ch === ",") state = "arrayItem";
            else if (ch === "]") state = "afterValue";
            else throw malformed("expected ',' or ']'");
            break;
          case "afterValue":
            if (literal) {
              addToLiteral(ch);
              break;
            }
            if (ch === ",") state = "key";
            else if (ch === "}") state = "end";
            else throw malformed("expected ',' or '}'");
            break;
          case "end":
            throw malformed("data after the object");
        }
        if (state === "value" && literal) state = "afterValue";
      }
    }
    if (form.stalled) await form.admit();
    if (literal) endLiteral();
    if (state !== "end") throw malformed("the body ends early");
    await form.admit();
  } catch (e) {
    await reader.cancel().catch(() => {});
    return await form.fail(e);
  }
  return form.result();
}
