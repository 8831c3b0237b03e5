//! Registration of forms and sites, recording control, limits and engine statistics.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use squall_trace::{display_name, Coord, Form, FormKind, LimitHit, Limits, Site, SiteKind, SiteReads};

use crate::bindings::query::trace_err;
use crate::recorder::engine::{bump_epoch, Engine, ENGINE, RECORDING};

fn eng() -> &'static mut Engine {
    // SAFETY: GIL held; no Python code runs while this reference is used.
    unsafe { ENGINE.get() }
}

/// Notes that `file` was compiled from exactly `data` (its size and SHA-256 go into the
/// recording, so readers can tell whether the file on disk is still the one recorded).
#[pyfunction]
pub fn note_source(file: &str, data: &[u8]) {
    let sha256 = squall_store::sourcefile::sha256(data);
    eng().forms.add_source(squall_trace::SourceFile { file: Arc::from(file), size: data.len() as u64, sha256 });
}

/// The text of a source file of the live recording, by `squall_store::sourcefile`'s rules:
/// `(text, verified, note)`; a refusal or a changed file is a ValueError saying which.
#[pyfunction]
pub fn read_source(path: &str) -> PyResult<(String, bool, Option<String>)> {
    source_answer(&eng().forms, path)
}

pub(crate) fn source_answer(forms: &squall_trace::Forms, path: &str) -> PyResult<(String, bool, Option<String>)> {
    let got = squall_store::sourcefile::read_source(forms, path).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let note = got.note(path);
    Ok((got.text, got.verified, note))
}

#[pyfunction]
pub fn register_form(
    fn_ns: &str,
    fn_name: &str,
    file: &str,
    line: u32,
    params: Vec<String>,
    kind: i64,
) -> PyResult<u32> {
    let kind = FormKind::from_code(kind).map_err(trace_err)?;
    let form = Form {
        ns: Arc::from(fn_ns),
        name: Arc::from(fn_name),
        file: Arc::from(file),
        line,
        params: params.into_iter().map(Arc::from).collect(),
        kind,
    };
    eng().forms.add_form(form).map_err(trace_err)
}

/// What a site's value is computed from (`squall_trace::SiteReads`), as Python passes it:
/// `(line, col, end_line, end_col, names, attr)`.
pub type ReadsArg = (u32, u32, u32, u32, Vec<String>, Option<String>);

#[pyfunction]
#[pyo3(signature = (form_id, kind, line, col, end_line, end_col, symbol=None, reads=None))]
#[expect(clippy::too_many_arguments, reason = "a site's fields, as the rewriter registers them")]
pub fn register_site(
    form_id: u32,
    kind: i64,
    line: u32,
    col: u32,
    end_line: u32,
    end_col: u32,
    symbol: Option<&str>,
    reads: Option<ReadsArg>,
) -> PyResult<u32> {
    let kind = SiteKind::from_code(kind).map_err(trace_err)?;
    let site =
        Site { form: form_id, kind, coord: Coord { line, col, end_line, end_col }, symbol: symbol.map(Arc::from) };
    let forms = &mut eng().forms;
    let id = forms.add_site(site).map_err(trace_err)?;
    if let Some((line, col, end_line, end_col, names, attr)) = reads {
        let span = Coord { line, col, end_line, end_col };
        let names = names.into_iter().map(Arc::from).collect();
        forms.set_site_reads(id, SiteReads { span, names, attr: attr.map(Arc::from) }).map_err(trace_err)?;
    }
    Ok(id)
}

#[pyfunction]
pub fn start_recording() -> PyResult<()> {
    let eng = eng();
    // Frames open before recording (re)started are not continued: their exits are unmatched.
    for rec in eng.recs.iter_mut().flatten() {
        rec.tl.forget_open_frames();
    }
    eng.memory_stopped = false;
    bump_epoch();
    RECORDING.store(true, Ordering::Relaxed);
    Ok(())
}

#[pyfunction]
pub fn stop_recording() {
    RECORDING.store(false, Ordering::Relaxed);
}

#[pyfunction]
pub fn is_recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

#[pyfunction]
pub fn clear_recordings() {
    // SAFETY: GIL held (pyfunction).
    unsafe { eng().clear() };
    crate::recorder::outputs::clear();
}

