//! The implicit awaits of `async for` and `async with`, recorded as suspensions.
//!
//! `await x` is rewritten into `_sq_resume(FORM, await _sq_suspend(SITE, x))`. The awaits that
//! `async for` (each `__anext__()`) and `async with` (`__aenter__()`, `__aexit__()`) make have no
//! expression to wrap, so the rewriter wraps the async iterable / context manager instead:
//!
//! ```text
//! async for x in _sq_afor(SITE, FORM, it): ...        async with _sq_awith(SITE, FORM, cm) as y: ...
//! ```
//!
//! `AsyncForRecorder.__anext__` / `AsyncWithRecorder.__aenter__`/`__aexit__` call the wrapped
//! object's method, record the suspension and hand CPython an [`Awaiting`] that drives the
//! awaitable's iterator unchanged and records the resumption when it finishes. As for `await`,
//! the frame's segment ends before the awaited code runs and the next one starts with the
//! result, unless the awaitable runs a rewritten frame inside this one (a rewritten async
//! generator's `__anext__()`, a rewritten `__aenter__`): then that frame nests in this frame's
//! segment and no suspension is recorded (`record::await_delegates`, delegation.rs).
//!
//! What is recorded: `suspend(SITE, type(awaitable))` and `resume(FORM, result)`, or
//! `resume(FORM, type(exc))` when the await raised (`StopAsyncIteration` ending a loop, say).
//! Types, not the objects: the awaitable (an `async_generator_asend`, an `__anext__()`
//! coroutine) and the exception (its traceback) hold the iterator or the manager, and a
//! recording keeps what it records alive: an async generator left by `break` would no longer
//! be finalized when the program drops it.
//!
//! Nothing the program can see changes. The wrappers are C types: no frame of theirs appears in
//! tracebacks. Every error the protocols can raise is left to CPython where it can be: an object
//! without `__aiter__`, `__aenter__` or `__aexit__` is not wrapped at all, an `__aiter__` /
//! `__anext__` / `__aenter__` / `__aexit__` result CPython would reject is handed back to it
//! as is, so CPython raises its own message (they differ between versions). The one error that
//! must be made here is the one `__anext__`'s awaitable causes when its `__await__` fails
//! (CPython names the awaitable's type in it): it is built exactly as `GET_ANEXT` builds it.

// PyErr_Fetch / PyErr_Restore / PyErr_NormalizeException: the (type, value, traceback) form is
// the one 3.9-3.11 have, and it mirrors CPython's own code for these protocols; 3.12+ deprecate it
// (it still works there).
#![allow(deprecated)]

// The contract of every `unsafe fn` in this module: the GIL is held and the object pointers it
// is given are live objects (borrowed for the call). The entry points are called by CPython,
// attached, with live arguments; the pyclass methods run with the GIL held.

use std::ffi::{c_ulong, CStr};
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;

use crate::gil_cell::GilCell;

