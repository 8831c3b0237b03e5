//! Bindings of the agent queries of the core, `origin` (`squall_trace::origin`) and `diff`
//! (`squall_trace::diff`), written once over any [`Backend`]. Each is one module function
//! taking the recording it asks (`recording=`: a `Recording`, live or a file; none: the live recording), so
//! `lib.rs` registers them with one line (`register`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use squall_trace::diff::{diff_calls, diff_timelines, CallDiff, Divergence, Side};
use squall_trace::origin::{origin as core_origin, Leaf, Part, Source, Step, Via};
use squall_trace::printer::{preview, preview_ref};
use squall_trace::{display_name, Forms, Kind, ValRef, Value};

use crate::bindings::file::PyRecording;
use crate::bindings::query::{rec_of, trace_err, Backend, TlView};

/// Characters of a value preview in these answers (they are for agents: kept small).
const PREVIEW: usize = 160;

fn backend<'a>(rec: &'a Option<PyRef<'_, PyRecording>>) -> &'a dyn Backend {
    match rec {
        Some(r) => r.b(),
        // SAFETY: queries run with the GIL held (pyfunction) and call no Python code while
        // holding the engine.
        None => unsafe { &*crate::recorder::engine::ENGINE.get() },
    }
}

fn flow_views(b: &dyn Backend, flow_id: u32) -> PyResult<Vec<TlView<'_>>> {
    b.flows().into_iter().find(|(f, _)| *f == flow_id).map(|(_, v)| v).ok_or_else(|| {
        let known: Vec<u32> = b.flows().iter().map(|(f, _)| *f).collect();
        PyValueError::new_err(format!("flow {flow_id} was not recorded; the flows are {known:?}"))
    })
}

fn leaf_text(leaf: Leaf) -> &'static str {
    match leaf {
        Leaf::Literal => "computed from literals only",
        Leaf::Unbound => "reads only names with no recorded binding (globals, closures, builtins or unrecorded code)",
        Leaf::NoReads => "this recording does not say what this site reads (recorded by an older squall)",
        Leaf::ImplicitNone => "the function ended without returning a value: its result is None",
        Leaf::UnrecordedCaller => "passed by code that was not recorded",
        Leaf::NoMatchInCaller => {
            "the caller passed it straight from an expression not recorded on its own (a literal, a display, \
             or a value computed by unrecorded code): see the caller's source"
        }
        Leaf::NoWrite => "no recorded write to it before this read: set by unrecorded code or when the object was made",
        Leaf::NotFollowed => "origin does not follow this kind of entry",
    }
}

