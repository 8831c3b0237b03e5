//! Thin PyO3 bindings over the core queries: entries become dicts in FlowStorm's shape.

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use squall_trace::{merge_call_stats, Decoded, Drift, Entry, Kind, TraceError, ValRef};

use crate::engine::{Engine, ThreadRec, ENGINE};

/// A value ref as users see it: which recording, whether it names a call's arguments, and the
/// entry-level ref (or call idx). Opaque to users; stable until `clear_recordings`.
const ARGS_BIT: u64 = 1 << 32;
const NUMBER_SHIFT: u32 = 33;

fn value_ref(rec: &ThreadRec, v: ValRef) -> Option<u64> {
    (v != ValRef::ABSENT).then(|| (u64::from(rec.number) << NUMBER_SHIFT) | u64::from(v.0))
}

fn args_ref(rec: &ThreadRec, call_idx: u32) -> u64 {
    (u64::from(rec.number) << NUMBER_SHIFT) | ARGS_BIT | u64::from(call_idx)
}

pub fn trace_err(e: TraceError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn eng() -> &'static mut Engine {
    // SAFETY: query functions run with the GIL held and call no Python code while holding this.
    unsafe { ENGINE.get() }
}

pub fn rec_of(eng: &Engine, flow_id: u32, thread_id: u64) -> PyResult<&ThreadRec> {
    eng.rec(flow_id, thread_id).ok_or_else(|| {
        let known: Vec<String> = eng
            .flows
            .iter()
            .map(|(f, nums)| {
                let tids: Vec<String> = nums
                    .iter()
                    .filter_map(|&n| eng.recs.get(n as usize)?.as_ref())
                    .map(|r| r.thread_id.to_string())
                    .collect();
                format!("{f}: [{}]", tids.join(", "))
            })
            .collect();
        PyKeyError::new_err(format!(
            "no recording for flow {flow_id}, thread {thread_id}; recorded flows and threads are {{{}}} (see squall.indexes.all_flows())",
            known.join(", ")
        ))
    })
}

fn coord_tuple<'py>(py: Python<'py>, eng: &Engine, site: u32) -> PyResult<Bound<'py, PyAny>> {
    match eng.forms.site(site) {
        Some(s) => Ok(PyTuple::new(py, [s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col])?.into_any()),
        None => Ok(py.None().into_bound(py)),
    }
}

pub fn entry_dict<'py>(py: Python<'py>, eng: &Engine, rec: &ThreadRec, idx: usize) -> PyResult<Bound<'py, PyDict>> {
    let e: &Entry = rec.tl.get(idx).ok_or_else(|| trace_err(TraceError::IdxOutOfRange { idx: idx as u64, len: rec.tl.len() }))?;
    let d = PyDict::new(py);
    d.set_item("type", e.kind().type_name())?;
    d.set_item("idx", idx)?;
    match e.kind() {
        Kind::Call | Kind::Resume => {
            let form = eng.forms.form(e.id());
            d.set_item("fn_ns", form.map(|f| &*f.ns))?;
            d.set_item("fn_name", form.map(|f| &*f.name))?;
            d.set_item("form_id", e.id())?;
            d.set_item("fn_args_ref", args_ref(rec, idx as u32))?;
            d.set_item("parent_idx", e.parent_idx())?;
            d.set_item("ret_idx", e.ret_idx())?;
            d.set_item("resumed", e.kind() == Kind::Resume)?;
        }
        Kind::Return => {
            let site = eng.forms.site(e.id());
            let call = rec.tl.get(e.fn_call_idx() as usize);
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("result_ref", value_ref(rec, e.value()))?;
            d.set_item("coord", coord_tuple(py, eng, e.id())?)?;
            d.set_item("form_id", call.map(|c| c.id()))?;
            d.set_item("kind", site.map_or("return", |s| s.kind.name()))?;
        }
        Kind::Unwind => {
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("throwable_ref", value_ref(rec, e.value()))?;
            d.set_item("coord", py.None())?;
            d.set_item("form_id", e.id())?;
        }
    }
    Ok(d)
}