unsafe extern "C" {
    /// Exported by CPython 3.9–3.13 (Include/cpython/object.h); a borrowed reference, no error.
    fn _PyType_Lookup(tp: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

const CO_ITERABLE_COROUTINE: c_ulong = 0x0100;

/// Interned names, made once.
struct Names {
    aenter: *mut ffi::PyObject,
    aexit: *mut ffi::PyObject,
    send: *mut ffi::PyObject,
    throw: *mut ffi::PyObject,
    close: *mut ffi::PyObject,
    cr_await: *mut ffi::PyObject,
}

static NAMES: GilCell<Option<Names>> = GilCell::new(None);

fn names() -> &'static Names {
    // SAFETY: the GIL is held by every caller; the names are made in `register` first.
    unsafe { NAMES.get().as_ref().expect("awaiting::register runs at module init") }
}

// --- CPython's checks, as the interpreter makes them ---------------------------------------

unsafe fn async_slots(o: *mut ffi::PyObject) -> *mut ffi::PyAsyncMethods {
    // SAFETY: this fn's contract (the module's, see its top): `o` is a live object, so its type is
    // readable.
    unsafe { (*ffi::Py_TYPE(o)).tp_as_async }
}

unsafe fn has_aiter(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live; `tp_as_async` may be null and is checked before it
    // is read.
    unsafe {
        let am = async_slots(o);
        !am.is_null() && (*am).am_aiter.is_some()
    }
}

unsafe fn has_anext(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live; `tp_as_async` may be null and is checked before it
    // is read.
    unsafe {
        let am = async_slots(o);
        !am.is_null() && (*am).am_anext.is_some()
    }
}

unsafe fn has_await(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live; `tp_as_async` may be null and is checked before it
    // is read.
    unsafe {
        let am = async_slots(o);
        !am.is_null() && (*am).am_await.is_some()
    }
}

unsafe fn is_gen_or_coro(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live; comparing its type with the static types reads
    // nothing else.
    unsafe {
        let t = ffi::Py_TYPE(o);
        t == &raw mut ffi::PyGen_Type || t == &raw mut ffi::PyCoro_Type
    }
}

/// A generator made by a `types.coroutine` function (`CO_ITERABLE_COROUTINE`): awaitable as is.
unsafe fn is_iterable_coroutine(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract (GIL held, `o` live); every new reference is released and every
    // error cleared before returning.
    unsafe {
        if ffi::Py_TYPE(o) != &raw mut ffi::PyGen_Type {
            return false;
        }
        let code = ffi::PyObject_GetAttrString(o, c"gi_code".as_ptr());
        if code.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let flags = ffi::PyObject_GetAttrString(code, c"co_flags".as_ptr());
        ffi::Py_DECREF(code);
        if flags.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let f = ffi::PyLong_AsUnsignedLongMask(flags);
        ffi::Py_DECREF(flags);
        if f == c_ulong::MAX && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        f & CO_ITERABLE_COROUTINE != 0
    }
}

/// Something `await` accepts (else CPython raises its own error for it).
unsafe fn is_awaitable(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract (GIL held, `o` live), which the callees require too.
    unsafe { ffi::Py_TYPE(o) == &raw mut ffi::PyCoro_Type || has_await(o) || is_iterable_coroutine(o) }
}

/// `type(o).__name__` as `%.100s` prints it.
unsafe fn type_name(o: *mut ffi::PyObject) -> String {
    // SAFETY: this fn's contract: `o` is live, and every type's `tp_name` is a NUL-terminated
    // string that lives as long as the type.
    unsafe {
        let raw = CStr::from_ptr((*ffi::Py_TYPE(o)).tp_name).to_bytes();
        String::from_utf8_lossy(&raw[..raw.len().min(100)]).into_owned()
    }
}

/// Sets `exc_type(msg)` as CPython's `PyErr_SetString` does (context: the handled exception).
unsafe fn set_error(exc_type: *mut ffi::PyObject, msg: &str) {
    // SAFETY: this fn's contract: the GIL is held; `exc_type` is an exception type; the message is
    // passed with its length (no NUL needed) and its reference is released.
    unsafe {
        let m = ffi::PyUnicode_FromStringAndSize(msg.as_ptr().cast(), msg.len() as ffi::Py_ssize_t);
        if m.is_null() {
            return; // MemoryError stays set
        }
        ffi::PyErr_SetObject(exc_type, m);
        ffi::Py_DECREF(m);
    }
}

/// What `__await__` gave, checked as `_PyCoro_GetAwaitableIter` checks it.
enum AwaitIter {
    /// The iterator the await drives (a new reference).
    Ok(*mut ffi::PyObject),
    /// `__await__` returned something CPython rejects (a new reference): CPython's error is set.
    Rejected(*mut ffi::PyObject),
    /// `__await__` raised: its exception is set.
    Raised,
}

/// `_PyCoro_GetAwaitableIter(o)` for an awaitable `o` (`is_awaitable(o)`).
unsafe fn await_iter(o: *mut ffi::PyObject) -> AwaitIter {
    // SAFETY: this fn's contract (GIL held, `o` live and awaitable); each branch returns an owned
    // reference or leaves an error set, as `AwaitIter` says.
    unsafe {
        if ffi::Py_TYPE(o) == &raw mut ffi::PyCoro_Type || is_iterable_coroutine(o) {
            ffi::Py_INCREF(o);
            return AwaitIter::Ok(o);
        }
        let am = async_slots(o);
        let Some(getter) = (if am.is_null() { None } else { (*am).am_await }) else {
            set_error(ffi::PyExc_TypeError, "squall: not awaitable");
            return AwaitIter::Raised;
        };
        let res = getter(o);
        if res.is_null() {
            return AwaitIter::Raised;
        }
        if ffi::Py_TYPE(res) == &raw mut ffi::PyCoro_Type || is_iterable_coroutine(res) {
            set_error(ffi::PyExc_TypeError, "__await__() returned a coroutine");
            return AwaitIter::Rejected(res);
        }
        if ffi::PyIter_Check(res) == 0 {
            let msg = format!("__await__() returned non-iterator of type '{}'", type_name(res));
            set_error(ffi::PyExc_TypeError, &msg);
            return AwaitIter::Rejected(res);
        }
        AwaitIter::Ok(res)
    }
}

/// `_PyErr_FormatFromCause(TypeError, msg)`: the pending exception becomes the new TypeError's
/// `__cause__` and `__context__` (with its traceback attached), as `GET_ANEXT` makes it.
unsafe fn type_error_from_cause(msg: &str) {
    // SAFETY: this fn's contract: the GIL is held and an exception is pending; SetCause/SetContext
    // steal the references given them (`v` is increfed once for the second), the rest are restored
    // or released.
    unsafe {
        let (mut t, mut v, mut tb) = (null_mut(), null_mut(), null_mut());
        ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
        ffi::PyErr_NormalizeException(&mut t, &mut v, &mut tb);
        if !tb.is_null() {
            ffi::PyException_SetTraceback(v, tb);
            ffi::Py_DECREF(tb);
        }
        ffi::Py_XDECREF(t);
        set_error(ffi::PyExc_TypeError, msg);
        let (mut t2, mut v2, mut tb2) = (null_mut(), null_mut(), null_mut());
        ffi::PyErr_Fetch(&mut t2, &mut v2, &mut tb2);
        ffi::PyErr_NormalizeException(&mut t2, &mut v2, &mut tb2);
        if !v.is_null() && !v2.is_null() {
            ffi::Py_INCREF(v);
            ffi::PyException_SetCause(v2, v); // steals
            ffi::PyException_SetContext(v2, v); // steals
        } else {
            ffi::Py_XDECREF(v);
        }
        ffi::PyErr_Restore(t2, v2, tb2);
    }
}

/// `_PyObject_LookupSpecial(o, name)`: looked up on the type, bound by its `__get__` if any.
/// A new reference, or null (with an error set only if binding raised).
unsafe fn special_lookup(o: *mut ffi::PyObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this fn's contract (GIL held, `o` and `name` live); `_PyType_Lookup` returns a
    // borrowed reference, increfed before the descriptor's `__get__` may run code.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        let res = _PyType_Lookup(tp, name);
        if res.is_null() {
            return null_mut();
        }
        ffi::Py_INCREF(res);
        match (*ffi::Py_TYPE(res)).tp_descr_get {
            None => res,
            Some(get) => {
                let bound = get(res, o, tp.cast());
                ffi::Py_DECREF(res);
                bound
            }
        }
    }
}

