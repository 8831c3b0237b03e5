//! The one recording class of `squall._engine`: `Recording`, over the live recording of this
//! process (`live()`) or a recording file (`load_recording(path)`). Each query method is written
//! once, over the [`Backend`] of either.

use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyKeyError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use squall_store::{Recording, StoreError, MISSING_VALUE};
use squall_trace::{ExpandBudget, Forms, Snap, ValRef, ValueStore};

use crate::bindings::query::{deref_value, q, Backend, TlView};

/// A recording file, loaded: the file backend of the queries.
pub struct FileData {
    rec: Recording,
    path: PathBuf,
}

enum Source {
    /// This process's recording (`crate::recorder::engine::ENGINE`), read under the GIL.
    Live,
    File(Box<FileData>),
}

/// A recording: the live one or a file. Frozen: the file is never changed after loading, and
/// the live one is read through the engine under the GIL at each call.
#[pyclass(name = "Recording", module = "squall._engine", frozen)]
pub struct PyRecording {
    src: Source,
}

impl PyRecording {
    /// The backend every query reads.
    pub(crate) fn b(&self) -> &dyn Backend {
        match &self.src {
            // SAFETY: methods run with the GIL held (pymethods) and call no Python code while
            // holding this (predicates run through `without_recording`, which appends nothing).
            Source::Live => unsafe { crate::recorder::engine::ENGINE.get() },
            Source::File(f) => &**f,
        }
    }

    /// The file, for what only a file has (exports).
    fn file(&self, what: &str) -> PyResult<&FileData> {
        match &self.src {
            Source::File(f) => Ok(f),
            Source::Live => Err(PyValueError::new_err(format!(
                "{what} needs a recording file: record with `squall run -o FILE`, then squall.load(FILE)"
            ))),
        }
    }
}

/// The live recording of this process, as a `Recording` (the same methods as a file's).
#[pyfunction]
pub fn live() -> PyRecording {
    PyRecording { src: Source::Live }
}

impl Backend for FileData {
    fn forms(&self) -> &Forms {
        &self.rec.forms
    }

    fn flows(&self) -> Vec<(u32, Vec<TlView<'_>>)> {
        let mut flows: Vec<u32> = self.rec.timelines.iter().map(|t| t.meta.flow).collect();
        flows.sort_unstable();
        flows.dedup();
        flows
            .into_iter()
            .map(|f| {
                let views = (0..self.rec.timelines.len() as u32)
                    .filter(|&n| self.rec.timelines[n as usize].meta.flow == f)
                    .filter_map(|n| self.view_of(n))
                    .collect();
                (f, views)
            })
            .collect()
    }

    fn by_number(&self, number: u32) -> Result<TlView<'_>, PyErr> {
        self.view_of(number).ok_or_else(|| PyKeyError::new_err("it was not made by this recording"))
    }

    fn store_of(&self, number: u32) -> Option<&squall_trace::ValueStore> {
        self.rec.timelines.get(number as usize).map(|t| &t.values)
    }

    fn slot_snap(&self, view: &TlView<'_>, slot: u32) -> PyResult<Snap> {
        let t = &self.rec.timelines[view.number as usize];
        if t.values.entry_ref(ValRef(slot)).0 as usize >= t.values.len() {
            // A file cut short before the value was saved: shown as missing, as the web UI does.
            return Ok(Snap::Opaque {
                type_name: MISSING_VALUE.into(),
                id: 0,
                repr: "<value not saved: the recording was cut short before it was written>".into(),
            });
        }
        let mut snap = t.values.to_snap(ValRef(slot), ExpandBudget::FULL);
        squall_trace::earlier_idx::mark_earlier_idx(&mut snap, &t.timeline, &self.rec.forms, &t.values);
        Ok(snap)
    }

    fn store(&self, view: &TlView<'_>) -> Option<&ValueStore> {
        Some(&self.rec.timelines.get(view.number as usize)?.values)
    }
}

