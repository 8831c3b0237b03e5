// Outputs tab: what the program wrote to stdout and stderr (GET /api/outputs), in order. Each chunk
// names the thread and the idx of that thread's last entry when it was written; clicking a chunk
// opens that entry in the stepper. Uses app.js's globals ($, el, api, guard, showTab, go, S).
"use strict";

const OUT = { offset: 0, page: 500 };

(function outputsStyle() {
  const css = `
#outputs-list { font-family: var(--mono); font-size: 12.5px; }
.out-chunk { display: flex; gap: 8px; border-bottom: 1px solid var(--border); padding: 2px 0; cursor: pointer; }
.out-chunk:hover { background: var(--bg2); }
.out-chunk.no-entry { cursor: default; }
.out-where { flex: none; width: 19em; color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.out-text { margin: 0; white-space: pre-wrap; word-break: break-all; font: inherit; flex: 1; }
.out-chunk.stderr .out-text { color: var(--err); }
.out-cut { color: var(--muted); font-style: italic; }`;
  document.head.append(el("style", {}, css));
})();

async function renderOutputs(offset = 0) {
  OUT.offset = offset;
  const params = { offset, limit: OUT.page };
  const stream = $("#out-stream").value;
  if (stream) params.stream = stream;
  const text = $("#out-filter").value;
  if (text) params.contains = text;
  if ($("#out-this-tl").checked) params.tl = S.tl;
  const r = await guard(api("outputs", params));
  if (!r) return;
  const end = offset + r.items.length;
  $("#out-status").textContent = r.total
    ? `${r.total} chunk(s)${r.total > r.items.length ? `, ${offset + 1}–${end} shown` : ""}`
      + (r.not_kept.chunks ? ` · ${r.not_kept.chunks} more (${r.not_kept.chars} characters) past the first 16 MiB were not kept` : "")
    : "";
  $("#out-prev").disabled = offset === 0;
  $("#out-next").disabled = end >= r.total;
  if (!r.items.length) {
    fill($("#outputs-list"), el("p", { class: "muted" },
      params.stream || params.contains || params.tl !== undefined ? "No output matches." : "The program wrote nothing to stdout or stderr while it was recorded."));
    return;
  }
  fill($("#outputs-list"), r.items.map(outputChunkEl));
}

function outputChunkEl(c) {
  const who = `${c.thread_name ?? "thread"} (${c.thread_id})`;
  const at = c.idx === null ? "no entry yet" : `idx ${c.idx}`;
  const row = el("div", {
    class: `out-chunk ${c.stream}${c.idx === null ? " no-entry" : ""}`,
    "data-n": c.n,
    title: c.idx === null ? "written before this thread recorded anything" : "open the entry that was last recorded before this write",
  },
  el("span", { class: "out-where" }, `${c.stream} · ${at} · ${who}`),
  el("pre", { class: "out-text" }, c.text, c.cut ? el("span", { class: "out-cut" }, ` … (${c.chars} characters written)`) : null));
  if (c.idx !== null && c.tl !== null) row.addEventListener("click", () => { showTab("stepper"); go(c.idx, "at", c.tl); });
  return row;
}

(function outputsInit() {
  const tab = $("#tab-outputs");
  if (!tab) return;
  fill(tab,
    el("div", { class: "toolbar" },
      el("label", {}, "stream ", el("select", { id: "out-stream" },
        el("option", { value: "" }, "both"), el("option", { value: "stdout" }, "stdout"), el("option", { value: "stderr" }, "stderr"))),
      el("input", { id: "out-filter", placeholder: "filter text" }),
      el("label", { title: "only what the stepper's thread wrote" }, el("input", { type: "checkbox", id: "out-this-tl" }), " this thread"),
      el("button", { id: "out-prev", title: "previous page" }, "◀"),
      el("button", { id: "out-next", title: "next page" }, "▶"),
      el("span", { id: "out-status", class: "muted" })),
    el("div", { id: "outputs-list" }));
  $("#out-stream").addEventListener("change", () => renderOutputs(0));
  $("#out-this-tl").addEventListener("change", () => renderOutputs(0));
  $("#out-filter").addEventListener("input", () => { clearTimeout(OUT.timer); OUT.timer = setTimeout(() => renderOutputs(0), 250); });
  $("#out-prev").addEventListener("click", () => renderOutputs(Math.max(0, OUT.offset - OUT.page)));
  $("#out-next").addEventListener("click", () => renderOutputs(OUT.offset + OUT.page));
  const button = document.querySelector('#tabs button[data-tab="outputs"]');
  if (button) button.addEventListener("click", () => renderOutputs(0));
})();
