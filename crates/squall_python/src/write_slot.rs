//! Write slots: the targets of writes the write entry points cannot take as calls, because
//! Python itself must evaluate them in its own order: attribute and item targets inside tuple
//! and list targets (`a.peer, b.peer = b, a`), in chains with names (`x = x.next = v`), of `for`
//! loops and `with ... as` (`for self.i in ...`), and augmented writes whose operand has effects
//! of its own (`o.n += f()`).
//!
//! The rewriter replaces such a target `obj.attr` / `obj[key]` by `_sq_wslot(S, obj, key,
//! item).v`: Python evaluates `obj` and `key` when it reaches that target (as it would have),
//! and its store to `.v` (a property) does CPython's own store on `obj`
//! (what `STORE_ATTR` / `STORE_SUBSCR` call) and records it once it succeeded, as the write
//! entry points do (`write_entry::record_write`). Loading `.v` (augmented writes) loads the
//! target. A slot lives on the evaluation stack only, from the target's evaluation to its store.

use pyo3::ffi;
use pyo3::prelude::*;

/// One write target, `obj.key` (`item` false: `key` is the attribute name) or `obj[key]`.
#[pyclass(module = "squall._engine", name = "WriteSlot", frozen)]
pub struct WriteSlot {
    site: Py<PyAny>,
    obj: Py<PyAny>,
    key: Py<PyAny>,
    item: bool,
}

// `v` is a property (a getset descriptor found by the generic attribute lookup): as
// `__getattr__`/`__setattr__`, each load first failed the generic lookup, making and clearing an
// AttributeError (measured: ~500 ns per augmented write in pyperformance's nbody).
#[pymethods]
impl WriteSlot {
    #[setter]
    fn set_v(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (obj, key, value) = (self.obj.as_ptr(), self.key.as_ptr(), value.as_ptr());
        // SAFETY: GIL held; valid objects, kept alive by `self` and the caller.
        unsafe {
            let r =
                if self.item { ffi::PyObject_SetItem(obj, key, value) } else { ffi::PyObject_SetAttr(obj, key, value) };
            if r < 0 {
                return Err(PyErr::fetch(py));
            }
            let key = if self.item { key } else { std::ptr::null_mut() };
            crate::write_entry::record_write(self.site.as_ptr(), obj, key, value);
        }
        Ok(())
    }

    #[getter]
    fn v(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (obj, key) = (self.obj.as_ptr(), self.key.as_ptr());
        // SAFETY: GIL held; valid objects kept alive by `self`; a new reference or NULL with
        // the exception set.
        unsafe {
            let got = if self.item { ffi::PyObject_GetItem(obj, key) } else { ffi::PyObject_GetAttr(obj, key) };
            Bound::from_owned_ptr_or_err(py, got).map(Bound::unbind)
        }
    }
}

/// `wslot(site_id, obj, key, item) -> WriteSlot`: the target `obj.key` (`item` false) or
/// `obj[key]`, whose store through `.v` is done and recorded at site `site_id`.
#[pyfunction]
pub fn wslot(site: Py<PyAny>, obj: Py<PyAny>, key: Py<PyAny>, item: bool) -> WriteSlot {
    WriteSlot { site, obj, key, item }
}
