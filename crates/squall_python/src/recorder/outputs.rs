//! Capturing what the program writes to stdout and stderr, without changing it.
//!
//! `squall.outputs.capture()` gives the process's two text streams an instance attribute
//! `write` (a tee: a builtin function around the stream's own bound `write`): `print()`, `sys.stdout.write`
//! and `writelines` look `write` up on the instance, so they reach the tee, while `sys.stdout`
//! stays the same object of the same type. The tee calls the real `write` first, with the same
//! arguments, and returns or raises what it did (a C callable: no frame of squall's shows in a
//! traceback); only then, if it succeeded and recording is on, it notes the text with the
//! writing thread's last entry. It runs no Python code of its own and never raises.
//!
//! Binary writes (`sys.stdout.buffer.write(b)`) are teed the same way on the buffer object,
//! and noted decoded with the text stream's encoding, bytes that are not valid text as `\xNN`
//! escapes (`backslashreplace`). The text layer writes into that same buffer through the same
//! `write` lookup when it flushes what it holds: those bytes were noted as text already. So the
//! text stream's `write` and `flush` tees mark the thread as inside its text layer
//! (`IN_TEXT`), and the buffer's tee notes nothing while that mark is up.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use squall_trace::{OutStream, Outputs};

use crate::gil_cell::GilCell;
use crate::recorder::engine::{Engine, ENGINE, RECORDING};
use squall_store::Recording;

/// Every chunk written while recording, live (saved by `sink.rs` with the entries).
pub static OUTPUTS: GilCell<Outputs> = GilCell::new(Outputs::new());

unsafe extern "C" {
    fn PyThread_get_thread_native_id() -> std::ffi::c_ulong;
}

/// The tee's method def: `write(*args, **kwargs)`, its self a tuple `(write, stream code)`;
/// METH_FASTCALL passes the arguments on as they came. Calling it is one more C call, which
/// before 3.12 counts against the recursion limit like a frame: `tee_call` uncounts it while the
/// wrapped `write` runs, so that a program printing at its recursion limit fails where it fails
/// without squall (3.12+ count C calls apart from frames, against a limit of their own).
static TEE_DEF: OnceLock<usize> = OnceLock::new();
/// The same for a text stream's `flush` (named `flush`).
static FLUSH_DEF: OnceLock<usize> = OnceLock::new();

fn tee_def(flush: bool) -> *mut ffi::PyMethodDef {
    let (cell, name, doc) = if flush {
        (
            &FLUSH_DEF,
            c"flush",
            c"The stream's flush (squall.outputs: what it writes into the buffer was noted as text).",
        )
    } else {
        (&TEE_DEF, c"write", c"The stream's write, noting what it wrote in squall's recording (squall.outputs).")
    };
    *cell.get_or_init(|| {
        Box::leak(Box::new(ffi::PyMethodDef {
            ml_name: name.as_ptr(),
            ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: tee_call },
            ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
            ml_doc: doc.as_ptr(),
        })) as *mut ffi::PyMethodDef as usize
    }) as *mut ffi::PyMethodDef
}

/// Bumped by every clear: a write that was under way when the recording was cleared is not
/// noted in the new one.
static CLEARS: AtomicU64 = AtomicU64::new(0);

/// The kinds of tee, in the code kept in its self tuple beside the stream (1 stdout, 2 stderr).
/// A text stream's `write`: notes a `str`.
const TEXT_WRITE: i64 = 0;
/// A text stream's buffer's `write`: notes bytes (or any buffer) written from outside the text
/// layer, decoded with the encoding kept third in the self tuple.
const BINARY_WRITE: i64 = 4;
/// A text stream's `flush`: notes nothing, only marks the text layer's own writes into the
/// buffer (`IN_TEXT`).
const TEXT_FLUSH: i64 = 8;
const KIND_MASK: i64 = 12;

