// squall web UI: plain JS, no build step. Talks to the token-checked JSON API under /api.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k.nodeType ? k : String(k));
  return e;
};

const S = {
  flows: null, tls: [], tl: 0, idx: 0, frame: null, sources: new Map(),
  loaded: { tree: false, functions: false, exceptions: false },
  recKey: "",
};

// --- API ---------------------------------------------------------------------------------------

// Requests in flight, on <body data-busy>: 0 once every answer and what its caller drew from it
// are in (the count drops a task after the answer, so the caller's continuation runs first).
let busy = 0;
function setBusy(d) { busy += d; document.body.dataset.busy = String(busy); }

async function api(path, params = {}, opts = {}) {
  setBusy(1);
  try { return await apiNow(path, params, opts); } finally { setTimeout(() => setBusy(-1), 0); }
}

async function apiNow(path, params, opts) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, v);
  const url = "api/" + path + (q.toString() ? "?" + q : "");
  const res = await fetch(url, { ...opts, headers: { "x-squall-token": TOKEN, "content-type": "application/json", ...(opts.headers || {}) } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// replaceChildren that skips nulls and flattens arrays.
function fill(box, ...kids) {
  box.replaceChildren(...kids.flat(2).filter((k) => k !== null && k !== undefined && k !== false));
}

function toast(msg) {
  const t = $("#toast");
  t.textContent = msg;
  t.classList.remove("hidden");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.classList.add("hidden"), 4000);
}

async function guard(p) {
  try { return await p; } catch (e) { toast(e.message); return null; }
}

// --- values ------------------------------------------------------------------------------------

function valEl(node, tl = S.tl) {
  if (!node) return el("span", { class: "muted" }, "—");
  const e = el("span", { class: "val", title: "click to inspect" }, node.preview, el("span", { class: "ty" }, node.type));
  if (node.v !== null && node.v !== undefined) e.addEventListener("click", (ev) => { ev.stopPropagation(); inspect(tl, node.v, node.id); });
  return e;
}

const insp = { tl: 0, v: 0, id: null };

// `id`: the value's object identity (its history is listed under the tree), if it has one.
async function inspect(tl, v, id) {
  insp.tl = tl; insp.v = v; insp.id = id || null;
  $("#inspector").classList.remove("hidden");
  $("#insp-tree").replaceChildren();
  $("#insp-history").replaceChildren();
  await refreshInspector();
  await renderHistory(tl, insp.id);
}

function ppParams() {
  return { level: $("#pp-level").value || 3, length: $("#pp-length").value || 20 };
}

async function refreshInspector() {
  const r = await guard(api("value", { tl: insp.tl, v: insp.v, ...ppParams() }));
  if (!r) return;
  $("#insp-repr").textContent = r.repr;
  $("#insp-tree").replaceChildren(valueChildren(r, insp.tl, insp.v));
}

function valueChildren(r, tl, v) {
  const box = el("div");
  const add = (items) => {
    for (const c of items) box.append(valueNode(c, tl, v));
  };
  add(r.children);
  if (r.more) {
    let offset = r.offset + r.children.length;
    const more = el("div", { class: "link tree-node" }, `… ${r.children_total - offset} more`);
    more.addEventListener("click", async () => {
      const p = await guard(api("value", { tl, v, path: r.path.join("."), offset, limit: 50, ...ppParams() }));
      if (!p) return;
      more.remove();
      const sub = valueChildren(p, tl, v);
      box.append(...sub.childNodes);
    });
    box.append(more);
  }
  if (r.truncated_when_recorded) box.append(el("div", { class: "muted" }, `(recorded ${r.children_total} of ${r.len}: the rest was cut by the snapshot budget)`));
  return box;
}

function valueNode(c, tl, v) {
  const kids = el("div", { class: "kids hidden" });
  const tog = el("span", { class: "tog" }, c.expandable ? "▸" : "");
  const row = el("div", { class: "row" }, tog, el("span", { class: "k" }, c.key + ":"), el("span", {}, c.preview), el("span", { class: "muted" }, c.type + (c.len !== undefined ? ` (${c.len})` : "")));
  // An earlier state (not recorded at this moment): the entry it is as of, a jump away.
  if (c.earlier_idx !== null && c.earlier_idx !== undefined) {
    row.append(el("span", { class: "link earlier-idx", title: `this object was not recorded here: shown as of #${c.earlier_idx}; jump there`,
      onclick: (ev) => { ev.stopPropagation(); closeOverlays(); showTab("stepper"); go(c.earlier_idx, "at", tl); } }, `as of #${c.earlier_idx}`));
  }
  const n = el("div", { class: "tree-node" }, row, kids);
  if (c.expandable) {
    let loaded = false;
    tog.addEventListener("click", async () => {
      if (!loaded) {
        const r = await guard(api("value", { tl, v, path: c.path.join("."), ...ppParams() }));
        if (!r) return;
        kids.append(valueChildren(r, tl, v));
        loaded = true;
      }
      kids.classList.toggle("hidden");
      tog.textContent = kids.classList.contains("hidden") ? "▸" : "▾";
    });
  }
  return n;
}

// --- timelines, deep links --------------------------------------------------------------------

function tlLabel(t) {
  return `flow ${t.flow} · ${t.name} (${t.thread_id}) · ${t.len} entries`;
}

function parseHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  return { flow: h.get("flow"), thread: h.get("thread"), idx: h.get("idx") };
}

function tlFor(flow, thread) {
  const i = S.tls.findIndex((t) => String(t.flow) === String(flow) && String(t.thread_id) === String(thread));
  return i < 0 ? null : i;
}

