//! The write entry points: instrumented code's attribute and item stores and deletes go through
//! them (`obj.a = v` becomes `_sq_wattr(SITE, v, obj, "a")`), so the recorder sees the target,
//! the name or key and the new value without evaluating anything twice.
//!
//! Invariants (DESIGN.md: the recorder never changes what the program does):
//! - the rewriter passes the operands in the order Python evaluates them (the value, then the
//!   object, then the key), each evaluated once, as plain arguments;
//! - the store itself is CPython's own (`PyObject_SetAttr`, `PyObject_SetItem`, `PyObject_DelAttr`
//!   via a NULL value, `PyObject_DelItem`), what `STORE_ATTR` / `STORE_SUBSCR` / `DELETE_*` call:
//!   `__setattr__`, `__setitem__`, property setters and descriptors run exactly as without squall,
//!   and their exceptions propagate unchanged (the entry point returns NULL with them set);
//! - the write is recorded only after the store succeeded, and recording never raises: nothing
//!   of the target is read (no `__getattribute__`, no `__getitem__`, no property getters: the old
//!   value is a query, see `squall_trace::writes`), the value is encoded as every value is.

use std::sync::atomic::Ordering;

use pyo3::ffi;
use squall_trace::{Recorded, ValRef};

use crate::recorder::engine::{capture, scalar};
use crate::recorder::engine::{current_rec, current_rec_cached, memory_check_due, ENGINE, RECORDING};
use crate::recorder::identity::IDS;
use crate::recorder::ints::id_of as small_id;

// The contract of every `unsafe fn` in this module: the GIL is held, the object pointers given
// are live (borrowed for the call), and an `Args` holds as many live pointers as the entry
// point that passes it checked.
type Args = *mut *mut ffi::PyObject;

unsafe fn new_none() -> *mut ffi::PyObject {
    // SAFETY: this module's contract (GIL held); `None` is immortal or kept alive by the reference
    // added.
    unsafe {
        let none = ffi::Py_None();
        ffi::Py_INCREF(none);
        none
    }
}

/// A malformed call (only the rewriter makes these calls): raise, as a call with the wrong
/// arguments would, rather than skip the program's store silently.
#[cold]
unsafe fn bad_call(what: &std::ffi::CStr) -> *mut ffi::PyObject {
    // SAFETY: this module's contract (GIL held); `what` is a NUL-terminated C string.
    unsafe {
        ffi::PyErr_SetString(ffi::PyExc_TypeError, what.as_ptr());
        std::ptr::null_mut()
    }
}

/// Records a write that has happened: at `site_obj`'s site, to `obj`, under `key` (NULL: an
/// attribute, which the site names), with `value` (NULL: a delete). Never raises.
#[inline(always)]
pub(crate) unsafe fn record_write(
    site_obj: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    key: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
) {
    if !RECORDING.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: the entry points run with the GIL held; the arguments are valid objects or NULL.
    unsafe {
        let key_ref = match write_fast(site_obj, obj, key, value) {
            Fast::Done => return,
            Fast::Slow(key_ref) => key_ref,
        };
        record_write_slow(site_obj, obj, key, key_ref, value);
    }
}

/// What the fast path did.
enum Fast {
    /// The write is recorded.
    Done,
    /// Nothing is recorded; the key was encoded already if `Some` (it must not be twice).
    Slow(Option<ValRef>),
}

