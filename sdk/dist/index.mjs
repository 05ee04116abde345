// sdk/src/error_table.ts
var ERRORS = {
  "100": {
    "message": "No API key provided",
    "status": 401
  },
  "110": {
    "message": "Invalid API key",
    "status": 401
  },
  "120": {
    "message": "User not found",
    "status": 401
  },
  "130": {
    "message": "File size too large",
    "status": 413
  },
  "131": {
    "message": "Too many files",
    "status": 400
  },
  "140": {
    "message": "No image file provided",
    "status": 400
  },
  "141": {
    "message": "Unsupported image type",
    "status": 415
  },
  "142": {
    "message": "Image dimensions too large",
    "status": 413
  },
  "143": {
    "message": "Image took too long to process",
    "status": 422
  },
  "150": {
    "message": "No files could be uploaded",
    "status": 422
  },
  "160": {
    "message": "Invalid request",
    "status": 400
  },
  "161": {
    "message": "Upload offset does not match",
    "status": 409
  },
  "162": {
    "message": "Tus-Resumable 1.0.0 required",
    "status": 412
  },
  "170": {
    "message": "Rate limit exceeded",
    "status": 429
  },
  "180": {
    "message": "Quota exceeded",
    "status": 403
  },
  "181": {
    "message": "Sign-up is closed or the invite is not valid",
    "status": 403
  },
  "182": {
    "message": "This image was taken down and may not be uploaded",
    "status": 403
  },
  "200": {
    "message": "Invalid URL",
    "status": 400
  },
  "210": {
    "message": "URL not allowed",
    "status": 403
  },
  "220": {
    "message": "Page could not be loaded",
    "status": 502
  },
  "221": {
    "message": "Image could not be fetched",
    "status": 502
  },
  "222": {
    "message": "Element not found",
    "status": 404
  },
  "230": {
    "message": "Screenshot timed out",
    "status": 504
  },
  "231": {
    "message": "Image fetch timed out",
    "status": 504
  },
  "240": {
    "message": "Screenshot service unavailable",
    "status": 503
  },
  "250": {
    "message": "Service temporarily unavailable",
    "status": 503
  },
  "403": {
    "message": "Forbidden",
    "status": 403
  },
  "404": {
    "message": "Not found",
    "status": 404
  },
  "405": {
    "message": "Method not allowed",
    "status": 405
  },
  "413": {
    "message": "Request too large",
    "status": 413
  },
  "415": {
    "message": "Unsupported media type",
    "status": 415
  },
  "451": {
    "message": "Unavailable for legal reasons",
    "status": 451
  },
  "500": {
    "message": "Internal error",
    "status": 500
  }
};

// sdk/src/errors.ts
var ERROR_CODES = Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [
  Number(code),
  e.message
]));
var ServiceError = class extends Error {
  /** Error code of the service's error table (0 for network failures, -1 when cancelled). */
  code;
  status;
  details;
  /** Seconds the service asked to wait before trying again (Retry-After), if it did. */
  retryAfter;
  constructor(message, code, status, details) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.status = status;
    this.details = details;
  }
};
function errorFromBody(status, body, retryAfter) {
  const e = body?.error;
  const err = e && typeof e.code === "number" ? new ServiceError(e.message ?? ERROR_CODES[e.code] ?? "Request failed", e.code, status, e.details) : new ServiceError(`Request failed with HTTP ${status}`, status, status);
  if (retryAfter) {
    const s = /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : Math.ceil((Date.parse(retryAfter) - Date.now()) / 1e3);
    if (Number.isFinite(s) && s >= 0) err.retryAfter = s;
  }
  return err;
}