unsafe fn type_has(o: *mut ffi::PyObject, name: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract (GIL held, `o` and `name` live); the borrowed result is only
    // compared with null.
    unsafe { !_PyType_Lookup(ffi::Py_TYPE(o), name).is_null() }
}

/// The last static (never freed) type found to have `throw()`: asyncio's future iterators and
/// async generators' `asend` objects are awaited over and over.
static THROWS: GilCell<*mut ffi::PyTypeObject> = GilCell::new(null_mut());

/// `type(o)` has `throw()`: CPython delegates `throw()` to it rather than raising in the frame.
unsafe fn has_throw(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract (GIL held, `o` live); `THROWS` is a GIL-guarded cell and holds
    // only static types, which are never freed, so comparing with it cannot mistake a new type at a
    // freed one's address.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if *THROWS.get() == tp {
            return true;
        }
        let has = type_has(o, names().throw);
        if has && (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0 {
            *THROWS.get() = tp;
        }
        has
    }
}

/// The value a pending-or-fetched StopIteration carries (borrowed), read without normalizing it:
/// `v` is the fetched value (an instance, or before 3.12 possibly the raw argument or a tuple
/// of arguments), as `_PyGen_FetchStopIterationValue` reads it.
unsafe fn stop_value(v: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this fn's contract (GIL held); `v` is null or a fetched exception value, each case
    // read as CPython lays it out (a StopIteration instance's `value`, a tuple's first item).
    unsafe {
        if v.is_null() {
            return ffi::Py_None();
        }
        if ffi::PyObject_TypeCheck(v, ffi::PyExc_StopIteration.cast()) != 0 {
            let value = (*v.cast::<ffi::PyStopIterationObject>()).value;
            return if value.is_null() { ffi::Py_None() } else { value };
        }
        if ffi::PyTuple_Check(v) != 0 {
            return if ffi::PyTuple_GET_SIZE(v) > 0 { ffi::PyTuple_GET_ITEM(v, 0) } else { ffi::Py_None() };
        }
        v
    }
}

/// Raises `StopIteration(value)` as a sub-iterator's return (`_PyGen_SetStopIterationValue`).
#[cfg(Py_3_10)]
unsafe fn set_stop_iteration(value: *mut ffi::PyObject) {
    // SAFETY: this fn's contract (GIL held, `value` live); the exception made is released after it
    // is set.
    unsafe {
        if ffi::PyTuple_Check(value) == 0 && ffi::PyExceptionInstance_Check(value) == 0 {
            ffi::PyErr_SetObject(ffi::PyExc_StopIteration, value);
            return;
        }
        let e = ffi::PyObject_CallOneArg(ffi::PyExc_StopIteration, value);
        if !e.is_null() {
            ffi::PyErr_SetObject(ffi::PyExc_StopIteration, e);
            ffi::Py_DECREF(e);
        }
    }
}

/// A pending exception, kept aside while the recorder runs.
struct Saved(*mut ffi::PyObject, *mut ffi::PyObject, *mut ffi::PyObject);