#[pyfunction]
pub fn set_flow(flow_id: u32) {
    eng().current_flow = flow_id;
    bump_epoch();
}

#[pyfunction]
pub fn current_flow() -> u32 {
    eng().current_flow
}

#[pyfunction]
pub fn set_thread_namer(f: Bound<'_, PyAny>) {
    let eng = eng();
    if let Some(old) = eng.namer.replace(f.into_ptr()) {
        // SAFETY: GIL held; the engine owned this reference.
        unsafe { pyo3::ffi::Py_DecRef(old) };
    }
}

#[pyfunction]
pub fn register_snapshot(tp: Bound<'_, PyType>, f: Bound<'_, PyAny>) {
    let eng = eng();
    let tp_ptr = tp.as_type_ptr();
    let f_ptr = f.into_ptr();
    match eng.snapshotters.iter_mut().find(|(t, _)| *t == tp_ptr) {
        Some(slot) => {
            // SAFETY: as above.
            unsafe { pyo3::ffi::Py_DecRef(slot.1) };
            slot.1 = f_ptr;
        }
        None => {
            // The type object must outlive the registry entry.
            std::mem::forget(tp.clone());
            eng.snapshotters.push((tp_ptr, f_ptr));
        }
    }
}

#[pyfunction]
#[pyo3(signature = (max_depth, max_length, max_items, max_string, object_depth=crate::recorder::encode::DEFAULT_BUDGET.object_depth))]
pub fn set_snapshot_budget(
    max_depth: u32,
    max_length: usize,
    max_items: usize,
    max_string: usize,
    object_depth: u32,
) -> PyResult<()> {
    if max_length == 0 || max_items == 0 {
        return Err(PyValueError::new_err(format!(
            "snapshot budget max_length={max_length}, max_items={max_items}: both must be at least 1"
        )));
    }
    let b = &mut eng().budget;
    b.max_depth = max_depth;
    b.max_length = max_length;
    b.max_items = max_items;
    b.max_string = max_string;
    b.object_depth = object_depth;
    Ok(())
}

#[pyfunction]
pub fn get_snapshot_budget(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let b = &eng().budget;
    let d = PyDict::new(py);
    d.set_item("max_depth", b.max_depth)?;
    d.set_item("max_length", b.max_length)?;
    d.set_item("max_items", b.max_items)?;
    d.set_item("max_string", b.max_string)?;
    d.set_item("object_depth", b.object_depth)?;
    Ok(d)
}

#[pyfunction]
#[pyo3(signature = (thread_trace_limit, fn_call_limit, memory_limit))]
pub fn set_limits(thread_trace_limit: Option<u64>, fn_call_limit: Option<u32>, memory_limit: Option<u64>) {
    eng().limits = Limits { thread_trace_limit, fn_call_limit, memory_limit };
    squall_trace::grow::set_step_for_limit(memory_limit);
}

#[pyfunction]
pub fn get_limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let l = eng().limits;
    let d = PyDict::new(py);
    d.set_item("thread_trace_limit", l.thread_trace_limit)?;
    d.set_item("fn_call_limit", l.fn_call_limit)?;
    d.set_item("memory_limit", l.memory_limit)?;
    Ok(d)
}

#[pyfunction]
pub fn limits_hit(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let eng = eng();
    eng.hits
        .iter()
        .map(|&(n, hit)| {
            let d = PyDict::new(py);
            let rec = eng.recs.get(n as usize).and_then(|r| r.as_deref());
            d.set_item("flow_id", rec.map(|r| r.flow))?;
            d.set_item("thread_id", rec.map(|r| r.thread_id))?;
            d.set_item("thread_name", rec.map(|r| r.name.as_str()))?;
            match hit {
                LimitHit::ThreadTrace { limit } => {
                    d.set_item("limit", "thread_trace_limit")?;
                    d.set_item("value", limit)?;
                }
                LimitHit::FnCalls { form, limit } => {
                    d.set_item("limit", "fn_call_limit")?;
                    d.set_item("value", limit)?;
                    d.set_item("function", display_name(&eng.forms, form))?;
                }
                LimitHit::Memory { limit } => {
                    d.set_item("limit", "memory_limit")?;
                    d.set_item("value", limit)?;
                }
            }
            Ok(d)
        })
        .collect()
}