thread_local! {
    /// How many text-stream tees (`write`, `flush`) this thread is inside: what reaches the
    /// buffer meanwhile is the text layer's flush of text already noted.
    static IN_TEXT: Cell<u32> = const { Cell::new(0) };
}

/// Calls the wrapped `write` with the arguments as given and returns or raises what it did;
/// after a successful call with one `str` argument, notes it (recording on), linked to the entry
/// that was the thread's last when the call started (a signal handler run inside `write` may
/// record more).
unsafe extern "C" fn tee_call(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: `slf` is the tuple `output_tee` made (its second item an int it made); the GIL is
    // held (CPython calls us); `args` holds `nargs` borrowed references for the duration of the
    // call.
    unsafe {
        let write = ffi::PyTuple_GET_ITEM(slf, 0);
        let code = ffi::PyLong_AsLong(ffi::PyTuple_GET_ITEM(slf, 1)) as i64;
        let kind = code & KIND_MASK;
        let one_arg = nargs == 1 && kwnames.is_null() && RECORDING.load(Ordering::Relaxed);
        let noting = one_arg
            && match kind {
                TEXT_WRITE => ffi::PyUnicode_Check(*args) != 0,
                BINARY_WRITE => IN_TEXT.with(Cell::get) == 0 && ffi::PyObject_CheckBuffer(*args) != 0,
                _ => false,
            };
        let at = if noting { Some(last_entry()) } else { None };
        let clears = CLEARS.load(Ordering::Relaxed);
        let text_layer = kind != BINARY_WRITE;
        if text_layer {
            IN_TEXT.with(|c| c.set(c.get() + 1));
        }
        #[cfg(not(Py_3_12))]
        let uncounted = crate::recorder::recursion::shift_recursion(1);
        let out = ffi::PyObject_Vectorcall(write, args, nargs as usize, kwnames);
        #[cfg(not(Py_3_12))]
        if uncounted {
            crate::recorder::recursion::shift_recursion(-1);
        }
        if text_layer {
            IN_TEXT.with(|c| c.set(c.get().saturating_sub(1)));
        }
        let Some((thread_id, at)) = at else { return out };
        if out.is_null() || clears != CLEARS.load(Ordering::Relaxed) {
            return out;
        }
        let stream = if code & 3 == 2 { OutStream::Stderr } else { OutStream::Stdout };
        let text = if kind == BINARY_WRITE { binary_text(slf, *args, out) } else { str_text(*args) };
        if let Some(text) = text {
            OUTPUTS.get().write(stream, thread_id, at, &text);
        }
        out
    }
}

/// The text of a `str` written, as UTF-8 (lone surrogates as `?`); None if it cannot be had.
///
/// # Safety
/// GIL held; `s` a live `str`.
unsafe fn str_text(s: *mut ffi::PyObject) -> Option<String> {
    // SAFETY: this fn's contract. A new bytes object: `PyUnicode_AsUTF8AndSize` would cache
    // UTF-8 in the program's str (its `sys.getsizeof` would grow).
    unsafe {
        let bytes = ffi::PyUnicode_AsEncodedString(s, c"utf-8".as_ptr(), c"replace".as_ptr());
        if bytes.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        let data =
            std::slice::from_raw_parts(ffi::PyBytes_AsString(bytes).cast::<u8>(), ffi::PyBytes_Size(bytes) as usize);
        let text = String::from_utf8_lossy(data).into_owned();
        ffi::Py_DECREF(bytes);
        Some(text)
    }
}

