//! Bindings of the writes query (`squall_trace::writes`) and of write entries' fields: the live
//! recording and a recording file answer through the same functions.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use squall_trace::{display_name, writes_merged, Decoded, OldValue, Snap, Timeline, ValueStore, WriteFilter};

use crate::bindings::query::{rec_of, value_ref, Backend, TlView};
use crate::bindings::snap::to_python;

/// Characters of a write's key as printed for `name_text`.
const NAME_TEXT_MAX: usize = 240;

/// The most writes one answer lists unless asked for more: answers stay small, and say what
/// they left out.
pub const DEFAULT_LIMIT: usize = 200;

/// The idx of the first entry whose value `store` lacks (a file cut short before it saved the
/// value): before it, an object with no recorded state was not recorded; from it on, it may have
/// been, in what the file lost.
fn first_unsaved(tl: &Timeline, store: &ValueStore) -> Option<u32> {
    tl.entries()
        .iter()
        .position(|e| {
            let v = if e.kind().is_call() { None } else { e.value_ref() };
            v.is_some_and(|v| matches!(v.decode(), Decoded::Slot(_)) && store.entry_ref(v).0 as usize >= store.len())
        })
        .map(|i| (i + tl.first_idx()) as u32)
}

/// The name or key a query asks about, as a recorded key compares: a str or an int.
fn wanted_name(name: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Snap>> {
    let Some(n) = name else { return Ok(None) };
    if let Ok(s) = n.extract::<String>() {
        return Ok(Some(Snap::Str(s)));
    }
    if let Ok(i) = n.extract::<i64>() {
        return Ok(Some(Snap::Int(i)));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "writes(): attr_or_key must be an attribute name (str) or an int key, not {}; \
         for other keys, list the object's writes (attr_or_key=None) and filter them",
        n.repr()?
    )))
}

/// `writes(flow_id, thread_id=None, obj_id=None, attr_or_key=None, type_name=None, limit=200)`:
/// `{"writes": [...], "total": n, "left_out": n - shown}`, in the order they happened across the
/// flow's threads (only `thread_id`'s if given); a write's old value may be another thread's
/// write (`old_thread_id`), whichever threads are listed.
#[allow(clippy::too_many_arguments)]
pub fn writes<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    flow_id: u32,
    thread_id: Option<u64>,
    obj_id: Option<u64>,
    attr_or_key: Option<&Bound<'py, PyAny>>,
    type_name: Option<&str>,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let name = wanted_name(attr_or_key)?;
    let filter = WriteFilter { obj: obj_id, name: name.as_ref(), type_name };
    if let Some(t) = thread_id {
        rec_of(b, flow_id, t)?; // an unknown thread is an error, not an empty answer
    }
    // Every thread of the flow, even when one is asked for: a write's old value may be another
    // thread's write.
    let views: Vec<TlView<'_>> = b.flows().into_iter().find(|(f, _)| *f == flow_id).map(|(_, v)| v).unwrap_or_default();
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    let forms = b.forms();
    let list = pyo3::types::PyList::empty(py);
    // Only views with a store: a write's values live in its own timeline's store.
    let views: Vec<(&TlView<'_>, &ValueStore)> =
        views.iter().filter_map(|v| b.store_of(v.number).map(|s| (v, s))).collect();
    let unsaved: Vec<Option<u32>> = views.iter().map(|(v, s)| first_unsaved(v.tl, s)).collect();
    let tls: Vec<(&Timeline, &ValueStore)> = views.iter().map(|(v, s)| (v.tl, *s)).collect();
    let mut merged = writes_merged(&tls, forms, &filter);
    if let Some(t) = thread_id {
        merged.retain(|m| views[m.timeline].0.thread_id == t);
    }
    let total = merged.len();
    for m in merged.into_iter().take(limit) {
        let (v, w) = (views[m.timeline].0, m.write);
        let old_view = views[m.old_timeline].0;
        let d = PyDict::new(py);
        let site = forms.site(w.site);
        d.set_item("idx", w.idx)?;
        d.set_item("thread_id", v.thread_id)?;
        d.set_item("obj_id", w.obj)?;
        d.set_item("name", to_python(py, &w.name)?)?;
        // The key as the core's printer shows it (the agents' answers print it, not the object).
        d.set_item("name_text", squall_trace::printer::preview(&w.name, NAME_TEXT_MAX))?;
        d.set_item("kind", if w.is_attr { "attr" } else { "item" })?;
        d.set_item("fn", site.map(|s| display_name(forms, s.form)))?;
        d.set_item("file", site.and_then(|s| forms.form(s.form)).map(|f| f.file.to_string()))?;
        d.set_item("line", site.map(|s| s.coord.line))?;
        d.set_item(
            "coord",
            site.map(|s| PyTuple::new(py, [s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col]))
                .transpose()?,
        )?;
        d.set_item("deleted", w.new.is_none())?;
        d.set_item("new_ref", w.new.and_then(|n| value_ref(v, n)))?;
        d.set_item("old_thread_id", py.None())?;
        match w.old {
            OldValue::PreviousWrite { idx, value } => {
                d.set_item("old_from", "previous write")?;
                d.set_item("old_idx", idx)?;
                d.set_item("old_thread_id", old_view.thread_id)?;
                d.set_item("old_ref", value.and_then(|n| value_ref(old_view, n)))?;
            }
            OldValue::RecordedState { value } => {
                d.set_item("old_from", "recorded state")?;
                d.set_item("old_idx", py.None())?;
                d.set_item("old_ref", value_ref(v, value))?;
            }
            OldValue::Unknown => {
                let why = if unsaved[m.timeline].is_some_and(|i| i < w.idx) {
                    "unknown (not saved: the recording was cut short)"
                } else {
                    "unknown (not recorded before)"
                };
                d.set_item("old_from", why)?;
                d.set_item("old_idx", py.None())?;
                d.set_item("old_ref", py.None())?;
            }
        }
        list.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("shown", list.len())?;
    out.set_item("total", total)?;
    out.set_item("left_out", total - list.len())?;
    out.set_item("writes", list)?;
    Ok(out)
}
