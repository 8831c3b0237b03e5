//! Interruptible searches with progress: started by `POST /api/search`, polled by
//! `GET /api/search/{id}`, cancelled by `DELETE /api/search/{id}`. A search walks the timeline in
//! batches, taking the source's view once per batch (a live program runs between batches).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{json, Value};
use squall_trace::{display_name, Decoded, Kind, ValRef};

use crate::source::{with_view, RecordingSource, View};
use crate::values::val_node;

const BATCH: usize = 250_000;

#[derive(Deserialize, Debug)]
pub struct SearchReq {
    pub tl: usize,
    /// `fn` (function name contains text) or `value` (a value's printed text contains text).
    pub kind: String,
    pub text: String,
    #[serde(default)]
    pub from_idx: u64,
    #[serde(default = "default_limit")]
    pub limit: usize,
}

fn default_limit() -> usize {
    100
}

#[derive(Default)]
pub struct Progress {
    pub done: bool,
    pub cancelled: bool,
    pub scanned: u64,
    pub total: u64,
    pub matches: Vec<Value>,
    pub error: Option<String>,
}

#[derive(Default)]
pub struct Search {
    pub cancel: AtomicBool,
    pub progress: Mutex<Progress>,
}

impl Search {
    pub fn json(&self, id: u64) -> Value {
        let p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        json!({
            "id": id, "done": p.done, "cancelled": p.cancelled, "scanned": p.scanned, "total": p.total,
            "matches": p.matches, "error": p.error,
        })
    }
}

/// Checks a request before a search starts (so a bad one is a 400, not a failed task).
pub fn validate(view: &dyn View, r: &SearchReq) -> Result<(), String> {
    if r.tl >= view.timelines().len() {
        return Err(format!("no timeline {}", r.tl));
    }
    if r.text.is_empty() {
        return Err("empty search text".into());
    }
    if r.kind != "fn" && r.kind != "value" {
        return Err(format!("search kind must be `fn` or `value`, not `{}`", r.kind));
    }
    Ok(())
}

fn hit(view: &dyn View, tl: usize, idx: u32) -> Value {
    let t = view.timelines()[tl].timeline;
    let Some(&e) = t.get(idx as usize) else {
        return serde_json::json!({"tl": tl, "idx": idx, "evicted": true});
    };
    let (form, value) = if e.kind().is_call() {
        (e.id(), Value::Null)
    } else {
        let form = t.get(e.fn_call_idx() as usize).map_or(0, |c| c.id());
        (form, val_node(view, tl, e.value(), 100))
    };
    json!({"idx": idx, "type": e.kind().type_name(), "fn": display_name(view.forms(), form), "value": value})
}

/// Runs a search to its end (or its cancellation), updating `s`.
pub fn run(src: &dyn RecordingSource, r: &SearchReq, s: &Search) {
    let needle = r.text.to_lowercase();
    let limit = r.limit.clamp(1, 10_000);
    let set = |f: &mut dyn FnMut(&mut Progress)| f(&mut s.progress.lock().unwrap_or_else(|e| e.into_inner()));
    // Which forms (fn search) or value slots (value search) match.
    let (len, forms_ok, slots_ok) = with_view(src, |v| {
        let len = v.timelines()[r.tl].timeline.len();
        let forms = v.forms();
        let forms_ok: Vec<bool> =
            (0..forms.forms().len() as u32).map(|i| display_name(forms, i).to_lowercase().contains(&needle)).collect();
        (len, forms_ok, v.slot_count(r.tl))
    });
    let mut slot_match: Vec<bool> = Vec::new();
    if r.kind == "value" {
        set(&mut |p| p.total = (slots_ok + len) as u64);
        let mut i = 0;
        while i < slots_ok {
            if s.cancel.load(Ordering::Relaxed) {
                set(&mut |p| {
                    p.cancelled = true;
                    p.done = true;
                });
                return;
            }
            let end = (i + BATCH / 10).min(slots_ok);
            with_view(src, |v| {
                for k in i..end {
                    let ok = v
                        .snap(r.tl, ValRef(k as u32))
                        .is_ok_and(|snap| squall_store::preview(&snap, 1000).to_lowercase().contains(&needle));
                    slot_match.push(ok);
                }
            });
            i = end;
            set(&mut |p| p.scanned = i as u64);
        }
    } else {
        set(&mut |p| p.total = len as u64);
    }
    let value_ok = |v: ValRef| match v.decode() {
        Decoded::Slot(k) => slot_match.get(k as usize).copied().unwrap_or(false),
        Decoded::Int(i) => i.to_string().contains(&needle),
        Decoded::None => "none".contains(&needle),
        Decoded::Bool(b) => (if b { "true" } else { "false" }).contains(&needle),
        Decoded::Absent => false,
    };
    let base = if r.kind == "value" { slots_ok as u64 } else { 0 };
    let mut i = (r.from_idx as usize).min(len);
    let mut found = 0usize;
    while i < len && found < limit {
        if s.cancel.load(Ordering::Relaxed) {
            set(&mut |p| {
                p.cancelled = true;
                p.done = true;
            });
            return;
        }
        let end = (i + BATCH).min(len);
        let hits: Vec<Value> = with_view(src, |v| {
            let t = v.timelines()[r.tl].timeline;
            let forms = v.forms();
            let mut out = Vec::new();
            for k in i..end {
                if found + out.len() >= limit {
                    break;
                }
                let Some(&e) = t.get(k) else { continue };
                let ok = match (r.kind.as_str(), e.kind()) {
                    ("fn", Kind::Call) => forms_ok.get(e.id() as usize).copied().unwrap_or(false),
                    ("fn", _) => false,
                    (_, Kind::Call | Kind::Resume) => {
                        let n =
                            if e.kind() == Kind::Resume { 1 } else { forms.form(e.id()).map_or(0, |f| f.params.len()) };
                        t.call_args(k, n).into_iter().any(value_ok)
                    }
                    _ => value_ok(e.value()),
                };
                if ok {
                    out.push(hit(v, r.tl, k as u32));
                }
            }
            out
        });
        found += hits.len();
        i = end;
        set(&mut |p| {
            p.matches.extend(hits.iter().cloned());
            p.scanned = base + i as u64;
        });
    }
    set(&mut |p| p.done = true);
}

pub fn spawn(src: Arc<dyn RecordingSource>, r: SearchReq, s: Arc<Search>) {
    std::thread::spawn(move || {
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&*src, &r, &s)));
        if res.is_err() {
            let mut p = s.progress.lock().unwrap_or_else(|e| e.into_inner());
            p.error = Some("the search failed".into());
            p.done = true;
        }
    });
}