/// The text of bytes (any buffer) `b` written to a stream's buffer, whose `write` returned
/// `out`: decoded with the text stream's encoding (third in `slf`), bytes that are not valid text
/// as `\xNN` (`backslashreplace`). A raw stream may write fewer bytes than given (its `write`
/// returns how many; None: none): only those are noted.
///
/// # Safety
/// GIL held; `slf` the tee's self tuple, `b` a live object supporting the buffer protocol, `out`
/// the live result of the call.
unsafe fn binary_text(slf: *mut ffi::PyObject, b: *mut ffi::PyObject, out: *mut ffi::PyObject) -> Option<String> {
    // SAFETY: this fn's contract; the view is released before returning.
    unsafe {
        let mut view: ffi::Py_buffer = std::mem::zeroed();
        if ffi::PyObject_GetBuffer(b, &mut view, ffi::PyBUF_SIMPLE) != 0 {
            ffi::PyErr_Clear();
            return None;
        }
        let mut len = view.len.max(0);
        if out == ffi::Py_None() {
            len = 0;
        } else if ffi::PyLong_Check(out) != 0 {
            let n = ffi::PyLong_AsSsize_t(out);
            if n == -1 && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
            } else if (0..len).contains(&n) {
                len = n;
            }
        }
        let data = std::slice::from_raw_parts(view.buf.cast::<u8>(), len as usize);
        let encoding = ffi::PyTuple_GET_ITEM(slf, 2);
        let text = if len == 0 {
            None
        } else if encoding == ffi::Py_None() {
            Some(utf8_escaped(data))
        } else {
            decoded(data, encoding)
        };
        ffi::PyBuffer_Release(&mut view);
        text
    }
}

/// `data` decoded with `encoding` (a `str`), `backslashreplace`, as UTF-8 text.
///
/// # Safety
/// GIL held; `encoding` a live `str`.
unsafe fn decoded(data: &[u8], encoding: *mut ffi::PyObject) -> Option<String> {
    // SAFETY: this fn's contract; every new reference is released.
    unsafe {
        let name = ffi::PyUnicode_AsUTF8(encoding);
        if name.is_null() {
            ffi::PyErr_Clear();
            return Some(utf8_escaped(data));
        }
        let s = ffi::PyUnicode_Decode(
            data.as_ptr().cast(),
            data.len() as ffi::Py_ssize_t,
            name,
            c"backslashreplace".as_ptr(),
        );
        if s.is_null() {
            ffi::PyErr_Clear();
            return Some(utf8_escaped(data));
        }
        let text = str_text(s);
        ffi::Py_DECREF(s);
        text
    }
}

/// `data` as UTF-8 text, each byte of an invalid sequence as `\xNN` (Python's
/// `backslashreplace`).
fn utf8_escaped(mut data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len());
    loop {
        match std::str::from_utf8(data) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = data.split_at(e.valid_up_to());
                // SAFETY: `from_utf8` said these bytes are valid UTF-8.
                out.push_str(unsafe { std::str::from_utf8_unchecked(good) });
                let bad = e.error_len().unwrap_or(rest.len());
                for b in &rest[..bad] {
                    out.push_str(&format!("\\x{b:02x}"));
                }
                data = &rest[bad..];
            }
        }
    }
}

/// The `write` a tee wraps, or `None` for anything else.
#[pyfunction]
fn tee_wrapped(py: Python<'_>, obj: &Bound<'_, PyAny>) -> Option<Py<PyAny>> {
    // SAFETY: GIL held; a builtin function's self is read only when its C function is the tee's.
    unsafe {
        let p = obj.as_ptr();
        if ffi::PyCFunction_Check(p) == 0 {
            return None;
        }
        let f = ffi::PyCFunction_GetFunction(p)?;
        if f as *const () != tee_call as *const () {
            return None;
        }
        let slf = ffi::PyCFunction_GetSelf(p);
        Some(Bound::from_borrowed_ptr(py, ffi::PyTuple_GET_ITEM(slf, 0)).unbind())
    }
}