/// The usual case of `record_write`, without the unwinding guard: a write in the innermost open
/// frame, which is the site's form's, with a key and value that are simple values (see
/// `scalar`). Nothing below runs Python code or can panic. Writes what `record_write_slow`
/// would, in the same order (the target's identity, the key, the value).
#[inline(always)]
unsafe fn write_fast(
    site_obj: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    key: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
) -> Fast {
    // SAFETY: this module's contract (GIL held, live objects); nothing here runs Python code (the
    // doc above), so the ENGINE reference cannot meet another one.
    unsafe {
        let eng = ENGINE.get();
        let Some(site_id) = small_id(site_obj) else { return Fast::Slow(None) };
        let Some((form, _)) = eng.forms.site_owner(site_id) else { return Fast::Slow(None) };
        let Some(rec) = current_rec_cached() else { return Fast::Slow(None) };
        let Some(frame) = rec.tl.innermost_frame_of(form, &eng.limits) else { return Fast::Slow(None) };
        let id = IDS.get().of_watched(obj, |tp| crate::recorder::deaths::watched(tp));
        let key_ref = if key.is_null() {
            ValRef::ABSENT
        } else {
            match scalar(rec, eng.budget.max_string, key) {
                Some(k) => k,
                None => return Fast::Slow(None),
            }
        };
        let new = if value.is_null() {
            ValRef::ABSENT
        } else {
            match scalar(rec, eng.budget.max_string, value) {
                Some(v) => v,
                None => return Fast::Slow(Some(key_ref)),
            }
        };
        let store_len = rec.values.len() as u32;
        rec.enc.note_write(store_len);
        rec.tl.push_write(site_id, frame, id, key_ref, new, store_len);
        if memory_check_due(rec) {
            let step = || ENGINE.get().note(rec, Recorded::Written);
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).is_err() {
                ENGINE.get().dropped += 1;
            }
        }
        Fast::Done
    }
}

/// `record_write` in full: any frame, any value; `key_ref` is the key already encoded by the
/// fast path, if it was.
#[inline(never)]
unsafe fn record_write_slow(
    site_obj: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    key: *mut ffi::PyObject,
    key_ref: Option<ValRef>,
    value: *mut ffi::PyObject,
) {
    // SAFETY: this module's contract (GIL held, live objects); the encoder runs no Python code, so
    // the ENGINE reference is the only one while it lives.
    let step = || unsafe {
        let eng = ENGINE.get();
        let Some(site_id) = small_id(site_obj) else {
            eng.dropped += 1;
            return;
        };
        let Some((form, resumable)) = eng.forms.site_owner(site_id) else {
            eng.dropped += 1;
            return;
        };
        let Some(rec) = current_rec() else { return };
        let id = IDS.get().of_watched(obj, |tp| crate::recorder::deaths::watched(tp));
        let key_ref = match key_ref {
            Some(k) => k,
            None if key.is_null() => ValRef::ABSENT,
            None => capture(eng, rec, key),
        };
        let new = if value.is_null() { ValRef::ABSENT } else { capture(eng, rec, value) };
        let store_len = rec.values.len() as u32;
        rec.enc.note_write(store_len);
        let outcome = rec.tl.write(site_id, form, resumable, id, key_ref, new, store_len, &eng.limits);
        eng.note(rec, outcome);
    };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).is_err() {
        // SAFETY: the entry points run with the GIL held.
        unsafe { ENGINE.get().dropped += 1 };
    }
}

