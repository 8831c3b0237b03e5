//! The core's cross-thread and stepping queries (`squall_trace::{exceptions, bookmarks, locate,
//! stepping}`) as Python dicts, over any backend: the same answers the UI server gives.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use squall_trace::exceptions::{exception_text, exceptions as core_exceptions};
use squall_trace::search::{SearchKind, SeenValues, TextSearch};
use squall_trace::stepping::{iterations, step_like, Like};
use squall_trace::{display_name, ThreadRef, ValRef};

use crate::bindings::query::{rec_of, trace_err, value_ref, Backend, TlView};

/// The timelines of flow `flow_id` (every flow for `None`), one thread's for `thread_id`, as the
/// core's queries read them, with their views.
fn threads<B: Backend + ?Sized>(
    b: &B,
    flow_id: Option<u32>,
    thread_id: Option<u64>,
) -> (Vec<TlView<'_>>, Vec<ThreadRef<'_>>) {
    let mut views = Vec::new();
    for (f, vs) in b.flows() {
        if flow_id.is_some_and(|w| w != f) {
            continue;
        }
        views.extend(vs.into_iter().filter(|v| thread_id.is_none_or(|t| t == v.thread_id)).map(|v| (f, v)));
    }
    let refs = views
        .iter()
        .map(|(f, v)| ThreadRef { flow: *f, thread_id: v.thread_id, timeline: v.tl, values: b.store(v) })
        .collect();
    (views.into_iter().map(|(_, v)| v).collect(), refs)
}

/// Every exception that left a recorded frame, once each (see `squall.indexes.Queries.exceptions`).
pub fn exceptions<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    flow_id: Option<u32>,
    thread_id: Option<u64>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let (views, refs) = threads(b, flow_id, thread_id);
    let forms = b.forms();
    core_exceptions(&refs)
        .into_iter()
        .map(|x| {
            let view = &views[x.thread];
            let inner = x.chain[0];
            let form = forms.form(inner.form);
            // Kept when its value left memory (`Carried::keep_texts`), else read from it.
            let text = x.text.as_deref().cloned().unwrap_or_else(|| {
                exception_text(refs[x.thread].values, x.value, squall_trace::exceptions::MESSAGE_MAX)
            });
            let d = PyDict::new(py);
            d.set_item("flow_id", refs[x.thread].flow)?;
            d.set_item("thread_id", view.thread_id)?;
            d.set_item("idx", inner.unwind_idx)?;
            d.set_item("fn_ns", form.map(|f| &*f.ns))?;
            d.set_item("fn_name", form.map(|f| &*f.name))?;
            d.set_item("text", text.line())?;
            d.set_item("exc_type", text.type_name)?;
            d.set_item("message", text.message)?;
            d.set_item(
                "obj_id",
                if x.obj != 0 { x.obj } else { refs[x.thread].values.map_or(0, |s| s.obj_of(x.value)) },
            )?;
            d.set_item("throwable_ref", value_ref(view, x.value))?;
            d.set_item("fn_call_idx", inner.call_idx)?;
            d.set_item("raised_idx", x.raised_idx())?;
            d.set_item("frames", x.chain.len())?;
            d.set_item("chain", x.chain.iter().map(|u| (u.call_idx, u.unwind_idx)).collect::<Vec<_>>())?;
            d.set_item("caught", x.caught_in.is_some())?;
            d.set_item("caught_in", x.caught_in_form.map(|f| display_name(forms, f)))?;
            d.set_item("caught_in_idx", x.caught_in)?;
            Ok(d)
        })
        .collect()
}

/// The line Python's traceback ends with for the exception value ref `r` names (`Type: message`,
/// `squall_trace::exceptions::exception_text`); `None`: no exception was recorded there.
pub fn exception_line<B: Backend + ?Sized>(b: &B, r: u64) -> PyResult<Option<String>> {
    let (view, local) = crate::bindings::printed::timeline_of_ref(b, r)?;
    if r & crate::bindings::query::ARGS_BIT != 0 {
        return Err(PyValueError::new_err(format!(
            "value ref {r} names a call's arguments or a write's target, not an exception: pass an fn-unwind's throwable_ref"
        )));
    }
    Ok(exception_text(b.store(&view), ValRef(local), squall_trace::exceptions::MESSAGE_MAX).line())
}

/// The frames the exception at fn-unwind `idx` left from there outward, innermost first, as
/// `(call_idx, unwind_idx, last_event_idx)` (`squall_trace::exceptions::unwind_chain`; the last:
/// the frame's last expression, binding or write before it unwound, where it raised or just
/// before, `None` if it recorded none).
pub fn unwind_chain<B: Backend + ?Sized>(
    b: &B,
    flow_id: u32,
    thread_id: u64,
    idx: u64,
) -> PyResult<Vec<(u32, u32, Option<u32>)>> {
    let rec = rec_of(b, flow_id, thread_id)?;
    let chain = u32::try_from(idx).ok().and_then(|i| squall_trace::exceptions::unwind_chain(b.store(&rec), rec.tl, i));
    let chain = chain.ok_or_else(|| {
        PyValueError::new_err(format!(
            "entry {idx} of thread {thread_id} is not an fn-unwind: pass the idx of one (see `exceptions`)"
        ))
    })?;
    Ok(chain.iter().map(|u| (u.call_idx, u.unwind_idx, u.last_event_idx)).collect())
}