impl Saved {
    unsafe fn take() -> Saved {
        let (mut t, mut v, mut tb) = (null_mut(), null_mut(), null_mut());
        // SAFETY: the caller holds the GIL (this fn's contract); the three out-pointers are locals.
        unsafe { ffi::PyErr_Fetch(&mut t, &mut v, &mut tb) };
        Saved(t, v, tb)
    }

    unsafe fn restore(self) {
        // SAFETY: the caller holds the GIL; the three references were taken by `take` and are
        // handed back (PyErr_Restore steals them).
        unsafe { ffi::PyErr_Restore(self.0, self.1, self.2) }
    }
}

// --- recording -------------------------------------------------------------------------------

/// Where the events go: the site and form of the `async for` / `async with`, and the entry
/// points (the engine's own, or an explicit engine's `suspend` / `resume` callables).
struct Rec {
    site: Py<PyAny>,
    form: Py<PyAny>,
    hooks: Option<(Py<PyAny>, Py<PyAny>)>,
}

impl Rec {
    fn clone_ref(&self, py: Python<'_>) -> Rec {
        Rec {
            site: self.site.clone_ref(py),
            form: self.form.clone_ref(py),
            hooks: self.hooks.as_ref().map(|(s, r)| (s.clone_ref(py), r.clone_ref(py))),
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some((s, r)) = &self.hooks {
            visit.call(s)?;
            visit.call(r)?;
        }
        Ok(())
    }

    /// Records `suspend(site, value)` or `resume(form, value)`. Never raises: a pending
    /// exception is kept aside and put back; an error of the recorder is dropped.
    unsafe fn record(&self, resume: bool, value: *mut ffi::PyObject) {
        // SAFETY: the caller holds the GIL and `value` is live (this fn's contract); `args`
        // outlives the vectorcall; the pending exception is set aside and restored, so the
        // program's error state is unchanged.
        unsafe {
            let saved = Saved::take();
            let id = if resume { self.form.as_ptr() } else { self.site.as_ptr() };
            let mut args = [id, value];
            let r = match &self.hooks {
                None if resume => crate::recorder::record::resume(null_mut(), args.as_mut_ptr(), 2),
                None => crate::recorder::record::suspend(null_mut(), args.as_mut_ptr(), 2),
                Some((s, r)) => {
                    let f = if resume { r } else { s };
                    ffi::PyObject_Vectorcall(f.as_ptr(), args.as_mut_ptr(), 2, null_mut())
                }
            };
            if r.is_null() {
                ffi::PyErr_Clear();
            } else {
                ffi::Py_DECREF(r);
            }
            saved.restore();
        }
    }

    /// The await ended with the exception that is pending: recorded as the frame's resumption
    /// with the exception's type; the exception stays pending.
    unsafe fn record_raised(&self) {
        // SAFETY: the caller holds the GIL with an exception pending (this fn's contract); fetched
        // references are restored unchanged.
        unsafe {
            let (mut t, mut v, mut tb) = (null_mut(), null_mut(), null_mut());
            ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
            ffi::PyErr_NormalizeException(&mut t, &mut v, &mut tb);
            if !v.is_null() {
                self.record(true, ffi::Py_TYPE(v).cast());
            }
            ffi::PyErr_Restore(t, v, tb);
        }
    }
}

// --- the awaitable -----------------------------------------------------------------------------

/// What `__anext__` / `__aenter__` / `__aexit__` hand to CPython: an awaitable whose iterator
/// is itself, driving the wrapped awaitable's iterator (`it`) as `await` would drive it. Without
/// `rec` it is a bare pass-through: `__await__` returns `it` itself and CPython drives that.
#[pyclass(module = "squall._engine", name = "Awaiting")]
pub struct Awaiting {
    it: Option<Py<PyAny>>,
    rec: Option<Rec>,
}

/// One step of the iterator: what `YIELD_FROM` / `SEND` does with a sub-iterator.
enum Step {
    Yielded(*mut ffi::PyObject),
    /// The await finished, recorded: its StopIteration (if its result is not None) is pending.
    Done,
}

impl Awaiting {
    fn new_wrapper(py: Python<'_>, it: *mut ffi::PyObject, rec: Option<Rec>) -> PyResult<Py<PyAny>> {
        // SAFETY: `it` is a new reference, owned from here on.
        let it = unsafe { Bound::from_owned_ptr(py, it) }.unbind();
        Ok(Py::new(py, Awaiting { it: Some(it), rec })?.into_any())
    }

    fn it(&self) -> *mut ffi::PyObject {
        self.it.as_ref().map_or(null_mut(), |i| i.as_ptr())
    }

