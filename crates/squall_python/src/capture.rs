//! Turning a Python object into a [`ValRef`] at record time.
//!
//! Policy (DESIGN.md, "Values"):
//! - `None`, `True`, `False` and ints that fit in 31 bits are stored inline: nothing is kept alive.
//! - Immutable values are kept by reference. A tuple or frozenset is immutable only if what it
//!   holds is; otherwise it is snapshotted like a mutable value.
//! - Mutable builtins (`list`, `dict`, `set`, `bytearray`, exactly) are snapshotted: copied at
//!   record time, recursively, within the budget (`max_depth` levels, `max_length` items per
//!   container, `max_items` in all); what the budget cuts is replaced by a truncation marker.
//! - Subclasses of those and `collections.deque` are copied shallowly with `copy.copy`; types with
//!   a registered snapshot function are passed through it.
//! - Any other object is kept by reference (it shows its state when inspected, not when recorded).
//!
//! Nothing here raises: a failed snapshot falls back to keeping the reference and is counted.

use pyo3::ffi;
use squall_trace::ValRef;

use crate::engine::{without_recording, Engine, ThreadRec};

/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture(eng: &mut Engine, rec: &mut ThreadRec, o: *mut ffi::PyObject) -> ValRef {
    unsafe {
        if let Some(r) = capture_simple(rec, o) {
            return r;
        }
        let tp = ffi::Py_TYPE(o);
        if ffi::PyType_Check(o) != 0 && ((*o.cast::<ffi::PyTypeObject>()).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE) != 0 {
            if let Some(factory) = eng.class_ref {
                let r = without_recording(|| ffi::PyObject_CallOneArg(factory, o));
                if !r.is_null() {
                    rec.kept_bytes += 64;
                    return keep(rec, r);
                }
                ffi::PyErr_Clear();
            }
        }
        let kept = if needs_snapshot(eng, o, eng.budget.max_depth) {
            let mut items = eng.budget.max_items;
            let copy = snapshot(eng, o, eng.budget.max_depth, &mut items);
            rec.kept_bytes += SNAPSHOT_BYTES + ITEM_BYTES * (eng.budget.max_items - items) as u64;
            copy
        } else {
            ffi::Py_INCREF(o);
            rec.kept_bytes += approx_size(o, tp);
            o
        };
        keep(rec, kept)
    }
}

/// `capture` of the values that need neither a snapshot nor Python code (see `is_simple`),
/// with the same result: `None`, a bool or an exact int, str, float or bytes. `None` for any other value, having done nothing. Runs no Python code
/// and cannot panic (used outside the entry points' unwinding guard).
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture_simple(rec: &mut ThreadRec, o: *mut ffi::PyObject) -> Option<ValRef> {
    unsafe {
        if o == ffi::Py_None() {
            return Some(ValRef::NONE);
        }
        let tp = ffi::Py_TYPE(o);
        if tp == &raw mut ffi::PyLong_Type {
            if let Some(r) = crate::ints::exact_int_value(o).and_then(ValRef::small_int) {
                return Some(r);
            }
        } else if tp == &raw mut ffi::PyBool_Type {
            return Some(if o == ffi::Py_True() { ValRef::TRUE } else { ValRef::FALSE });
        } else if tp != &raw mut ffi::PyUnicode_Type
            && tp != &raw mut ffi::PyFloat_Type
            && tp != &raw mut ffi::PyBytes_Type
        {
            return None;
        }
        // Immutable: kept by reference (as `capture` does after finding no snapshot is needed).
        ffi::Py_INCREF(o);
        rec.kept_bytes += approx_size(o, tp);
        Some(keep(rec, o))
    }
}

/// Estimated bytes of a snapshot container, and per item it copies (the copy's slot, the
/// item's own copy when it is a container, dict entries). 48 per item made the estimate about
/// 3x the real growth of the process on attrs' and more-itertools' suites (most items are
/// shared objects: only a pointer is copied).
const SNAPSHOT_BYTES: u64 = 64;
const ITEM_BYTES: u64 = 16;