fn step_dict<'py>(
    py: Python<'py>,
    forms: &Forms,
    views: &[TlView<'_>],
    stores: &[&squall_trace::ValueStore],
    k: usize,
    s: &Step,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("step", k)?;
    d.set_item("from_step", s.from)?;
    let (via, via_name): (&str, Option<String>) = match &s.via {
        Via::Start => ("start", None),
        Via::SubExpr => ("sub-expression", None),
        Via::Name(n) => ("name", Some(n.to_string())),
        Via::CallResult => ("call result", None),
        Via::Argument(n) => ("argument", Some(n.to_string())),
        Via::PassedFrom => ("passed from caller", None),
        Via::FieldWrite { obj, name } => {
            d.set_item("obj_id", obj)?;
            let name = match name {
                squall_trace::Snap::Str(s) => s.clone(),
                other => preview(other, 60),
            };
            ("write", Some(name))
        }
    };
    d.set_item("via", via)?;
    d.set_item("via_name", via_name)?;
    d.set_item("depth", s.depth)?;
    let (t, idx, value) = match s.source {
        Source::Entry { t, idx } => {
            let e = views[t].tl.get(idx as usize);
            (t, idx, e.filter(|e| !e.kind().is_call()).map(|e| e.value()))
        }
        Source::Arg { t, call, param } => {
            let e = views[t].tl.get(call as usize);
            let n = e.and_then(|e| forms.form(e.id())).map_or(0, |f| f.params.len());
            (t, call, views[t].tl.call_args(call as usize, n).get(param as usize).copied().map(Value::from))
        }
    };
    let view = &views[t];
    d.set_item("thread_id", view.thread_id)?;
    d.set_item("idx", idx)?;
    let e = view.tl.get(idx as usize);
    let kind = match (s.source, e.map(|e| e.kind())) {
        (Source::Arg { .. }, _) => "argument",
        (_, Some(k)) => k.type_name(),
        _ => "?",
    };
    d.set_item("kind", kind)?;
    if let Source::Arg { param, .. } = s.source {
        let form = e.and_then(|e| forms.form(e.id()));
        d.set_item("param", form.and_then(|f| f.params.get(param as usize)).map(|p| p.to_string()))?;
    }
    let (form, site) = match e {
        Some(e) if e.kind().is_call() || e.kind() == Kind::Unwind => (Some(e.id()), None),
        Some(e) => (forms.site(e.id()).map(|s| s.form), forms.site(e.id())),
        None => (None, None),
    };
    d.set_item("fn", form.map(|f| display_name(forms, f)))?;
    d.set_item("file", form.and_then(|f| forms.form(f)).map(|f| f.file.to_string()))?;
    let line = site.map(|s| s.coord.line).or_else(|| form.and_then(|f| forms.form(f)).map(|f| f.line));
    d.set_item("line", line)?;
    d.set_item("coord", site.map(|s| (s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col)))?;
    d.set_item("symbol", site.and_then(|s| s.symbol.as_deref()))?;
    let span = e.filter(|e| !e.kind().is_call()).and_then(|e| forms.site_reads(e.id())).map(|r| r.span);
    d.set_item("span", span.map(|c| (c.line, c.col, c.end_line, c.end_col)))?;
    let value = value.filter(|&v| v != ValRef::ABSENT);
    d.set_item("value", value.map(|v| preview_ref(v, stores[t], PREVIEW)))?;
    d.set_item("leaf", s.leaf.map(leaf_text))?;
    Ok(d)
}

/// `origin(flow_id, thread_id, idx, max_steps=16, recording=None)`: where the value of entry
/// `idx` came from, breadth first: `{"steps": [...], "left_out": n}`.
#[pyfunction]
#[pyo3(signature = (flow_id, thread_id, idx, max_steps=16, recording=None))]
pub fn origin<'py>(
    py: Python<'py>,
    flow_id: u32,
    thread_id: u64,
    idx: u32,
    max_steps: usize,
    recording: Option<PyRef<'py, PyRecording>>,
) -> PyResult<Bound<'py, PyDict>> {
    let b = backend(&recording);
    rec_of(b, flow_id, thread_id)?;
    let views = flow_views(b, flow_id)?;
    let t = views.iter().position(|v| v.thread_id == thread_id).unwrap_or(0);
    let empty = squall_trace::ValueStore::new();
    let stores: Vec<&squall_trace::ValueStore> = views.iter().map(|v| b.store(v).unwrap_or(&empty)).collect();
    let parts: Vec<Part<'_>> = views.iter().zip(&stores).map(|(v, s)| Part { tl: v.tl, store: s }).collect();
    for (v, s) in views.iter().zip(&stores) {
        squall_trace::sync_writes(v.tl, b.forms(), s);
    }
    let found = core_origin(&parts, b.forms(), t, idx, max_steps.max(1)).map_err(trace_err)?;
    let steps = PyList::empty(py);
    for (k, s) in found.steps.iter().enumerate() {
        steps.append(step_dict(py, b.forms(), &views, &stores, k, s)?)?;
    }
    let out = PyDict::new(py);
    out.set_item("steps", steps)?;
    out.set_item("left_out", found.left_out)?;
    Ok(out)
}