    /// After a step of `it` returned `res`: a yielded value, or the end of the await, recorded.
    unsafe fn finish(&self, res: *mut ffi::PyObject) -> Result<Step, ()> {
        // SAFETY: the caller holds the GIL and `res` is null or a new reference from a step of `it`
        // (this fn's contract); the references fetched are restored to carry the result to CPython.
        unsafe {
            if !res.is_null() {
                return Ok(Step::Yielded(res));
            }
            let Some(rec) = &self.rec else {
                return if ffi::PyErr_Occurred().is_null() { Ok(Step::Done) } else { Err(()) };
            };
            if ffi::PyErr_Occurred().is_null() {
                rec.record(true, ffi::Py_None());
                return Ok(Step::Done);
            }
            if ffi::PyErr_ExceptionMatches(ffi::PyExc_StopIteration) != 0 {
                let (mut t, mut v, mut tb) = (null_mut(), null_mut(), null_mut());
                ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
                let value = stop_value(v);
                ffi::Py_INCREF(value);
                rec.record(true, value);
                ffi::Py_DECREF(value);
                ffi::PyErr_Restore(t, v, tb); // the StopIteration carries the result to CPython
                return Ok(Step::Done);
            }
            rec.record_raised();
            Err(())
        }
    }

    /// A generator or coroutine sent `arg` without a StopIteration made and caught on return.
    #[cfg(Py_3_10)]
    unsafe fn send_gen(&self, it: *mut ffi::PyObject, arg: *mut ffi::PyObject) -> Result<Step, ()> {
        // SAFETY: the caller holds the GIL, `it` is a live generator or coroutine and `arg` live
        // (this fn's contract); PyIter_Send's result is owned and released here.
        unsafe {
            let mut result = null_mut();
            match ffi::PyIter_Send(it, arg, &mut result) {
                ffi::PySendResult::PYGEN_NEXT => Ok(Step::Yielded(result)),
                ffi::PySendResult::PYGEN_RETURN => {
                    if let Some(rec) = &self.rec {
                        rec.record(true, result);
                    }
                    if result != ffi::Py_None() {
                        set_stop_iteration(result);
                    }
                    ffi::Py_DECREF(result);
                    Ok(Step::Done)
                }
                ffi::PySendResult::PYGEN_ERROR => {
                    if let Some(rec) = &self.rec {
                        rec.record_raised();
                    }
                    Err(())
                }
            }
        }
    }

    /// `send(v)` (`v` null: `next()`), dispatched as CPython dispatches to a sub-iterator.
    unsafe fn step(&self, v: *mut ffi::PyObject) -> Result<Step, ()> {
        // SAFETY: the caller holds the GIL (this fn's contract); `it` is kept alive by `self` for
        // the step, and a type's `tp_iternext` is called only on an iterator of that type.
        unsafe {
            let it = self.it();
            if it.is_null() {
                set_error(ffi::PyExc_RuntimeError, "squall: awaiting a cleared object");
                return Err(());
            }
            let arg = if v.is_null() { ffi::Py_None() } else { v };
            #[cfg(Py_3_10)]
            if is_gen_or_coro(it) {
                return self.send_gen(it, arg);
            }
            let tp_next = (*ffi::Py_TYPE(it)).tp_iternext;
            let res = if !is_gen_or_coro(it) && arg == ffi::Py_None() && ffi::PyIter_Check(it) != 0 {
                match tp_next {
                    Some(next) => next(it),
                    None => ffi::PyObject_CallMethodOneArg(it, names().send, arg),
                }
            } else {
                ffi::PyObject_CallMethodOneArg(it, names().send, arg)
            };
            self.finish(res)
        }
    }
}

fn raised(py: Python<'_>) -> PyErr {
    PyErr::take(py).unwrap_or_else(|| pyo3::exceptions::PyStopIteration::new_err(()))
}

fn owned(py: Python<'_>, p: *mut ffi::PyObject) -> Py<PyAny> {
    // SAFETY: `p` is a non-null new reference.
    unsafe { Bound::from_owned_ptr(py, p) }.unbind()
}

#[pymethods]
impl Awaiting {
    fn __await__(slf: &Bound<'_, Self>) -> Py<PyAny> {
        let me = slf.borrow();
        match (&me.rec, &me.it) {
            (None, Some(it)) => it.clone_ref(slf.py()),
            _ => slf.clone().into_any().unbind(),
        }
    }

    fn __iter__(slf: &Bound<'_, Self>) -> Py<PyAny> {
        slf.clone().into_any().unbind()
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // SAFETY: GIL held.
        match unsafe { self.step(null_mut()) } {
            Ok(Step::Yielded(y)) => Ok(Some(owned(py, y))),
            // NULL, with the StopIteration carrying the result still pending (none: None), as
            // `tp_iternext` says "finished" in C: no PyErr round trip on the hot path.
            Ok(Step::Done) => Ok(None),
            Err(()) => Err(raised(py)),
        }
    }

    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // SAFETY: GIL held.
        match unsafe { self.step(value.as_ptr()) } {
            Ok(Step::Yielded(y)) => Ok(owned(py, y)),
            Ok(Step::Done) | Err(()) => Err(raised(py)),
        }
    }