/// Every bookmark placed from code: `flow_id`, `thread_id`, `idx`, `note_ref`.
pub fn bookmarks<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    flow_id: Option<u32>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let (views, refs) = threads(b, flow_id, None);
    squall_trace::bookmarks::bookmarks(b.forms(), &refs)
        .into_iter()
        .map(|m| {
            let d = PyDict::new(py);
            d.set_item("flow_id", refs[m.thread].flow)?;
            d.set_item("thread_id", views[m.thread].thread_id)?;
            d.set_item("idx", m.idx)?;
            d.set_item("note_ref", value_ref(&views[m.thread], m.note))?;
            Ok(d)
        })
        .collect()
}

/// Where `file:line` ran in each thread of flow `flow_id` (or one thread): `thread_id`, `idx`
/// (the first entry there from `from_idx` in that thread, or back from it), `count`.
#[allow(clippy::too_many_arguments)]
pub fn line_hits<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    flow_id: u32,
    thread_id: Option<u64>,
    file: &str,
    line: u32,
    from_idx: Option<u64>,
    backward: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let forms = b.forms();
    let Some(m) = squall_trace::locate::LineMatcher::new(forms, file, line) else { return Ok(Vec::new()) };
    let (views, _) = threads(b, Some(flow_id), thread_id);
    let mut out = Vec::new();
    for v in &views {
        if let Some(idx) = m.find(forms, v.tl, from_idx, backward) {
            let d = PyDict::new(py);
            d.set_item("thread_id", v.thread_id)?;
            d.set_item("idx", idx)?;
            d.set_item("count", m.count(forms, v.tl))?;
            out.push(d);
        }
    }
    Ok(out)
}

/// Power stepping: the next (or previous) entry like the one at `idx` (`how`: coord, fn,
/// identity, equality); `None` when there is none.
pub fn power_step<B: Backend + ?Sized>(
    b: &B,
    flow_id: u32,
    thread_id: u64,
    idx: u64,
    how: &str,
    backward: bool,
) -> PyResult<Option<u32>> {
    let like = Like::parse(how)
        .ok_or_else(|| PyValueError::new_err(format!("how must be coord, fn, identity or equality, not {how:?}")))?;
    let rec = rec_of(b, flow_id, thread_id)?;
    let store = b.store(&rec);
    if let Some(s) = store {
        squall_trace::sync_writes(rec.tl, b.forms(), s);
    }
    step_like(rec.tl, store, idx, like, backward).map_err(trace_err)
}

/// The iterations of the expression, binding or write at `idx` in its frame: `(idxs, pos)`.
pub fn loop_iterations<B: Backend + ?Sized>(
    b: &B,
    flow_id: u32,
    thread_id: u64,
    idx: u64,
) -> PyResult<(Vec<u32>, usize)> {
    let rec = rec_of(b, flow_id, thread_id)?;
    let it = iterations(rec.tl, idx).map_err(trace_err)?;
    Ok((it.idxs, it.pos))
}

/// The core's text search (`squall_trace::search`, the UI's) over entries `from_idx..to_idx` of
/// one thread: `{"hits": [(idx, text)], "next_idx"}`, at most `limit` hits, `text` being what the
/// hit was found in (`TextSearch::hit_text`), `next_idx` where to go on from. A caller searches a
/// long timeline in such ranges and decides between them whether to stop (a time budget, Ctrl-C).
#[allow(clippy::too_many_arguments)]
pub fn search<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    flow_id: u32,
    thread_id: u64,
    text: &str,
    kind: &str,
    from_idx: usize,
    to_idx: Option<usize>,
    limit: usize,
    ignore_case: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = SearchKind::parse(kind)
        .ok_or_else(|| PyValueError::new_err(format!("search kind must be \"fn\" or \"value\", not {kind:?}")))?;
    if text.is_empty() {
        return Err(PyValueError::new_err("empty search text: it would match every entry; say what to look for"));
    }
    let rec = rec_of(b, flow_id, thread_id)?;
    let store = b.store(&rec);
    let matcher = TextSearch::with_case(b.forms(), kind, text, ignore_case);
    let to = to_idx.unwrap_or(usize::MAX);
    let (idxs, next) = matcher.search_range(b.forms(), rec.tl, store, &mut SeenValues::default(), from_idx, to, limit);
    let hits: Vec<(u32, String)> =
        idxs.into_iter().map(|i| (i, matcher.hit_text(b.forms(), rec.tl, store, i as usize))).collect();
    let d = PyDict::new(py);
    d.set_item("hits", hits)?;
    d.set_item("next_idx", next)?;
    Ok(d)
}