/// The entry points, each as a plain `METH_FASTCALL` function taking the site id first
/// (`_sq_witem(S, v, o, k)`) and bound to its site (`bound_entry("witem", S)(v, o, k)`, the
/// site its `self`: what the rewriter calls, see lib.rs `bound_entry`).
macro_rules! write_entry_points {
    ($($(#[$doc:meta])* $unbound:ident, $bound:ident, $at:ident, $n:literal, $usage:literal;)*) => {$(
        $(#[$doc])*
        pub unsafe extern "C" fn $unbound(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
            // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs`
            // live arguments in `args`; the count is checked before any is read.
            unsafe {
                if nargs != $n + 1 {
                    return bad_call($usage);
                }
                $at(*args, args.add(1))
            }
        }

        /// The same, bound to the site that is its `self`.
        pub unsafe extern "C" fn $bound(site: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
            // SAFETY: CPython calls this bound entry point (METH_FASTCALL with `self`) attached,
            // with `nargs` live arguments; `site` is the `BoundSite` it is bound to, alive while it
            // is; the count is checked first.
            unsafe {
                if nargs != $n {
                    return bad_call($usage);
                }
                $at(site, args)
            }
        }
    )*};
}

write_entry_points! {
    /// `wattr(site_id, value, obj, name) -> value`: `obj.name = value`, recorded. The value comes
    /// back so that chained targets (`a.x = b[i] = v`) nest: `witem(S2, wattr(S1, v, a, "x"), b, i)`.
    write_attr, write_attr_bound, write_attr_at, 3, c"_sq_wattr(site, value, obj, name) takes 4 arguments";
    /// `witem(site_id, value, obj, key) -> value`: `obj[key] = value`, recorded (see `write_attr`).
    write_item, write_item_bound, write_item_at, 3, c"_sq_witem(site, value, obj, key) takes 4 arguments";
    /// `wdelattr(site_id, obj, name) -> None`: `del obj.name`, recorded.
    del_attr, del_attr_bound, del_attr_at, 2, c"_sq_wdelattr(site, obj, name) takes 3 arguments";
    /// `wdelitem(site_id, obj, key) -> None`: `del obj[key]`, recorded.
    del_item, del_item_bound, del_item_at, 2, c"_sq_wdelitem(site, obj, key) takes 3 arguments";
    /// `waugattr(site_id, obj, name, op, operand) -> None`: `obj.name op= operand`, recorded. The
    /// rewriter calls it only when `operand` has no effects of its own (a constant or a name), so
    /// that evaluating it before the load of `obj.name` is unobservable; the load, the operator and
    /// the store are the ones Python's own bytecode does (the load is the program's, not squall's).
    aug_attr, aug_attr_bound, aug_attr_at, 4, c"_sq_waugattr(site, obj, name, op, operand) takes 5 arguments";
    /// `waugitem(site_id, obj, key, op, operand) -> None`: `obj[key] op= operand`, recorded (see
    /// `aug_attr`).
    aug_item, aug_item_bound, aug_item_at, 4, c"_sq_waugitem(site, obj, key, op, operand) takes 5 arguments";
    /// `wsetattr(site_id, obj, name, value) -> None`: a direct `setattr(obj, name, value)` call,
    /// recorded (`PyObject_SetAttr` is what the builtin calls, its TypeError for a non-str name
    /// included).
    set_attr, set_attr_bound, set_attr_at, 3, c"_sq_wsetattr(site, obj, name, value) takes 4 arguments";
}

/// `obj.name = value` with `a` = (value, obj, name).
#[inline(always)]
unsafe fn write_attr_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 3 live arguments the entry point checked.
    unsafe {
        let (value, obj, name) = (*a, *a.add(1), *a.add(2));
        if ffi::PyObject_SetAttr(obj, name, value) < 0 {
            return std::ptr::null_mut();
        }
        record_write(site, obj, std::ptr::null_mut(), value);
        ffi::Py_INCREF(value);
        value
    }
}

/// `obj[key] = value` with `a` = (value, obj, key).
#[inline(always)]
unsafe fn write_item_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 3 live arguments the entry point checked.
    unsafe {
        let (value, obj, key) = (*a, *a.add(1), *a.add(2));
        // An exact dict: what `PyObject_SetItem` would reach through `dict_ass_sub` (and what
        // `STORE_SUBSCR_DICT` does), without the two indirections.
        let r = if ffi::PyDict_CheckExact(obj) != 0 {
            ffi::PyDict_SetItem(obj, key, value)
        } else {
            ffi::PyObject_SetItem(obj, key, value)
        };
        if r < 0 {
            return std::ptr::null_mut();
        }
        record_write(site, obj, key, value);
        ffi::Py_INCREF(value);
        value
    }
}

/// `del obj.name` with `a` = (obj, name).
#[inline(always)]
unsafe fn del_attr_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 2 live arguments the entry point checked.
    unsafe {
        let (obj, name) = (*a, *a.add(1));
        if ffi::PyObject_SetAttr(obj, name, std::ptr::null_mut()) < 0 {
            return std::ptr::null_mut();
        }
        record_write(site, obj, std::ptr::null_mut(), std::ptr::null_mut());
        new_none()
    }
}

/// `del obj[key]` with `a` = (obj, key).
#[inline(always)]
unsafe fn del_item_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 2 live arguments the entry point checked.
    unsafe {
        let (obj, key) = (*a, *a.add(1));
        if ffi::PyObject_DelItem(obj, key) < 0 {
            return std::ptr::null_mut();
        }
        record_write(site, obj, key, std::ptr::null_mut());
        new_none()
    }
}