    #[pyo3(signature = (*args))]
    fn throw(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        // SAFETY: GIL held.
        unsafe {
            let it = self.it();
            if it.is_null() {
                set_error(ffi::PyExc_RuntimeError, "squall: awaiting a cleared object");
                return Err(raised(py));
            }
            let meth = ffi::PyObject_GetAttr(it, names().throw);
            let res = if meth.is_null() {
                if ffi::PyErr_ExceptionMatches(ffi::PyExc_AttributeError) == 0 {
                    return Err(raised(py));
                }
                // No `throw()` (made so after it was wrapped): raised here, as CPython raises
                // it in the awaiting frame.
                ffi::PyErr_Clear();
                let first = args.get_item(0)?;
                if first.is_instance_of::<pyo3::exceptions::PyBaseException>() {
                    return Err(PyErr::from_value(first));
                }
                let rest: Vec<Bound<'_, PyAny>> = args.iter().skip(1).take(1).collect();
                let made = first.call1(PyTuple::new(py, rest)?)?;
                return Err(PyErr::from_value(made));
            } else {
                let r = ffi::PyObject_Call(meth, args.as_ptr(), null_mut());
                ffi::Py_DECREF(meth);
                r
            };
            match self.finish(res) {
                Ok(Step::Yielded(y)) => Ok(owned(py, y)),
                Ok(Step::Done) | Err(()) => Err(raised(py)),
            }
        }
    }

    fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // SAFETY: GIL held.
        unsafe {
            let it = self.it();
            if it.is_null() {
                return Ok(py.None());
            }
            // gen_close_iter(): a generator or coroutine is closed; anything else is closed if it
            // has `close()` (a failing lookup is reported as unraisable, as CPython does).
            let meth = ffi::PyObject_GetAttr(it, names().close);
            if meth.is_null() {
                if !is_gen_or_coro(it) && ffi::PyErr_ExceptionMatches(ffi::PyExc_AttributeError) == 0 {
                    ffi::PyErr_WriteUnraisable(it);
                } else {
                    ffi::PyErr_Clear();
                }
                return Ok(py.None());
            }
            let r = ffi::PyObject_CallNoArgs(meth);
            ffi::Py_DECREF(meth);
            if r.is_null() {
                return Err(raised(py));
            }
            ffi::Py_DECREF(r);
            Ok(py.None())
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.it)?;
        if let Some(rec) = &self.rec {
            rec.traverse(&visit)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.it = None;
        if let Some(rec) = &mut self.rec {
            rec.hooks = None;
        }
    }
}

/// The awaitable CPython gets for `o` (a `__anext__` / `__aenter__` / `__aexit__` result):
/// `o` itself when CPython must see it (it rejects it, or it is a coroutine being awaited
/// already), else an [`Awaiting`], recording the suspension now. `for_anext`: errors of
/// `__await__` are reported as `GET_ANEXT` reports them.
unsafe fn wrap_awaitable(py: Python<'_>, o: Py<PyAny>, rec: &Rec, for_anext: bool) -> PyResult<Py<PyAny>> {
    // SAFETY: the caller holds the GIL (this fn's contract); `o` owns the object for the whole
    // call, and each branch hands on or releases the references it made.
    unsafe {
        let p = o.as_ptr();
        if !is_awaitable(p) {
            return Ok(o);
        }
        if ffi::Py_TYPE(p) == &raw mut ffi::PyCoro_Type && !for_anext {
            // GET_AWAITABLE: "coroutine is being awaited already"
            let yf = ffi::PyObject_GetAttr(p, names().cr_await);
            if yf.is_null() {
                ffi::PyErr_Clear();
                return Ok(o);
            }
            let busy = yf != ffi::Py_None();
            ffi::Py_DECREF(yf);
            if busy {
                return Ok(o);
            }
        }
        match await_iter(p) {
            AwaitIter::Ok(it) => {
                if !is_gen_or_coro(it) && !has_throw(it) {
                    // CPython throws into the awaiting frame itself when the iterator has no
                    // `throw()`: not wrapped, so that stays exactly so.
                    return Awaiting::new_wrapper(py, it, None);
                }
                // An async generator's `__anext__()` of rewritten code runs its frame inside
                // this one (as `await` of a rewritten coroutine): nested, no suspension.
                let inside = rec.hooks.is_none() && crate::recorder::record::await_delegates(rec.site.as_ptr(), p);
                if !inside {
                    rec.record(false, ffi::Py_TYPE(p).cast());
                }
                Awaiting::new_wrapper(py, it, Some(rec.clone_ref(py)))
            }
            AwaitIter::Rejected(res) if !for_anext => {
                // CPython calls `__await__` again on what we return, and rejects `res` itself.
                ffi::PyErr_Clear();
                Awaiting::new_wrapper(py, res, None)
            }
            AwaitIter::Rejected(res) => {
                ffi::Py_DECREF(res);
                type_error_from_cause(&format!(
                    "'async for' received an invalid object from __anext__: {}",
                    type_name(p)
                ));
                Err(raised(py))
            }
            AwaitIter::Raised if for_anext => {
                type_error_from_cause(&format!(
                    "'async for' received an invalid object from __anext__: {}",
                    type_name(p)
                ));
                Err(raised(py))
            }
            AwaitIter::Raised => Err(raised(py)),
        }
    }
}