function setTl(tl) {
  if (tl === S.tl) return;
  S.tl = tl;
  $("#tl-select").value = String(tl);
  S.loaded = { tree: false, functions: false, exceptions: S.loaded.exceptions };
  const active = document.querySelector("#tabs .active").dataset.tab;
  if (active !== "stepper") showTab(active);
}

// --- stepper ----------------------------------------------------------------------------------

// Moves the stepper. `opts.history`: "push" (default: a new place in Back/undo history),
// "replace", "adopt" or "none" (nav.js); `opts.render` false: only move (a burst of key presses
// renders its last step only).
// Every navigation from outside the queue goes through it (nav.js): one after another, each
// from where the previous landed. Code already running in the queue calls goNow.
function go(idx, drift = "at", tl = S.tl, opts = {}) {
  return queueNav(() => goNow(idx, drift, tl, opts));
}

async function goNow(idx, drift = "at", tl = S.tl, opts = {}) {
  const params = { tl, drift };
  if (idx === "first") params.idx = 0; else if (idx === "last") params.idx = "last"; else params.idx = idx;
  if (drift === "first") { params.idx = 0; params.drift = "at"; }
  if (drift === "last") { params.idx = "last"; params.drift = "at"; }
  const f = await guard(api("frame", params));
  if (!f) return;
  if (tl !== S.tl) setTl(tl);
  S.idx = f.idx;
  S.frame = f;
  if (opts.history !== "none") recordPlace(opts.history || "push");
  if (opts.render === false) return;
  await renderStepper(f);
}

async function source(file) {
  if (!S.sources.has(file)) {
    const p = api("source", { file }).catch((err) => ({ error: err.message }));
    S.sources.set(file, p);
  }
  return S.sources.get(file);
}

// Python's ast columns are UTF-8 byte offsets: turn one into a JS string index.
function byteToIndex(line, col) {
  const enc = new TextEncoder();
  let bytes = 0;
  for (let i = 0; i < line.length; i++) {
    if (bytes >= col) return i;
    bytes += enc.encode(line[i]).length;
  }
  return line.length;
}

function entryLabel(e) {
  switch (e.type) {
    case "fn-call": return `call ${e.fn}`;
    case "fn-resume": return `resume ${e.fn}`;
    case "fn-return": return e.kind === "return" ? "return" : e.kind;
    case "fn-unwind": return "unwind (exception)";
    case "bind": return `bind ${e.symbol}`;
    default: return "expr";
  }
}

async function renderStepper(f) {
  const e = f.entry;
  const form = f.frame.form;
  $("#idx-input").value = f.idx;
  $("#idx-len").textContent = `/ ${f.len - 1}`;
  $("#frame-title").replaceChildren(
    el("b", {}, form.display || "?"), " ",
    el("span", { class: "muted" }, `${form.file || ""}:${form.line || ""} · frame ${f.frame.fn_call_idx}`));

  // Current entry.
  const cur = $("#current");
  fill(cur,
    el("div", { class: "kv" }, el("span", { class: "k" }, `#${e.idx}`), el("span", {}, entryLabel(e))),
    e.value ? el("div", { class: "kv" }, el("span", { class: "k" }, "value"), valEl(e.value)) : null,
    e.type === "fn-call" || e.type === "fn-resume"
      ? f.frame.args.map((a) => el("div", { class: "kv" }, el("span", { class: "k" }, a.name), valEl(a.value)))
      : null);

  // Locals.
  $("#locals").replaceChildren(...(f.bindings.length ? f.bindings.map((b) =>
    el("div", { class: "kv" }, el("span", { class: "k" }, b.symbol), valEl(b.value))) : [el("span", { class: "muted" }, "none yet")]));

  // Frame: args and return.
  const ret = f.frame.ret;
  fill($("#frame-info"),
    ...f.frame.args.map((a) => el("div", { class: "kv" }, el("span", { class: "k" }, a.name), valEl(a.value))),
    el("div", { class: "kv" }, el("span", { class: "k" }, ret ? (ret.type === "fn-unwind" ? "raised" : "returned") : "returns"),
      ret ? valEl(ret.value) : el("span", { class: "muted" }, "(still open)"),
      ret ? el("span", { class: "link", onclick: () => go(ret.idx) }, `#${ret.idx}`) : null));

  // Stack.
  $("#stack").replaceChildren(...f.stack.map((s) => el("li", { title: "jump to this call", onclick: () => go(s.fn_call_idx) },
    `${s.fn}  `, el("span", { class: "muted" }, `#${s.fn_call_idx}`))));

  // Loop iterations of the current expression.
  renderLoop(e);

  // Source with the current expression highlighted (code.js).
  const got = form.file ? await source(form.file) : null;
  if (S.frame !== f) return; // a newer step arrived meanwhile
  const src = $("#source");
  const lines = got && got.lines;
  if (!lines) {
    delete src.dataset.file;
    const why = got && got.error ? `: ${got.error}` : "";
    src.replaceChildren(el("div", { class: "muted", style: "padding:8px" }, `source of ${form.file} is not available${why}`));
    return;
  }
  S.sourceLines = lines;
  await renderSource(f, got);
}