/// The Python object for a value ref, as recorded.
pub fn deref_value(py: Python<'_>, eng: &Engine, r: u64) -> PyResult<Py<PyAny>> {
    let number = (r >> NUMBER_SHIFT) as usize;
    let local = (r & 0xFFFF_FFFF) as u32;
    let rec = match eng.recs.get(number) {
        Some(Some(rec)) => rec,
        Some(None) => {
            return Err(PyKeyError::new_err(format!(
                "value ref {r} belongs to a recording that was cleared (squall.api.clear_recordings())"
            )))
        }
        None => return Err(PyKeyError::new_err(format!("value ref {r} was not made by this process's recorder"))),
    };
    if r & ARGS_BIT != 0 {
        let call = rec.tl.get(local as usize).filter(|e| e.kind().is_call()).ok_or_else(|| {
            PyKeyError::new_err(format!("value ref {r} names the args of entry {local}, which is not a call"))
        })?;
        let nparams = if call.kind() == Kind::Resume {
            1
        } else {
            eng.forms.form(call.id()).map_or(0, |f| f.params.len())
        };
        let vals: PyResult<Vec<Py<PyAny>>> =
            rec.tl.call_args(local as usize, nparams).into_iter().map(|v| decode(py, rec, v)).collect();
        return Ok(PyList::new(py, vals?)?.into_any().unbind());
    }
    decode(py, rec, ValRef(local))
}

fn decode(py: Python<'_>, rec: &ThreadRec, v: ValRef) -> PyResult<Py<PyAny>> {
    Ok(match v.decode() {
        Decoded::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Decoded::None | Decoded::Absent => py.None(),
        Decoded::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Decoded::Slot(i) => {
            let p = *rec.values.get(i as usize).ok_or_else(|| PyKeyError::new_err(format!("value slot {i} is not recorded")))?;
            // SAFETY: the value table owns a strong reference to `p`.
            unsafe { Bound::from_borrowed_ptr(py, p) }.unbind()
        }
    })
}

#[pyfunction]
pub fn all_flows(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let eng = eng();
    let d = PyDict::new(py);
    for (flow, nums) in &eng.flows {
        let tids: Vec<u64> = nums.iter().filter_map(|&n| eng.recs.get(n as usize)?.as_ref()).map(|r| r.thread_id).collect();
        d.set_item(flow, tids)?;
    }
    Ok(d)
}

#[pyfunction]
pub fn all_threads() -> Vec<(u32, u64)> {
    let eng = eng();
    eng.flows
        .iter()
        .flat_map(|(&f, nums)| nums.iter().filter_map(move |&n| Some((f, n))))
        .filter_map(|(f, n)| Some((f, eng.recs.get(n as usize)?.as_ref()?.thread_id)))
        .collect()
}

fn limit_text(eng: &Engine, rec: &ThreadRec) -> Option<String> {
    rec.tl.stopped().map(|h| format!("{h:?}")).or_else(|| {
        eng.hits.iter().find(|(n, _)| *n == rec.number).map(|(_, h)| format!("{h:?}"))
    })
}

#[pyfunction]
pub fn flow_threads_info(py: Python<'_>, flow_id: u32) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    let mut out = Vec::new();
    for &n in eng.flows.get(&flow_id).map(Vec::as_slice).unwrap_or(&[]) {
        let Some(Some(rec)) = eng.recs.get(n as usize) else { continue };
        let d = PyDict::new(py);
        d.set_item("flow_id", flow_id)?;
        d.set_item("thread_id", rec.thread_id)?;
        d.set_item("thread_name", &rec.name)?;
        d.set_item("entries", rec.tl.len())?;
        d.set_item("calls", rec.tl.calls())?;
        d.set_item("values", rec.values.len())?;
        d.set_item("limit_hit", limit_text(eng, rec))?;
        out.push(d);
    }
    Ok(out)
}

#[pyfunction]
pub fn timeline_len(flow_id: u32, thread_id: u64) -> PyResult<usize> {
    Ok(rec_of(eng(), flow_id, thread_id)?.tl.len())
}

