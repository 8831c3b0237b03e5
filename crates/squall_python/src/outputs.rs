//! Capturing what the program writes to stdout and stderr, without changing it.
//!
//! `squall.outputs.capture()` gives the process's two text streams an instance attribute
//! `write` (an [`OutputTee`] around the stream's own bound `write`): `print()`, `sys.stdout.write`
//! and `writelines` look `write` up on the instance, so they reach the tee, while `sys.stdout`
//! stays the same object of the same type. The tee calls the real `write` first, with the same
//! arguments, and returns or raises what it did (a C callable: no frame of squall's shows in a
//! traceback); only then, if it succeeded and recording is on, it notes the text with the
//! writing thread's last entry. It runs no Python code of its own and never raises.

use std::sync::atomic::Ordering;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use squall_trace::{OutStream, Outputs};

use crate::engine::{Engine, ENGINE, RECORDING};
use crate::file::FileRecording;
use crate::gil_cell::GilCell;

/// Every chunk written while recording, live (saved by `sink.rs` with the entries).
pub static OUTPUTS: GilCell<Outputs> = GilCell::new(Outputs::new());

unsafe extern "C" {
    fn PyThread_get_thread_native_id() -> std::ffi::c_ulong;
}

/// A stream's `write`, noting what it wrote (see the module comment).
#[pyclass(module = "squall._engine", frozen)]
pub struct OutputTee {
    write: Py<PyAny>,
    stream: OutStream,
}

#[pymethods]
impl OutputTee {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let written = self.write.bind(py).call(args, kwargs)?;
        if RECORDING.load(Ordering::Relaxed) && kwargs.is_none() && args.len() == 1 {
            if let Ok(text) = args.get_item(0).and_then(|a| a.cast_into::<PyString>().map_err(PyErr::from)) {
                note(self.stream, &text.to_string_lossy());
            }
        }
        Ok(written.unbind())
    }

    /// The `write` it wraps (what `squall.outputs.release` puts back).
    #[getter]
    fn wrapped(&self, py: Python<'_>) -> Py<PyAny> {
        self.write.clone_ref(py)
    }
}

/// Notes `text` written to `stream` by the running thread, linked to its last entry in the
/// current flow (nothing is created for a thread that recorded nothing).
fn note(stream: OutStream, text: &str) {
    // SAFETY: GIL held (called from the tee); no Python code runs while these are used.
    let eng: &Engine = unsafe { ENGINE.get() };
    // SAFETY: exported by CPython >= 3.8; needs nothing but a thread.
    let thread_id = unsafe { PyThread_get_thread_native_id() } as u64;
    let at = eng.flows.get(&eng.current_flow).and_then(|nums| {
        nums.iter().find_map(|&n| {
            let rec = eng.recs.get(n as usize)?.as_deref()?;
            (rec.thread_id == thread_id && !rec.tl.is_empty()).then(|| (n, rec.tl.len() as u32 - 1))
        })
    });
    // SAFETY: GIL held.
    unsafe { OUTPUTS.get() }.write(stream, thread_id, at, text);
}

fn stream_of(name: &str) -> PyResult<OutStream> {
    match name {
        "stdout" => Ok(OutStream::Stdout),
        "stderr" => Ok(OutStream::Stderr),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown output stream {name:?}: expected \"stdout\" or \"stderr\""
        ))),
    }
}

/// A tee around `write` (a stream's bound `write`) for `stream` ("stdout" or "stderr").
#[pyfunction]
fn output_tee(write: Py<PyAny>, stream: &str) -> PyResult<OutputTee> {
    Ok(OutputTee { write, stream: stream_of(stream)? })
}

/// Forgets the live outputs (with `clear_recordings`).
pub fn clear() {
    // SAFETY: GIL held by the caller (a pyfunction).
    unsafe { OUTPUTS.get() }.clear();
}

/// One chunk as a dict: `stream`, `flow_id`, `thread_id`, `thread_name`, `idx` (None: the thread
/// had recorded nothing yet), `text`, `chars`, `cut`.
fn chunk_dict<'py>(
    py: Python<'py>,
    c: &squall_trace::OutputChunk,
    meta: Option<(u32, &str)>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("stream", c.stream.name())?;
    d.set_item("flow_id", meta.map(|m| m.0))?;
    d.set_item("thread_id", c.thread_id)?;
    d.set_item("thread_name", meta.map(|m| m.1))?;
    d.set_item("idx", c.at.map(|a| a.1))?;
    d.set_item("text", &c.text)?;
    d.set_item("chars", c.chars)?;
    d.set_item("cut", c.is_cut())?;
    Ok(d)
}

/// The live recording's outputs: (chunks as dicts, (chunks not kept, their characters)).
#[pyfunction]
fn outputs<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyList>, (u64, u64))> {
    // SAFETY: GIL held (pyfunction); building dicts runs no code that records.
    let (eng, out): (&Engine, &Outputs) = unsafe { (ENGINE.get(), OUTPUTS.get()) };
    let list = PyList::empty(py);
    for c in out.chunks() {
        let meta = c.at.and_then(|(n, _)| eng.recs.get(n as usize)?.as_deref()).map(|r| (r.flow, r.name.as_str()));
        list.append(chunk_dict(py, c, meta)?)?;
    }
    Ok((list, out.not_kept()))
}

/// A recording file's outputs, as [`outputs`] gives the live ones.
#[pyfunction]
fn file_outputs<'py>(py: Python<'py>, file: &Bound<'py, FileRecording>) -> PyResult<(Bound<'py, PyList>, (u64, u64))> {
    let rec = file.get().recording();
    let list = PyList::empty(py);
    for c in rec.outputs.chunks() {
        let meta = c.at.and_then(|(i, _)| rec.timelines.get(i as usize)).map(|t| (t.meta.flow, t.meta.name.as_str()));
        list.append(chunk_dict(py, c, meta)?)?;
    }
    Ok((list, rec.outputs.not_kept()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OutputTee>()?;
    m.add_function(wrap_pyfunction!(output_tee, m)?)?;
    m.add_function(wrap_pyfunction!(outputs, m)?)?;
    m.add_function(wrap_pyfunction!(file_outputs, m)?)?;
    Ok(())
}