async function renderLoop(e) {
  const box = $("#loop");
  const count = $("#loop-count");
  if (!["expr", "bind", "fn-return"].includes(e.type)) {
    box.replaceChildren(el("span", { class: "muted", style: "border:0" }, "on an expression: its iterations in this frame"));
    count.textContent = "";
    return;
  }
  const r = await api("loop", { tl: S.tl, idx: e.idx, around: 8 }).catch(() => null);
  if (!r || S.frame.entry.idx !== e.idx) return;
  S.loop = r;
  count.textContent = r.count > 1 ? `${r.pos + 1} of ${r.count}` : "";
  if (r.count <= 1) {
    box.replaceChildren(el("span", { class: "muted", style: "border:0" }, "ran once in this frame"));
    return;
  }
  const items = [...r.window];
  if (r.first && r.window[0].n !== 0) items.unshift(r.first, { gap: true });
  if (r.last && r.window[r.window.length - 1].n !== r.count - 1) items.push({ gap: true }, r.last);
  box.replaceChildren(...items.map((it) => it.gap ? el("span", { class: "muted", style: "border:0" }, "…")
    : el("span", { class: it.idx === e.idx ? "cur" : "", title: `iteration ${it.n + 1}, idx ${it.idx}`, onclick: () => go(it.idx) }, it.value.preview)));
}

function loopStep(delta) {
  return powerStep("same-frame", delta > 0 ? "next" : "prev");
}

async function findStep(how, dir) {
  const r = await guard(api("find", { tl: S.tl, idx: S.idx, how, dir }));
  if (!r) return;
  if (r.idx === null) toast(`no ${dir === "next" ? "later" : "earlier"} match`);
  else return goNow(r.idx);
}

// --- call tree ----------------------------------------------------------------------------------

function argsText(args) {
  return args.map((a) => `${a.name}=${a.value.preview}`).join(", ");
}

// Functions hidden from the call tree (FlowStorm's "hide from tree"), per recording:
// [{form, fn}]. A hidden function's calls and everything under them are left out.
function hiddenFns() {
  try { return JSON.parse(localStorage.getItem("squall.hidden." + S.recKey) || "[]"); } catch { return []; }
}

function setHiddenFns(all) {
  localStorage.setItem("squall.hidden." + S.recKey, JSON.stringify(all));
  renderTree();
}

function treeNode(n) {
  const kids = el("div", { class: "kids hidden" });
  const tog = el("span", { class: "tog" }, n.has_children ? "▸" : "");
  const ret = n.ret ? el("span", { class: "ret" + (n.ret.type === "fn-unwind" ? " unwind" : "") }, (n.ret.type === "fn-unwind" ? "raised " : "→ ") + n.ret.value.preview) : el("span", { class: "muted" }, "(open)");
  const row = el("div", { class: "row", "data-idx": n.idx, title: "select: its arguments and result in the pane on the right" }, tog,
    el("span", { class: "fn-name", title: `jump to #${n.idx} in the stepper`, onclick: (ev) => { ev.stopPropagation(); showTab("stepper"); go(n.idx); } }, n.fn),
    el("span", { class: "args" }, `(${argsText(n.args)})`), ret, el("span", { class: "muted" }, `#${n.idx}`));
  row.addEventListener("click", () => selectTreeNode(n, row));
  const node = el("div", { class: "tree-node" }, row, kids);
  if (n.has_children) {
    let loaded = false;
    tog.addEventListener("click", async (ev) => {
      ev.stopPropagation();
      if (!loaded) { await loadChildren(kids, n.idx, 0); loaded = true; }
      kids.classList.toggle("hidden");
      tog.textContent = kids.classList.contains("hidden") ? "▸" : "▾";
    });
  }
  return node;
}

// The selected call's arguments and result, each inspectable.
function selectTreeNode(n, row) {
  for (const r of document.querySelectorAll("#tree .row.sel")) r.classList.remove("sel");
  row.classList.add("sel");
  const box = $("#tree-detail");
  const ret = n.ret;
  fill(box,
    el("h3", {}, n.fn, " ", el("span", { class: "muted" }, `#${n.idx}`)),
    el("div", { class: "panel" }, el("h3", {}, "Arguments"),
      n.args.length ? n.args.map((a) => el("div", { class: "kv" }, el("span", { class: "k" }, a.name), valEl(a.value))) : el("span", { class: "muted" }, "none")),
    el("div", { class: "panel" }, el("h3", {}, ret && ret.type === "fn-unwind" ? "Raised" : "Result"),
      ret ? el("div", { class: "kv" }, valEl(ret.value), el("span", { class: "link", onclick: () => { showTab("stepper"); go(ret.idx); } }, `#${ret.idx}`))
        : el("span", { class: "muted" }, "(still open)")),
    el("div", { class: "toolbar" },
      el("button", { onclick: () => { showTab("stepper"); go(n.idx); } }, "step into this call"),
      el("button", { class: "hide-fn", title: "leave this function's calls (and what they called) out of the tree",
        onclick: () => { const all = hiddenFns(); if (!all.some((h) => h.form === n.form_id)) all.push({ form: n.form_id, fn: n.fn }); setHiddenFns(all); } },
      `hide ${n.fn} from the tree`)));
}

async function loadChildren(box, call, offset) {
  const r = await guard(api("children", { tl: S.tl, call: call === null ? "root" : call, offset, limit: 100 }));
  if (!r) return;
  const hidden = new Set(hiddenFns().map((h) => h.form));
  box.append(...r.items.filter((n) => !hidden.has(n.form_id)).map(treeNode));
  if (r.more) {
    const more = el("div", { class: "link tree-node" }, `… more calls (showing ${offset + r.items.length})`);
    more.addEventListener("click", async () => { more.remove(); await loadChildren(box, call, offset + r.items.length); });
    box.append(more);
  }
}