// --- async for ---------------------------------------------------------------------------------

/// `async for x in _sq_afor(SITE, FORM, obj)`: `obj`'s async iterator, each `__anext__()`'s
/// await recorded.
#[pyclass(module = "squall._engine", name = "AsyncForRecorder")]
pub struct AsyncForRecorder {
    obj: Option<Py<PyAny>>,
    it: Option<Py<PyAny>>,
    rec: Rec,
}

#[pymethods]
impl AsyncForRecorder {
    fn __aiter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let obj = match &slf.borrow().obj {
            Some(o) => o.clone_ref(py),
            None => return Err(pyo3::exceptions::PyRuntimeError::new_err("squall: iterating a cleared object")),
        };
        // SAFETY: GIL held; `obj` has `__aiter__` (checked when wrapped).
        unsafe {
            let p = obj.as_ptr();
            let am = async_slots(p);
            let Some(aiter) = (if am.is_null() { None } else { (*am).am_aiter }) else {
                return Ok(obj); // CPython reports it
            };
            let it = aiter(p);
            if it.is_null() {
                return Err(raised(py));
            }
            let it = owned(py, it);
            if !has_anext(it.as_ptr()) {
                return Ok(it); // CPython reports it
            }
            slf.borrow_mut().it = Some(it);
        }
        Ok(slf.clone().into_any().unbind())
    }

    fn __anext__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Some(it) = &self.it else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("squall: iterating a cleared object"));
        };
        // SAFETY: GIL held; `it` has `__anext__` (checked in `__aiter__`).
        unsafe {
            let p = it.as_ptr();
            let am = async_slots(p);
            let Some(anext) = (if am.is_null() { None } else { (*am).am_anext }) else {
                return Err(pyo3::exceptions::PyRuntimeError::new_err("squall: no __anext__"));
            };
            let a = anext(p);
            if a.is_null() {
                return Err(raised(py));
            }
            wrap_awaitable(py, owned(py, a), &self.rec, true)
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.obj)?;
        visit.call(&self.it)?;
        self.rec.traverse(&visit)
    }

    fn __clear__(&mut self) {
        self.obj = None;
        self.it = None;
        self.rec.hooks = None;
    }
}

// --- async with --------------------------------------------------------------------------------

/// `async with _sq_awith(SITE, FORM, mgr)`: `mgr`'s `__aenter__()` and `__aexit__()` awaits
/// recorded.
#[pyclass(module = "squall._engine", name = "AsyncWithRecorder")]
pub struct AsyncWithRecorder {
    mgr: Option<Py<PyAny>>,
    exit: Option<Py<PyAny>>,
    rec: Rec,
}

#[pymethods]
impl AsyncWithRecorder {
    fn __aenter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let Some(mgr) = slf.borrow_mut().mgr.take() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("squall: entering a cleared object"));
        };
        // SAFETY: GIL held.
        unsafe {
            let p = mgr.as_ptr();
            // BEFORE_ASYNC_WITH: __aenter__ then __aexit__ looked up (and bound), then entered.
            let enter = special_lookup(p, names().aenter);
            if enter.is_null() {
                if ffi::PyErr_Occurred().is_null() {
                    set_error(ffi::PyExc_AttributeError, "__aenter__");
                }
                return Err(raised(py));
            }
            let enter = owned(py, enter);
            let exit = special_lookup(p, names().aexit);
            if exit.is_null() {
                if ffi::PyErr_Occurred().is_null() {
                    set_error(ffi::PyExc_AttributeError, "__aexit__");
                }
                return Err(raised(py));
            }
            slf.borrow_mut().exit = Some(owned(py, exit));
            drop(mgr);
            let res = ffi::PyObject_CallNoArgs(enter.as_ptr());
            drop(enter);
            if res.is_null() {
                return Err(raised(py));
            }
            let rec = slf.borrow().rec.clone_ref(py);
            wrap_awaitable(py, owned(py, res), &rec, false)
        }
    }

    #[pyo3(signature = (*args))]
    fn __aexit__(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let (exit, rec) = {
            let me = slf.borrow();
            let Some(exit) = &me.exit else {
                return Err(pyo3::exceptions::PyRuntimeError::new_err("squall: exiting a cleared object"));
            };
            (exit.clone_ref(py), me.rec.clone_ref(py))
        };
        // SAFETY: GIL held.
        unsafe {
            let res = ffi::PyObject_Call(exit.as_ptr(), args.as_ptr(), null_mut());
            if res.is_null() {
                return Err(raised(py));
            }
            wrap_awaitable(py, owned(py, res), &rec, false)
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.mgr)?;
        visit.call(&self.exit)?;
        self.rec.traverse(&visit)
    }

    fn __clear__(&mut self) {
        self.mgr = None;
        self.exit = None;
        self.rec.hooks = None;
    }
}

