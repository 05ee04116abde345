import type {
  ImageRecord,
  MultiUploadResponse,
  Uploader,
  UploadResponse,
} from "./types.ts";
import { ServiceError } from "./errors.ts";
import {
  bbcodeEmbed,
  embedCodes,
  htmlEmbed,
  markdownImage,
} from "./embed_codes.ts";

/** Options of createUploadWidget (SPEC.md 4.3 plus a few of our own). */
export interface WidgetOptions {
  /** Allow selecting several files. */
  multiple?: boolean;
  onStart?: (files: File[]) => void;
  onProgress?: (percent: number) => void;
  onSuccess?: (
    response: UploadResponse | MultiUploadResponse,
    files: File[],
  ) => void;
  onError?: (error: ServiceError, files: File[]) => void;
  /** Render inline inside this element instead of as a dialog. */
  container?: HTMLElement;
  /** Checked before sending; defaults match the service's. */
  maxFileSize?: number;
  /**
   * Files over this many MB go resumable (tus), each on its own, with a Pause / Resume
   * button on its row; their limit is `maxResumableFileSize`. Default 8; 0: never.
   */
  resumableFromMB?: number;
  /** The largest file sent resumable (the service's TUS_MAX_FILE_BYTES; 200 MB). */
  maxResumableFileSize?: number;
  maxFiles?: number;
  accept?: string[];
  title?: string;
  /** Seconds until uploads are deleted (fixed; see `expirationChoices` to let people pick). */
  expiration?: number;
  /** Show a "Delete after" picker (never, 1 hour … 6 months); starts at `expiration`. */
  expirationChoices?: boolean;
  /** Offer a field for image addresses the service downloads (one per line). */
  urlImport?: boolean;
  /**
   * The longest lifetime the picker offers (seconds); "Never" then goes, and the picker
   * starts at the longest it offers. For guests, whose uploads must expire.
   */
  maxExpiration?: number;
  /**
   * Show an "Album" picker of these albums (yours: id and title); uploads and imports go
   * into the one picked. The first choice is no album.
   */
  albums?: { id: string; title: string }[];
  /**
   * Show a "Who can see it" picker (public, unlisted, private): uploads and imports are
   * stored so from their first moment. For signed-in people on the image host's pages.
   */
  privacyChoices?: boolean;
  /**
   * Show each upload's delete link (and offer "Delete links" in the codes box): for
   * guests, whose only handle on an upload it is.
   */
  deleteLinks?: boolean;
  /**
   * The widget runs on the image host's own pages with the session: a private or password
   * image's preview is fetched from this page's origin, where the session cookie goes,
   * whatever address BASE_URL or IMAGE_HOST_URL give its links.
   */
  sameOrigin?: boolean;
}

/** The lifetimes the picker offers, in seconds (0: kept for good). */
export const EXPIRATION_CHOICES: [number, string][] = [
  [0, "Never"],
  [3600, "1 hour"],
  [86400, "1 day"],
  [7 * 86400, "1 week"],
  [30 * 86400, "1 month"],
  [180 * 86400, "6 months"],
];

/** Handle of an open widget. */
export interface UploadWidget {
  open(): void;
  close(): void;
  destroy(): void;
  /** The host element (its shadow root holds the widget). */
  readonly element: HTMLElement;
}

/** Types the service accepts (checked again, from the bytes, on the server). */
export const ACCEPTED_TYPES = [
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/bmp",
  "image/tiff",
];