/// `setattr(obj, name, value)` with `a` = (obj, name, value).
#[inline(always)]
unsafe fn set_attr_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 3 live arguments the entry point checked.
    unsafe {
        let (obj, name, value) = (*a, *a.add(1), *a.add(2));
        if ffi::PyObject_SetAttr(obj, name, value) < 0 {
            return std::ptr::null_mut();
        }
        // The site names no attribute (the name is dynamic): record it as the key.
        record_write(site, obj, name, value);
        new_none()
    }
}

#[inline(always)]
unsafe fn aug_attr_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 4 live arguments the entry point checked;
    // `augmented` needs the same.
    unsafe { augmented(site, a, ffi::PyObject_GetAttr, ffi::PyObject_SetAttr, false) }
}

#[inline(always)]
unsafe fn aug_item_at(site: *mut ffi::PyObject, a: Args) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 4 live arguments the entry point checked;
    // `augmented` needs the same.
    unsafe { augmented(site, a, ffi::PyObject_GetItem, ffi::PyObject_SetItem, true) }
}

/// CPython's in-place operator for the rewriter's operator code (the order of `AUG_OPS` in
/// python/squall/_instrument/rewrite/engines.py: `+= -= *= /= //= %= **= <<= >>= &= |= ^= @=`).
unsafe fn inplace(op: *mut ffi::PyObject, a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this module's contract (GIL held, `op`, `a`, `b` live).
    unsafe {
        match small_id(op) {
            Some(0) => ffi::PyNumber_InPlaceAdd(a, b),
            Some(1) => ffi::PyNumber_InPlaceSubtract(a, b),
            Some(2) => ffi::PyNumber_InPlaceMultiply(a, b),
            Some(3) => ffi::PyNumber_InPlaceTrueDivide(a, b),
            Some(4) => ffi::PyNumber_InPlaceFloorDivide(a, b),
            Some(5) => ffi::PyNumber_InPlaceRemainder(a, b),
            Some(6) => ffi::PyNumber_InPlacePower(a, b, ffi::Py_None()),
            Some(7) => ffi::PyNumber_InPlaceLshift(a, b),
            Some(8) => ffi::PyNumber_InPlaceRshift(a, b),
            Some(9) => ffi::PyNumber_InPlaceAnd(a, b),
            Some(10) => ffi::PyNumber_InPlaceOr(a, b),
            Some(11) => ffi::PyNumber_InPlaceXor(a, b),
            Some(12) => ffi::PyNumber_InPlaceMatrixMultiply(a, b),
            _ => bad_call(c"_sq_waug*: operator code must be an int in 0..13"),
        }
    }
}

/// The load, in-place operator and store of `obj.name op= operand` / `obj[key] op= operand`
/// with `get` and `set`, `a` = (obj, name or key, op, operand); the write is recorded once the
/// store succeeded, with the key when `item` (an attribute's name is in its site).
#[inline(always)]
unsafe fn augmented(
    site: *mut ffi::PyObject,
    a: Args,
    get: unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> *mut ffi::PyObject,
    set: unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject, *mut ffi::PyObject) -> std::ffi::c_int,
    item: bool,
) -> *mut ffi::PyObject {
    // SAFETY: this module's contract: `a` holds the 4 live arguments the entry point checked; every
    // new reference made here is released or returned.
    unsafe {
        let (obj, key, op, operand) = (*a, *a.add(1), *a.add(2), *a.add(3));
        let old = get(obj, key);
        if old.is_null() {
            return std::ptr::null_mut();
        }
        let new = inplace(op, old, operand);
        ffi::Py_DECREF(old);
        if new.is_null() {
            return std::ptr::null_mut();
        }
        let r = set(obj, key, new);
        if r == 0 {
            record_write(site, obj, if item { key } else { std::ptr::null_mut() }, new);
        }
        ffi::Py_DECREF(new);
        if r < 0 {
            std::ptr::null_mut()
        } else {
            new_none()
        }
    }
}
