// The stepper's code pane: Python source with syntax highlighting (highlight.js), the current
// expression marked, hit counts in the gutter (how often each line ran in this timeline), the
// lines that ran in the current frame, and clicking an expression to jump to when it ran.
// Loaded before app.js; uses its globals at call time only.
"use strict";

const CODE = { file: null, tl: null, hits: null, frameKey: null };

// highlight.js's HTML for a whole file, cut into lines: spans open at a line's end are closed
// there and opened again on the next line, so each line is well-formed on its own.
function highlightLines(lines) {
  const text = lines.join("\n");
  let html;
  try {
    html = window.hljs ? window.hljs.highlight(text, { language: "python", ignoreIllegals: true }).value : null;
  } catch { html = null; }
  if (html === null) return lines.map((l) => escapeHtml(l));
  const out = [];
  const open = [];
  let cur = "";
  const re = /(<span[^>]*>)|(<\/span>)|(\n)|([^<\n]+)/g;
  let m;
  while ((m = re.exec(html)) !== null) {
    if (m[1]) { open.push(m[1]); cur += m[1]; } else if (m[2]) { open.pop(); cur += m[2]; } else if (m[3]) {
      out.push(cur + "</span>".repeat(open.length));
      cur = open.join("");
    } else cur += m[4];
  }
  out.push(cur + "</span>".repeat(open.length));
  return out;
}

function escapeHtml(s) {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// The DOM position of character `ci` in a line's code element.
function domPos(code, ci) {
  const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  let left = ci;
  let last = null;
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement && n.parentElement.closest(".inline-val")) continue;
    if (left <= n.length) return [n, left];
    left -= n.length;
    last = n;
  }
  return last ? [last, last.length] : [code, 0];
}

// The character index of a DOM position inside a line's code element.
function charIndex(code, node, offset) {
  const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  let n0 = 0;
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n === node) return n0 + offset;
    n0 += n.length;
  }
  return n0;
}

function indexToByte(line, ci) {
  return new TextEncoder().encode(line.slice(0, ci)).length;
}

// Draws the file's lines (once per file) and marks the current expression.
async function renderSource(f, got) {
  const e = f.entry;
  const form = f.frame.form;
  const src = $("#source");
  const lines = got.lines;
  if (src.dataset.file !== form.file) {
    src.dataset.file = form.file;
    const html = highlightLines(lines);
    const note = got.note ? el("div", { class: "muted source-note", style: "padding:4px 8px" }, got.note) : null;
    fill(src, note, lines.map((t, i) => {
      const code = el("span", { class: "code" });
      code.innerHTML = html[i] || " ";
      return el("div", { class: "line", "data-ln": i + 1 },
        el("span", { class: "hits", title: "times this line ran in this timeline (calls mode: def and return lines only; calls carry no call-site line)" }),
        el("span", { class: "ln" }, i + 1), code);
    }));
    CODE.file = form.file;
    CODE.hits = null;
  }
  for (const old of src.querySelectorAll(".line.cur, .line.exc")) old.classList.remove("cur", "exc");
  for (const v of src.querySelectorAll(".inline-val")) v.remove();
  if (window.CSS && CSS.highlights) CSS.highlights.delete("squall-cur");
  for (const h of src.querySelectorAll(".hl")) h.replaceWith(...h.childNodes);

  let coord = e.coord;
  const isCall = e.type === "fn-call" || e.type === "fn-resume";
  if (!coord) {
    const l = isCall || e.type === "fn-unwind" ? form.line : null;
    coord = l ? [l, 0, l, (lines[l - 1] || "").length * 4] : null;
  }
  gutterHits(f.tl, form.file);
  frameLines(f);
  if (!coord) return;
  const [l0, c0, l1, c1] = coord;
  let first = null;
  for (let ln = l0; ln <= l1; ln++) {
    const row = src.querySelector(`.line[data-ln="${ln}"]`);
    if (!row) continue;
    first = first || row;
    row.classList.add("cur");
    if (e.type === "fn-unwind") row.classList.add("exc");
  }
  const startRow = src.querySelector(`.line[data-ln="${l0}"] .code`);
  const endRow = src.querySelector(`.line[data-ln="${l1}"] .code`);
  if (startRow && endRow) {
    const range = document.createRange();
    range.setStart(...domPos(startRow, byteToIndex(lines[l0 - 1] || "", c0)));
    range.setEnd(...domPos(endRow, byteToIndex(lines[l1 - 1] || "", c1)));
    if (window.CSS && CSS.highlights && window.Highlight) {
      CSS.highlights.set("squall-cur", new Highlight(range));
    } else if (l0 === l1) {
      // Without the CSS highlight API: wrap the expression's text in a span.
      const span = el("span", { class: "hl" });
      try { range.surroundContents(span); } catch { /* it crosses token spans: the line mark stays */ }
    }
    if (e.value) endRow.append(el("span", { class: "inline-val" }, "⇒ " + e.value.preview));
  }
  src.dataset.cur = `${l0}:${c0}-${l1}:${c1}`;
  if (first) first.scrollIntoView({ block: "center" });
}

