//! `for NAME in _sq_for(SITE, iterable)`: the loop variable's binding recorded by the iterator.
//!
//! In full mode a `for` loop with a single name as its target used to be rewritten into
//!
//! ```text
//! for w in it:
//!     _sq_bind(SITE, w)
//!     ...
//! ```
//!
//! which costs one interpreted call per iteration. `_sq_for(SITE, it)` calls `iter(it)` itself
//! (so `iter()`'s errors, messages and tracebacks are CPython's: `PyObject_GetIter` is what the
//! `GET_ITER` instruction calls) and hands the loop a [`LoopIter`] whose `tp_iternext` calls the
//! wrapped iterator's `tp_iternext` and, for each item, records the same bind entry
//! `_sq_bind(SITE, w)` records, in the same frame (the innermost open frame of the site's form:
//! the loop runs in it). Ends and errors are the wrapped iterator's, passed through untouched
//! (`StopIteration` pending or not, any other exception with its traceback). The wrapper is a C
//! type: no frame of its own appears in tracebacks, and the wrapped iterator's frames (a
//! generator's) have the loop's frame as their caller, as before. Comprehensions use it too
//! (`[e for i in _sq_for(SITE, it)]`).
//!
//! With an explicit engine (tests, embedders) the rewriter passes that engine's `bind` as a
//! third argument: it is called with `(site, item)` instead of the engine's own recorder, and
//! an exception it raises ends the loop with that exception, as a raising `_sq_bind(SITE, w)`
//! statement would have.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::prelude::*;

use crate::gil_cell::GilCell;

#[repr(C)]
struct LoopIter {
    ob_base: ffi::PyObject,
    /// The wrapped iterator (what `iter(iterable)` returned).
    it: *mut ffi::PyObject,
    /// The bind site's id (an int).
    site: *mut ffi::PyObject,
    /// An explicit engine's `bind`, or null: the engine's own.
    hook: *mut ffi::PyObject,
}

static TYPE: GilCell<*mut ffi::PyTypeObject> = GilCell::new(null_mut());

unsafe extern "C" fn iternext(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls `tp_iternext` with the GIL held and `slf` a live object of this type,
    // whose fields are null or owned references.
    unsafe {
        let s = slf.cast::<LoopIter>();
        let it = (*s).it;
        if it.is_null() {
            return null_mut(); // never made by `loop_iter`: exhausted
        }
        let Some(next) = (*ffi::Py_TYPE(it)).tp_iternext else {
            // the iterator's class lost `__next__` after `iter()`: what `next()` says
            let name = std::ffi::CStr::from_ptr((*ffi::Py_TYPE(it)).tp_name).to_string_lossy();
            let msg = format!("'{:.200}' object is not an iterator\0", name);
            ffi::PyErr_SetString(ffi::PyExc_TypeError, msg.as_ptr().cast());
            return null_mut();
        };
        let item = next(it);
        if item.is_null() {
            return null_mut();
        }
        if (*s).hook.is_null() {
            crate::recorder::record::record_bind((*s).site, item);
        } else {
            let mut args = [(*s).site, item];
            let r = ffi::PyObject_Vectorcall((*s).hook, args.as_mut_ptr(), 2, null_mut());
            if r.is_null() {
                ffi::Py_DECREF(item);
                return null_mut();
            }
            ffi::Py_DECREF(r);
        }
        item
    }
}

unsafe extern "C" fn traverse(slf: *mut ffi::PyObject, visit: ffi::visitproc, arg: *mut c_void) -> c_int {
    // SAFETY: CPython calls `tp_traverse` with `slf` a live object of this type and a valid
    // `visit`; only non-null fields are visited.
    unsafe {
        let s = slf.cast::<LoopIter>();
        for o in [(*s).it, (*s).site, (*s).hook, ffi::Py_TYPE(slf).cast()] {
            if !o.is_null() {
                let r = visit(o, arg);
                if r != 0 {
                    return r;
                }
            }
        }
        0
    }
}

unsafe extern "C" fn clear(slf: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython calls `tp_clear` with the GIL held and `slf` a live object of this type; each
    // field is nulled before its reference is released, so code run by the release sees no dangling
    // field.
    unsafe {
        let s = slf.cast::<LoopIter>();
        for field in [&raw mut (*s).it, &raw mut (*s).site, &raw mut (*s).hook] {
            let o = *field;
            *field = null_mut();
            ffi::Py_XDECREF(o);
        }
        0
    }
}

unsafe extern "C" fn dealloc(slf: *mut ffi::PyObject) {
    // SAFETY: CPython calls `tp_dealloc` with the GIL held and `slf` unreachable (refcount zero);
    // it is untracked, cleared, freed with its heap type's `tp_free` and the type's reference
    // released, as for any heap GC type.
    unsafe {
        let tp = ffi::Py_TYPE(slf);
        ffi::PyObject_GC_UnTrack(slf.cast());
        clear(slf);
        let free = (*tp).tp_free.expect("heap types have tp_free");
        free(slf.cast());
        ffi::Py_DECREF(tp.cast());
    }
}

/// `loop_iter(site_id, iterable[, bind]) -> iterator`
pub unsafe extern "C" fn loop_iter(
    _m: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments in `args`; indexes are read only below `nargs`, and `TYPE` is set at module init.
    unsafe {
        if !(2..=3).contains(&nargs) {
            ffi::PyErr_SetString(ffi::PyExc_TypeError, c"loop_iter(site_id, iterable[, bind])".as_ptr());
            return null_mut();
        }
        let it = ffi::PyObject_GetIter(*args.add(1));
        if it.is_null() {
            return null_mut();
        }
        let tp = *TYPE.get();
        let obj = ffi::PyType_GenericAlloc(tp, 0);
        if obj.is_null() {
            ffi::Py_DECREF(it);
            return null_mut();
        }
        let s = obj.cast::<LoopIter>();
        let site = *args;
        ffi::Py_INCREF(site);
        (*s).site = site;
        (*s).it = it;
        if nargs == 3 && *args.add(2) != ffi::Py_None() {
            let hook = *args.add(2);
            ffi::Py_INCREF(hook);
            (*s).hook = hook;
        }
        obj
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: module init holds the GIL; the slot functions match their slots' signatures.
    unsafe {
        if (*TYPE.get()).is_null() {
            let mut slots = [
                ffi::PyType_Slot { slot: ffi::Py_tp_iter, pfunc: ffi::PyObject_SelfIter as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_iternext, pfunc: iternext as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_traverse, pfunc: traverse as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_clear, pfunc: clear as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_dealloc, pfunc: dealloc as *mut c_void },
                ffi::PyType_Slot { slot: 0, pfunc: null_mut() },
            ];
            let mut spec = ffi::PyType_Spec {
                name: c"squall._engine.LoopIter".as_ptr(),
                basicsize: std::mem::size_of::<LoopIter>() as c_int,
                itemsize: 0,
                flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_HAVE_GC) as _,
                slots: slots.as_mut_ptr(),
            };
            let tp = ffi::PyType_FromSpec(&mut spec);
            if tp.is_null() {
                return Err(PyErr::fetch(m.py()));
            }
            *TYPE.get() = tp.cast();
        }
    }
    crate::add_fast(
        m,
        c"loop_iter",
        c"loop_iter(site_id, iterable[, bind]) -> iterator: iter(iterable), each item recorded as a binding at site_id.",
        loop_iter,
    )
}
