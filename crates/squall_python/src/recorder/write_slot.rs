//! Write slots: the targets of writes the write entry points cannot take as calls, because
//! Python itself must evaluate them in its own order: attribute and item targets inside tuple
//! and list targets (`a.peer, b.peer = b, a`), in chains with names (`x = x.next = v`), of `for`
//! loops and `with ... as` (`for self.i in ...`), and augmented writes whose operand has effects
//! of its own (`o.n += f()`).
//!
//! The rewriter replaces such a target `obj.attr` / `obj[key]` by `_sq_wslot(S, obj, key,
//! item).v`: Python evaluates `obj` and `key` when it reaches that target (as it would have),
//! and its store to `.v` (a getset property) does CPython's own store on `obj` (what
//! `STORE_ATTR` / `STORE_SUBSCR` call) and records it once it succeeded, as the write entry
//! points do (`write_entry::record_write`). Loading `.v` (augmented writes) loads the target. A
//! slot lives on the evaluation stack only, from the target's evaluation to its store.
//!
//! `WriteSlot` is not a garbage-collected type (a `#[pyclass]` would be): allocating one would
//! count towards the program's next collection, and could start one earlier than without
//! squall. It cannot be in a cycle: nothing but the evaluation stack ever refers to it.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::prelude::*;

use crate::gil_cell::GilCell;

/// One write target, `obj.key` (`item` false: `key` is the attribute name) or `obj[key]`.
#[repr(C)]
struct WriteSlot {
    ob_base: ffi::PyObject,
    site: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    key: *mut ffi::PyObject,
    item: bool,
}

static TYPE: GilCell<*mut ffi::PyTypeObject> = GilCell::new(null_mut());
/// The interned `"v"`: the name the rewritten code loads and stores (code objects' names are
/// interned), compared by address before CPython's generic lookup of the getset.
static V_NAME: GilCell<*mut ffi::PyObject> = GilCell::new(null_mut());

/// Freed slots kept for the next ones (their memory, nothing else: fields cleared, the type's
/// reference released): a slot is made and freed per write through it, and the object
/// allocator's round trip was a fifth of the slot's cost in nbody.
const FREE_SLOTS: usize = 8;
static FREE: GilCell<([*mut ffi::PyObject; FREE_SLOTS], usize)> = GilCell::new(([null_mut(); FREE_SLOTS], 0));

/// `tp_getattro`: `slot.v` without the generic lookup of its getset (same answer); any other
/// name as CPython looks it up.
unsafe extern "C" fn getattro(slf: *mut ffi::PyObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls `tp_getattro` with the GIL held and both objects live.
    unsafe {
        if name == *V_NAME.get() {
            return get_v(slf, null_mut());
        }
        ffi::PyObject_GenericGetAttr(slf, name)
    }
}

/// `tp_setattro`: `slot.v = value` without the generic lookup of its getset (same effect).
unsafe extern "C" fn setattro(slf: *mut ffi::PyObject, name: *mut ffi::PyObject, value: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython calls `tp_setattro` with the GIL held, `slf` and `name` live, `value` live
    // or NULL (a delete).
    unsafe {
        if name == *V_NAME.get() {
            return set_v(slf, value, null_mut());
        }
        ffi::PyObject_GenericSetAttr(slf, name, value)
    }
}

/// `slot.v`: loads the target.
unsafe extern "C" fn get_v(slf: *mut ffi::PyObject, _closure: *mut c_void) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a getter with the GIL held and `slf` a live slot, whose `obj` and `key`
    // are owned references.
    unsafe {
        let s = &*slf.cast::<WriteSlot>();
        if s.item {
            ffi::PyObject_GetItem(s.obj, s.key)
        } else {
            ffi::PyObject_GetAttr(s.obj, s.key)
        }
    }
}

/// `slot.v = value`: stores into the target, then records the write.
unsafe extern "C" fn set_v(slf: *mut ffi::PyObject, value: *mut ffi::PyObject, _closure: *mut c_void) -> c_int {
    // SAFETY: CPython calls a setter with the GIL held and `slf` a live slot (the store's caller
    // holds a reference to it); its fields are owned and cannot be changed from Python, so they
    // stay valid across the program's `__setitem__` / `__setattr__`.
    unsafe {
        if value.is_null() {
            ffi::PyErr_SetString(ffi::PyExc_TypeError, c"a write slot's target cannot be deleted".as_ptr());
            return -1;
        }
        let s = &*slf.cast::<WriteSlot>();
        let r = if s.item {
            ffi::PyObject_SetItem(s.obj, s.key, value)
        } else {
            ffi::PyObject_SetAttr(s.obj, s.key, value)
        };
        if r < 0 {
            return -1;
        }
        let key = if s.item { s.key } else { null_mut() };
        crate::recorder::write_entry::record_write(s.site, s.obj, key, value);
        0
    }
}