// --- the entry points ------------------------------------------------------------------------

type Args = *mut *mut ffi::PyObject;

/// Reads `(site, form, obj[, suspend, resume])`; `None` if malformed.
unsafe fn read_args(py: Python<'_>, args: Args, nargs: ffi::Py_ssize_t) -> Option<(Rec, *mut ffi::PyObject)> {
    // SAFETY: the caller holds the GIL and `args` holds `nargs` live pointers (CPython's FASTCALL
    // contract, passed on by the entry points); only indexes below `nargs` are read.
    unsafe {
        if nargs != 3 && nargs != 5 {
            return None;
        }
        let b = |i: usize| Bound::from_borrowed_ptr(py, *args.add(i)).unbind();
        let hooks = if nargs == 5 { Some((b(3), b(4))) } else { None };
        Some((Rec { site: b(0), form: b(1), hooks }, *args.add(2)))
    }
}

/// The object itself (a new reference): what the program gets when nothing is wrapped.
unsafe fn unchanged(args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: as for `read_args`: `args` holds `nargs` live pointers and index 2 is read only when
    // `nargs >= 3`.
    unsafe {
        let o = if nargs >= 3 { *args.add(2) } else { ffi::Py_None() };
        ffi::Py_INCREF(o);
        o
    }
}

/// `async_for(site_id, form_id, obj[, suspend, resume]) -> obj or a recorder of it`
pub unsafe extern "C" fn async_for(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached to the interpreter (GIL held)
    // with `nargs` live arguments in `args`.
    unsafe {
        let py = Python::assume_attached();
        let Some((rec, obj)) = read_args(py, args, nargs) else { return unchanged(args, nargs) };
        if !has_aiter(obj) {
            return unchanged(args, nargs); // CPython reports it
        }
        let w = AsyncForRecorder { obj: Some(Bound::from_borrowed_ptr(py, obj).unbind()), it: None, rec };
        match Py::new(py, w) {
            Ok(w) => w.into_ptr(),
            Err(_) => unchanged(args, nargs),
        }
    }
}

/// `async_with(site_id, form_id, obj[, suspend, resume]) -> obj or a recorder of it`
pub unsafe extern "C" fn async_with(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached to the interpreter (GIL held)
    // with `nargs` live arguments in `args`.
    unsafe {
        let py = Python::assume_attached();
        let Some((rec, obj)) = read_args(py, args, nargs) else { return unchanged(args, nargs) };
        if !type_has(obj, names().aenter) || !type_has(obj, names().aexit) {
            return unchanged(args, nargs); // CPython reports it
        }
        let w = AsyncWithRecorder { mgr: Some(Bound::from_borrowed_ptr(py, obj).unbind()), exit: None, rec };
        match Py::new(py, w) {
            Ok(w) => w.into_ptr(),
            Err(_) => unchanged(args, nargs),
        }
    }
}

/// Adds `async_for` and `async_with` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: module init holds the GIL.
    unsafe {
        let intern = |s: &CStr| ffi::PyUnicode_InternFromString(s.as_ptr());
        let n = Names {
            aenter: intern(c"__aenter__"),
            aexit: intern(c"__aexit__"),
            send: intern(c"send"),
            throw: intern(c"throw"),
            close: intern(c"close"),
            cr_await: intern(c"cr_await"),
        };
        if [n.aenter, n.aexit, n.send, n.throw, n.close, n.cr_await].iter().any(|p| p.is_null()) {
            return Err(PyErr::fetch(m.py()));
        }
        *NAMES.get() = Some(n);
    }
    crate::add_fast(
        m,
        c"async_for",
        c"async_for(site_id, form_id, obj[, suspend, resume]) -> obj: `async for` over obj, each __anext__() await recorded as a suspension.",
        async_for,
    )?;
    crate::add_fast(
        m,
        c"async_with",
        c"async_with(site_id, form_id, obj[, suspend, resume]) -> obj: `async with` obj, the __aenter__() and __aexit__() awaits recorded as suspensions.",
        async_with,
    )?;
    Ok(())
}