#[pyfunction]
pub fn engine_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let eng = eng();
    let recs: Vec<_> = eng.recs.iter().flatten().collect();
    let d = PyDict::new(py);
    d.set_item("entries", recs.iter().map(|r| r.tl.len() as u64).sum::<u64>())?;
    d.set_item("values", recs.iter().map(|r| r.values.len() as u64).sum::<u64>())?;
    // Value nodes still in memory (saved ones leave with their entries: `sink::evict_saved`).
    d.set_item("values_held", recs.iter().map(|r| r.values.nodes().len() as u64).sum::<u64>())?;
    // Everything the recording holds (entries, args, value stores, encoder caches): the memory
    // limit applies to it. It holds no object of the program.
    d.set_item("bytes", eng.bytes())?;
    d.set_item("value_bytes", recs.iter().map(|r| r.values.bytes()).sum::<u64>())?;
    // The file writer's part of `bytes` (0 when not saving).
    d.set_item("writer_bytes", eng.writer_bytes())?;
    // The other parts: timelines (their entries, args and stacks; what evicted entries left of
    // the exceptions is `carried_bytes`), the query indexes over the value stores, the
    // encoders' caches, the identity map.
    d.set_item("timeline_bytes", recs.iter().map(|r| r.tl.bytes()).sum::<u64>())?;
    d.set_item("carried_bytes", recs.iter().map(|r| r.tl.carried_exceptions().bytes()).sum::<u64>())?;
    d.set_item("index_bytes", recs.iter().map(|r| r.values.index_bytes()).sum::<u64>())?;
    d.set_item("encoder_bytes", recs.iter().map(|r| r.enc.bytes()).sum::<u64>())?;
    // SAFETY: GIL held (pyfunction); no other reference to IDS is alive here.
    d.set_item("identity_bytes", unsafe { crate::recorder::identity::IDS.get() }.bytes())?;
    d.set_item("timelines", recs.len())?;
    d.set_item("forms", eng.forms.forms().len())?;
    d.set_item("dropped", eng.dropped)?;
    d.set_item("unmatched", eng.unmatched)?;
    d.set_item("repaired", recs.iter().map(|r| r.tl.repaired).sum::<u64>())?;
    d.set_item("snapshot_errors", eng.snapshot_errors)?;
    d.set_item("lost_during_ui", eng.lost_during_ui)?;
    Ok(d)
}

/// `(forms, sites)` registered so far: the ids the next registrations get.
#[pyfunction]
pub fn next_ids() -> (usize, usize) {
    let forms = &eng().forms;
    (forms.forms().len(), forms.sites().len())
}

/// The forms and sites registered from `form_start` / `site_start` on, as the arguments that
/// register them again (for the instrumented-code cache to replay).
#[pyfunction]
#[expect(clippy::type_complexity, reason = "plain tuples are the Python-facing shape")]
pub fn registrations_since(
    form_start: usize,
    site_start: usize,
) -> (
    Vec<(String, String, String, u32, Vec<String>, u8)>,
    Vec<(u32, u8, u32, u32, u32, u32, Option<String>, Option<ReadsArg>)>,
) {
    let forms = &eng().forms;
    let fs = forms.forms().get(form_start..).unwrap_or(&[]).iter().map(|f| {
        (
            f.ns.to_string(),
            f.name.to_string(),
            f.file.to_string(),
            f.line,
            f.params.iter().map(|p| p.to_string()).collect(),
            f.kind as u8,
        )
    });
    let ss = forms.sites().get(site_start..).unwrap_or(&[]).iter().enumerate().map(|(k, s)| {
        let reads = forms.site_reads((site_start + k) as u32).map(|r| {
            let c = r.span;
            let names = r.names.iter().map(|n| n.to_string()).collect();
            (c.line, c.col, c.end_line, c.end_col, names, r.attr.as_deref().map(str::to_string))
        });
        (
            s.form,
            s.kind as u8,
            s.coord.line,
            s.coord.col,
            s.coord.end_line,
            s.coord.end_col,
            s.symbol.as_deref().map(str::to_string),
            reads,
        )
    });
    (fs.collect(), ss.collect())
}