unsafe extern "C" fn dealloc(slf: *mut ffi::PyObject) {
    // SAFETY: CPython calls `tp_dealloc` with the GIL held and `slf` unreachable (refcount zero):
    // code run by releasing the fields cannot reach it; it is freed with its heap type's `tp_free`
    // and the type's reference released.
    unsafe {
        let tp = ffi::Py_TYPE(slf);
        let s = &mut *slf.cast::<WriteSlot>();
        for field in [&mut s.site, &mut s.obj, &mut s.key] {
            let o = std::mem::replace(field, null_mut());
            ffi::Py_XDECREF(o);
        }
        let (list, n) = FREE.get();
        if *n < FREE_SLOTS {
            list[*n] = slf;
            *n += 1;
        } else {
            let free = (*tp).tp_free.expect("heap types have tp_free");
            free(slf.cast());
        }
        ffi::Py_DECREF(tp.cast());
    }
}

/// `wslot(site_id, obj, key, item) -> WriteSlot`: the target `obj.key` (`item` false) or
/// `obj[key]`, whose store through `.v` is done and recorded at site `site_id`.
unsafe extern "C" fn wslot(
    _m: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments in `args`; exactly 4 are required before any is read.
    unsafe {
        if nargs != 4 {
            ffi::PyErr_SetString(ffi::PyExc_TypeError, c"wslot(site_id, obj, key, item)".as_ptr());
            return null_mut();
        }
        new_slot(*args, *args.add(1), *args.add(2), *args.add(3))
    }
}

/// `_sq_wslot_S(obj, key, item) -> WriteSlot`: `wslot` bound to its site (its `self`).
pub unsafe extern "C" fn wslot_bound(
    site: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this bound entry point attached (GIL held) with `site` its live `self`
    // and `nargs` live arguments in `args`; exactly 3 are required before any is read.
    unsafe {
        if nargs != 3 {
            ffi::PyErr_SetString(ffi::PyExc_TypeError, c"wslot(obj, key, item)".as_ptr());
            return null_mut();
        }
        new_slot(site, *args, *args.add(1), *args.add(2))
    }
}

/// A slot for the target `obj.key` / `obj[key]` (`item_obj` true) at `site`.
#[inline(always)]
unsafe fn new_slot(
    site: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    key: *mut ffi::PyObject,
    item_obj: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, the four objects live (this fn's callers).
    unsafe {
        let item = ffi::PyObject_IsTrue(item_obj);
        if item < 0 {
            return null_mut();
        }
        // Not a GC type: PyType_GenericAlloc takes it from the object allocator, untracked. A
        // freed slot's memory is taken first; `PyObject_Init` makes it a new object of the type
        // (a reference to the type, as the allocation takes).
        let (list, n) = FREE.get();
        let o = if *n > 0 {
            *n -= 1;
            ffi::PyObject_Init(list[*n], *TYPE.get())
        } else {
            ffi::PyType_GenericAlloc(*TYPE.get(), 0)
        };
        if o.is_null() {
            return null_mut();
        }
        let s = &mut *o.cast::<WriteSlot>();
        for (field, v) in [(&mut s.site, site), (&mut s.obj, obj), (&mut s.key, key)] {
            ffi::Py_INCREF(v);
            *field = v;
        }
        s.item = item == 1;
        o
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: module init holds the GIL; the slot functions match their slots' signatures; the
    // getset table lives for the process (leaked once).
    unsafe {
        if (*TYPE.get()).is_null() {
            let getset: &'static mut [ffi::PyGetSetDef; 2] = Box::leak(Box::new([
                ffi::PyGetSetDef {
                    name: c"v".as_ptr(),
                    get: Some(get_v),
                    set: Some(set_v),
                    doc: c"the target: loading it loads obj.key / obj[key]; storing stores and records".as_ptr(),
                    closure: null_mut(),
                },
                ffi::PyGetSetDef {
                    name: std::ptr::null(),
                    get: None,
                    set: None,
                    doc: std::ptr::null(),
                    closure: null_mut(),
                },
            ]));
            let mut slots = [
                ffi::PyType_Slot { slot: ffi::Py_tp_getset, pfunc: getset.as_mut_ptr().cast() },
                ffi::PyType_Slot { slot: ffi::Py_tp_dealloc, pfunc: dealloc as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_getattro, pfunc: getattro as *mut c_void },
                ffi::PyType_Slot { slot: ffi::Py_tp_setattro, pfunc: setattro as *mut c_void },
                ffi::PyType_Slot { slot: 0, pfunc: null_mut() },
            ];
            let mut spec = ffi::PyType_Spec {
                name: c"squall._engine.WriteSlot".as_ptr(),
                basicsize: std::mem::size_of::<WriteSlot>() as c_int,
                itemsize: 0,
                flags: ffi::Py_TPFLAGS_DEFAULT as _,
                slots: slots.as_mut_ptr(),
            };
            let tp = ffi::PyType_FromSpec(&mut spec);
            if tp.is_null() {
                return Err(PyErr::fetch(m.py()));
            }
            *TYPE.get() = tp.cast();
            let v = ffi::PyUnicode_InternFromString(c"v".as_ptr());
            if v.is_null() {
                return Err(PyErr::fetch(m.py()));
            }
            *V_NAME.get() = v;
            m.add("WriteSlot", Bound::from_borrowed_ptr(m.py(), tp))?;
        }
    }
    crate::add_fast(
        m,
        c"wslot",
        c"wslot(site_id, obj, key, item) -> WriteSlot: the target obj.key (item false) or obj[key]; storing to .v stores and records the write at site_id.",
        wslot,
    )
}