impl FileData {
    fn view_of(&self, number: u32) -> Option<TlView<'_>> {
        let t = self.rec.timelines.get(number as usize)?;
        Some(TlView {
            number,
            thread_id: t.meta.thread_id,
            name: &t.meta.name,
            tl: &t.timeline,
            values: t.values.len(),
            limit_hit: None,
        })
    }
}

fn load_error(e: StoreError) -> PyErr {
    match e {
        StoreError::NotFound { .. } => PyFileNotFoundError::new_err(e.to_string()),
        StoreError::Io { .. } | StoreError::Write(_) | StoreError::SymlinkLoop { .. } => {
            PyOSError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Reads a recording file. `progress(done, total)` is called while reading big files.
#[pyfunction]
#[pyo3(signature = (path, progress=None))]
pub fn load_recording(py: Python<'_>, path: PathBuf, progress: Option<Bound<'_, PyAny>>) -> PyResult<PyRecording> {
    let progress: Option<Py<PyAny>> = progress.map(Bound::unbind);
    let result = py.detach(|| match &progress {
        None => squall_store::open(&path),
        Some(cb) => {
            let mut report = |done: u64, total: u64| {
                Python::attach(|py| {
                    let _ = cb.bind(py).call1((done, total));
                });
            };
            squall_store::open_with_progress(&path, Some(&mut report))
        }
    });
    let rec = result.map_err(load_error)?;
    Ok(PyRecording { src: Source::File(Box::new(FileData { rec, path })) })
}

#[pymethods]
impl PyRecording {
    /// The file's path (`None`: the live recording).
    #[getter]
    fn path(&self) -> Option<PathBuf> {
        match &self.src {
            Source::File(f) => Some(f.path.clone()),
            Source::Live => None,
        }
    }

    /// What the file holds: program, argv, Python, start and end, completed or cut short, size,
    /// and per-thread counts (the live recording: `live` True, not completed, never cut short).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let Source::File(file) = &self.src else {
            d.set_item("path", py.None())?;
            d.set_item("live", true)?;
            d.set_item("completed", false)?;
            d.set_item("cut_short", py.None())?;
            return Ok(d);
        };
        let (rec, path) = (&file.rec, &file.path);
        let h = &rec.header;
        d.set_item("path", path)?;
        d.set_item("program", &h.program)?;
        d.set_item("argv", &h.argv)?;
        d.set_item("python", &h.python)?;
        d.set_item("squall", &h.squall)?;
        d.set_item("cwd", &h.cwd)?;
        d.set_item("started_unix_ms", h.started_unix_ms)?;
        d.set_item("ended_unix_ms", rec.ended_unix_ms)?;
        d.set_item("completed", rec.completed)?;
        d.set_item("cut_short", &rec.cut_short)?;
        d.set_item("file_bytes", rec.file_bytes)?;
        d.set_item("entries", rec.entry_count())?;
        d.set_item("forms", rec.forms.forms().len())?;
        let stats = PyDict::new(py);
        for (k, v) in &rec.stats {
            stats.set_item(k, v)?;
        }
        d.set_item("stats", stats)?;
        Ok(d)
    }

    fn all_flows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        q::all_flows(py, self.b())
    }
    fn all_threads(&self) -> Vec<(u32, u64)> {
        q::all_threads(self.b())
    }
    fn flow_threads_info<'py>(&self, py: Python<'py>, flow_id: u32) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::flow_threads_info(py, self.b(), flow_id)
    }
    fn timeline_len(&self, flow_id: u32, thread_id: u64) -> PyResult<usize> {
        q::timeline_len(self.b(), flow_id, thread_id)
    }
    fn entry<'py>(&self, py: Python<'py>, flow_id: u32, thread_id: u64, idx: usize) -> PyResult<Bound<'py, PyDict>> {
        q::entry(py, self.b(), flow_id, thread_id, idx)
    }
    fn entries<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        start: usize,
        end: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::entries(py, self.b(), flow_id, thread_id, start, end)
    }
    fn timeline_entry<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
        drift: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        q::timeline_entry(py, self.b(), flow_id, thread_id, idx, drift)
    }
    fn frame_data<'py>(&self, py: Python<'py>, flow_id: u32, thread_id: u64, idx: u64) -> PyResult<Bound<'py, PyDict>> {
        q::frame_data(py, self.b(), flow_id, thread_id, idx)
    }
    fn stack_for_frame<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::stack_for_frame(py, self.b(), flow_id, thread_id, idx)
    }
    #[pyo3(signature = (flow_id, thread_id, idx, offset=0, limit=None))]
    fn callstack_node_childs(
        &self,
        flow_id: u32,
        thread_id: u64,
        idx: Option<u64>,
        offset: usize,
        limit: Option<usize>,
    ) -> PyResult<Vec<u32>> {
        q::callstack_node_childs(self.b(), flow_id, thread_id, idx, offset, limit)
    }
    #[pyo3(signature = (flow_id, thread_id=None))]
    fn fn_call_stats<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::fn_call_stats(py, self.b(), flow_id, thread_id)
    }
    #[pyo3(signature = (flow_id, thread_id, fn_ns=None, fn_name=None, args_pred=None, from_idx=None, backward=false))]
    #[expect(clippy::too_many_arguments, reason = "mirrors FlowStorm's find-fn-call-entry options")]
    fn find_fn_call_entry<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        fn_ns: Option<&str>,
        fn_name: Option<&str>,
        args_pred: Option<Bound<'py, PyAny>>,
        from_idx: Option<u64>,
        backward: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        q::find_fn_call_entry(py, self.b(), flow_id, thread_id, fn_ns, fn_name, args_pred, from_idx, backward)
    }
    #[pyo3(signature = (flow_id, thread_id, fns, r#where=None))]
    fn calls_where(
        &self,
        flow_id: u32,
        thread_id: u64,
        fns: Vec<(String, String)>,
        r#where: Option<&str>,
    ) -> PyResult<(Vec<u32>, Vec<u32>, Option<&'static str>)> {
        q::calls_where(self.b(), flow_id, thread_id, &fns, r#where)
    }
    /// Every recorded state of object `obj_id`, oldest first (all threads merged unless `thread_id`).
    #[pyo3(signature = (flow_id, obj_id, thread_id=None))]
    fn history<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        obj_id: u64,
        thread_id: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::history(py, self.b(), flow_id, obj_id, thread_id)
    }
    fn bindings<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::bindings(py, self.b(), flow_id, thread_id, idx)
    }
    #[pyo3(signature = (flow_id, thread_id, coord=None, file=None, line=None, value_pred=None, from_idx=None, backward=false, any_kind=false))]
    #[expect(clippy::too_many_arguments, reason = "mirrors FlowStorm's find-expr-entry options")]
    fn find_expr_entry<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        coord: Option<(u32, u32, u32, u32)>,
        file: Option<&str>,
        line: Option<u32>,
        value_pred: Option<Bound<'py, PyAny>>,
        from_idx: Option<u64>,
        backward: bool,
        any_kind: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        q::find_expr_entry(
            py,
            self.b(),
            flow_id,
            thread_id,
            coord,
            file,
            line,
            value_pred,
            from_idx,
            backward,
            any_kind,
        )
    }
    /// Writes to attributes and items (see `squall.indexes.Queries.writes`).
    #[pyo3(signature = (flow_id, thread_id=None, obj_id=None, attr_or_key=None, type_name=None, limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn writes<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: Option<u64>,
        obj_id: Option<u64>,
        attr_or_key: Option<Bound<'py, PyAny>>,
        type_name: Option<&str>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::bindings::writes::writes(
            py,
            self.b(),
            flow_id,
            thread_id,
            obj_id,
            attr_or_key.as_ref(),
            type_name,
            limit,
        )
    }

    #[pyo3(signature = (flow_id, start=0, limit=1000))]
    fn total_order_timeline<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        start: usize,
        limit: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::total_order_timeline(py, self.b(), flow_id, start, limit)
    }
    fn deref(&self, py: Python<'_>, value_ref: u64) -> PyResult<Py<PyAny>> {
        deref_value(py, self.b(), value_ref)
    }
    /// The value a ref names printed by the core's bounded printer (`squall_trace::printer::pprint`,
    /// what the UI's `/api/value` shows); `None`: no bound.
    #[pyo3(signature = (value_ref, print_level=None, print_length=None))]
    fn val_pprint(&self, value_ref: u64, print_level: Option<usize>, print_length: Option<usize>) -> PyResult<String> {
        let snap = crate::bindings::printed::snap_of_ref(self.b(), value_ref)?;
        Ok(squall_trace::printer::pprint(&snap, print_level.unwrap_or(usize::MAX), print_length.unwrap_or(usize::MAX)))
    }
    /// One level of the value a ref names, as the UI's value inspector pages it: the node `path`
    /// names and its children `offset..offset + limit` (`None`: all), printed within bounds.
    #[pyo3(signature = (value_ref, path=Vec::new(), offset=0, limit=None, print_level=None, print_length=None))]
    #[allow(clippy::too_many_arguments)]
    fn val_expand<'py>(
        &self,
        py: Python<'py>,
        value_ref: u64,
        path: Vec<usize>,
        offset: usize,
        limit: Option<usize>,
        print_level: Option<usize>,
        print_length: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::bindings::printed::val_expand(
            py,
            self.b(),
            value_ref,
            &path,
            offset,
            limit.unwrap_or(usize::MAX),
            print_level.unwrap_or(usize::MAX),
            print_length.unwrap_or(usize::MAX),
        )
    }
    /// The value ref of each argument named by an args ref (None: not recorded).
    fn arg_refs(&self, args_ref: u64) -> PyResult<Vec<Option<u64>>> {
        crate::bindings::arg_refs::arg_refs(self.b(), args_ref)
    }
    fn forms<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        q::forms(py, self.b())
    }
    /// `(text, verified, note)` of a source file of this recording (see `_engine.read_source`).
    fn read_source(&self, path: &str) -> PyResult<(String, bool, Option<String>)> {
        crate::bindings::control::source_answer(self.b().forms(), path)
    }
    fn idxs_of_type(&self, flow_id: u32, thread_id: u64, entry_type: &str) -> PyResult<Vec<u32>> {
        q::idxs_of_type(self.b(), flow_id, thread_id, entry_type)
    }
    /// Whether this recording grows now: the live one while recording is on; a file never.
    fn is_recording(&self) -> bool {
        matches!(self.src, Source::Live) && crate::bindings::control::is_recording()
    }
    /// What the program wrote to stdout and stderr: (chunks as dicts, (chunks, characters) not
    /// kept past the bound).
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, pyo3::types::PyList>, (u64, u64))> {
        match &self.src {
            Source::Live => crate::recorder::outputs::live_outputs(py),
            Source::File(f) => crate::recorder::outputs::file_outputs(py, &f.rec),
        }
    }
    #[pyo3(signature = (flow_id=None, thread_id=None))]
    fn exceptions<'py>(
        &self,
        py: Python<'py>,
        flow_id: Option<u32>,
        thread_id: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        crate::bindings::query_threads::exceptions(py, self.b(), flow_id, thread_id)
    }
    /// The line Python's traceback ends with for an exception's value ref (`Type: message`,
    /// the module left out for `__main__` and builtins); `None`: no exception was recorded.
    fn exception_text(&self, value_ref: u64) -> PyResult<Option<String>> {
        crate::bindings::query_threads::exception_line(self.b(), value_ref)
    }
    /// The frames the exception at fn-unwind `idx` left from there outward, innermost first:
    /// `(call_idx, unwind_idx, last_event_idx)` each.
    fn unwind_chain(&self, flow_id: u32, thread_id: u64, idx: u64) -> PyResult<Vec<(u32, u32, Option<u32>)>> {
        crate::bindings::query_threads::unwind_chain(self.b(), flow_id, thread_id, idx)
    }
    #[pyo3(signature = (flow_id=None))]
    fn bookmarks<'py>(&self, py: Python<'py>, flow_id: Option<u32>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        crate::bindings::query_threads::bookmarks(py, self.b(), flow_id)
    }
    #[pyo3(signature = (flow_id, thread_id, file, line, from_idx=None, backward=false))]
    #[allow(clippy::too_many_arguments)]
    fn line_hits<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: Option<u64>,
        file: &str,
        line: u32,
        from_idx: Option<u64>,
        backward: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        crate::bindings::query_threads::line_hits(py, self.b(), flow_id, thread_id, file, line, from_idx, backward)
    }
    #[pyo3(signature = (flow_id, thread_id, idx, how, backward=false))]
    fn power_step(&self, flow_id: u32, thread_id: u64, idx: u64, how: &str, backward: bool) -> PyResult<Option<u32>> {
        crate::bindings::query_threads::power_step(self.b(), flow_id, thread_id, idx, how, backward)
    }
    fn loop_iterations(&self, flow_id: u32, thread_id: u64, idx: u64) -> PyResult<(Vec<u32>, usize)> {
        crate::bindings::query_threads::loop_iterations(self.b(), flow_id, thread_id, idx)
    }
    /// The core's text search over entries `from_idx..to_idx` of one thread (the UI's search).
    #[pyo3(signature = (flow_id, thread_id, text, kind="value", from_idx=0, to_idx=None, limit=100, ignore_case=true))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        flow_id: u32,
        thread_id: u64,
        text: &str,
        kind: &str,
        from_idx: usize,
        to_idx: Option<usize>,
        limit: usize,
        ignore_case: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::bindings::query_threads::search(
            py,
            self.b(),
            flow_id,
            thread_id,
            text,
            kind,
            from_idx,
            to_idx,
            limit,
            ignore_case,
        )
    }

    /// Writes Chrome trace event JSON (Perfetto opens it) to `out`.
    #[pyo3(signature = (out, progress=None))]
    fn export_chrome(&self, py: Python<'_>, out: PathBuf, progress: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let rec = &self.file("export_chrome")?.rec;
        let file = std::fs::File::create(&out)
            .map_err(|e| PyOSError::new_err(format!("cannot create `{}`: {e}", out.display())))?;
        let progress: Option<Py<PyAny>> = progress.map(Bound::unbind);
        py.detach(|| {
            let mut report = |done: u64, total: u64| report_progress(&progress, done, total);
            squall_store::export::export_chrome(rec, std::io::BufWriter::new(file), Some(&mut report))
        })
        .map_err(load_error)
    }

    /// Writes an SQLite database (tables forms, calls, entries, values) to `out`.
    #[pyo3(signature = (out, progress=None))]
    fn export_sqlite(&self, py: Python<'_>, out: PathBuf, progress: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let rec = &self.file("export_sqlite")?.rec;
        let progress: Option<Py<PyAny>> = progress.map(Bound::unbind);
        py.detach(|| {
            let mut report = |done: u64, total: u64| report_progress(&progress, done, total);
            squall_store::export::export_sqlite(rec, &out, Some(&mut report))
        })
        .map_err(load_error)
    }
}

fn report_progress(cb: &Option<Py<PyAny>>, done: u64, total: u64) {
    if let Some(cb) = cb {
        Python::attach(|py| {
            let _ = cb.bind(py).call1((done, total));
        });
    }
}