async function renderTree() {
  const box = $("#tree");
  box.replaceChildren();
  const hidden = hiddenFns();
  fill($("#tree-hidden"), hidden.length ? [el("span", { class: "muted" }, "hidden from the tree:"),
    hidden.map((h, i) => el("button", { class: "chip-btn", title: "show it again", onclick: () => { hidden.splice(i, 1); setHiddenFns(hidden); } }, `${h.fn} ✕`))] : []);
  await loadChildren(box, null, 0);
}

// --- functions ----------------------------------------------------------------------------------

async function renderFunctions() {
  // Every thread's calls (the table says so; a call row names its thread).
  const stats = await guard(api("fn_stats", {}));
  if (!stats) return;
  S.stats = stats;
  drawFnTable();
}

function drawFnTable() {
  const f = $("#fn-filter").value.toLowerCase();
  const rows = S.stats.filter((s) => s.display.toLowerCase().includes(f));
  $("#fn-table").replaceChildren(el("tr", {}, el("th", {}, "calls (all threads)"), el("th", {}, "function"), el("th", {}, "where")),
    ...rows.map((s) => el("tr", { class: "click", onclick: () => fnCalls(s.id, 0) },
      el("td", {}, s.count), el("td", {}, s.display), el("td", { class: "muted" }, `${(s.file || "").split("/").pop()}:${s.line}`))));
}

async function fnCalls(form, offset) {
  const r = await guard(api("fn_calls", { form, offset, limit: 50 }));
  if (!r) return;
  const box = $("#fn-calls");
  box.replaceChildren(el("h3", {}, `${r.form.display} — ${r.total} calls in every thread`),
    el("table", {}, el("tr", {}, el("th", {}, "thread"), el("th", {}, "idx"), el("th", {}, "args"), el("th", {}, "result")),
      ...r.items.map((n) => el("tr", { class: "click", title: "jump to this call", onclick: () => { showTab("stepper"); go(n.idx, "at", n.tl === undefined ? S.tl : n.tl); } },
        el("td", { class: "muted" }, n.thread || S.tls[S.tl].name), el("td", {}, n.idx), el("td", { class: "args" }, argsText(n.args)),
        el("td", { class: n.ret && n.ret.type === "fn-unwind" ? "err" : "" }, n.ret ? n.ret.value.preview : "(open)")))),
    el("div", {},
      offset > 0 ? el("button", { onclick: () => fnCalls(form, Math.max(0, offset - 50)) }, "◀ prev") : null, " ",
      offset + r.items.length < r.total ? el("button", { onclick: () => fnCalls(form, offset + 50) }, "next ▶") : null));
}

// --- exceptions -------------------------------------------------------------------------------

async function renderExceptions() {
  const r = await guard(api("exceptions", { limit: 100 }));
  if (!r) return;
  const box = $("#exceptions");
  if (!r.items.length) { box.replaceChildren(el("p", { class: "muted" }, "No exceptions were recorded.")); return; }
  box.replaceChildren(el("p", { class: "muted" }, `${r.total} exception(s)${r.capped ? ", first 100 shown" : ""}`),
    ...r.items.map((x) => el("div", { class: "exc-item" },
      el("span", { class: "ty" }, x.type), " ", el("span", {}, x.message), " ",
      x.caught_in === undefined ? null : x.caught_in
        ? el("span", { class: "caught", title: `caught in the frame #${x.caught_in.idx}` }, `caught in ${x.caught_in.fn}`)
        : el("span", { class: "uncaught", title: "no recorded frame caught it" }, "uncaught"),
      el("br"),
      el("span", { class: "muted" }, `raised in ${x.fn}${x.chain && x.chain.length > 1 ? `, unwound ${x.chain.length} frames (${x.chain.map((c) => c.fn).join(" ← ")})` : ""} · thread ${x.thread || x.thread_id} · idx ${x.idx} `),
      el("button", { class: "jump-raise", onclick: () => { showTab("stepper"); go(x.raised_idx, "at", x.tl); } }, "jump to where raised"), " ",
      el("button", { onclick: () => { showTab("stepper"); go(x.idx, "at", x.tl); } }, "unwind"))));
}

// --- search -----------------------------------------------------------------------------------

let searchId = null;

async function startSearch(ev) {
  ev.preventDefault();
  const text = $("#search-text").value.trim();
  if (!text) return;
  if ($("#search-kind").value === "predicate") return predicateSearch(text, null, []);
  const r = await guard(api("search", {}, { method: "POST", body: JSON.stringify({ kind: $("#search-kind").value, text, limit: 200 }) }));
  if (!r) return;
  searchId = r.id;
  $("#search-cancel").disabled = false;
  $("#search-results").replaceChildren();
  pollSearch(r.id);
}

// Search by predicate (live only): the program evaluates `v` expressions on its recorded values,
// in bounded steps; each answer says where to resume.
// Each call is bounded in time by the program (`timeout`); Cancel stops the running one.
let predicateRunning = false;
async function predicateSearch(expr, start, found) {
  searchId = null;
  if (start === null) predicateRunning = true;
  if (!predicateRunning) return;
  $("#search-cancel").disabled = false;
  const r = await guard(api("control/predicate", {}, { method: "POST", body: JSON.stringify({ expr, start, max_matches: 200, max_values: 20000, timeout: 10 }) }));
  if (!r) { predicateRunning = false; $("#search-cancel").disabled = true; return; }
  found = found.concat(r.matches);
  const why = r.stopped === "cancelled" ? " — cancelled" : r.stopped === "timeout" ? ` — stopped: the predicate ran past ${r.timeout} s${r.slow_at ? ` (on idx ${r.slow_at.idx})` : ""}` : "";
  if (r.stopped || r.done) { predicateRunning = false; $("#search-cancel").disabled = true; }
  $("#search-status").textContent = `${found.length} match(es)${r.errors ? `, ${r.errors} value(s) raised (${r.first_error})` : ""}${why || (r.done ? " — done" : " …")}`;
  $("#search-results").replaceChildren(el("table", {}, ...found.map((m) => el("tr", { class: "click", onclick: () => { const tl = tlFor(m.flow, m.thread); if (tl !== null) { showTab("stepper"); go(m.idx, "at", tl); } } },
    el("td", {}, m.idx), el("td", {}, m.type), el("td", {}, m.symbol || ""), el("td", { class: "args" }, m.preview)))));
  if (predicateRunning && !r.done && found.length < 1000) setTimeout(() => predicateSearch(expr, r.next, found), 0);
}

