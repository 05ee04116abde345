import { Buffer } from "node:buffer";
import { ByteSearch } from "./byte_search.ts";

const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");
/** Longest part header block looked at; a longer one passes unchanged (busboy judges it). */
const MAX_HEAD = 16 * 1024;

/**
 * Turns the text parts of image fields into file parts as a multipart body streams past,
 * so busboy hands their value over in pieces instead of keeping it whole: a part named
 * one of `fields`, with no `filename`, gets `Content-Type: application/octet-stream` (what
 * makes busboy treat it as a file) and `Content-Transfer-Encoding: <marker>`, which the
 * file handler sees as `info.encoding` and so knows to read the bytes as base64 or a URL.
 * The marker is random per request: a client cannot forge it. Only header blocks are
 * held back (at most 16 KB); every other byte passes through as a view of the chunk it
 * came in, nothing copied but a small search window.
 */
export class TextPartMarker {
  readonly #delimiter: Buffer;
  /** Finds the delimiter in every chunk: each body byte passes this search once. */
  readonly #finder: ByteSearch;
  /** Bytes just before the search position (already passed on) a delimiter may start in. */
  #tail: Buffer = CRLF; // the first delimiter may open the body without its CRLF
  #state: "data" | "head" | "done" = "data";
  #head: Buffer[] = [];
  #headLength = 0;

  constructor(
    boundary: string,
    private readonly fields: Set<string>,
    readonly marker: string,
  ) {
    this.#delimiter = Buffer.from(`\r\n--${boundary}`, "latin1");
    this.#finder = new ByteSearch(this.#delimiter);
  }

  /** The next piece of the body, as the pieces to hand to the parser instead. */
  push(chunk: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.#state === "done") {
        out.push(chunk.subarray(pos));
        break;
      }
      if (this.#state === "data") {
        const rest = chunk.subarray(pos);
        const window = Buffer.concat([
          this.#tail,
          rest.subarray(0, this.#delimiter.length - 1),
        ]);
        let at = this.#finder.indexIn(window);
        let end: number; // index in `chunk` just past the delimiter
        if (at >= 0) {
          end = pos + at + this.#delimiter.length - this.#tail.length;
        } else {
          at = this.#finder.indexIn(rest);
          if (at < 0) {
            out.push(rest);
            // A copy: the read buffers behind `rest` are reused for later reads.
            const keep = this.#delimiter.length - 1;
            this.#tail = rest.length >= keep
              ? Buffer.from(rest.subarray(rest.length - keep))
              : Buffer.concat([this.#tail, rest]).subarray(-keep);
            break;
          }
          end = pos + at + this.#delimiter.length;
        }
        out.push(chunk.subarray(pos, end));
        pos = end;
        this.#state = "head";
        this.#head = [];
        this.#headLength = 0;
        this.#tail = Buffer.alloc(0);
        continue;
      }
      // Header block: from just after the boundary to the blank line ending the headers.
      const piece = chunk.subarray(pos);
      this.#head.push(Buffer.from(piece));
      this.#headLength += piece.length;
      const head = Buffer.concat(this.#head);
      if (head.length >= 2 && head[0] === 0x2d && head[1] === 0x2d) {
        // "--": the closing delimiter; the rest is epilogue.
        out.push(head);
        this.#state = "done";
        break;
      }
      const blank = head.indexOf(HEAD_END);
      if (blank < 0) {
        if (this.#headLength > MAX_HEAD) {
          out.push(head);
          this.#state = "data";
          this.#tail = Buffer.alloc(0);
        }
        break;
      }
      const blockEnd = blank + HEAD_END.length;
      out.push(this.#rewrite(head.subarray(0, blockEnd)));
      // What followed the block in this chunk is part data.
      pos = chunk.length - (head.length - blockEnd);
      this.#state = "data";
      this.#tail = Buffer.alloc(0);
    }
    return out;
  }

  /** Whatever was held back when the body ends (an unfinished header block). */
  flush(): Uint8Array[] {
    if (this.#state !== "head" || this.#headLength === 0) return [];
    this.#state = "done";
    return [Buffer.concat(this.#head)];
  }

  /** The header block, marked when it opens a text part of an image field. */
  #rewrite(block: Buffer): Uint8Array {
    const text = block.toString("latin1");
    const lines = text.slice(0, -4).split("\r\n");
    const disposition = lines.find((l) => /^content-disposition\s*:/i.test(l));
    if (!disposition || !/:\s*form-data\s*(;|$)/i.test(disposition)) {
      return block;
    }
    if (/;\s*filename\*?\s*=/i.test(disposition)) return block;
    const name = disposition.match(
      /;\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i,
    );
    const value = name ? (name[1] ?? name[2]).replace(/\\(.)/g, "$1") : "";
    if (!this.fields.has(value)) return block;
    const kept = lines.filter((l, i) =>
      i === 0 || !/^content-(type|transfer-encoding)\s*:/i.test(l)
    );
    kept.push(
      "Content-Type: application/octet-stream",
      `Content-Transfer-Encoding: ${this.marker}`,
    );
    return Buffer.from(kept.join("\r\n") + "\r\n\r\n", "latin1");
  }
}
