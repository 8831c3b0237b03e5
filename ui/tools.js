// Tools around the stepper: power stepping by frame and by a custom predicate, quick-jump to a
// function's first call, Printers (print points replayed over the recording) and the
// inspector's history of an object (its states and the writes that changed it). Loaded before
// app.js; uses its globals at call time only.
"use strict";

// --- power stepping -----------------------------------------------------------------------------

// Where a text search that ran out of time stopped, to go on from there on the next press.
const POWER = { resume: null };

// `custom`: the box holds a predicate over the entry (`v > 3`, sent as how=predicate) or, after
// `text:`, text the printed value holds (how=text).
async function powerStep(how, dir) {
  const params = { tl: S.tl, idx: S.idx, how, dir };
  if (how === "custom") {
    const typed = $("#power-text").value;
    if (!typed.trim()) { toast("custom power step: type a predicate such as v > 3 (or text:JP) first; ? lists the names"); $("#power-text").focus(); return; }
    if (typed.startsWith("text:")) { params.how = "text"; params.text = typed.slice(5).trimStart(); }
    else { params.how = "predicate"; params.pred = typed; }
    if (params.how === "text" && !params.text) { toast("text: type the text the printed value should hold after text:"); $("#power-text").focus(); return; }
    const r0 = POWER.resume;
    if (r0 && r0.tl === S.tl && r0.from === S.idx && r0.typed === typed && r0.dir === dir) params.idx = r0.at;
  }
  const r = await guard(api("power_step", params));
  if (!r) return;
  POWER.resume = null;
  if (r.stopped_at !== undefined && r.stopped_at !== null) {
    POWER.resume = { tl: S.tl, from: S.idx, at: r.stopped_at, typed: $("#power-text").value, dir };
    toast(`no match up to #${r.stopped_at} yet (searched 3 s): press again to go on from there`);
    return;
  }
  if (r.idx === null) { toast(`no ${dir === "next" ? "later" : "earlier"} match`); return; }
  return goNow(r.idx);
}

// --- quick jump ----------------------------------------------------------------------------------

const QUICK = { forms: null };

async function quickForms() {
  if (!QUICK.forms) {
    const forms = await guard(api("forms"));
    QUICK.forms = (forms || []).filter((f) => f.display && !f.display.startsWith("<"));
    fill($("#fn-list"), QUICK.forms.map((f) => el("option", { value: f.display })));
  }
  return QUICK.forms;
}

// Jumps to the first call of the function named in the quick-jump box: in the current
// timeline if it ran there, else in the first timeline where it did.
async function quickJump(name) {
  const forms = await quickForms();
  const want = name.trim();
  const form = forms.find((f) => f.display === want) || forms.find((f) => f.display.endsWith("." + want) || f.name === want);
  if (!form) { toast(`quick jump: no recorded function is named "${want}"`); return; }
  const order = [S.tl, ...S.tls.map((_, i) => i).filter((i) => i !== S.tl)];
  for (const tl of order) {
    const r = await api("fn_calls", { tl, form: form.id, limit: 1 }).catch(() => null);
    if (r && r.items.length) {
      showTab("stepper");
      if (tl !== S.tl) toast(`${form.display} first ran on thread ${S.tls[tl].name}`);
      return goNow(r.items[0].idx, "at", tl);
    }
  }
  toast(`${form.display} was never called in this recording`);
}

// --- printers -----------------------------------------------------------------------------------

function printersKey() {
  return "squall.printers." + S.recKey;
}

function printers() {
  try { return JSON.parse(localStorage.getItem(printersKey()) || "[]"); } catch { return []; }
}

function savePrinters(all) {
  localStorage.setItem(printersKey(), JSON.stringify(all));
}

// A print point on a site of the current frame's form: every time it ran, `fmt` printed with
// `{v}` its value (and `{idx}` the entry).
function addPrinter(site) {
  const f = S.frame;
  const s = (f.sites || []).find((x) => x[0] === site);
  if (!s) return;
  const text = (S.sourceLines[s[1] - 1] || "");
  const snippet = s[1] === s[3] ? text.slice(byteToIndex(text, s[2]), byteToIndex(text, s[4])) : text.trim();
  const all = printers();
  if (all.some((p) => p.site === site)) { toast(`there is a printer on ${snippet} already (Printers tab)`); return; }
  all.push({ site, fn: f.frame.form.display, line: s[1], expr: snippet, fmt: `${snippet} = {v}`, on: true });
  savePrinters(all);
  toast(`printer added on ${snippet} (line ${s[1]}): see the Printers tab`);
  if ($("#tab-printers").classList.contains("active")) renderPrinters();
}

const PR = { offset: 0, limit: 200 };