/// The running thread (its native id) and its last entry in the current flow, if it recorded
/// any (nothing is created for a thread that recorded nothing).
fn last_entry() -> (u64, Option<(u32, u32)>) {
    // SAFETY: exported by CPython >= 3.8; needs nothing but a thread.
    let thread_id = unsafe { PyThread_get_thread_native_id() } as u64;
    // The usual case: this thread recorded the last entry (no search over the flow's threads).
    // SAFETY: GIL held (called from the tee); no Python code runs while the reference is used.
    let at = match unsafe { crate::recorder::engine::current_rec_cached() } {
        Some(rec) if rec.thread_id == thread_id && !rec.tl.is_empty() => Some((rec.number, rec.tl.len() as u32 - 1)),
        _ => {
            // SAFETY: as above; the reference above is no longer used.
            let eng: &Engine = unsafe { ENGINE.get() };
            eng.flows.get(&eng.current_flow).and_then(|nums| {
                nums.iter().find_map(|&n| {
                    let rec = eng.recs.get(n as usize)?.as_deref()?;
                    (rec.thread_id == thread_id && !rec.tl.is_empty()).then(|| (n, rec.tl.len() as u32 - 1))
                })
            })
        }
    };
    (thread_id, at)
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

/// A tee around `write` (a stream's bound `write`, or its `flush`) for `stream` ("stdout" or
/// "stderr"): a builtin function named `write`. `kind`: "text" (the text stream's `write`),
/// "binary" (its buffer's `write`; `encoding`: the text stream's, None for UTF-8) or "flush"
/// (the text stream's `flush`: notes nothing).
#[pyfunction]
#[pyo3(signature = (write, stream, kind="text", encoding=None))]
fn output_tee(
    py: Python<'_>,
    write: Py<PyAny>,
    stream: &str,
    kind: &str,
    encoding: Option<String>,
) -> PyResult<Py<PyAny>> {
    let kind = match kind {
        "text" => TEXT_WRITE,
        "binary" => BINARY_WRITE,
        "flush" => TEXT_FLUSH,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown tee kind {other:?}: expected \"text\", \"binary\" or \"flush\""
            )))
        }
    };
    let code = i64::from(stream_of(stream)? as u8) | kind;
    let encoding = match encoding {
        Some(e) if !matches!(e.to_ascii_lowercase().replace('_', "-").as_str(), "utf-8" | "utf8") => {
            e.into_pyobject(py)?.into_any().unbind()
        }
        _ => py.None(),
    };
    let slf = PyTuple::new(py, [write, code.into_pyobject(py)?.into_any().unbind(), encoding])?;
    // SAFETY: a static method def; `slf` is kept alive by the function (it holds a reference).
    unsafe {
        let f = ffi::PyCFunction_NewEx(tee_def(kind == TEXT_FLUSH), slf.as_ptr(), std::ptr::null_mut());
        Ok(Bound::from_owned_ptr_or_err(py, f)?.unbind())
    }
}

/// Forgets the live outputs (with `clear_recordings`).
pub fn clear() {
    CLEARS.fetch_add(1, Ordering::Relaxed);
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
pub(crate) fn live_outputs<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyList>, (u64, u64))> {
    // SAFETY: GIL held (pyfunction); building dicts runs no code that records.
    let (eng, out): (&Engine, &Outputs) = unsafe { (ENGINE.get(), OUTPUTS.get()) };
    let list = PyList::empty(py);
    for c in out.chunks() {
        let meta = c.at.and_then(|(n, _)| eng.recs.get(n as usize)?.as_deref()).map(|r| (r.flow, r.name.as_str()));
        list.append(chunk_dict(py, c, meta)?)?;
    }
    Ok((list, out.not_kept()))
}

/// A recording file's outputs, as [`live_outputs`] gives the live ones.
pub(crate) fn file_outputs<'py>(py: Python<'py>, rec: &Recording) -> PyResult<(Bound<'py, PyList>, (u64, u64))> {
    let list = PyList::empty(py);
    for c in rec.outputs.chunks() {
        let meta = c.at.and_then(|(i, _)| rec.timelines.get(i as usize)).map(|t| (t.meta.flow, t.meta.name.as_str()));
        list.append(chunk_dict(py, c, meta)?)?;
    }
    Ok((list, rec.outputs.not_kept()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(output_tee, m)?)?;
    m.add_function(wrap_pyfunction!(tee_wrapped, m)?)?;
    Ok(())
}