#[pyfunction]
pub fn entry(py: Python<'_>, flow_id: u32, thread_id: u64, idx: usize) -> PyResult<Bound<'_, PyDict>> {
    let eng = eng();
    entry_dict(py, eng, rec_of(eng, flow_id, thread_id)?, idx)
}

#[pyfunction]
pub fn entries(py: Python<'_>, flow_id: u32, thread_id: u64, start: usize, end: usize) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    let rec = rec_of(eng, flow_id, thread_id)?;
    (start..end.min(rec.tl.len())).map(|i| entry_dict(py, eng, rec, i)).collect()
}

#[pyfunction]
pub fn timeline_entry<'py>(py: Python<'py>, flow_id: u32, thread_id: u64, idx: u64, drift: &str) -> PyResult<Bound<'py, PyDict>> {
    let eng = eng();
    let rec = rec_of(eng, flow_id, thread_id)?;
    let drift = Drift::parse(drift).map_err(trace_err)?;
    let to = rec.tl.timeline_entry(idx, drift).map_err(trace_err)?;
    entry_dict(py, eng, rec, to as usize)
}

#[pyfunction]
pub fn frame_data(py: Python<'_>, flow_id: u32, thread_id: u64, idx: u64) -> PyResult<Bound<'_, PyDict>> {
    let eng = eng();
    let rec = rec_of(eng, flow_id, thread_id)?;
    let call_idx = rec.tl.frame_of(idx).map_err(trace_err)?;
    let call = entry_dict(py, eng, rec, call_idx as usize)?;
    let d = PyDict::new(py);
    for key in ["fn_ns", "fn_name", "form_id", "parent_idx", "ret_idx", "resumed"] {
        d.set_item(key, call.get_item(key)?)?;
    }
    d.set_item("fn_call_idx", call_idx)?;
    d.set_item("args_ref", call.get_item("fn_args_ref")?)?;
    let form = rec.tl.get(call_idx as usize).and_then(|c| eng.forms.form(c.id()));
    d.set_item("arg_names", form.map(|f| f.params.iter().map(|p| p.to_string()).collect::<Vec<_>>()))?;
    d.set_item("file", form.map(|f| &*f.file))?;
    d.set_item("line", form.map(|f| f.line))?;
    match rec.tl.get(call_idx as usize).and_then(|c| c.ret_idx()) {
        Some(r) => {
            let exit = entry_dict(py, eng, rec, r as usize)?;
            d.set_item("exit_type", exit.get_item("type")?)?;
            d.set_item("result_ref", exit.get_item("result_ref")?)?;
            d.set_item("throwable_ref", exit.get_item("throwable_ref")?)?;
        }
        None => {
            d.set_item("exit_type", py.None())?;
            d.set_item("result_ref", py.None())?;
            d.set_item("throwable_ref", py.None())?;
        }
    }
    d.set_item("bindings", PyList::empty(py))?;
    d.set_item("expr_executions", PyList::empty(py))?;
    Ok(d)
}

#[pyfunction]
pub fn stack_for_frame(py: Python<'_>, flow_id: u32, thread_id: u64, idx: u64) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    let rec = rec_of(eng, flow_id, thread_id)?;
    let frames = rec.tl.stack_for_frame(idx).map_err(trace_err)?;
    frames
        .into_iter()
        .map(|f| {
            let d = PyDict::new(py);
            let form = eng.forms.form(f.form);
            d.set_item("fn_call_idx", f.fn_call_idx)?;
            d.set_item("form_id", f.form)?;
            d.set_item("fn_ns", form.map(|x| &*x.ns))?;
            d.set_item("fn_name", form.map(|x| &*x.name))?;
            d.set_item("file", form.map(|x| &*x.file))?;
            d.set_item("line", form.map(|x| x.line))?;
            Ok(d)
        })
        .collect()
}

#[pyfunction]
#[pyo3(signature = (flow_id, thread_id, idx, offset=0, limit=None))]
pub fn callstack_node_childs(flow_id: u32, thread_id: u64, idx: Option<u64>, offset: usize, limit: Option<usize>) -> PyResult<Vec<u32>> {
    let rec = rec_of(eng(), flow_id, thread_id)?;
    rec.tl.callstack_node_childs(idx, offset, limit).map_err(trace_err)
}

#[pyfunction]
#[pyo3(signature = (flow_id, thread_id=None))]
pub fn fn_call_stats(py: Python<'_>, flow_id: u32, thread_id: Option<u64>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    let stats = match thread_id {
        Some(t) => rec_of(eng, flow_id, t)?.tl.fn_call_stats(),
        None => merge_call_stats(
            eng.flows
                .get(&flow_id)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter_map(|&n| eng.recs.get(n as usize)?.as_deref())
                .map(|r| &r.tl),
        ),
    };
    stats
        .into_iter()
        .map(|s| {
            let d = PyDict::new(py);
            let form = eng.forms.form(s.form);
            d.set_item("fn_ns", form.map(|f| &*f.ns))?;
            d.set_item("fn_name", form.map(|f| &*f.name))?;
            d.set_item("form_id", s.form)?;
            d.set_item("cnt", s.count)?;
            Ok(d)
        })
        .collect()
}