/// Roughly the memory an object the recording keeps alive holds (its fixed size, plus the text
/// of strings and bytes). Counted against the memory limit: the object might otherwise be freed.
#[inline(always)]
unsafe fn approx_size(o: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> u64 {
    unsafe {
        let base = (*tp).tp_basicsize.max(16) as u64;
        if tp == &raw mut ffi::PyUnicode_Type {
            base + ffi::PyUnicode_GET_LENGTH(o).max(0) as u64
        } else if tp == &raw mut ffi::PyBytes_Type || tp == &raw mut ffi::PyTuple_Type {
            // `ob_size` is meaningful only for true var-size objects (not ints from 3.12, not
            // types, not user classes): use it for the two common ones.
            base + ((*tp).tp_itemsize.max(0) as u64) * (ffi::Py_SIZE(o).max(0) as u64)
        } else {
            base
        }
    }
}

/// Stores an owned reference in the recording's value table.
#[inline(always)]
unsafe fn keep(rec: &mut ThreadRec, owned: *mut ffi::PyObject) -> ValRef {
    match ValRef::slot(rec.values.len() as u32) {
        Some(r) => {
            let held = if crate::collect::COLLECTING.load(std::sync::atomic::Ordering::Relaxed) {
                unsafe { crate::collect::keep_during_collection(rec.number as usize, rec.values.len(), owned) }
            } else {
                owned
            };
            rec.values.push(held);
            r
        }
        None => {
            unsafe { ffi::Py_DecRef(owned) };
            ValRef::ABSENT
        }
    }
}

/// True for the values `needs_snapshot` passes over before anything else (exact strs, floats,
/// ints and bytes, and `None`): a snapshot holds them as they are.
#[inline(always)]
unsafe fn is_plain(o: *mut ffi::PyObject) -> bool {
    unsafe {
        let tp = ffi::Py_TYPE(o);
        tp == &raw mut ffi::PyUnicode_Type
            || tp == &raw mut ffi::PyLong_Type
            || tp == &raw mut ffi::PyFloat_Type
            || tp == &raw mut ffi::PyBytes_Type
            || o == ffi::Py_None()
    }
}

unsafe fn is_exact(o: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> bool {
    unsafe { ffi::Py_TYPE(o) == tp }
}

/// True when `o` can change after it is recorded, so that keeping the reference would show a
/// later state.
unsafe fn needs_snapshot(eng: &Engine, o: *mut ffi::PyObject, depth: u32) -> bool {
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if tp == &raw mut ffi::PyUnicode_Type
            || tp == &raw mut ffi::PyFloat_Type
            || tp == &raw mut ffi::PyLong_Type
            || tp == &raw mut ffi::PyBytes_Type
            || o == ffi::Py_None()
        {
            return false;
        }
        if tp == &raw mut ffi::PyTuple_Type {
            if depth == 0 {
                return false;
            }
            let n = ffi::PyTuple_GET_SIZE(o);
            return (0..n).any(|i| needs_snapshot(eng, ffi::PyTuple_GET_ITEM(o, i), depth - 1));
        }
        ffi::PyList_Check(o) != 0
            || ffi::PyDict_Check(o) != 0
            || ffi::PySet_Check(o) != 0
            || ffi::PyByteArray_Check(o) != 0
            || (!eng.deque_type.is_null() && ffi::PyObject_TypeCheck(o, eng.deque_type) != 0)
            || eng.snapshotters.iter().any(|&(t, _)| t == tp)
    }
}

/// Whether an exact list, tuple or dict holds an object the cycle collector tracks (CPython's
/// own rule for untracking tuples and dicts).
///
/// # Safety
/// GIL held; `o` an exact list, tuple or dict.
unsafe fn holds_tracked(o: *mut ffi::PyObject) -> bool {
    unsafe {
        let tracked = |p: *mut ffi::PyObject| ffi::PyObject_IS_GC(p) != 0 && ffi::PyObject_GC_IsTracked(p) != 0;
        if ffi::PyDict_Check(o) != 0 {
            let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            while ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0 {
                if tracked(k) || tracked(v) {
                    return true;
                }
            }
            return false;
        }
        let (n, item): (ffi::Py_ssize_t, unsafe fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject) =
            if ffi::PyList_Check(o) != 0 {
                (ffi::PyList_GET_SIZE(o), |o, i| ffi::PyList_GET_ITEM(o, i))
            } else {
                (ffi::PyTuple_GET_SIZE(o), |o, i| ffi::PyTuple_GET_ITEM(o, i))
            };
        (0..n).any(|i| tracked(item(o, i)))
    }
}

/// A new reference to a copy of `o` as it is now, within the budget.
unsafe fn snapshot(eng: &mut Engine, o: *mut ffi::PyObject, depth: u32, items: &mut usize) -> *mut ffi::PyObject {
    unsafe {
        if !needs_snapshot(eng, o, depth) {
            ffi::Py_IncRef(o);
            return o;
        }
        if depth == 0 || *items == 0 {
            return marker(eng, o, 0);
        }
        let ours = if is_exact(o, &raw mut ffi::PyList_Type) {
            snapshot_list(eng, o, depth, items)
        } else if is_exact(o, &raw mut ffi::PyTuple_Type) {
            snapshot_tuple(eng, o, depth, items)
        } else if is_exact(o, &raw mut ffi::PyDict_Type) {
            snapshot_dict(eng, o, depth, items)
        } else {
            std::ptr::null_mut()
        };
        if !ours.is_null() {
            // A copy of plain data can be in no reference cycle: keep it out of the collector's
            // traversals. A copy holding objects the collector tracks stays tracked: hidden
            // from it, the copy's references would keep those objects alive past the program
            // dropping them (collect.rs lets go of the program's garbage at full collections).
            if ffi::PyObject_IS_GC(ours) != 0 && ffi::PyObject_GC_IsTracked(ours) != 0 && !holds_tracked(ours) {
                ffi::PyObject_GC_UnTrack(ours.cast());
            }
            return ours;
        }
        let copied = if is_exact(o, &raw mut ffi::PyList_Type)
            || is_exact(o, &raw mut ffi::PyTuple_Type)
            || is_exact(o, &raw mut ffi::PyDict_Type)
        {
            std::ptr::null_mut()
        } else if let Some(len) = too_long(eng, o) {
            // A container over the length budget that is not an exact list/tuple/dict (a set,
            // a deque, a subclass): its first items, then the marker. Copying it whole (as
            // `copy.copy` would) is what made recordings of deque-heavy code explode.
            *items = items.saturating_sub(eng.budget.max_length);
            if ffi::PyList_Check(o) != 0 {
                snapshot_list(eng, o, depth, items)
            } else if ffi::PyDict_Check(o) != 0 {
                snapshot_dict(eng, o, depth, items)
            } else {
                first_items(eng, o, len)
            }
        } else if is_exact(o, &raw mut ffi::PySet_Type) {
            let s = ffi::PySet_New(o);
            *items = items.saturating_sub(ffi::PySet_Size(o).max(0) as usize);
            s
        } else if is_exact(o, &raw mut ffi::PyByteArray_Type) {
            ffi::PyByteArray_FromObject(o)
        } else if let Some(&(_, f)) = eng.snapshotters.iter().find(|&&(t, _)| t == ffi::Py_TYPE(o)) {
            without_recording(|| ffi::PyObject_CallOneArg(f, o))
        } else if let Some(copy) = eng.copy_fn {
            let len = ffi::PyObject_Size(o);
            if len < 0 {
                ffi::PyErr_Clear();
            }
            *items = items.saturating_sub(len.max(0) as usize);
            without_recording(|| ffi::PyObject_CallOneArg(copy, o))
        } else {
            std::ptr::null_mut()
        };
        if copied.is_null() {
            ffi::PyErr_Clear();
            eng.snapshot_errors += 1;
            ffi::Py_IncRef(o);
            return o;
        }
        copied
    }
}

/// The length of `o` when it is over the length budget (sizes of sets, deques and container
/// subclasses, without running their iteration).
unsafe fn too_long(eng: &Engine, o: *mut ffi::PyObject) -> Option<usize> {
    unsafe {
        if ffi::PyAnySet_Check(o) == 0
            && ffi::PyList_Check(o) == 0
            && ffi::PyDict_Check(o) == 0
            && (eng.deque_type.is_null() || ffi::PyObject_TypeCheck(o, eng.deque_type) == 0)
        {
            return None;
        }
        let len = without_recording(|| ffi::PyObject_Size(o));
        if len < 0 {
            ffi::PyErr_Clear();
            return None;
        }
        (len as usize > eng.budget.max_length).then_some(len as usize)
    }
}

/// A list of the first `max_length` items of iterable `o` (of `len` items), then the marker.
unsafe fn first_items(eng: &Engine, o: *mut ffi::PyObject, len: usize) -> *mut ffi::PyObject {
    unsafe {
        let out = ffi::PyList_New(0);
        if out.is_null() {
            return out;
        }
        let it = without_recording(|| ffi::PyObject_GetIter(o));
        if it.is_null() {
            ffi::Py_DecRef(out);
            return std::ptr::null_mut();
        }
        let mut n = 0;
        while n < eng.budget.max_length {
            let item = without_recording(|| ffi::PyIter_Next(it));
            if item.is_null() {
                break;
            }
            ffi::PyList_Append(out, item);
            ffi::Py_DecRef(item);
            n += 1;
        }
        ffi::Py_DecRef(it);
        ffi::PyErr_Clear();
        let m = marker(eng, o, len - n);
        ffi::PyList_Append(out, m);
        ffi::Py_DecRef(m);
        out
    }
}

unsafe fn snapshot_list(eng: &mut Engine, o: *mut ffi::PyObject, depth: u32, items: &mut usize) -> *mut ffi::PyObject {
    unsafe {
        let n = ffi::PyList_GET_SIZE(o) as usize;
        let shown = n.min(eng.budget.max_length).min(*items);
        *items -= shown;
        let truncated = shown < n;
        let out = ffi::PyList_New((shown + usize::from(truncated)) as ffi::Py_ssize_t);
        if out.is_null() {
            return out;
        }
        for i in 0..shown {
            // The list may shrink if a snapshot function mutates it; stop at its current end.
            if i as ffi::Py_ssize_t >= ffi::PyList_GET_SIZE(o) {
                ffi::PyList_SET_ITEM(out, i as ffi::Py_ssize_t, marker(eng, o, n - i));
                continue;
            }
            let item = ffi::PyList_GET_ITEM(o, i as ffi::Py_ssize_t);
            if is_plain(item) {
                // What `snapshot` gives for it, without the calls.
                ffi::Py_INCREF(item);
                ffi::PyList_SET_ITEM(out, i as ffi::Py_ssize_t, item);
                continue;
            }
            ffi::Py_IncRef(item);
            let s = snapshot(eng, item, depth - 1, items);
            ffi::Py_DecRef(item);
            ffi::PyList_SET_ITEM(out, i as ffi::Py_ssize_t, s);
        }
        if truncated {
            ffi::PyList_SET_ITEM(out, shown as ffi::Py_ssize_t, marker(eng, o, n - shown));
        }
        out
    }
}

unsafe fn snapshot_tuple(eng: &mut Engine, o: *mut ffi::PyObject, depth: u32, items: &mut usize) -> *mut ffi::PyObject {
    unsafe {
        let n = ffi::PyTuple_GET_SIZE(o) as usize;
        let shown = n.min(eng.budget.max_length).min(*items);
        *items -= shown;
        let truncated = shown < n;
        let out = ffi::PyTuple_New((shown + usize::from(truncated)) as ffi::Py_ssize_t);
        if out.is_null() {
            return out;
        }
        for i in 0..shown {
            let item = ffi::PyTuple_GET_ITEM(o, i as ffi::Py_ssize_t);
            if is_plain(item) {
                ffi::Py_INCREF(item);
                ffi::PyTuple_SET_ITEM(out, i as ffi::Py_ssize_t, item);
                continue;
            }
            let s = snapshot(eng, item, depth - 1, items);
            ffi::PyTuple_SET_ITEM(out, i as ffi::Py_ssize_t, s);
        }
        if truncated {
            ffi::PyTuple_SET_ITEM(out, shown as ffi::Py_ssize_t, marker(eng, o, n - shown));
        }
        out
    }
}

unsafe fn snapshot_dict(eng: &mut Engine, o: *mut ffi::PyObject, depth: u32, items: &mut usize) -> *mut ffi::PyObject {
    unsafe {
        let n = ffi::PyDict_Size(o).max(0) as usize;
        let shown = n.min(eng.budget.max_length).min(*items);
        *items -= shown;
        let out = ffi::PyDict_New();
        if out.is_null() {
            return out;
        }
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        let mut copied = 0;
        // Keys and values are borrowed from a dict a snapshot function could mutate: hold them.
        while copied < shown && ffi::PyDict_Next(o, &mut pos, &mut key, &mut value) != 0 {
            ffi::Py_IncRef(key);
            let failed = if is_plain(value) {
                // What `snapshot` gives for it; `PyDict_SetItem` holds it before running any code.
                ffi::PyDict_SetItem(out, key, value) != 0
            } else {
                ffi::Py_IncRef(value);
                let s = snapshot(eng, value, depth - 1, items);
                let failed = ffi::PyDict_SetItem(out, key, s) != 0;
                ffi::Py_DecRef(s);
                ffi::Py_DecRef(value);
                failed
            };
            ffi::Py_DecRef(key);
            if failed {
                ffi::Py_DecRef(out);
                return std::ptr::null_mut();
            }
            copied += 1;
        }
        if copied < n {
            let m = marker(eng, o, n - copied);
            if ffi::PyDict_SetItem(out, m, m) != 0 {
                ffi::PyErr_Clear();
            }
            ffi::Py_DecRef(m);
        }
        out
    }
}

/// A new reference to the truncation marker for `o`, `omitted` items left out (0: the whole
/// value was cut by the depth or item budget).
unsafe fn marker(eng: &Engine, o: *mut ffi::PyObject, omitted: usize) -> *mut ffi::PyObject {
    unsafe {
        let len = if ffi::PySequence_Check(o) != 0 || ffi::PyDict_Check(o) != 0 || ffi::PyAnySet_Check(o) != 0 {
            let l = ffi::PyObject_Size(o);
            if l < 0 {
                ffi::PyErr_Clear();
            }
            l.max(0)
        } else {
            0
        };
        if let Some(factory) = eng.truncation_marker {
            let tp_name = type_name(o);
            let args = (
                ffi::PyUnicode_FromStringAndSize(tp_name.as_ptr().cast(), tp_name.len() as ffi::Py_ssize_t),
                ffi::PyLong_FromSsize_t(len),
                ffi::PyLong_FromSize_t(omitted),
            );
            if !args.0.is_null() && !args.1.is_null() && !args.2.is_null() {
                let call_args = [args.0, args.1, args.2];
                let r = without_recording(|| {
                    ffi::PyObject_Vectorcall(factory, call_args.as_ptr(), 3, std::ptr::null_mut())
                });
                ffi::Py_DecRef(args.0);
                ffi::Py_DecRef(args.1);
                ffi::Py_DecRef(args.2);
                if !r.is_null() {
                    return r;
                }
            }
            ffi::PyErr_Clear();
        }
        let text = b"<truncated by squall>";
        ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), text.len() as ffi::Py_ssize_t)
    }
}

/// The name of `o`'s type.
pub unsafe fn type_name(o: *mut ffi::PyObject) -> String {
    unsafe {
        let tp = ffi::Py_TYPE(o);
        let name = std::ffi::CStr::from_ptr((*tp).tp_name);
        name.to_string_lossy().into_owned()
    }
}

/// `str(o)`, or an empty string if that fails.
pub unsafe fn str_of(o: *mut ffi::PyObject) -> String {
    unsafe {
        let s = ffi::PyObject_Str(o);
        if s.is_null() {
            ffi::PyErr_Clear();
            return String::new();
        }
        let mut size: ffi::Py_ssize_t = 0;
        let p = ffi::PyUnicode_AsUTF8AndSize(s, &mut size);
        let out = if p.is_null() {
            ffi::PyErr_Clear();
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), size as usize)).into_owned()
        };
        ffi::Py_DecRef(s);
        out
    }
}