// sdk/src/embed_codes.ts
function srcsetOf(image, widths, format) {
  const img = {
    url: image.transform_url ?? image.url,
    width: image.width
  };
  const type = format ? `format=${format}` : "";
  const below = [
    ...new Set(widths)
  ].filter((w) => w < img.width).sort((a, b) => a - b);
  const q = img.url.includes("?") ? "&" : "?";
  const entries = below.map((w) => `${img.url}${q}w=${w}${type ? `&${type}` : ""} ${w}w`);
  entries.push(`${type ? `${img.url}${q}${type}` : img.url} ${img.width}w`);
  return entries.join(", ");
}
function mayAnimate(extension) {
  return extension === "gif" || extension === "webp";
}
function responsiveEmbed(img, widths) {
  const url = safeUrl(img.url);
  const at = {
    url: safeUrl(img.transform_url ?? img.url),
    width: img.width
  };
  const ext = img.image?.extension ?? "";
  const sizes = `(max-width: 640px) 100vw, 640px`;
  const source = (type, format) => `<source type="${type}" srcset="${escapeHtml(srcsetOf(at, widths, format))}" sizes="${sizes}" />`;
  return `<a href="${escapeHtml(safeUrl(img.url_viewer))}"><picture>${mayAnimate(ext) ? "" : source("image/avif", "avif")}${ext === "webp" ? "" : source("image/webp", "webp")}<img src="${escapeHtml(url)}" srcset="${escapeHtml(srcsetOf(at, widths))}" sizes="${sizes}" width="${Math.round(img.width)}" height="${Math.round(img.height)}" alt="${escapeHtml(oneLine(img.title))}" loading="lazy" /></picture></a>`;
}
function oneLine(s) {
  return s.replace(/[\r\n]+/g, " ");
}
function escapeHtml(s) {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
function safeUrl(u) {
  let parsed;
  try {
    parsed = new URL(u);
  } catch {
    return "about:blank";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return "about:blank";
  }
  return parsed.href.replace(/[\s()<>[\]"'`\\]/g, (ch) => "%" + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0"));
}
function escapeMarkdownText(s) {
  return oneLine(s).replace(/[\\`*_[\]()<>&!]/g, (ch) => `\\${ch}`);
}
function htmlEmbed(img) {
  return `<a href="${escapeHtml(safeUrl(img.url_viewer))}"><img src="${escapeHtml(safeUrl(img.url))}" alt="${escapeHtml(oneLine(img.title))}" /></a>`;
}
function bbcodeEmbed(img) {
  return `[url=${safeUrl(img.url_viewer)}][img]${safeUrl(img.url)}[/img][/url]`;
}
function markdownEmbed(img) {
  return `[![${escapeMarkdownText(img.title)}](${safeUrl(img.url)})](${safeUrl(img.url_viewer)})`;
}
function markdownImage(img) {
  return `![${escapeMarkdownText(img.title)}](${safeUrl(img.url)})`;
}
function embedCodes(img, widths) {
  const codes = {
    "Direct link": img.url,
    "Viewer link": img.url_viewer,
    "HTML": htmlEmbed(img),
    "BBCode": bbcodeEmbed(img),
    "Markdown": markdownEmbed(img)
  };
  if (widths && img.width && img.height) {
    codes["HTML (responsive: AVIF, WebP, sizes)"] = responsiveEmbed({
      ...img,
      width: img.width,
      height: img.height
    }, widths);
  }
  const variants = [
    [
      "medium",
      img.medium
    ],
    [
      "thumbnail",
      img.thumb
    ]
  ];
  for (const [name, variant] of variants) {
    if (!variant || variant.url === img.url) continue;
    const small = {
      ...img,
      url: variant.url
    };
    codes[`HTML (${name}, linked)`] = htmlEmbed(small);
    codes[`BBCode (${name}, linked)`] = bbcodeEmbed(small);
    codes[`Markdown (${name}, linked)`] = markdownEmbed(small);
  }
  return codes;
}

// sdk/src/widget.ts
var EXPIRATION_CHOICES = [
  [
    0,
    "Never"
  ],
  [
    3600,
    "1 hour"
  ],
  [
    86400,
    "1 day"
  ],
  [
    7 * 86400,
    "1 week"
  ],
  [
    30 * 86400,
    "1 month"
  ],
  [
    180 * 86400,
    "6 months"
  ]
];
var ACCEPTED_TYPES = [
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/bmp",
  "image/tiff"
];
var CSS = `
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
function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== void 0) e.textContent = text;
  return e;
}
function plural(label) {
  return label.replace(/^(Direct|Viewer|Delete) link\b/, "$1 links");
}
function humanSize(n) {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}
function failureLine(e) {
  const s = e.retryAfter;
  if (s === void 0) return e.message;
  const when = s < 60 ? `${Math.max(1, s)} s` : `${Math.ceil(s / 60)} min`;
  return `${e.message}: try again in ${when}`;
}
function createUploadWidget(app, options = {}) {
  const maxSize = options.maxFileSize ?? 32 * 1024 * 1024;
  const resumableFrom = (options.resumableFromMB ?? 8) * 1024 * 1024;
  const maxResumable = options.maxResumableFileSize ?? 200 * 1024 * 1024;
  const resumable = (f) => resumableFrom > 0 && f.size > resumableFrom;
  const maxFiles = options.multiple ? options.maxFiles ?? 15 : 1;
  const accept = options.accept ?? ACCEPTED_TYPES;
  const inline = Boolean(options.container);
  const host = el("div", {
    "data-image-uploader": ""
  });
  const root = host.attachShadow({
    mode: "open"
  });
  const wrap = el("div", {
    class: inline ? "inline" : "dialog"
  });
  const backdrop = el("div", {
    class: "backdrop"
  });
  const titleId = "iu-title";
  const panel = el("div", {
    class: "panel",
    role: inline ? "region" : "dialog",
    "aria-labelledby": titleId,
    ...inline ? {} : {
      "aria-modal": "true"
    }
  });
  const header = el("header");
  header.append(el("h2", {
    id: titleId
  }, options.title ?? "Upload images"));
  const closeBtn = el("button", {
    class: "close",
    type: "button",
    "aria-label": "Close"
  }, "\xD7");
  if (!inline) header.append(closeBtn);
  const drop = el("div", {
    class: "drop",
    role: "button",
    tabindex: "0",
    // Named by its own text (what it says is what it is called).
    "aria-describedby": "iu-hint"
  }, `Drop ${options.multiple ? "images" : "an image"} here, paste, or press to browse`);
  const hint = el("p", {
    id: "iu-hint",
    class: "hint"
  }, `JPEG, PNG, GIF, WebP, AVIF, BMP or TIFF \xB7 up to ${humanSize(maxSize)} each${options.multiple ? ` \xB7 up to ${maxFiles} files` : ""}`);
  const input = el("input", {
    type: "file",
    accept: accept.join(","),
    hidden: "",
    "aria-hidden": "true",
    tabindex: "-1"
  });
  if (options.multiple) input.multiple = true;
  const progress = el("div", {
    class: "progress",
    role: "progressbar",
    "aria-label": "Upload progress",
    "aria-valuemin": "0",
    "aria-valuemax": "100",
    "aria-valuenow": "0"
  });
  const bar = el("div", {
    class: "bar"
  });
  progress.append(bar);
  const status = el("p", {
    class: "status",
    role: "status",
    "aria-live": "polite"
  });
  const list = el("ul", {
    "aria-label": "Files"
  });
  const codes = el("div", {
    class: "codes",
    hidden: ""
  });
  const codeType = el("select", {
    id: "iu-code-type"
  });
  const allCodes = el("textarea", {
    id: "iu-codes",
    readonly: "",
    rows: "3",
    spellcheck: "false",
    "aria-label": "Codes of every uploaded image"
  });
  const copyAll = el("button", {
    type: "button",
    class: "copy"
  }, "Copy all");
  {
    const row = el("div", {
      class: "row"
    });
    row.append(el("label", {
      for: "iu-code-type"
    }, "Embed codes"), codeType, copyAll);
    codes.append(row, allCodes);
  }
  let shownRecords = [];
  const codesOf = (r) => options.deleteLinks && r.delete_url ? {
    ...embedCodes(r),
    "Delete link": r.delete_url
  } : embedCodes(r);
  const fillCodes = () => {
    allCodes.value = shownRecords.map((r) => codesOf(r)[codeType.value]).filter((c) => c !== void 0).join("\n");
    allCodes.rows = Math.min(Math.max(shownRecords.length, 2), 8);
  };
  const showCodes = (records) => {
    shownRecords = records;
    codes.hidden = records.length === 0;
    if (!records.length) return;
    const labels = Object.keys(codesOf(records[0]));
    const keep = labels.includes(codeType.value) ? codeType.value : labels[0];
    codeType.textContent = "";
    for (const l of labels) {
      codeType.append(el("option", {
        value: l
      }, plural(l)));
    }
    codeType.value = keep;
    fillCodes();
  };
  codeType.addEventListener("change", fillCodes);
  copyOnClick(copyAll, () => allCodes.value, () => {
    allCodes.focus();
    allCodes.select();
    copyAll.textContent = "Selected: press Ctrl+C";
  });
  panel.append(header, drop, hint, input);
  let expirationSelect;
  if (options.expirationChoices) {
    const row = el("div", {
      class: "row"
    });
    expirationSelect = el("select", {
      id: "iu-exp"
    });
    const max = options.maxExpiration;
    const choices = max ? EXPIRATION_CHOICES.filter(([s]) => s > 0 && s <= max) : EXPIRATION_CHOICES;
    if (max && !choices.some(([s]) => s === max)) {
      choices.push([
        max,
        `${Math.round(max / 86400)} days`
      ]);
    }
    const start = options.expiration ?? (max ? choices.at(-1)[0] : 0);
    for (const [seconds, label] of choices) {
      const o = el("option", {
        value: String(seconds)
      }, label);
      if (seconds === start) o.selected = true;
      expirationSelect.append(o);
    }
    row.append(el("label", {
      for: "iu-exp"
    }, "Delete after"), expirationSelect);
    panel.append(row);
  }
  const expiration = () => expirationSelect ? Number(expirationSelect.value) || void 0 : options.expiration;
  let albumSelect;
  if (options.albums?.length) {
    const row = el("div", {
      class: "row"
    });
    albumSelect = el("select", {
      id: "iu-album"
    });
    albumSelect.append(el("option", {
      value: ""
    }, "No album"));
    for (const a of options.albums) {
      albumSelect.append(el("option", {
        value: a.id
      }, a.title));
    }
    row.append(el("label", {
      for: "iu-album"
    }, "Album"), albumSelect);
    panel.append(row);
  }
  const album = () => albumSelect?.value || void 0;
  let privacySelect;
  if (options.privacyChoices) {
    const row = el("div", {
      class: "row"
    });
    privacySelect = el("select", {
      id: "iu-privacy"
    });
    for (const [value, label] of [
      [
        "public",
        "Anyone (listed)"
      ],
      [
        "unlisted",
        "Anyone with the link"
      ],
      [
        "private",
        "Only me"
      ]
    ]) privacySelect.append(el("option", {
      value
    }, label));
    row.append(el("label", {
      for: "iu-privacy"
    }, "Who can see it"), privacySelect);
    panel.append(row);
  }
  const privacy = () => privacySelect?.value;
  if (options.urlImport) {
    const form = el("form", {
      class: "urls"
    });
    const area = el("textarea", {
      id: "iu-urls",
      rows: "1",
      placeholder: "https://example.com/photo.jpg",
      autocomplete: "off",
      spellcheck: "false"
    });
    const row = el("div", {
      class: "row"
    });
    row.append(el("button", {
      type: "submit"
    }, "Import"));
    form.append(el("label", {
      for: "iu-urls"
    }, "Or import from web addresses (one per line)"), area, row);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const urls = area.value.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
      if (urls.length) importAddresses(urls).then(() => area.value = "");
    });
    panel.append(form);
  }
  panel.append(progress, status, list, codes);
  backdrop.append(panel);
  if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function") {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [
      sheet
    ];
  } else {
    const style = el("style");
    style.textContent = CSS;
    root.append(style);
  }
  wrap.append(backdrop);
  root.append(wrap);
  let busy = false;
  let isOpen = false;
  let previousFocus = null;
  const setProgress = (p) => {
    bar.style.width = `${p}%`;
    progress.setAttribute("aria-valuenow", String(p));
  };
  const fileItem = (file) => {
    const li = el("li");
    const img = el("img", {
      alt: ""
    });
    if (file.type.startsWith("image/")) {
      const u = URL.createObjectURL(file);
      img.src = u;
      img.onload = () => URL.revokeObjectURL(u);
      img.onerror = () => {
        URL.revokeObjectURL(u);
        img.removeAttribute("src");
        img.classList.add("none");
      };
    } else img.classList.add("none");
    const meta = el("div", {
      class: "meta"
    });
    const bar2 = el("progress", {
      class: "fp",
      max: "100",
      value: "0",
      "aria-label": `Progress of ${file.name || "pasted image"}`
    });
    meta.append(el("div", {
      class: "name"
    }, file.name || "pasted image"), el("div", {}, humanSize(file.size)), bar2);
    li.append(img, meta);
    list.append(li);
    return meta;
  };
  const urlItem = (url) => {
    const li = el("li");
    const meta = el("div", {
      class: "meta"
    });
    meta.append(el("div", {
      class: "name"
    }, url));
    li.append(el("img", {
      alt: ""
    }), meta);
    list.append(li);
    return meta;
  };
  const copyButton = (label, value) => {
    const b = el("button", {
      type: "button",
      class: "copy",
      "aria-label": `Copy ${label}`
    }, `Copy ${label}`);
    copyOnClick(b, () => value, () => b.textContent = "Select and copy the link");
    return b;
  };
  function copyOnClick(button, text, failed) {
    const idle = button.textContent;
    button.addEventListener("click", async () => {
      if (await copyText(text())) {
        button.textContent = "Copied";
        setTimeout(() => button.textContent = idle, 1500);
      } else failed();
    });
  }
  const copyText = async (value) => {
    if (navigator.clipboard && globalThis.isSecureContext) {
      try {
        await navigator.clipboard.writeText(value);
        return true;
      } catch {
      }
    }
    const area = el("textarea", {
      readonly: ""
    });
    area.value = value;
    area.style.cssText = "position:fixed;top:0;left:0;opacity:0";
    wrap.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
    }
    area.remove();
    return ok;
  };
  const pauseButton = (c) => {
    const b = el("button", {
      type: "button",
      class: "pause"
    }, "Pause");
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
  const showRecord = (meta, rec) => {
    const ok = el("div", {
      class: "ok"
    });
    const a = el("a", {
      href: rec.url_viewer,
      target: "_blank",
      rel: "noopener"
    }, rec.url);
    ok.append(a, el("br"));
    ok.append(copyButton("link", rec.url), copyButton("viewer link", rec.url_viewer), copyButton("Markdown", markdownImage(rec)), copyButton("HTML", htmlEmbed(rec)), copyButton("BBCode", bbcodeEmbed(rec)));
    if (options.deleteLinks && rec.delete_url) {
      ok.append(el("br"), el("a", {
        href: rec.delete_url,
        rel: "noopener"
      }, "Delete link"), " ", copyButton("delete link", rec.delete_url));
    }
    meta.querySelector("progress")?.remove();
    meta.append(ok);
    const img = meta.parentElement?.querySelector("img");
    if (img) {
      const restricted = rec.privacy === "private" || rec.privacy === "password";
      const u = new URL(rec.thumb.url, location.href);
      img.src = options.sameOrigin && restricted ? `${u.pathname}${u.search}` : rec.thumb.url;
    }
  };
  async function handleFiles(incoming) {
    if (busy || incoming.length === 0) return;
    list.textContent = "";
    showCodes([]);
    setProgress(0);
    status.classList.remove("err");
    const errors = [];
    if (incoming.length > maxFiles) {
      errors.push(`Too many files: at most ${maxFiles}.`);
      incoming = incoming.slice(0, maxFiles);
    }
    const valid = [];
    const metas = /* @__PURE__ */ new Map();
    let first;
    for (const f of incoming) {
      const meta = fileItem(f);
      metas.set(f, meta);
      let problem;
      const limit = resumable(f) ? maxResumable : maxSize;
      if (!accept.includes(f.type)) problem = [
        "Unsupported image type",
        141
      ];
      else if (f.size > limit) {
        problem = [
          `File size too large (over ${humanSize(limit)})`,
          130
        ];
      } else if (f.size === 0) problem = [
        "Empty file",
        140
      ];
      if (problem) {
        meta.append(el("div", {
          class: "err"
        }, problem[0]));
        first ??= problem;
      } else valid.push(f);
    }
    if (valid.length === 0) {
      const [message, code] = errors.length ? [
        errors[0],
        131
      ] : incoming.length === 1 ? first : [
        `None of the ${incoming.length} files can be uploaded`,
        first[1]
      ];
      const err = new ServiceError(message, code, 0);
      status.textContent = err.message;
      status.classList.add("err");
      options.onError?.(err, incoming);
      return;
    }
    busy = true;
    status.textContent = `Uploading ${valid.length} file${valid.length > 1 ? "s" : ""}\u2026`;
    options.onStart?.(valid);
    const onProgress = (p) => {
      setProgress(p);
      options.onProgress?.(p);
    };
    const onFileProgress = (i, p) => {
      const bar2 = metas.get(valid[i])?.querySelector("progress");
      if (bar2) bar2.value = p;
    };
    try {
      const big = valid.filter(resumable);
      const bigRecords = [];
      for (const f of big) {
        const meta = metas.get(f);
        try {
          const res = await app.upload(f, {
            resumableFromMB: resumableFrom / (1024 * 1024),
            onProgress: (p) => {
              const bar2 = meta.querySelector("progress");
              if (bar2) bar2.value = p;
            },
            onResumable: (c) => meta.append(pauseButton(c)),
            expiration: expiration(),
            album: album(),
            privacy: privacy()
          });
          meta.querySelector(".pause")?.remove();
          showRecord(meta, res.data);
          bigRecords.push(res.data);
        } catch (e) {
          meta.querySelector(".pause")?.remove();
          const err = e instanceof ServiceError ? e : new ServiceError(String(e), 0, 0);
          meta.append(el("div", {
            class: "err"
          }, err.message));
        }
      }
      const small = valid.filter((f) => !resumable(f));
      if (small.length === 0) {
        showCodes(bigRecords);
        status.textContent = `Uploaded ${bigRecords.length} of ${valid.length}.`;
        if (bigRecords.length) {
          options.onSuccess?.({
            status: 200,
            success: true,
            data: {
              kind: "batch",
              images: bigRecords,
              count: bigRecords.length
            }
          }, valid);
        }
      } else if (options.multiple) {
        const res = await app.uploadMultiple(small, {
          onProgress,
          onFileProgress: (i, p) => onFileProgress(valid.indexOf(small[i]), p),
          expiration: expiration(),
          album: album(),
          privacy: privacy()
        });
        for (const [i, rec] of byPosition(res.data)) {
          const meta = metas.get(small[i]);
          if (meta) showRecord(meta, rec);
        }
        for (const e of res.data.errors ?? []) {
          metas.get(small[e.index])?.append(el("div", {
            class: "err"
          }, e.message));
        }
        showCodes([
          ...bigRecords,
          ...res.data.images
        ]);
        status.textContent = `Uploaded ${bigRecords.length + res.data.count} of ${valid.length}.`;
        options.onSuccess?.(bigRecords.length ? {
          ...res,
          data: {
            ...res.data,
            images: [
              ...bigRecords,
              ...res.data.images
            ],
            count: res.data.count + bigRecords.length
          }
        } : res, valid);
      } else {
        const res = await app.upload(valid[0], {
          onProgress,
          onFileProgress,
          expiration: expiration(),
          album: album(),
          privacy: privacy()
        });
        showRecord(metas.get(valid[0]), res.data);
        showCodes([
          res.data
        ]);
        status.textContent = "Uploaded.";
        options.onSuccess?.(res, valid);
      }
    } catch (e) {
      const err = showFailure(e, (i) => metas.get(valid[i]));
      options.onError?.(err, valid);
      settleRows(err.message);
    } finally {
      busy = false;
      settleRows();
    }
  }
  function byPosition(batch) {
    const failed = new Set((batch.errors ?? []).map((e) => e.index));
    const pairs = [];
    let next = 0;
    for (const rec of batch.images) {
      while (failed.has(next)) next++;
      pairs.push([
        next++,
        rec
      ]);
    }
    return pairs;
  }
  function settleRows(reason = "Not uploaded") {
    for (const meta of list.querySelectorAll(".meta")) {
      meta.querySelector("progress")?.remove();
      if (!meta.querySelector(".ok, .err")) {
        meta.append(el("div", {
          class: "err"
        }, reason));
      }
    }
  }
  function showFailure(e, item) {
    const err = e instanceof ServiceError ? e : new ServiceError(String(e), 0, 0);
    status.textContent = failureLine(err);
    status.classList.add("err");
    const details = err.details ?? [];
    for (const d of details) {
      if (typeof d.index === "number" && d.message) {
        item(d.index)?.append(el("div", {
          class: "err"
        }, d.message));
      }
    }
    return err;
  }
  async function importAddresses(urls) {
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
    status.textContent = `Importing ${urls.length} address${urls.length > 1 ? "es" : ""}\u2026`;
    try {
      const res = await app.importUrls(urls, {
        expiration: expiration(),
        album: album(),
        privacy: privacy()
      });
      for (const e of res.data.errors ?? []) {
        metas[e.index]?.append(el("div", {
          class: "err"
        }, e.message));
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
        metas[0].append(el("div", {
          class: "err"
        }, err.message));
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
  const onPaste = (e) => {
    if (!isOpen) return;
    const files = Array.from(e.clipboardData?.files ?? []);
    if (files.length) {
      e.preventDefault();
      handleFiles(files);
    }
  };
  const onKey = (e) => {
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
    previousFocus?.focus?.();
  }
  open();
  return {
    open,
    close,
    destroy() {
      close();
      list.textContent = "";
    },
    element: host
  };
}

// sdk/src/service_app.ts
function asBatch(body) {
  const data = body.data;
  if (data.kind === "image") {
    return {
      status: 200,
      success: true,
      data: {
        kind: "batch",
        images: [
          data
        ],
        count: 1
      }
    };
  }
  return body;
}
function resumableModule(base) {
  const url = `${base}/service-sdk-resumable.mjs`;
  return import(url);
}
var scriptOrigin;
function setScriptOrigin(origin) {
  scriptOrigin = origin;
}
var ServiceApp = class _ServiceApp {
  apiKey;
  baseUrl;
  /** The header that authenticates each call: the key, or the site session's token. */
  #auth;
  constructor(apiKey, options = {}) {
    if (!apiKey || typeof apiKey !== "string") {
      throw new TypeError("ServiceApp needs an API key");
    }
    this.apiKey = apiKey;
    this.#auth = [
      "Authorization",
      `Bearer ${apiKey}`
    ];
    const base = options.baseUrl ?? scriptOrigin ?? (typeof location !== "undefined" ? location.origin : "");
    this.baseUrl = base.replace(/\/+$/, "");
  }
  /**
   * A client for the service's own pages: calls carry the signed-in session's cookie and
   * its form token (X-CSRF-Token) instead of an API key, so no key ever sits in a page.
   * The service accepts them from its own origin only.
   */
  static forSession(csrfToken, options = {}) {
    if (!csrfToken || typeof csrfToken !== "string") {
      throw new TypeError("ServiceApp.forSession needs the session's token");
    }
    const app = new _ServiceApp("session", options);
    app.#auth = [
      "X-CSRF-Token",
      csrfToken
    ];
    return app;
  }
  /**
   * Has the service download images from web addresses (public http(s) only) and store
   * them as if uploaded; resolves to the multi-file envelope, per-address errors included.
   */
  async importUrls(urls, options = {}) {
    let res;
    try {
      res = await fetch(`${this.baseUrl}/api/1/upload`, {
        method: "POST",
        headers: {
          [this.#auth[0]]: this.#auth[1],
          "Content-Type": "application/json"
        },
        body: JSON.stringify({
          image: urls,
          ...options.expiration ? {
            expiration: options.expiration
          } : {},
          ...options.album ? {
            album_id: options.album
          } : {},
          ...options.privacy ? {
            privacy: options.privacy
          } : {}
        }),
        signal: options.signal
      });
    } catch (e) {
      if (options.signal?.aborted) {
        throw new ServiceError("Upload cancelled", -1, 0);
      }
      throw new ServiceError(`Network error: ${e.message ?? "unreachable"}`, 0, 0);
    }
    const body = await res.json().catch(() => void 0);
    if (!res.ok || !body?.success) {
      throw errorFromBody(res.status, body, res.headers.get("Retry-After"));
    }
    return asBatch(body);
  }
  /**
   * Uploads one file; resolves to the envelope with `url` at the top level. A file over
   * `resumableFromMB` (8) goes resumable (tus): pause and resume it through
   * `onResumable`; a cut connection or a reload does not start it again from zero.
   */
  async upload(file, options = {}) {
    const from = options.resumableFromMB ?? 8;
    const body = from > 0 && file.size > from * 1024 * 1024 ? await (await resumableModule(this.baseUrl)).sendResumable({
      endpoint: `${this.baseUrl}/api/1/tus/`,
      auth: this.#auth,
      file,
      expiration: options.expiration,
      album: options.album,
      privacy: options.privacy,
      password: options.password,
      onProgress: (p) => {
        options.onProgress?.(Math.round(p));
        options.onFileProgress?.(0, Math.round(p));
      },
      onResumable: options.onResumable,
      signal: options.signal
    }) : await this.#send([
      file
    ], options);
    const data = body.data;
    return {
      ...body,
      url: data.url
    };
  }
  /** Uploads several files in one request; resolves to the multi-file envelope. */
  async uploadMultiple(files, options = {}) {
    const list = Array.from(files);
    return asBatch(await this.#send(list, options));
  }
  /** Opens an upload widget (a dialog, or inline in `options.container`). */
  createUploadWidget(options = {}) {
    return createUploadWidget(this, options);
  }
  #send(files, options) {
    if (files.length === 0) {
      return Promise.reject(new ServiceError("No image file provided", 140, 0));
    }
    const form = new FormData();
    if (options.expiration) {
      form.append("expiration", String(options.expiration));
    }
    if (options.album) form.append("album_id", options.album);
    if (options.privacy) form.append("privacy", options.privacy);
    if (options.password) form.append("password", options.password);
    for (const f of files) {
      form.append("images", f, f.name || "image");
    }
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${this.baseUrl}/api/1/upload`);
      xhr.setRequestHeader(this.#auth[0], this.#auth[1]);
      xhr.responseType = "json";
      let last = -1;
      const progress = (p) => {
        p = Math.max(0, Math.min(100, Math.round(p)));
        if (p > last) {
          last = p;
          options.onProgress?.(p);
        }
      };
      const sizes = files.map((f) => f.size);
      const all = sizes.reduce((a, b) => a + b, 0) || 1;
      const fileProgress = (share) => {
        if (!options.onFileProgress) return;
        let start = 0;
        sizes.forEach((size, i) => {
          const end = start + size / all;
          const p = share >= end ? 100 : share <= start ? 0 : (share - start) / (end - start) * 100;
          options.onFileProgress(i, Math.round(p));
          start = end;
        });
      };
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable && e.total > 0) {
          progress(e.loaded / e.total * 100);
          fileProgress(e.loaded / e.total);
        }
      };
      xhr.upload.onload = () => {
        progress(100);
        fileProgress(1);
      };
      xhr.onload = () => {
        const body = xhr.response;
        if (xhr.status === 200 && body?.success) {
          progress(100);
          resolve(body);
        } else {
          reject(errorFromBody(xhr.status, body, xhr.getResponseHeader("Retry-After")));
        }
      };
      xhr.onerror = () => reject(new ServiceError("Network error: the service could not be reached", 0, 0));
      xhr.onabort = () => reject(new ServiceError("Upload cancelled", -1, 0));
      if (options.signal) {
        if (options.signal.aborted) return xhr.abort();
        options.signal.addEventListener("abort", () => xhr.abort(), {
          once: true
        });
      }
      progress(0);
      xhr.send(form);
    });
  }
};

// sdk/src/client.ts
function pageQuery(page, perPage, filters = {}) {
  const q = new URLSearchParams();
  if (page) q.set("page", String(page));
  if (perPage) q.set("per_page", String(perPage));
  for (const [name, value] of Object.entries(filters)) {
    if (value) q.set(name, value);
  }
  return q.size ? `?${q}` : "";
}
function createApiClient(opts) {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const f = opts.fetch ?? fetch;
  async function call(method, path, body, json = false, resend = false) {
    const headers = {
      authorization: `Bearer ${opts.apiKey}`
    };
    if (json) headers["content-type"] = "application/json";
    let res;
    try {
      res = await f(`${base}${path}`, {
        method,
        headers,
        body
      });
    } catch (e) {
      if (resend) return call(method, path, body, json, false);
      throw new ServiceError(`Network error: ${e.message}`, 0, 0);
    }
    const data = await res.json().catch(() => void 0);
    if (!res.ok || !data?.success) {
      throw errorFromBody(res.status, data, res.headers.get("Retry-After"));
    }
    return data;
  }
  return {
    /**
     * POST /api/1/upload with one or more files. Sent once more if the first try got no
     * answer at all (see `call`): the service answers the same bytes with the same image.
     */
    upload(files, options = {}) {
      const form = new FormData();
      for (const file of Array.isArray(files) ? files : [
        files
      ]) {
        form.append("images", file, file.name || "image");
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
    importUrls(urls, options = {}) {
      return call("POST", "/api/1/upload", JSON.stringify({
        image: urls,
        ...options.expiration ? {
          expiration: options.expiration
        } : {},
        ...options.title ? {
          title: options.title
        } : {}
      }), true);
    },
    /**
     * GET /api/1/images: a page of your images, newest first, or found by title words,
     * sorted by size or name, narrowed by album (`none`: in no album) or type.
     */
    listImages(options = {}) {
      const { page, perPage, ...filters } = options;
      return call("GET", `/api/1/images${pageQuery(page, perPage, filters)}`);
    },
    /** PATCH /api/1/images/{id}: title, description, album, expiration. */
    updateImage(id, patch) {
      return call("PATCH", `/api/1/images/${encodeURIComponent(id)}`, JSON.stringify(patch), true);
    },
    /** POST /api/1/albums. */
    createAlbum(album) {
      return call("POST", "/api/1/albums", JSON.stringify(album), true);
    },
    /** GET /api/1/albums: yours, by position, then newest first. */
    listAlbums() {
      return call("GET", "/api/1/albums");
    },
    /** GET /api/1/albums/{id}. */
    getAlbum(id) {
      return call("GET", `/api/1/albums/${encodeURIComponent(id)}`);
    },
    /** PATCH /api/1/albums/{id}. */
    updateAlbum(id, patch) {
      return call("PATCH", `/api/1/albums/${encodeURIComponent(id)}`, JSON.stringify(patch), true);
    },
    /** DELETE /api/1/albums/{id}; `withImages` deletes its images too. */
    deleteAlbum(id, options = {}) {
      const query = options.withImages ? "?with_images=true" : "";
      return call("DELETE", `/api/1/albums/${encodeURIComponent(id)}${query}`);
    },
    /** GET /api/1/albums/{id}/images: a page of an album's images, newest first. */
    listAlbumImages(id, options = {}) {
      return call("GET", `/api/1/albums/${encodeURIComponent(id)}/images${pageQuery(options.page, options.perPage)}`);
    },
    /** GET /api/1/images/{id}. */
    getImage(id) {
      return call("GET", `/api/1/images/${encodeURIComponent(id)}`);
    },
    /** DELETE /api/1/images/{id}. */
    deleteImage(id) {
      return call("DELETE", `/api/1/images/${encodeURIComponent(id)}`);
    },
    /** POST /api/1/screenshot. */
    screenshot(request) {
      return call("POST", "/api/1/screenshot", JSON.stringify(request), true);
    },
    /**
     * POST /api/1/screenshot/file: the capture's bytes (PNG, JPEG, WebP or PDF as
     * `format` asks), nothing stored.
     */
    async screenshotFile(request) {
      const res = await f(`${base}/api/1/screenshot/file`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${opts.apiKey}`,
          "content-type": "application/json"
        },
        body: JSON.stringify(request)
      }).catch((e) => {
        throw new ServiceError(`Network error: ${e.message}`, 0, 0);
      });
      if (res.ok) return await res.blob();
      throw errorFromBody(res.status, await res.json().catch(() => void 0), res.headers.get("Retry-After"));
    },
    /** GET /api/1/screenshot/presets. */
    presets() {
      return call("GET", "/api/1/screenshot/presets");
    },
    /**
     * POST /api/1/screenshot with `async: true`: answered at once (202) with the job;
     * follow it with getScreenshotJob or waitForScreenshotJob.
     */
    screenshotAsync(request) {
      return call("POST", "/api/1/screenshot", JSON.stringify({
        ...request,
        async: true
      }), true);
    },
    /** GET /api/1/screenshot/jobs/{id}. */
    getScreenshotJob(id) {
      return call("GET", `/api/1/screenshot/jobs/${encodeURIComponent(id)}`);
    },
    /** GET /api/1/screenshot/jobs: yours, newest first. */
    listScreenshotJobs(options = {}) {
      return call("GET", `/api/1/screenshot/jobs${pageQuery(options.page, options.perPage, {
        status: options.status
      })}`);
    },
    /** DELETE /api/1/screenshot/jobs/{id}: cancels a queued job, or stops a running one. */
    cancelScreenshotJob(id) {
      return call("DELETE", `/api/1/screenshot/jobs/${encodeURIComponent(id)}`);
    },
    /** POST /api/1/screenshot/batch: many captures queued at once (202). */
    screenshotBatch(requests) {
      return call("POST", "/api/1/screenshot/batch", JSON.stringify({
        requests
      }), true);
    },
    /** GET /api/1/screenshot/batches/{id}: counts by status and every job. */
    getScreenshotBatch(id) {
      return call("GET", `/api/1/screenshot/batches/${encodeURIComponent(id)}`);
    },
    /**
     * DELETE /api/1/screenshot/batches/{id}: cancels every job of the batch still queued
     * or running; the batch as it is then.
     */
    cancelScreenshotBatch(id) {
      return call("DELETE", `/api/1/screenshot/batches/${encodeURIComponent(id)}`);
    },
    /**
     * Polls job `id` until it is done, failed or cancelled (every `intervalMs`, 1 s by
     * default), and resolves to it; rejects after `timeoutMs` (5 min by default).
     */
    async waitForScreenshotJob(id, options = {}) {
      const end = Date.now() + (options.timeoutMs ?? 3e5);
      for (; ; ) {
        const { data } = await call("GET", `/api/1/screenshot/jobs/${encodeURIComponent(id)}`);
        if (data.status !== "queued" && data.status !== "running") return data;
        if (Date.now() > end) {
          throw new ServiceError(`job ${id} is still ${data.status}`, 0, 0);
        }
        await new Promise((r) => setTimeout(r, options.intervalMs ?? 1e3));
      }
    },
    /** POST /api/1/screenshot/schedules: a capture run on a cron expression. */
    createSchedule(schedule) {
      return call("POST", "/api/1/screenshot/schedules", JSON.stringify(schedule), true);
    },
    /** GET /api/1/screenshot/schedules: yours, with their next runs. */
    listSchedules() {
      return call("GET", "/api/1/screenshot/schedules");
    },
    /** PATCH /api/1/screenshot/schedules/{id}: pause (true) or resume (false). */
    pauseSchedule(id, paused = true) {
      return call("PATCH", `/api/1/screenshot/schedules/${encodeURIComponent(id)}`, JSON.stringify({
        paused
      }), true);
    },
    /** DELETE /api/1/screenshot/schedules/{id}: no more runs (their images stay). */
    deleteSchedule(id) {
      return call("DELETE", `/api/1/screenshot/schedules/${encodeURIComponent(id)}`);
    },
    /** POST /api/1/screenshot/schedules/{id}/run: one run now (202, its job). */
    runSchedule(id) {
      return call("POST", `/api/1/screenshot/schedules/${encodeURIComponent(id)}/run`);
    },
    /** GET /api/1/account/webhook: your webhook secret and its latest tries. */
    webhookAccount() {
      return call("GET", "/api/1/account/webhook");
    }
  };
}
export {
  ACCEPTED_TYPES,
  ERROR_CODES,
  ServiceApp,
  ServiceError,
  bbcodeEmbed,
  createApiClient,
  createUploadWidget,
  embedCodes,
  htmlEmbed,
  markdownEmbed,
  markdownImage,
  setScriptOrigin
};