fn divergence<'py>(py: Python<'py>, d: Option<Divergence>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(d) = d else { return Ok(None) };
    let out = PyDict::new(py);
    match d {
        Divergence::Path { a, b } => {
            out.set_item("kind", "path")?;
            out.set_item("a_idx", a)?;
            out.set_item("b_idx", b)?;
        }
        Divergence::Value { a, b } => {
            out.set_item("kind", "value")?;
            out.set_item("a_idx", a)?;
            out.set_item("b_idx", b)?;
        }
    }
    Ok(Some(out))
}

fn call_diff<'py>(py: Python<'py>, d: &CallDiff) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("a_idx", d.a)?;
    out.set_item("b_idx", d.b)?;
    out.set_item("args_equal", d.args_equal.clone())?;
    out.set_item("outcome_equal", d.outcome_equal)?;
    out.set_item("path", d.path.clone())?;
    out.set_item("first", divergence(py, d.first)?)?;
    out.set_item("first_path", divergence(py, d.first_path)?)?;
    Ok(out)
}

/// `diff(flow_id, thread_id, a_idx=None, b_idx=None, b_flow_id=None, b_thread_id=None,
/// recording=None, b_recording=None)`: two calls (`a_idx` in the first timeline, `b_idx` in the
/// second: by default the same recording, flow and thread) compared; without idxs, the two
/// timelines compared by their root calls. Idxs in the answer are each side's own.
#[pyfunction]
#[pyo3(signature = (flow_id, thread_id, a_idx=None, b_idx=None, b_flow_id=None, b_thread_id=None, recording=None, b_recording=None))]
#[expect(clippy::too_many_arguments, reason = "two sides, each a recording, flow, thread and idx")]
pub fn diff<'py>(
    py: Python<'py>,
    flow_id: u32,
    thread_id: u64,
    a_idx: Option<u32>,
    b_idx: Option<u32>,
    b_flow_id: Option<u32>,
    b_thread_id: Option<u64>,
    recording: Option<PyRef<'py, PyRecording>>,
    b_recording: Option<PyRef<'py, PyRecording>>,
) -> PyResult<Bound<'py, PyDict>> {
    let ba = backend(&recording);
    let bb = if b_recording.is_some() { backend(&b_recording) } else { ba };
    let va = rec_of(ba, flow_id, thread_id)?;
    let vb = rec_of(bb, b_flow_id.unwrap_or(flow_id), b_thread_id.unwrap_or(thread_id))?;
    let empty = squall_trace::ValueStore::new();
    let a = Side { tl: va.tl, store: ba.store(&va).unwrap_or(&empty), forms: ba.forms() };
    let b = Side { tl: vb.tl, store: bb.store(&vb).unwrap_or(&empty), forms: bb.forms() };
    let out = PyDict::new(py);
    match (a_idx, b_idx) {
        (Some(x), Some(y)) => {
            for (side, v, i) in [("a", &a, x), ("b", &b, y)] {
                if !v.tl.get(i as usize).is_some_and(|e| e.kind().is_call()) {
                    return Err(PyValueError::new_err(format!(
                        "{side}_idx {i} is not a call entry of its timeline (entries 0..{}); pass the idx of an fn-call",
                        v.tl.len()
                    )));
                }
            }
            out.set_item("calls", call_diff(py, &diff_calls(&a, x, &b, y))?)?;
        }
        (None, None) => {
            let d = diff_timelines(&a, &b);
            out.set_item("roots_a", d.roots_a)?;
            out.set_item("roots_b", d.roots_b)?;
            out.set_item("at", d.at)?;
            out.set_item("calls", d.first.as_ref().map(|c| call_diff(py, c)).transpose()?)?;
        }
        _ => {
            return Err(PyValueError::new_err(
                "diff needs both a_idx and b_idx (two calls), or neither (two timelines)",
            ))
        }
    }
    Ok(out)
}

/// Registers the agent queries in the `_engine` module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(origin, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    Ok(())
}
