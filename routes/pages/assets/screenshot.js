// The screenshot page: turns the form into POST /api/1/screenshot's JSON body (fields are
// named as the API names its options; `data-kind` says how to read each), sends it with
// the session, and shows the result or the API's own error message.
const form = document.getElementById("shot-form");
const status = document.getElementById("shot-status");
const result = document.getElementById("shot-result");
const token = document.querySelector('meta[name="csrf-token"]')?.content;
const viewport = document.getElementById("viewport");
const preset = form.elements.preset;

const toggleViewport = () => {
  viewport.hidden = preset.value !== "custom";
};
preset.addEventListener("change", toggleViewport);
toggleViewport();

// Quality applies to jpeg and webp only, the paper size to pdf only: shown when they do.
const format = form.elements.format;
const qualityField = form.elements.quality.parentElement;
const paperField = form.elements.pdfPaper.parentElement;
const toggleFormat = () => {
  qualityField.hidden = format.value !== "jpeg" && format.value !== "webp";
  paperField.hidden = format.value !== "pdf";
};
format.addEventListener("change", toggleFormat);
toggleFormat();

// The devices come from the API (the page's own list is the same table, shown at once):
// what the API offers is what the picker offers.
fetch("/api/1/screenshot/presets", { headers: { "X-CSRF-Token": token } })
  .then((r) => r.json())
  .then((answer) => {
    if (!answer?.success) return;
    const chosen = preset.value;
    const custom = preset.querySelector('option[value="custom"]');
    preset.textContent = "";
    for (const p of answer.data) {
      const o = document.createElement("option");
      o.value = p.id;
      o.textContent = p.label;
      preset.append(o);
    }
    preset.append(custom);
    preset.value = chosen;
    preset.dataset.source = "api";
  })
  .catch(() => {});

/** Reads one field by its kind; undefined leaves the option to the API's default. */
function read(el) {
  const kind = el.dataset.kind ?? "text";
  if (kind === "bool") return el.checked;
  const v = el.value.trim();
  if (v === "") return undefined;
  if (kind === "number") return Number(v);
  const lines = el.value.split("\n").map((l) => l.trim()).filter(Boolean);
  if (kind === "lines") return lines;
  if (kind === "headers") {
    return Object.fromEntries(lines.map((l) => {
      const i = l.indexOf(":");
      return i < 0 ? [l, ""] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    }));
  }
  if (kind === "cookies") {
    return lines.map((l) => {
      const i = l.indexOf("=");
      return i < 0
        ? { name: l, value: "" }
        : { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
    });
  }
  return el.type === "textarea" ? el.value : v;
}

/** The request body: top-level options, and `viewport` / `clip` groups when filled. */
function body() {
  const out = {};
  const groups = { viewport: {}, clip: {} };
  for (const el of form.elements) {
    if (!el.name) continue;
    const v = read(el);
    if (v === undefined) continue;
    const [group, name] = el.name.split(".");
    if (name) groups[group][name] = v;
    else out[el.name] = v;
  }
  if (out.preset === "custom") {
    delete out.preset;
    out.viewport = groups.viewport;
  }
  if (Object.keys(groups.clip).length) out.clip = groups.clip;
  if (out.format !== "jpeg" && out.format !== "webp") delete out.quality;
  if (out.format !== "pdf") delete out.pdfPaper;
  // A pdf is a document: it comes back inline, not stored as an image.
  if (out.format === "pdf") out.share = false;
  return out;
}

function text(tag, value, attrs = {}) {
  const el = document.createElement(tag);
  el.textContent = value;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function copyField(label, value, id) {
  const wrap = document.createElement("div");
  const input = text("input", "", {
    id,
    type: "text",
    readonly: "",
    spellcheck: "false",
  });
  input.value = value;
  const row = document.createElement("div");
  row.className = "copy";
  row.append(
    input,
    text("button", "Copy", {
      type: "button",
      class: "secondary",
      "data-copy": id,
    }),
  );
  wrap.append(text("label", label, { for: id }), row);
  return wrap;
}

function show(data) {
  result.textContent = "";
  result.append(text("h2", data.cached ? "Result (reused)" : "Result"));
  const m = data.metadata;
  result.append(
    text(
      "p",
      `${m.title || "(no title)"} · ${m.url} · HTTP ${
        m.status ?? "?"
      } · ${data.width}×${data.height} · ${Math.round(m.bytes / 1024)} KB`,
      { class: "muted" },
    ),
  );
  if (data.format === "pdf") {
    const a = text("a", "Download the PDF", {
      href: data.display_url,
      download: "screenshot.pdf",
      class: "button",
    });
    result.append(text("p", ""));
    result.lastChild.append(a);
  } else {
    const img = text("img", "", {
      src: data.display_url,
      alt: `Screenshot of ${m.title || m.url}`,
    });
    result.append(img);
    if (!data.shared) {
      const p = text("p", "");
      p.append(
        text("a", "Download", {
          href: data.display_url,
          download: `screenshot.${data.format}`,
          class: "button secondary",
        }),
      );
      result.append(p);
    }
  }
  if (data.shared) {
    result.append(
      copyField("Direct link", data.url, "shot-url"),
      copyField("Viewer page", data.url_viewer, "shot-viewer"),
    );
    const p = text("p", "");
    p.append(text("a", "Open its page", { href: data.url_viewer }));
    result.append(p);
  }
  result.hidden = false;
}

/**
 * The first line of a cookies or headers box that is not name=value (name: value), as a
 * message; such a line used to be sent as a nameless or empty cookie, silently.
 */
function badLine(el) {
  const sep = el.dataset.kind === "cookies" ? "=" : ":";
  const lines = el.value.split("\n").map((l) => l.trim());
  const at = lines.findIndex((l) => l && l.indexOf(sep) <= 0);
  if (at < 0) return undefined;
  const what = el.dataset.kind === "cookies" ? "Cookies" : "Headers";
  const shape = sep === "=" ? "name=value" : "Name: value";
  return `${what}: line ${at + 1} (“${lines[at]}”) is not ${shape}.`;
}

for (
  const el of form.querySelectorAll("[data-kind=cookies],[data-kind=headers]")
) {
  el.addEventListener("input", () => {
    el.setCustomValidity("");
    el.removeAttribute("aria-invalid");
  });
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!form.elements.url.value.trim()) {
    status.textContent = "Give the address of a web page.";
    status.className = "error";
    form.elements.url.focus();
    return;
  }
  for (
    const el of form.querySelectorAll("[data-kind=cookies],[data-kind=headers]")
  ) {
    const problem = badLine(el);
    if (!problem) continue;
    status.textContent = problem;
    status.className = "error";
    const fold = el.closest("details");
    if (fold) fold.open = true;
    el.setCustomValidity(problem);
    el.setAttribute("aria-invalid", "true");
    el.focus();
    return;
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  status.className = "";
  status.textContent = "Capturing…";
  try {
    const res = await fetch("/api/1/screenshot", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": token },
      body: JSON.stringify(body()),
    });
    const answer = await res.json().catch(() => null);
    if (!answer?.success) {
      const err = answer?.error;
      const details = (err?.details ?? [])
        .map((d) => (d.path ? `${d.path}: ` : "") + d.message).join("; ");
      status.className = "error";
      status.textContent = err
        ? `${err.message}${details ? ` (${details})` : ""}`
        : `The service answered ${res.status}.`;
      return;
    }
    status.textContent = "Done.";
    show(answer.data);
  } catch (err) {
    status.className = "error";
    status.textContent = `The service could not be reached: ${err.message}`;
  } finally {
    button.disabled = false;
  }
});