#[pyfunction]
#[pyo3(signature = (flow_id, thread_id, fn_ns=None, fn_name=None, args_pred=None, from_idx=None, backward=false))]
#[expect(clippy::too_many_arguments, reason = "mirrors FlowStorm's find-fn-call-entry options")]
pub fn find_fn_call_entry<'py>(
    py: Python<'py>,
    flow_id: u32,
    thread_id: u64,
    fn_ns: Option<&str>,
    fn_name: Option<&str>,
    args_pred: Option<Bound<'py, PyAny>>,
    from_idx: Option<u64>,
    backward: bool,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let eng = eng();
    let rec = rec_of(eng, flow_id, thread_id)?;
    let forms_ok = eng.forms.matching(fn_ns, fn_name);
    let found = rec.tl.find_fn_call(&forms_ok, from_idx, backward, |idx| -> PyResult<bool> {
        match &args_pred {
            None => Ok(true),
            Some(pred) => {
                let args = deref_value(py, eng, args_ref(rec, idx))?;
                // The predicate is the user's code: it may be instrumented, and must not append to
                // the timeline being searched.
                crate::engine::without_recording(|| pred.call1((args,))?.is_truthy())
            }
        }
    })?;
    found.map(|i| entry_dict(py, eng, rec, i as usize)).transpose()
}

#[pyfunction]
pub fn deref(py: Python<'_>, value_ref: u64) -> PyResult<Py<PyAny>> {
    deref_value(py, eng(), value_ref)
}

#[pyfunction]
pub fn forms(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    eng.forms
        .forms()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let d = PyDict::new(py);
            d.set_item("form_id", i)?;
            d.set_item("fn_ns", &*f.ns)?;
            d.set_item("fn_name", &*f.name)?;
            d.set_item("file", &*f.file)?;
            d.set_item("line", f.line)?;
            d.set_item("params", f.params.iter().map(|p| p.to_string()).collect::<Vec<_>>())?;
            d.set_item("kind", f.kind.name())?;
            Ok(d)
        })
        .collect()
}

/// The idxs of the entries of one type (`fn-call`, `fn-return`, `fn-unwind`), in order.
#[pyfunction]
pub fn idxs_of_type(flow_id: u32, thread_id: u64, entry_type: &str) -> PyResult<Vec<u32>> {
    let rec = rec_of(eng(), flow_id, thread_id)?;
    let want: fn(Kind) -> bool = match entry_type {
        "fn-call" => |k| k == Kind::Call,
        "fn-resume" => |k| k == Kind::Resume,
        "fn-return" => |k| k == Kind::Return,
        "fn-unwind" => |k| k == Kind::Unwind,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown entry type `{other}`; use fn-call, fn-resume, fn-return or fn-unwind"
            )))
        }
    };
    Ok(rec.tl.entries().iter().enumerate().filter(|(_, e)| want(e.kind())).map(|(i, _)| i as u32).collect())
}