function renderPrinterList() {
  const all = printers();
  const save = () => savePrinters(all);
  fill($("#printer-list"), all.length ? el("table", {},
    el("tr", {}, el("th", {}, "on"), el("th", {}, "where"), el("th", {}, "expression"), el("th", {}, "format ({v}: the value, {idx}: the entry)"), el("th", {})),
    all.map((p, i) => el("tr", { "data-site": p.site },
      el("td", {}, el("input", { type: "checkbox", class: "printer-on", ...(p.on ? { checked: "" } : {}), onchange: (ev) => { p.on = ev.target.checked; save(); } })),
      el("td", { class: "muted" }, `${p.fn}:${p.line}`),
      el("td", { class: "mono" }, p.expr),
      el("td", {}, el("input", { class: "printer-fmt", value: p.fmt, size: 36, onchange: (ev) => { p.fmt = ev.target.value; save(); } })),
      el("td", {}, el("button", { onclick: () => { all.splice(i, 1); save(); renderPrinters(); } }, "remove")))))
    : el("p", { class: "muted" }, "No printers yet: in the stepper, right-click (or Alt+click) an expression in the code to print it every time it ran."));
}

async function renderPrinters(offset = 0) {
  renderPrinterList();
  const on = printers().filter((p) => p.on);
  const out = $("#printer-out");
  if (!on.length) { out.replaceChildren(); $("#printer-status").textContent = ""; return; }
  const r = await guard(api("site_entries", { tl: S.tl, sites: on.map((p) => p.site).join(","), offset, limit: PR.limit }));
  if (!r) return;
  PR.offset = offset;
  const bySite = new Map(on.map((p) => [p.site, p]));
  $("#printer-status").textContent = r.total
    ? `${offset + 1}–${offset + r.items.length} of ${r.total} printed, thread ${S.tls[S.tl].name}`
    : "the printed expressions never ran in this timeline";
  $("#printer-prev").disabled = offset === 0;
  $("#printer-next").disabled = offset + r.items.length >= r.total;
  fill(out, r.items.map((it) => {
    const p = bySite.get(it.site);
    const text = p.fmt.replaceAll("{v}", it.value ? it.value.preview : "<deleted>").replaceAll("{idx}", String(it.idx));
    return el("div", { class: "printed click", title: `jump to #${it.idx} in the stepper`, "data-idx": it.idx,
      onclick: () => { showTab("stepper"); go(it.idx); } },
    el("span", { class: "muted" }, `#${it.idx} `), text);
  }));
}

// --- the inspector's history ----------------------------------------------------------------

// The object's recorded states and the writes between them ("where was this changed").
async function renderHistory(tl, id) {
  const box = $("#insp-history");
  if (!id) { box.replaceChildren(el("p", { class: "muted" }, "This value has no identity (a scalar, or a type squall does not follow): no history.")); return; }
  const t = S.tls[tl];
  const r = await guard(api("changes", { obj: id, flow: t ? t.flow : undefined, limit: 200 }));
  if (!r) return;
  const jump = (c) => () => { closeOverlays(); showTab("stepper"); go(c.idx, "at", c.tl); };
  const rows = r.changes.map((c) => c.kind === "state"
    ? el("tr", { class: "click state", onclick: jump(c), title: `jump to #${c.idx}` },
      el("td", { class: "muted" }, `#${c.idx}`), el("td", {}, "state"), el("td", { class: "args" }, c.value.preview))
    : el("tr", { class: "click write", onclick: jump(c), title: `jump to #${c.idx}: the write` },
      el("td", { class: "muted" }, `#${c.idx}`),
      el("td", {}, `${c.attr ? "." + c.name : "[" + c.name + "]"} changed`),
      el("td", { class: "args" },
        `${c.old ? (c.old.value ? c.old.value.preview : "<deleted>") : "?"} → ${c.new ? c.new.preview : "<deleted>"}`,
        el("span", { class: "muted" }, `  in ${c.where ? `${c.where.fn}:${c.where.line}` : "?"}`))));
  fill(box,
    el("h4", {}, `History: ${r.total} change${r.total === 1 ? "" : "s"} (states and writes)${r.left_out ? `, first ${r.changes.length} shown` : ""}`),
    rows.length ? el("table", {}, rows) : el("p", { class: "muted" }, "nothing recorded"));
}

// --- wiring -------------------------------------------------------------------------------------

function initTools() {
  initCode();
  for (const b of document.querySelectorAll("#stepbar [data-power]")) {
    b.addEventListener("click", () => queueNav(() => powerStep(b.dataset.power, b.dataset.dir)));
  }
  $("#power-text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); ev.target.blur(); queueNav(() => powerStep("custom", ev.shiftKey ? "prev" : "next")); }
  });
  $("#quick-fn").addEventListener("focus", quickForms);
  $("#quick-fn").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); const v = ev.target.value; ev.target.blur(); queueNav(() => quickJump(v)); }
  });
  $("#printer-run").addEventListener("click", () => renderPrinters(0));
  $("#printer-prev").addEventListener("click", () => renderPrinters(Math.max(0, PR.offset - PR.limit)));
  $("#printer-next").addEventListener("click", () => renderPrinters(PR.offset + PR.limit));
}