async function pollSearch(id) {
  if (id !== searchId) return;
  const r = await guard(api(`search/${id}`));
  if (!r) return;
  const p = $("#search-progress");
  p.max = Math.max(1, r.total); p.value = r.scanned;
  const end = r.capped ? ` — stopped at the first ${r.matches.length}: narrow the text to see the rest` : r.cancelled ? " — cancelled" : " — done";
  $("#search-status").textContent = `${r.matches.length} match(es) in every thread${r.done ? end : " …"}`;
  $("#search-results").replaceChildren(el("table", {}, ...r.matches.map((m) => el("tr", { class: "click", onclick: () => { showTab("stepper"); go(m.idx, "at", m.tl === undefined ? S.tl : m.tl); } },
    el("td", { class: "muted" }, m.thread || ""), el("td", {}, m.idx), el("td", {}, m.type), el("td", {}, m.fn), el("td", { class: "args" }, m.value ? m.value.preview : "")))));
  if (!r.done) setTimeout(() => pollSearch(id), 150);
  else $("#search-cancel").disabled = true;
}

// --- bookmarks ----------------------------------------------------------------------------------

function bookmarks() {
  try { return JSON.parse(localStorage.getItem("squall.bookmarks." + S.recKey) || "[]"); } catch { return []; }
}

function addBookmark() {
  const t = S.tls[S.tl];
  const note = prompt("Bookmark note", S.frame ? `${S.frame.frame.form.display} #${S.idx}` : `#${S.idx}`);
  if (note === null) return;
  const all = bookmarks();
  all.push({ flow: t.flow, thread: t.thread_id, idx: S.idx, note });
  localStorage.setItem("squall.bookmarks." + S.recKey, JSON.stringify(all));
  renderBookmarks();
}

async function renderBookmarks() {
  const all = bookmarks();
  // Bookmarks placed from code (squall.bookmark("note")): recorded calls of squall.bookmark.
  let code = [];
  try { code = (await api("bookmarks")).items || []; } catch { code = []; }
  const jump = (b, drift) => { const tl = tlFor(b.flow, b.thread); if (tl !== null) { showTab("stepper"); go(b.idx, drift || "at", tl); } };
  const rows = [
    ...code.map((b) => el("tr", { class: "click code-bookmark" },
      // b.idx is the call of squall.bookmark itself: land where it returned to, in the caller.
      el("td", { onclick: () => jump(b, "next-out") }, b.note),
      el("td", { class: "muted" }, `flow ${b.flow} thread ${b.thread} #${b.idx}`),
      el("td", { class: "muted" }, "from code"))),
    ...all.map((b, i) => el("tr", { class: "click" },
      el("td", { onclick: () => jump(b) }, b.note),
      el("td", { class: "muted" }, `flow ${b.flow} thread ${b.thread} #${b.idx}`),
      el("td", {}, el("button", { onclick: () => { all.splice(i, 1); localStorage.setItem("squall.bookmarks." + S.recKey, JSON.stringify(all)); renderBookmarks(); } }, "remove")))),
  ];
  $("#bookmarks").replaceChildren(rows.length ? el("table", {}, ...rows)
    : el("p", { class: "muted" }, "No bookmarks yet: press b in the stepper, or call squall.bookmark(\"note\") in the program."));
}

// --- multi-thread timeline ---------------------------------------------------------------------

// A colour per thread (by its position in the flow).
const THREAD_COLOURS = ["#5aa9ff", "#ffb454", "#7bd88f", "#ff6bcb", "#c792ea", "#4dd0e1", "#ff8a65", "#d4e157"];
const MT = { start: 0, limit: 200, total: 0, flow: null };

function mtColour(r, tl) {
  const i = r.threads.findIndex((t) => t.tl === tl);
  return THREAD_COLOURS[(i < 0 ? 0 : i) % THREAD_COLOURS.length];
}

function mtFlows() {
  const flows = (S.flows && S.flows.flows) || [];
  const sel = $("#mt-flow");
  const cur = S.tls[S.tl] ? S.tls[S.tl].flow : (flows[0] && flows[0].flow);
  sel.replaceChildren(...flows.map((f) => el("option", { value: f.flow }, `${f.flow} (${f.threads.length} thread${f.threads.length === 1 ? "" : "s"})`)));
  if (cur !== undefined) sel.value = String(cur);
}

function mtEntryText(e) {
  switch (e.type) {
    case "fn-call": return [`call ${e.fn}`, "call"];
    case "fn-resume": return [`resume ${e.fn}`, "call"];
    case "fn-return": return [`${e.kind === "return" ? "return" : e.kind} ${e.fn}`, ""];
    case "fn-unwind": return [`unwind ${e.fn}`, "unwind"];
    case "bind": return [`bind ${e.symbol}`, ""];
    default: return ["expr", ""];
  }
}