const CSS = `
:host{all:initial}
*{box-sizing:border-box;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif}
.backdrop{position:fixed;inset:0;background:rgba(0,0,0,.45);display:flex;align-items:center;justify-content:center;z-index:2147483647}
.inline .backdrop{position:static;background:none;display:block}
.panel{background:#fff;color:#1b1f24;border-radius:12px;width:min(520px,calc(100vw - 32px));max-height:calc(100vh - 32px);overflow:auto;padding:16px 20px;box-shadow:0 10px 40px rgba(0,0,0,.3)}
.inline .panel{box-shadow:none;border:1px solid #d0d7de;width:100%}
header{display:flex;align-items:center;justify-content:space-between}
h2{font-size:18px;margin:0}
button{font:inherit;cursor:pointer;border:1px solid #6e7781;border-radius:6px;background:#f6f8fa;padding:4px 10px;color:inherit}
button:focus-visible,.drop:focus-visible{outline:3px solid #0969da;outline-offset:2px}
.close{border:none;background:none;font-size:22px;line-height:1}
.drop{margin:12px 0 6px;border:2px dashed #8c959f;border-radius:10px;padding:28px 12px;text-align:center;cursor:pointer}
.drop.over{border-color:#0969da;background:#ddf4ff}
.hint{font-size:12px;color:#57606a;margin:0 0 10px}
.progress{height:8px;background:#eaeef2;border-radius:4px;overflow:hidden;margin:8px 0}
.bar{height:100%;width:0;background:#0969da;transition:width .15s}
ul{list-style:none;padding:0;margin:0}
li{display:flex;gap:10px;align-items:flex-start;padding:8px 0;border-top:1px solid #eaeef2}
li img{width:56px;height:56px;object-fit:cover;border-radius:6px;background:#eaeef2;flex:none}
.meta{flex:1;min-width:0;font-size:13px}
.name{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.err{color:#cf222e}
.ok a{color:#0969da;word-break:break-all}
.copy{margin:4px 4px 0 0;font-size:12px}
.status{font-size:13px;min-height:1em;margin:6px 0}
.row{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:8px 0;font-size:14px}
select,input,textarea{font:inherit;font-size:16px;color:inherit;background:transparent;border:1px solid #8c959f;border-radius:6px;padding:4px 6px}
textarea{width:100%;min-height:2.6em;resize:vertical}
label{font-size:14px;font-weight:600}
.fp{height:4px;margin-top:4px}
.codes{margin-top:10px;border-top:1px solid #eaeef2;padding-top:8px}
.codes textarea{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;white-space:pre;overflow-x:auto}
select:focus-visible,textarea:focus-visible{outline:3px solid #0969da;outline-offset:1px}
@media (prefers-color-scheme:dark){.panel{background:#161b22;color:#e6edf3}.inline .panel{border-color:#30363d}button{background:#21262d;border-color:#8b949e}select,input,textarea{border-color:#8b949e}.err{color:#f85149}.ok a{color:#4493f8}.drop.over{background:#0c2d6b}.hint{color:#8d96a0}li{border-color:#30363d}.codes{border-color:#30363d}.progress{background:#30363d}}
`;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A code type's label for a batch: "Direct link" → "Direct links". */
function plural(label: string): string {
  return label.replace(/^(Direct|Viewer|Delete) link\b/, "$1 links");
}

