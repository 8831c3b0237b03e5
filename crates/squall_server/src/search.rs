//! Interruptible searches with progress: started by `POST /api/search`, polled by
//! `GET /api/search/{id}`, cancelled by `DELETE /api/search/{id}`. A search walks the timeline in
//! batches, taking the source's view once per batch (a live program runs between batches).
//! What matches is the core's (`squall_trace::search`); this file runs it in batches and
//! reports progress. Every timeline is searched (or the one `tl` names), timeline by timeline;
//! each match names its timeline and thread, and `capped` says the search stopped at `limit`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{json, Value};
use squall_trace::search::{SearchKind, SeenValues, TextSearch};
use squall_trace::{display_name, ValRef};

use crate::source::{with_view, RecordingSource, View};
use crate::values::val_node;

const BATCH: usize = 250_000;

#[derive(Deserialize, Debug)]
pub struct SearchReq {
    /// One timeline; absent: every timeline.
    #[serde(default)]
    pub tl: Option<usize>,
    /// `fn` (function name contains text) or `value` (a value's printed text contains text).
    pub kind: String,
    pub text: String,
    /// Where to start in timeline `tl` (the other timelines are searched whole).
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
    /// It stopped at its `limit`: more entries were left unsearched.
    pub capped: bool,
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
            "matches": p.matches, "capped": p.capped, "error": p.error,
        })
    }
}

/// Checks a request before a search starts (so a bad one is a 400, not a failed task).
pub fn validate(view: &dyn View, r: &SearchReq) -> Result<(), String> {
    let n = view.timelines().len();
    if let Some(tl) = r.tl.filter(|&tl| tl >= n) {
        return Err(format!("no timeline {tl}: this recording has {n} (see /api/flows)"));
    }
    if r.text.is_empty() {
        return Err("empty search text: say what to look for".into());
    }
    if SearchKind::parse(&r.kind).is_none() {
        return Err(format!("search kind must be `fn` or `value`, not `{}`", r.kind));
    }
    Ok(())
}

fn hit(view: &dyn View, tl: usize, idx: u32) -> Value {
    let info = &view.timelines()[tl];
    let t = info.timeline;
    let Some(&e) = t.get(idx as usize) else {
        return json!({"tl": tl, "idx": idx, "evicted": true});
    };
    let (form, value) = if e.kind().is_call() {
        (e.id(), Value::Null)
    } else {
        let form = t.get(e.fn_call_idx() as usize).map_or(0, |c| c.id());
        let v = if e.value() == ValRef::ABSENT { Value::Null } else { val_node(view, tl, e.value(), 100) };
        (form, v)
    };
    json!({
        "tl": tl, "thread_id": info.thread_id, "thread": info.name,
        "idx": idx, "type": e.kind().type_name(), "fn": display_name(view.forms(), form), "value": value,
    })
}

/// Runs a search to its end (or its cancellation), updating `s`.
pub fn run(src: &dyn RecordingSource, r: &SearchReq, s: &Search) {
    let limit = r.limit.clamp(1, 10_000);
    let set = |f: &mut dyn FnMut(&mut Progress)| f(&mut s.progress.lock().unwrap_or_else(|e| e.into_inner()));
    let kind = SearchKind::parse(&r.kind).unwrap_or(SearchKind::Fn);
    let (matcher, lens) = with_view(src, |v| {
        let lens: Vec<usize> = v.timelines().iter().map(|t| t.timeline.len()).collect();
        (TextSearch::new(v.forms(), kind, &r.text), lens)
    });
    let order: Vec<usize> = match r.tl {
        Some(tl) => vec![tl],
        None => (0..lens.len()).collect(),
    };
    set(&mut |p| p.total = order.iter().map(|&tl| lens[tl] as u64).sum());
    let mut found = 0usize;
    let mut scanned = 0u64;
    for &tl in &order {
        let len = lens[tl];
        let mut seen = SeenValues::default();
        let start = if r.tl == Some(tl) { (r.from_idx as usize).min(len) } else { 0 };
        scanned += start as u64;
        let mut i = start;
        while i < len {
            if s.cancel.load(Ordering::Relaxed) {
                set(&mut |p| {
                    p.cancelled = true;
                    p.done = true;
                });
                return;
            }
            if found >= limit {
                set(&mut |p| p.capped = true);
                break;
            }
            let end = (i + BATCH).min(len);
            let (hits, stopped) = with_view(src, |v| {
                let t = v.timelines()[tl].timeline;
                let (idxs, stopped) =
                    matcher.search_range(v.forms(), t, v.values(tl), &mut seen, i, end, limit - found);
                (idxs.into_iter().map(|k| hit(v, tl, k)).collect::<Vec<_>>(), stopped)
            });
            found += hits.len();
            scanned += (stopped - i) as u64;
            i = stopped;
            set(&mut |p| {
                p.matches.extend(hits.iter().cloned());
                p.scanned = scanned;
            });
        }
        if found >= limit && (i < len || order.last() != Some(&tl)) {
            set(&mut |p| p.capped = true);
            break;
        }
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