async function renderThreads(params = {}) {
  if (!$("#mt-flow").options.length) mtFlows();
  const flow = $("#mt-flow").value;
  const q = { flow, limit: MT.limit, fns: $("#mt-fns").checked ? 1 : 0, ...params };
  if (q.start === undefined && q.tl === undefined) q.start = MT.start;
  const r = await guard(api("order", q));
  if (!r) return;
  MT.start = r.start; MT.total = r.total; MT.flow = r.flow;
  const end = r.start + r.items.length;
  $("#mt-status").textContent = r.total
    ? `${r.start + 1}–${end} of ${r.total}` + (r.marks ? "" : " · no thread-switch marks in this recording: threads shown one after another")
    : "nothing recorded in this flow";
  fill($("#mt-legend"), r.threads.map((t) => el("span", { class: "chip", style: `--tc:${mtColour(r, t.tl)}`, title: `thread ${t.thread_id}, ${t.len} entries` }, t.name)));
  $("#mt-prev").disabled = r.start === 0;
  $("#mt-first").disabled = r.start === 0;
  $("#mt-next").disabled = end >= r.total;
  fill($("#mt-table"), r.items.map((e) => {
    const [text, cls] = mtEntryText(e);
    const cur = e.tl === S.tl && e.idx === S.idx;
    return el("tr", {
      class: "click" + (e.switch ? " switch" : "") + (cur ? " cur" : ""), style: `--tc:${mtColour(r, e.tl)}`,
      title: `jump to ${e.thread} #${e.idx} in the stepper`, "data-tl": e.tl, "data-idx": e.idx,
      onclick: () => { showTab("stepper"); go(e.idx, "at", e.tl); },
    },
    el("td", { class: "pos" }, e.pos),
    el("td", { class: "th" }, e.thread),
    el("td", { class: "idx" }, "#" + e.idx),
    el("td", { class: cls }, text),
    el("td", {}, e.value ? valEl(e.value, e.tl) : ""));
  }));
}

function mtPage(delta) {
  if (delta === 0) MT.start = 0;
  else MT.start = Math.max(0, Math.min(MT.start + delta * MT.limit, Math.max(0, MT.total - 1)));
  renderThreads({ start: MT.start });
}

function mtAtStepper() {
  const t = S.tls[S.tl];
  if (!t) return;
  $("#mt-flow").value = String(t.flow);
  renderThreads({ tl: S.tl, idx: S.idx });
}

// --- live controls and the modules browser ------------------------------------------------------

async function control(action, arg) {
  return api("control/" + action, {}, { method: "POST", body: arg === undefined ? "" : JSON.stringify(arg) });
}

function showLiveStatus(st) {
  if (!st) return;
  $("#rec-dot").classList.toggle("on", !!st.recording);
  $("#rec-dot").title = st.recording ? `recording · ${st.entries} entries` : `stopped · ${st.entries} entries`;
  $("#rec-toggle").textContent = st.recording ? "■" : "●";
  $("#rec-toggle").title = st.recording ? "stop recording" : "start recording";
  $("#rec-toggle").dataset.recording = st.recording ? "1" : "0";
}

async function liveAction(action) {
  const st = await guard(control(action));
  showLiveStatus(st);
  if (st && action === "clear") { toast("recording cleared"); await loadFlows(); }
}

const BR = { modules: [], module: null };

async function renderBrowser() {
  const r = await guard(control("modules"));
  if (!r) return;
  BR.modules = r.modules;
  drawModules();
}

const HIDDEN_CATEGORIES = new Set(["stdlib", "site-packages", "squall", "no-source"]);

function drawModules() {
  const f = $("#mod-filter").value.toLowerCase();
  const all = $("#mod-all").checked;
  const shown = BR.modules.filter((m) => (all || !HIDDEN_CATEGORIES.has(m.category)) && m.name.toLowerCase().includes(f));
  fill($("#mod-table"),
    el("tr", {}, el("th", {}, `module (${shown.length} of ${BR.modules.length})`), el("th", {}, "recorded"), el("th", {}, "why")),
    shown.slice(0, 500).map((m) => el("tr", { class: "click" + (m.name === BR.module ? " cur" : ""), title: m.reason, "data-module": m.name, onclick: () => browseModule(m.name) },
      el("td", {}, m.name),
      el("td", { class: m.instrumented ? "yes" : "no" }, m.instrumented ? "✓ instrumented" : "✗ not"),
      el("td", { class: "reason" }, m.reason))));
}

async function browseModule(name) {
  BR.module = name;
  const r = await guard(control("functions", { module: name }));
  if (!r) return;
  const btn = (label, action, target) => el("button", { class: action, "data-target": target, onclick: (ev) => { ev.stopPropagation(); swap(action, target); } }, label);
  fill($("#mod-detail"),
    el("div", { class: "toolbar" }, el("b", {}, name), btn("Instrument module", "instrument", name), btn("Uninstrument module", "uninstrument", name)),
    el("div", { class: "muted" }, r.reason),
    r.functions.length
      ? el("table", {}, el("tr", {}, el("th", {}, "function"), el("th", {}, "line"), el("th", {}, "recorded"), el("th", {}, "")),
        r.functions.map((f) => el("tr", { "data-fn": f.qualname },
          el("td", {}, f.qualname), el("td", { class: "muted" }, f.line),
          el("td", { class: f.instrumented ? "yes" : "no" }, f.instrumented ? "✓" : "✗"),
          el("td", {}, f.instrumented ? btn("uninstrument", "uninstrument", f.target) : btn("instrument", "instrument", f.target)))))
      : el("p", { class: "muted" }, "no functions defined by this module"));
  $("#mod-detail").classList.remove("muted");
}

