//! Knowing that a recorded object was freed, without a reference to it: the recorder hooks the
//! deallocation of each type it gives identities to, and forgets the object's address there
//! (`identity.rs`), so that a later object at the same address is a new object.
//!
//! - Static (C) types: their `tp_dealloc` is replaced by [`dealloc_hook`], which forgets the
//!   address and calls the type's own. (Lists and dicts are recycled through free lists inside
//!   their `tp_dealloc`, so `tp_free` would miss them.)
//! - Classes defined in Python are left as they are (`__class__` assignment compares their
//!   `tp_dealloc` and `tp_free`): their instances end in `subtype_dealloc`, which calls the
//!   `tp_dealloc` of their first static base (`object`, `list`, `Exception`...). That base is
//!   hooked, and the hook finds the original by walking the object's bases. A class made in C
//!   with its own deallocator (`PyType_FromSpec`) reports no deaths: its addresses are told
//!   apart by type only.
//!
//! The hooks cost a bit test per freed object of a hooked type (`FILTER`, by address), and a
//! map lookup only for addresses that may hold a recorded object. Nothing of this is visible
//! to Python code.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::ffi;

use crate::gil_cell::GilCell;
use crate::identity::IDS;

const FILTER_WORDS: usize = 1 << 14;
/// One bit per address class (`addr >> 4`, folded): set when an identity was given at such an
/// address. A clear bit proves the freed object was never recorded.
static FILTER: [AtomicU64; FILTER_WORDS] = [const { AtomicU64::new(0) }; FILTER_WORDS];

#[inline(always)]
fn bit(addr: usize) -> (usize, u64) {
    let k = (addr >> 4) ^ (addr >> 24);
    ((k >> 6) & (FILTER_WORDS - 1), 1u64 << (k & 63))
}

/// An identity was given to the object at `addr`.
#[inline]
pub fn watch(addr: usize) {
    let (w, b) = bit(addr);
    FILTER[w].fetch_or(b, Ordering::Relaxed);
}

#[inline(always)]
fn forget(o: *mut ffi::PyObject) {
    let addr = o as usize;
    let (w, b) = bit(addr);
    if FILTER[w].load(Ordering::Relaxed) & b != 0 {
        // SAFETY: objects are freed with the GIL held; the map is never borrowed across a call
        // that could free an object.
        unsafe { IDS.get() }.forget(addr);
    }
}

/// Only the deallocators that do not use CPython's trashcan are hooked: `Py_TRASHCAN_BEGIN`
/// compares `Py_TYPE(op)->tp_dealloc` with the type's own function, so hooking `list`, `dict`,
/// `set` or `BaseException` turned their trashcan off and made deallocation recursive (a crash
/// in a collection). `object` (every Python class's instances, through `subtype_dealloc`, whose
/// own trashcan stays) and `type` are safe. Lists, dicts, sets and exceptions are told apart by
/// address and type only, until the hook keeps the trashcan.
const HOOKS_ON: bool = true;

fn trashcan_free(tp: *mut ffi::PyTypeObject) -> bool {
    tp == &raw mut ffi::PyBaseObject_Type || tp == &raw mut ffi::PyType_Type
}

type Dealloc = unsafe extern "C" fn(*mut ffi::PyObject);

struct Hooks {
    /// Static types whose `tp_dealloc` is hooked, with their own.
    deallocs: Vec<(usize, Dealloc)>,
    /// Types whose objects report their deaths (their static base is hooked), or cannot.
    seen: foldhash::HashSet<usize>,
}

static HOOKS: GilCell<Option<Hooks>> = GilCell::new(None);

fn hooks() -> &'static mut Hooks {
    // SAFETY: GIL held by every caller (the recorder, and deallocation).
    let h = unsafe { HOOKS.get() };
    h.get_or_insert_with(|| Hooks { deallocs: Vec::new(), seen: Default::default() })
}

/// Makes sure objects of type `tp` report their deaths.
///
/// # Safety
/// GIL held; `tp` a valid type.
#[inline]
pub unsafe fn hook_type(tp: *mut ffi::PyTypeObject) {
    if !HOOKS_ON {
        return;
    }
    let h = hooks();
    if h.seen.is_empty() {
        // Classes die too: `dealloc_hook` then forgets that they were seen.
        unsafe { hook_type_slow(h, &raw mut ffi::PyType_Type) };
    }
    if h.seen.contains(&(tp as usize)) {
        return;
    }
    unsafe { hook_type_slow(h, tp) }
}

#[cold]
unsafe fn hook_type_slow(h: &mut Hooks, tp: *mut ffi::PyTypeObject) {
    h.seen.insert(tp as usize);
    unsafe {
        // The first static base: what a Python class's `subtype_dealloc` ends in.
        let mut base = tp;
        while !base.is_null() && (*base).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE != 0 {
            base = (*base).tp_base;
        }
        if base.is_null() || !trashcan_free(base) || h.deallocs.iter().any(|&(t, _)| t == base as usize) {
            return;
        }
        if let Some(d) = (*base).tp_dealloc {
            if d as *const () as usize != dealloc_hook as *const () as usize {
                h.deallocs.push((base as usize, d));
                (*base).tp_dealloc = Some(dealloc_hook);
            }
        }
    }
}

/// The hooked `tp_dealloc` of static types.
unsafe extern "C" fn dealloc_hook(o: *mut ffi::PyObject) {
    forget(o);
    unsafe {
        let mut tp = ffi::Py_TYPE(o);
        let h = hooks();
        if ffi::PyType_Check(o) != 0 {
            // A class is freed: a later class at its address must be hooked afresh.
            h.seen.remove(&(o as usize));
        }
        while !tp.is_null() {
            if let Some(&(_, d)) = h.deallocs.iter().find(|(t, _)| *t == tp as usize) {
                return d(o);
            }
            tp = (*tp).tp_base;
        }
        // Unreachable: the hook is only installed on types in `deallocs`, and what calls it
        // (the type or a subclass's `subtype_dealloc`) has one of them as a base.
        ffi::PyObject_Free(o.cast());
    }
}