// Hit counts of every line of the file in this timeline (fetched once per file and timeline).
async function gutterHits(tl, file) {
  const key = `${tl}|${file}`;
  if (CODE.hitsKey === key) return;
  CODE.hitsKey = key;
  const r = await api("lines", { tl, file }).catch(() => null);
  if (!r || CODE.hitsKey !== key || $("#source").dataset.file !== file) return;
  for (const row of $("#source").querySelectorAll(".line")) {
    const n = r.lines[row.dataset.ln];
    const h = row.querySelector(".hits");
    h.textContent = n ? (n > 9999 ? `${Math.round(n / 1000)}k` : String(n)) : "";
    h.title = n ? `ran ${n} time${n === 1 ? "" : "s"} in this timeline` : "never ran in this timeline";
  }
}

// Marks the lines that ran in the current frame: up to the current entry, and after it.
async function frameLines(f) {
  const key = `${f.tl}|${f.idx}`;
  CODE.frameKey = key;
  const r = await api("frame_lines", { tl: f.tl, idx: f.idx }).catch(() => null);
  if (!r || CODE.frameKey !== key) return;
  for (const row of $("#source").querySelectorAll(".line.ran, .line.later")) row.classList.remove("ran", "later");
  const mark = (lines, cls, what) => {
    for (const [ln, n] of Object.entries(lines)) {
      const row = $("#source").querySelector(`.line[data-ln="${ln}"]`);
      if (!row) continue;
      row.classList.add(cls);
      row.querySelector(".ln").title = `${what} ${n} time${n === 1 ? "" : "s"} in this frame`;
    }
  };
  mark(r.ran, "ran", "ran");
  mark(r.later, "later", "runs later");
  // Which entry the marks are of: until the answer comes, the marks of the last place stay.
  $("#source").dataset.linesOf = key;
}

// The innermost recorded site of the current frame's form holding (line, byte column).
function siteAt(line, col) {
  let best = null;
  for (const [id, l0, c0, l1, c1] of (S.frame && S.frame.sites) || []) {
    const after = line > l0 || (line === l0 && col >= c0);
    const before = line < l1 || (line === l1 && col < c1);
    if (!after || !before) continue;
    const size = (l1 - l0) * 10000 + (c1 - c0);
    if (!best || size < best.size) best = { id, size };
  }
  if (best) return best.id;
  // No recorded expression holds the point (a call's name, a keyword): the nearest site on the
  // line, so a click anywhere on a line that ran goes to when it ran.
  for (const [id, l0, c0, , c1] of (S.frame && S.frame.sites) || []) {
    if (l0 !== line) continue;
    const dist = col < c0 ? c0 - col : Math.max(0, col - c1);
    if (!best || dist < best.dist) best = { id, dist };
  }
  return best ? best.id : null;
}

// The site under a click in the code, or null.
function siteUnder(ev) {
  const code = ev.target.closest && ev.target.closest(".code");
  if (!code || ev.target.closest(".inline-val")) return null;
  const row = code.parentElement;
  const ln = +row.dataset.ln;
  let node, offset;
  if (document.caretPositionFromPoint) {
    const p = document.caretPositionFromPoint(ev.clientX, ev.clientY);
    if (!p) return null;
    node = p.offsetNode; offset = p.offset;
  } else if (document.caretRangeFromPoint) {
    const r = document.caretRangeFromPoint(ev.clientX, ev.clientY);
    if (!r) return null;
    node = r.startContainer; offset = r.startOffset;
  } else return null;
  if (!code.contains(node)) return null;
  const text = (S.sourceLines && S.sourceLines[ln - 1]) || "";
  const site = siteAt(ln, indexToByte(text, charIndex(code, node, offset)));
  return site === null ? null : { site, line: ln };
}

// Clicking an expression jumps to when it ran in this frame: the first time after the current
// entry, else the last time before it; one that did not run in this frame goes to its first
// run in the timeline (said in a toast).
async function jumpToSite(site) {
  const f = S.frame;
  const r = await guard(api("site_hits", { tl: S.tl, site, frame: f.frame.fn_call_idx, limit: 10000 }));
  if (!r) return;
  if (r.items.length) {
    const after = r.items.find((it) => it.idx > S.idx);
    const to = after || r.items[r.items.length - 1];
    return goNow(to.idx);
  }
  const any = await guard(api("site_hits", { tl: S.tl, site, limit: 1 }));
  if (!any) return;
  if (!any.items.length) { toast("this expression never ran in this timeline"); return; }
  toast(`it did not run in this frame: its first run in this timeline is #${any.items[0].idx}`);
  return goNow(any.items[0].idx);
}

function initCode() {
  const src = $("#source");
  // A window resized keeps the current line in view.
  window.addEventListener("resize", () => {
    const cur = src.querySelector(".line.cur");
    if (cur) cur.scrollIntoView({ block: "center" });
  });
  src.addEventListener("click", (ev) => {
    if (window.getSelection && String(window.getSelection()).length) return; // selecting text
    const hit = siteUnder(ev);
    if (!hit) return;
    if (ev.altKey) { addPrinter(hit.site); return; }
    queueNav(() => jumpToSite(hit.site));
  });
  src.addEventListener("contextmenu", (ev) => {
    const hit = siteUnder(ev);
    if (!hit) return;
    ev.preventDefault();
    addPrinter(hit.site);
  });
}