async function swap(action, target) {
  const r = await guard(control(action, { target }));
  if (!r) return;
  const rep = $("#mod-report");
  rep.textContent = r.text + (r.reload_needed.length ? "" : "\nnothing to reload");
  rep.classList.remove("hidden");
  await renderBrowser();
  if (BR.module) await browseModule(BR.module);
}

// --- tabs, theme, keys ------------------------------------------------------------------------

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === "tab-" + name);
  if (name === "tree" && !S.loaded.tree) { S.loaded.tree = true; renderTree(); }
  if (name === "functions" && !S.loaded.functions) { S.loaded.functions = true; renderFunctions(); }
  if (name === "exceptions" && !S.loaded.exceptions) { S.loaded.exceptions = true; renderExceptions(); }
  if (name === "bookmarks") renderBookmarks();
  if (name === "threads") mtAtStepper();
  if (name === "browser" && !S.loaded.browser) { S.loaded.browser = true; renderBrowser(); }
  if (name === "search") $("#search-text").focus();
  if (name === "printers") renderPrinters(0);
}

function setTheme(light) {
  document.documentElement.classList.toggle("light", light);
  localStorage.setItem("squall.theme", light ? "light" : "dark");
}

async function gotoFileLine(text) {
  const m = /^(.*):(\d+)$/.exec(text.trim());
  if (!m) { toast("goto: write file:line"); return; }
  const r = await guard(api("goto", { tl: S.tl, file: m[1], line: m[2] }));
  if (!r) return;
  // The line may have run on other threads only: go to the first of them, and say so.
  const hit = r.idx !== null && r.idx !== undefined ? { idx: r.idx, tl: r.tl === undefined ? S.tl : r.tl }
    : (r.hits || [])[0];
  if (!hit) { toast(`nothing recorded on ${text} in any thread`); return; }
  if (hit.tl !== S.tl) toast(`${text} did not run on this thread: going to thread ${S.tls[hit.tl].name}`);
  showTab("stepper");
  go(hit.idx, "at", hit.tl);
}

function closeOverlays() {
  for (const o of document.querySelectorAll(".overlay")) o.classList.add("hidden");
}

// True while the focus is somewhere keys are text (a text field), not shortcuts.
function typingInto(a) {
  if (!a) return false;
  if (a.tagName === "TEXTAREA" || a.isContentEditable) return true;
  return a.tagName === "INPUT" && !["checkbox", "radio", "button", "submit", "range", "color"].includes(a.type);
}

function onKey(ev) {
  const typing = typingInto(document.activeElement);
  if (ev.key === "Escape") { closeOverlays(); if (typing) document.activeElement.blur(); return; }
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const stepper = $("#tab-stepper").classList.contains("active") && $("#inspector").classList.contains("hidden");
  const drift = { ArrowRight: "next", l: "next", ArrowLeft: "prev", h: "prev", ArrowDown: "next-over", j: "next-over",
    ArrowUp: "prev-over", k: "prev-over", o: "next-out", u: "prev-out", Home: "first", g: "first", End: "last", G: "last" }[ev.key];
  if (drift && stepper) {
    ev.preventDefault();
    if (document.activeElement && document.activeElement.tagName === "SELECT") document.activeElement.blur();
    stepDrift(drift);
    return;
  }
  const act = {
    n: () => queueNav(() => findStep("coord", "next")), p: () => queueNav(() => findStep("coord", "prev")),
    N: () => queueNav(() => findStep("equality", "next")), P: () => queueNav(() => findStep("equality", "prev")),
    "]": () => queueNav(() => loopStep(1)), "[": () => queueNav(() => loopStep(-1)),
    z: () => undoNav(), Z: () => redoNav(),
    F: () => queueNav(() => powerStep("same-frame", "next")), D: () => queueNav(() => powerStep("same-frame", "prev")),
    I: () => queueNav(() => findStep("identity", "next")), U: () => queueNav(() => findStep("identity", "prev")),
    q: () => { $("#quick-fn").focus(); $("#quick-fn").select(); },
    i: () => { $("#idx-input").focus(); $("#idx-input").select(); },
    v: () => { const v = S.frame && S.frame.entry.value; if (v && v.v !== null) inspect(S.tl, v.v, v.id); },
    // After the steps queued before it: the bookmark is of where they land.
    b: () => queueNav(() => addBookmark()),
    f: () => $("#goto").focus(),
    t: () => setTheme(!document.documentElement.classList.contains("light")),
    "?": () => $("#help").classList.toggle("hidden"),
    "/": () => showTab("search"),
    1: () => showTab("stepper"), 2: () => showTab("tree"), 3: () => showTab("functions"),
    4: () => showTab("exceptions"), 5: () => showTab("search"), 6: () => showTab("bookmarks"),
    7: () => showTab("threads"), 8: () => { if (S.flows && S.flows.live) showTab("browser"); },
    9: () => showTab("printers"),
    0: () => { showTab("outputs"); renderOutputs(0); },
    r: () => { if (S.flows && S.flows.live) loadFlows(); },
  }[ev.key];
  if (act && (stepper || !"npNP[]vbFDIU".includes(ev.key))) { ev.preventDefault(); act(); }
}

// --- start ------------------------------------------------------------------------------------