/** "160 B", "48 KB", "3.1 MB": a file under 1 KB is counted in bytes, never "0 KB". */
function humanSize(n: number): string {
  return n < 1024
    ? `${n} B`
    : n < 1024 * 1024
    ? `${Math.round(n / 1024)} KB`
    : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The status line for a failed request: its message, with when to try again where the
 * service said (a rate limit's "Rate limit exceeded" alone left people guessing).
 */
function failureLine(e: { message: string; retryAfter?: number }) {
  const s = e.retryAfter;
  if (s === undefined) return e.message;
  const when = s < 60 ? `${Math.max(1, s)} s` : `${Math.ceil(s / 60)} min`;
  return `${e.message}: try again in ${when}`;
}

/**
 * Builds the upload widget in a Shadow DOM, so page styles can't reach in and ours can't
 * leak out. Drop, paste and the file picker all feed the same checks and upload.
 */
export function createUploadWidget(
  app: Uploader,
  options: WidgetOptions = {},
): UploadWidget {
  const maxSize = options.maxFileSize ?? 32 * 1024 * 1024;
  const resumableFrom = (options.resumableFromMB ?? 8) * 1024 * 1024;
  const maxResumable = options.maxResumableFileSize ?? 200 * 1024 * 1024;
  const resumable = (f: File) => resumableFrom > 0 && f.size > resumableFrom;
  const maxFiles = options.multiple ? (options.maxFiles ?? 15) : 1;
  const accept = options.accept ?? ACCEPTED_TYPES;
  const inline = Boolean(options.container);

  const host = el("div", { "data-image-uploader": "" });
  const root = host.attachShadow({ mode: "open" });
  const wrap = el("div", { class: inline ? "inline" : "dialog" });
  const backdrop = el("div", { class: "backdrop" });
  const titleId = "iu-title";
  const panel = el("div", {
    class: "panel",
    role: inline ? "region" : "dialog",
    "aria-labelledby": titleId,
    ...(inline ? {} : { "aria-modal": "true" }),
  });
  const header = el("header");
  header.append(el("h2", { id: titleId }, options.title ?? "Upload images"));
  const closeBtn = el("button", {
    class: "close",
    type: "button",
    "aria-label": "Close",
  }, "×");
  if (!inline) header.append(closeBtn);
  const drop = el(
    "div",
    {
      class: "drop",
      role: "button",
      tabindex: "0",
      // Named by its own text (what it says is what it is called).
      "aria-describedby": "iu-hint",
    },
    `Drop ${
      options.multiple ? "images" : "an image"
    } here, paste, or press to browse`,
  );
  const hint = el(
    "p",
    { id: "iu-hint", class: "hint" },
    `JPEG, PNG, GIF, WebP, AVIF, BMP or TIFF · up to ${
      humanSize(maxSize)
    } each${options.multiple ? ` · up to ${maxFiles} files` : ""}`,
  );
  const input = el("input", {
    type: "file",
    accept: accept.join(","),
    hidden: "",
    "aria-hidden": "true",
    tabindex: "-1",
  });
  if (options.multiple) input.multiple = true;
  const progress = el("div", {
    class: "progress",
    role: "progressbar",
    "aria-label": "Upload progress",
    "aria-valuemin": "0",
    "aria-valuemax": "100",
    "aria-valuenow": "0",
  });
  const bar = el("div", { class: "bar" });
  progress.append(bar);
  const status = el("p", {
    class: "status",
    role: "status",
    "aria-live": "polite",
  });
  const list = el("ul", { "aria-label": "Files" });
  // Every link of the last batch in one box, as ImgBB and Chevereto show it: a code type
  // picked once, the codes as text (readable and selectable without any clipboard API)
  // and one Copy all.
  const codes = el("div", { class: "codes", hidden: "" });
  const codeType = el("select", { id: "iu-code-type" });
  const allCodes = el("textarea", {
    id: "iu-codes",
    readonly: "",
    rows: "3",
    spellcheck: "false",
    "aria-label": "Codes of every uploaded image",
  });
  const copyAll = el("button", { type: "button", class: "copy" }, "Copy all");
  {
    const row = el("div", { class: "row" });
    row.append(
      el("label", { for: "iu-code-type" }, "Embed codes"),
      codeType,
      copyAll,
    );
    codes.append(row, allCodes);
  }
  let shownRecords: ImageRecord[] = [];
  /** A record's codes: its embed codes, and its delete link where the page wants it. */
  const codesOf = (r: ImageRecord): Record<string, string> =>
    options.deleteLinks && r.delete_url
      ? { ...embedCodes(r), "Delete link": r.delete_url }
      : embedCodes(r);
  const fillCodes = () => {
    allCodes.value = shownRecords.map((r) => codesOf(r)[codeType.value])
      .filter((c) => c !== undefined).join("\n");
    allCodes.rows = Math.min(Math.max(shownRecords.length, 2), 8);
  };
  /** Shows the codes box for these records (hidden when there are none). */
  const showCodes = (records: ImageRecord[]) => {
    shownRecords = records;
    codes.hidden = records.length === 0;
    if (!records.length) return;
    const labels = Object.keys(codesOf(records[0]));
    const keep = labels.includes(codeType.value) ? codeType.value : labels[0];
    codeType.textContent = "";
    for (const l of labels) {
      codeType.append(el("option", { value: l }, plural(l)));
    }
    codeType.value = keep;
    fillCodes();
  };
  codeType.addEventListener("change", fillCodes);
  copyOnClick(copyAll, () => allCodes.value, () => {
    // Nothing could write the clipboard: select the text for the keyboard's copy.
    allCodes.focus();
    allCodes.select();
    copyAll.textContent = "Selected: press Ctrl+C";
  });
  panel.append(header, drop, hint, input);
  let expirationSelect: HTMLSelectElement | undefined;
  if (options.expirationChoices) {
    const row = el("div", { class: "row" });
    expirationSelect = el("select", { id: "iu-exp" });
    const max = options.maxExpiration;
    const choices = max
      ? EXPIRATION_CHOICES.filter(([s]) => s > 0 && s <= max)
      : EXPIRATION_CHOICES;
    if (max && !choices.some(([s]) => s === max)) {
      choices.push([max, `${Math.round(max / 86400)} days`]);
    }
    const start = options.expiration ?? (max ? choices.at(-1)![0] : 0);
    for (const [seconds, label] of choices) {
      const o = el("option", { value: String(seconds) }, label);
      if (seconds === start) o.selected = true;
      expirationSelect.append(o);
    }
    row.append(
      el("label", { for: "iu-exp" }, "Delete after"),
      expirationSelect,
    );
    panel.append(row);
  }
  const expiration = () =>
    expirationSelect
      ? Number(expirationSelect.value) || undefined
      : options.expiration;
  let albumSelect: HTMLSelectElement | undefined;
  if (options.albums?.length) {
    const row = el("div", { class: "row" });
    albumSelect = el("select", { id: "iu-album" });
    albumSelect.append(el("option", { value: "" }, "No album"));
    for (const a of options.albums) {
      albumSelect.append(el("option", { value: a.id }, a.title));
    }
    row.append(el("label", { for: "iu-album" }, "Album"), albumSelect);
    panel.append(row);
  }
  /** The album picked, if any. */
  const album = () => albumSelect?.value || undefined;
  let privacySelect: HTMLSelectElement | undefined;
  if (options.privacyChoices) {
    const row = el("div", { class: "row" });
    privacySelect = el("select", { id: "iu-privacy" });
    for (
      const [value, label] of [
        ["public", "Anyone (listed)"],
        ["unlisted", "Anyone with the link"],
        ["private", "Only me"],
      ]
    ) privacySelect.append(el("option", { value }, label));
    row.append(
      el("label", { for: "iu-privacy" }, "Who can see it"),
      privacySelect,
    );
    panel.append(row);
  }
  /** The privacy picked, if there is a picker. */
  const privacy = () =>
    privacySelect?.value as "public" | "unlisted" | "private" | undefined;
  if (options.urlImport) {
    const form = el("form", { class: "urls" });
    const area = el("textarea", {
      id: "iu-urls",
      rows: "1",
      placeholder: "https://example.com/photo.jpg",
      autocomplete: "off",
      spellcheck: "false",
    });
    const row = el("div", { class: "row" });
    row.append(el("button", { type: "submit" }, "Import"));
    form.append(
      el(
        "label",
        { for: "iu-urls" },
        "Or import from web addresses (one per line)",
      ),
      area,
      row,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      // One address a line, as the label says: a space belongs to its address.
      const urls = area.value.split(/\r?\n/).map((l) => l.trim()).filter(
        Boolean,
      );
      if (urls.length) importAddresses(urls).then(() => area.value = "");
    });
    panel.append(form);
  }
  panel.append(progress, status, list, codes);
  backdrop.append(panel);
  // A constructed sheet where the browser has them: a page's CSP (style-src 'self') does not
  // apply to it, as it would to a <style> element.
  if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function") {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    const style = el("style");
    style.textContent = CSS;
    root.append(style);
  }
  wrap.append(backdrop);
  root.append(wrap);

  let busy = false;
  let isOpen = false;
  let previousFocus: Element | null = null;

  const setProgress = (p: number) => {
    bar.style.width = `${p}%`;
    progress.setAttribute("aria-valuenow", String(p));
  };

  const fileItem = (file: File) => {
    const li = el("li");
    const img = el("img", { alt: "" });
    if (file.type.startsWith("image/")) {
      const u = URL.createObjectURL(file);
      img.src = u;
      img.onload = () => URL.revokeObjectURL(u);
      // Not an image after all (a text file named .png): no broken-image icon.
      img.onerror = () => {
        URL.revokeObjectURL(u);
        img.removeAttribute("src");
        img.classList.add("none");
      };
    } else img.classList.add("none");
    const meta = el("div", { class: "meta" });
    const bar = el("progress", {
      class: "fp",
      max: "100",
      value: "0",
      "aria-label": `Progress of ${file.name || "pasted image"}`,
    });
    meta.append(
      el("div", { class: "name" }, file.name || "pasted image"),
      el("div", {}, humanSize(file.size)),
      bar,
    );
    li.append(img, meta);
    list.append(li);
    return meta;
  };

  /** The item of an address being imported (no preview until the record comes back). */
  const urlItem = (url: string) => {
    const li = el("li");
    const meta = el("div", { class: "meta" });
    meta.append(el("div", { class: "name" }, url));
    li.append(el("img", { alt: "" }), meta);
    list.append(li);
    return meta;
  };

  const copyButton = (label: string, value: string) => {
    const b = el("button", {
      type: "button",
      class: "copy",
      "aria-label": `Copy ${label}`,
    }, `Copy ${label}`);
    copyOnClick(
      b,
      () => value,
      () => b.textContent = "Select and copy the link",
    );
    return b;
  };

  /**
   * Copies `text()` when `button` is pressed: the button says "Copied" for a moment, or
   * `failed` runs when nothing could write the clipboard.
   */
  function copyOnClick(
    button: HTMLButtonElement,
    text: () => string,
    failed: () => void,
  ) {
    const idle = button.textContent;
    button.addEventListener("click", async () => {
      if (await copyText(text())) {
        button.textContent = "Copied";
        setTimeout(() => button.textContent = idle, 1500);
      } else failed();
    });
  }

  /**
   * Copies with the clipboard API where the page is a secure context; elsewhere (plain
   * http on a LAN address, where browsers have none) through a selected textarea and the
   * copy command. False when neither worked.
   */
  const copyText = async (value: string): Promise<boolean> => {
    if (navigator.clipboard && globalThis.isSecureContext) {
      try {
        await navigator.clipboard.writeText(value);
        return true;
      } catch { /* the fallback below */ }
    }
    const area = el("textarea", { readonly: "" });
    area.value = value;
    area.style.cssText = "position:fixed;top:0;left:0;opacity:0";
    wrap.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch { /* unsupported */ }
    area.remove();
    return ok;
  };

  /** A resumable upload's Pause / Resume toggle, on its row. */
  const pauseButton = (c: { pause(): void; resume(): void }) => {
    const b = el("button", { type: "button", class: "pause" }, "Pause");
    let paused = false;
    b.addEventListener("click", () => {
      paused = !paused;
      if (paused) c.pause();
      else c.resume();
      b.textContent = paused ? "Resume" : "Pause";
      b.setAttribute("aria-pressed", String(paused));
    });
    return b;
  };

  const showRecord = (meta: HTMLElement, rec: ImageRecord) => {
    const ok = el("div", { class: "ok" });
    const a = el("a", {
      href: rec.url_viewer,
      target: "_blank",
      rel: "noopener",
    }, rec.url);
    ok.append(a, el("br"));
    ok.append(
      copyButton("link", rec.url),
      copyButton("viewer link", rec.url_viewer),
      copyButton("Markdown", markdownImage(rec)),
      copyButton("HTML", htmlEmbed(rec)),
      copyButton("BBCode", bbcodeEmbed(rec)),
    );
    if (options.deleteLinks && rec.delete_url) {
      // The only handle a guest has on the upload: shown, not only copyable.
      ok.append(
        el("br"),
        el("a", { href: rec.delete_url, rel: "noopener" }, "Delete link"),
        " ",
        copyButton("delete link", rec.delete_url),
      );
    }
    meta.querySelector("progress")?.remove();
    meta.append(ok);
    const img = meta.parentElement?.querySelector("img");
    if (img) {
      const restricted = rec.privacy === "private" ||
        rec.privacy === "password";
      const u = new URL(rec.thumb.url, location.href);
      img.src = options.sameOrigin && restricted
        ? `${u.pathname}${u.search}`
        : rec.thumb.url;
    }
  };

  async function handleFiles(incoming: File[]) {
    if (busy || incoming.length === 0) return;
    list.textContent = "";
    showCodes([]);
    setProgress(0);
    status.classList.remove("err");
    const errors: string[] = [];
    if (incoming.length > maxFiles) {
      errors.push(`Too many files: at most ${maxFiles}.`);
      incoming = incoming.slice(0, maxFiles);
    }
    const valid: File[] = [];
    const metas = new Map<File, HTMLElement>();
    /** The first file's refusal, as the service would have coded it. */
    let first: [string, number] | undefined;
    for (const f of incoming) {
      const meta = fileItem(f);
      metas.set(f, meta);
      let problem: [string, number] | undefined;
      const limit = resumable(f) ? maxResumable : maxSize;
      if (!accept.includes(f.type)) problem = ["Unsupported image type", 141];
      else if (f.size > limit) {
        problem = [`File size too large (over ${humanSize(limit)})`, 130];
      } else if (f.size === 0) problem = ["Empty file", 140];
      if (problem) {
        meta.append(el("div", { class: "err" }, problem[0]));
        first ??= problem;
      } else valid.push(f);
    }
    if (valid.length === 0) {
      // The reason, not "No image file provided" over a file that was provided.
      const [message, code] = errors.length
        ? [errors[0], 131]
        : incoming.length === 1
        ? first!
        : [`None of the ${incoming.length} files can be uploaded`, first![1]];
      const err = new ServiceError(message, code, 0);
      status.textContent = err.message;
      status.classList.add("err");
      options.onError?.(err, incoming);
      return;
    }
    busy = true;
    status.textContent = `Uploading ${valid.length} file${
      valid.length > 1 ? "s" : ""
    }…`;
    options.onStart?.(valid);
    const onProgress = (p: number) => {
      setProgress(p);
      options.onProgress?.(p);
    };
    const onFileProgress = (i: number, p: number) => {
      const bar = metas.get(valid[i])?.querySelector("progress");
      if (bar) bar.value = p;
    };
    try {
      // Large files first, each resumable on its own; then the rest as before.
      const big = valid.filter(resumable);
      const bigRecords: ImageRecord[] = [];
      for (const f of big) {
        const meta = metas.get(f)!;
        try {
          const res = await app.upload(f, {
            resumableFromMB: resumableFrom / (1024 * 1024),
            onProgress: (p) => {
              const bar = meta.querySelector("progress");
              if (bar) bar.value = p;
            },
            onResumable: (c) => meta.append(pauseButton(c)),
            expiration: expiration(),
            album: album(),
            privacy: privacy(),
          });
          meta.querySelector(".pause")?.remove();
          showRecord(meta, res.data);
          bigRecords.push(res.data);
        } catch (e) {
          meta.querySelector(".pause")?.remove();
          const err = e instanceof ServiceError
            ? e
            : new ServiceError(String(e), 0, 0);
          meta.append(el("div", { class: "err" }, err.message));
        }
      }
      const small = valid.filter((f) => !resumable(f));
      if (small.length === 0) {
        showCodes(bigRecords);
        status.textContent =
          `Uploaded ${bigRecords.length} of ${valid.length}.`;
        if (bigRecords.length) {
          options.onSuccess?.({
            status: 200,
            success: true,
            data: {
              kind: "batch",
              images: bigRecords,
              count: bigRecords.length,
            },
          } as MultiUploadResponse, valid);
        }
      } else if (options.multiple) {
        const res = await app.uploadMultiple(small, {
          onProgress,
          onFileProgress: (i, p) => onFileProgress(valid.indexOf(small[i]), p),
          expiration: expiration(),
          album: album(),
          privacy: privacy(),
        });
        // By position: a record's title may differ from its file's name (a duplicate
        // keeps its first title, `name` renames), so only the order ties them.
        for (const [i, rec] of byPosition(res.data)) {
          const meta = metas.get(small[i]);
          if (meta) showRecord(meta, rec);
        }
        for (const e of res.data.errors ?? []) {
          metas.get(small[e.index])?.append(
            el("div", { class: "err" }, e.message),
          );
        }
        showCodes([...bigRecords, ...res.data.images]);
        status.textContent = `Uploaded ${
          bigRecords.length + res.data.count
        } of ${valid.length}.`;
        options.onSuccess?.(
          bigRecords.length
            ? {
              ...res,
              data: {
                ...res.data,
                images: [...bigRecords, ...res.data.images],
                count: res.data.count + bigRecords.length,
              },
            }
            : res,
          valid,
        );
      } else {
        const res = await app.upload(valid[0], {
          onProgress,
          onFileProgress,
          expiration: expiration(),
          album: album(),
          privacy: privacy(),
        });
        showRecord(metas.get(valid[0])!, res.data);
        showCodes([res.data]);
        status.textContent = "Uploaded.";
        options.onSuccess?.(res, valid);
      }
    } catch (e) {
      const err = showFailure(e, (i) => metas.get(valid[i]));
      options.onError?.(err, valid);
      // A refusal of the whole request (one file that was no image, a rate limit) is
      // each waiting row's reason too, not "Not uploaded".
      settleRows(err.message);
    } finally {
      busy = false;
      settleRows();
    }
  }

  /**
   * Pairs each stored record with the index of what was sent: the answer lists records in
   * the order sent, leaving out the indexes its `errors` name.
   */
  function byPosition(
    batch: { images: ImageRecord[]; errors?: { index: number }[] },
  ): [number, ImageRecord][] {
    const failed = new Set((batch.errors ?? []).map((e) => e.index));
    const pairs: [number, ImageRecord][] = [];
    let next = 0;
    for (const rec of batch.images) {
      while (failed.has(next)) next++;
      pairs.push([next++, rec]);
    }
    return pairs;
  }

  /**
   * Once an answer is in, no row may keep a moving bar: a row with neither a result nor
   * an error of its own says that nothing came back for it.
   */
  function settleRows(reason = "Not uploaded") {
    for (const meta of list.querySelectorAll<HTMLElement>(".meta")) {
      meta.querySelector("progress")?.remove();
      if (!meta.querySelector(".ok, .err")) {
        meta.append(el("div", { class: "err" }, reason));
      }
    }
  }

  /**
   * A failed request, shown: its message in the status line, and each per-file error of
   * its details under the file it names (`item(index)`).
   */
  function showFailure(
    e: unknown,
    item: (index: number) => HTMLElement | undefined,
  ): ServiceError {
    const err = e instanceof ServiceError
      ? e
      : new ServiceError(String(e), 0, 0);
    status.textContent = failureLine(err);
    status.classList.add("err");
    const details = (err.details ?? []) as {
      index?: number;
      message?: string;
    }[];
    for (const d of details) {
      if (typeof d.index === "number" && d.message) {
        item(d.index)?.append(el("div", { class: "err" }, d.message));
      }
    }
    return err;
  }

  /** Has the service fetch each address; results and errors land in the list as files do. */
  async function importAddresses(urls: string[]) {
    if (busy) return;
    if (urls.length > maxFiles) {
      status.textContent = `Too many addresses: at most ${maxFiles}.`;
      return;
    }
    busy = true;
    list.textContent = "";
    showCodes([]);
    setProgress(0);
    status.classList.remove("err");
    const metas = urls.map(urlItem);
    status.textContent = `Importing ${urls.length} address${
      urls.length > 1 ? "es" : ""
    }…`;
    try {
      const res = await app.importUrls(urls, {
        expiration: expiration(),
        album: album(),
        privacy: privacy(),
      });
      for (const e of res.data.errors ?? []) {
        metas[e.index]?.append(el("div", { class: "err" }, e.message));
      }
      for (const [i, rec] of byPosition(res.data)) {
        if (metas[i]) showRecord(metas[i], rec);
      }
      showCodes(res.data.images);
      setProgress(100);
      status.textContent = `Imported ${res.data.count} of ${urls.length}.`;
      options.onSuccess?.(res, []);
    } catch (e) {
      const err = showFailure(e, (i) => metas[i]);
      if (urls.length === 1) {
        metas[0].append(el("div", { class: "err" }, err.message));
      }
      options.onError?.(err, []);
    } finally {
      busy = false;
      settleRows();
    }
  }

  drop.addEventListener("click", () => input.click());
  drop.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      input.click();
    }
  });
  input.addEventListener("change", () => {
    const files = Array.from(input.files ?? []);
    input.value = "";
    handleFiles(files);
  });
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    handleFiles(Array.from(e.dataTransfer?.files ?? []));
  });
  const onPaste = (e: ClipboardEvent) => {
    if (!isOpen) return;
    const files = Array.from(e.clipboardData?.files ?? []);
    if (files.length) {
      e.preventDefault();
      handleFiles(files);
    }
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape" && isOpen && !inline) close();
  };
  closeBtn.addEventListener("click", () => close());
  backdrop.addEventListener("click", (e) => {
    if (e.target === backdrop && !inline) close();
  });

  function open() {
    if (isOpen) return;
    isOpen = true;
    previousFocus = document.activeElement;
    (options.container ?? document.body).append(host);
    document.addEventListener("paste", onPaste);
    document.addEventListener("keydown", onKey);
    if (!inline) drop.focus();
  }
  function close() {
    if (!isOpen) return;
    isOpen = false;
    document.removeEventListener("paste", onPaste);
    document.removeEventListener("keydown", onKey);
    host.remove();
    (previousFocus as HTMLElement | null)?.focus?.();
  }
  open();
  return {
    open,
    close,
    destroy() {
      close();
      list.textContent = "";
    },
    element: host,
  };
}
