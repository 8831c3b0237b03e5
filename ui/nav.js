// Navigation: key presses queued (none dropped), the browser's Back/Forward and the stepper's
// undo/redo over the places the stepper has been. Loaded before app.js; uses its globals at
// call time only.
"use strict";

// Steps run one after another, each from where the previous one landed: a burst of key presses
// moves as many steps as there were presses. Only the last of a burst renders the stepper.
const NAV = { chain: Promise.resolve(), pending: 0 };

function queueNav(fn) {
  NAV.pending++;
  NAV.chain = NAV.chain.then(async () => {
    // A failed step must not stop the ones queued after it.
    try { await fn(NAV.pending > 1); } catch (e) { toast(String(e.message || e)); } finally { NAV.pending--; }
  });
  return NAV.chain;
}

function stepDrift(drift) {
  return queueNav((more) => goNow(S.idx, drift, S.tl, { render: !more }));
}

// History: the places the stepper landed on, in order; `pos` is the current one. Each is also a
// browser history entry (state `{n}`), so Back/Forward and undo/redo walk the same list.
const HIST = { places: [], pos: -1 };

function samePlace(a, b) {
  return a && b && a.tl === b.tl && a.idx === b.idx;
}

function placeHash(p) {
  const t = S.tls[p.tl];
  return t ? `#flow=${t.flow}&thread=${t.thread_id}&idx=${p.idx}` : "";
}

// Records the stepper's new place. `mode`: "push" (a new history entry), "replace" (the
// current entry moved: the first load, a live reload), "adopt" (the browser made an entry
// without our state, from a URL typed or pasted: it becomes the next place).
function recordPlace(mode) {
  const p = { tl: S.tl, idx: S.idx };
  const url = location.pathname + location.search + placeHash(p);
  if (mode === "push" && HIST.pos >= 0 && samePlace(HIST.places[HIST.pos], p)) mode = "replace";
  if (mode === "replace" || HIST.pos < 0) {
    HIST.pos = Math.max(HIST.pos, 0);
    HIST.places[HIST.pos] = p;
    HIST.places.length = HIST.pos + 1;
    history.replaceState({ n: HIST.pos }, "", url);
  } else {
    HIST.pos++;
    HIST.places.length = HIST.pos;
    HIST.places.push(p);
    if (mode === "adopt") history.replaceState({ n: HIST.pos }, "", url);
    else history.pushState({ n: HIST.pos }, "", url);
  }
  updateUndoButtons();
}

function updateUndoButtons() {
  const u = document.querySelector("#undo-btn");
  const r = document.querySelector("#redo-btn");
  if (u) u.disabled = HIST.pos <= 0;
  if (r) r.disabled = HIST.pos >= HIST.places.length - 1;
}

function undoNav() {
  if (HIST.pos > 0) history.back();
}

function redoNav() {
  if (HIST.pos < HIST.places.length - 1) history.forward();
}

// Back/Forward (and undo/redo, which use them): go to that entry's place without a new entry.
function onPopState(ev) {
  const n = ev.state && ev.state.n;
  const place = Number.isInteger(n) ? HIST.places[n] : null;
  if (place) {
    HIST.pos = n;
    updateUndoButtons();
    if (!document.querySelector("#tab-stepper").classList.contains("active")) showTab("stepper");
    queueNav(() => goNow(place.idx, "at", place.tl, { history: "none" }));
    return;
  }
  // An entry from before a reload, or a URL typed or pasted: its hash says where.
  const h = parseHash();
  const tl = tlFor(h.flow, h.thread);
  if (tl === null || h.idx === null) return;
  queueNav(() => goNow(+h.idx, "at", tl, { history: "adopt" }));
}