async function init() {
  setTheme(localStorage.getItem("squall.theme") === "light");
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  for (const b of document.querySelectorAll("#stepbar [data-drift]")) b.addEventListener("click", () => stepDrift(b.dataset.drift));
  for (const b of document.querySelectorAll("#stepbar [data-find]")) b.addEventListener("click", () => queueNav(() => findStep(b.dataset.find, b.dataset.dir)));
  $("#bookmark-btn").addEventListener("click", () => queueNav(() => addBookmark()));
  $("#idx-input").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { go(+ev.target.value || 0); ev.target.blur(); } });
  $("#goto").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { gotoFileLine(ev.target.value); ev.target.blur(); } });
  $("#theme-btn").addEventListener("click", () => setTheme(!document.documentElement.classList.contains("light")));
  $("#help-btn").addEventListener("click", () => $("#help").classList.toggle("hidden"));
  for (const c of document.querySelectorAll(".overlay .close")) c.addEventListener("click", closeOverlays);
  for (const o of document.querySelectorAll(".overlay")) o.addEventListener("click", (ev) => { if (ev.target === o) closeOverlays(); });
  $("#pp-level").addEventListener("change", refreshInspector);
  $("#pp-length").addEventListener("change", refreshInspector);
  $("#copy-repr").addEventListener("click", async () => {
    const text = $("#insp-repr").textContent;
    try { await navigator.clipboard.writeText(text); toast("copied"); } catch { toast("copy failed: select the text instead"); }
  });
  $("#fn-filter").addEventListener("input", drawFnTable);
  $("#search-form").addEventListener("submit", startSearch);
  $("#search-cancel").addEventListener("click", () => {
    if (searchId !== null) api(`search/${searchId}`, {}, { method: "DELETE" }).catch(() => {});
    if (predicateRunning) { predicateRunning = false; api("control/predicate_cancel", {}, { method: "POST", body: "{}" }).catch(() => {}); }
  });
  $("#tl-select").addEventListener("change", (ev) => { setTl(+ev.target.value); go(0); });
  document.addEventListener("keydown", onKey);
  $("#mt-flow").addEventListener("change", () => renderThreads({ start: 0 }));
  $("#mt-fns").addEventListener("change", () => { const t = S.tls[S.tl]; if (t && String(t.flow) === $("#mt-flow").value) renderThreads({ tl: S.tl, idx: S.idx }); else renderThreads({ start: 0 }); });
  $("#mt-here").addEventListener("click", mtAtStepper);
  $("#mt-first").addEventListener("click", () => mtPage(0));
  $("#mt-prev").addEventListener("click", () => mtPage(-1));
  $("#mt-next").addEventListener("click", () => mtPage(1));
  $("#rec-toggle").addEventListener("click", () => liveAction($("#rec-toggle").dataset.recording === "1" ? "stop" : "start"));
  $("#rec-clear").addEventListener("click", () => { if (confirm("Forget everything recorded so far?")) liveAction("clear"); });
  $("#rec-refresh").addEventListener("click", () => loadFlows());
  $("#mod-filter").addEventListener("input", drawModules);
  $("#mod-all").addEventListener("change", drawModules);
  $("#mod-reload").addEventListener("click", renderBrowser);
  window.addEventListener("popstate", onPopState);
  // A dropdown or checkbox keeps the focus after it is used, and would take the next key
  // presses (arrows change a select's value): hand the keyboard back to the shortcuts.
  document.addEventListener("change", (ev) => {
    const t = ev.target;
    if (t.tagName === "SELECT" || (t.tagName === "INPUT" && (t.type === "checkbox" || t.type === "radio"))) t.blur();
  });
  $("#undo-btn").addEventListener("click", undoNav);
  $("#redo-btn").addEventListener("click", redoNav);
  initTools();

  if (!await loadFlows(true)) return;
  document.body.dataset.ready = "1";
}

// Loads (or, live, reloads) the timelines; keeps the stepper's place when it still exists.
async function loadFlows(first = false) {
  const flows = await guard(api("flows"));
  if (!flows) {
    if (first) document.body.prepend(el("p", { class: "err" }, "Cannot load the recording (is the token in the URL?)"));
    return false;
  }
  const prev = S.tls[S.tl];
  S.flows = flows;
  S.recKey = flows.info.path || flows.info.program || "";
  $("#program").textContent = `${flows.info.program || ""}${flows.live ? " (live)" : ""}`;
  for (const e of document.querySelectorAll(".live-only")) e.classList.toggle("hidden", !flows.live);
  if (flows.live) showLiveStatus({ recording: flows.info.recording, entries: flows.info.entries });
  S.tls = flows.flows.flatMap((f) => f.threads.map((t) => ({ ...t, flow: f.flow })));
  $("#tl-select").replaceChildren(...S.tls.map((t, i) => el("option", { value: i }, tlLabel(t))));
  mtFlows();
  S.loaded = { tree: false, functions: false, exceptions: false, threads: false, browser: S.loaded.browser };
  if (!S.tls.length) { toast("this recording has no timelines" + (flows.live ? " yet" : "")); return first ? !!flows.live : true; }
  let tl, idx;
  if (first) {
    const h = parseHash();
    tl = tlFor(h.flow, h.thread);
    idx = h.idx !== null ? +h.idx : 0;
  } else {
    tl = prev ? tlFor(prev.flow, prev.thread_id) : null;
    idx = tl === null ? 0 : S.idx;
  }
  if (tl === null) { tl = 0; idx = 0; }
  S.tl = tl;
  $("#tl-select").value = String(tl);
  await go(idx, "at", tl, { history: "replace" });
  const active = document.querySelector("#tabs .active").dataset.tab;
  if (!first && active !== "stepper") showTab(active);
  return true;
}

init();
