//! Knowing that a recorded object was freed, without a reference to it: the recorder hooks the
//! deallocation of each type it gives identities to, and forgets the object's address there
//! (`identity.rs`), so that a later object at the same address is a new object.
//!
//! - A static (C) type's `tp_dealloc` is replaced by a hook that forgets the address and calls
//!   the type's own: [`slot_hook`] (one per type, up to `SLOT_COUNT`, no lookup for objects of
//!   exactly that type) or [`dealloc_hook`] (`type` itself, and types past the slots). (Lists and dicts are recycled through free lists inside their
//!   `tp_dealloc`, so `tp_free` would miss them.)
//! - Classes defined in Python are left as they are (`__class__` assignment compares their
//!   `tp_dealloc` and `tp_free`): their instances end in `subtype_dealloc`, which calls the
//!   `tp_dealloc` of the first base that is not a Python class (`object`, `list`,
//!   `Exception`...). That base is hooked, and the hook finds the original by walking the
//!   object's bases.
//! - Only deallocators known to this module are hooked (named in [`Known`], checked against
//!   each CPython version's code): a hook must reproduce what the original does with CPython's
//!   trashcan, and must not be entered twice for one object (a hooked deallocator calling
//!   another hooked type's slot). Objects of any other type cannot report their deaths: they get
//!   no identity ([`watched`]), so that two of them are never taken for one.
//!
//! The trashcan: `Py_TRASHCAN_BEGIN(op, list_dealloc)` defers the deallocation of deeply nested
//! structures (a list of a list of ... ) to a loop, but only when `Py_TYPE(op)->tp_dealloc` is
//! the function itself, so the hook turns it off in the original. The hook runs the same check
//! and the same deferral itself ([`trashcan_enter`]), before calling the original, for the
//! deallocators that use it (`Kind::Trashcan`); these all untrack the object from the GC first
//! with the idempotent `PyObject_GC_UnTrack`, which the deferral needs and the hook does first.
//!
//! The hooks cost a counter test per freed object of a hooked type (`FILTER`, by address), and
//! a map lookup only for addresses that may hold an identity now. An object of exactly a hooked
//! static type goes straight to its type's deallocator ([`slot_hook`]). Nothing of this is
//! visible to Python code.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pyo3::ffi;

use crate::gil_cell::GilCell;
use crate::recorder::identity::IDS;

#[inline(always)]
fn forget(o: *mut ffi::PyObject) {
    let addr = o as usize;
    if crate::recorder::addr_filter::may_hold(addr) {
        // SAFETY: objects are freed with the GIL held; the map is never borrowed across a call
        // that could free an object.
        unsafe { IDS.get() }.forget(addr);
    }
}

type Dealloc = unsafe extern "C" fn(*mut ffi::PyObject);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The deallocator does not use the trashcan.
    Plain,
    /// It starts with `PyObject_GC_UnTrack` and `Py_TRASHCAN_BEGIN(op, itself)`.
    Trashcan,
}

unsafe extern "C" {
    static mut PyMethod_Type: ffi::PyTypeObject;
}

#[cfg(Py_3_13)]
unsafe extern "C" {
    fn _PyTrash_thread_deposit_object(tstate: *mut ffi::PyThreadState, op: *mut ffi::PyObject);
}

#[cfg(not(Py_3_13))]
unsafe extern "C" {
    fn _PyTrash_begin(tstate: *mut ffi::PyThreadState, op: *mut ffi::PyObject) -> std::ffi::c_int;
    fn _PyTrash_end(tstate: *mut ffi::PyThreadState);
}

/// The deallocators this module knows, read from their types before any is hooked.
struct Known {
    deallocs: Vec<(usize, Kind)>,
    /// `subtype_dealloc`: what every class defined in Python has.
    subtype: usize,
}

/// A hooked static type, its own deallocator and what that does.
#[derive(Clone, Copy)]
struct Hooked {
    tp: usize,
    orig: Dealloc,
    kind: Kind,
}

const TABLE: usize = 256;

struct Hooks {
    known: Known,
    /// Open addressing by type address; read by every hooked deallocation.
    table: [Option<Hooked>; TABLE],
    /// Types already looked at: whether their objects report their deaths.
    seen: foldhash::HashMap<usize, bool>,
    /// `SLOTS` given to hooked types.
    slots_used: usize,
}

static HOOKS: GilCell<Option<Box<Hooks>>> = GilCell::new(None);

fn slot(tp: usize) -> usize {
    (tp >> 4).wrapping_mul(0x9E37_79B9) % TABLE
}

impl Hooks {
    fn find(&self, tp: usize) -> Option<Hooked> {
        let mut i = slot(tp);
        for _ in 0..TABLE {
            match self.table[i] {
                Some(h) if h.tp == tp => return Some(h),
                Some(_) => i = (i + 1) % TABLE,
                None => return None,
            }
        }
        None
    }

    fn insert(&mut self, h: Hooked) -> bool {
        let mut i = slot(h.tp);
        for _ in 0..TABLE {
            if self.table[i].is_none() {
                self.table[i] = Some(h);
                return true;
            }
            i = (i + 1) % TABLE;
        }
        false
    }
}

fn dealloc_of(tp: *mut ffi::PyTypeObject) -> usize {
    // SAFETY: a valid type object.
    unsafe { (*tp).tp_dealloc }.map_or(0, |d| d as usize)
}

/// # Safety
/// GIL held, before any type is hooked.
unsafe fn known() -> Known {
    // SAFETY: this fn's contract: the GIL is held and no type is hooked yet, so each `tp_dealloc`
    // read is the type's own; the static types named are valid for the process.
    unsafe {
        let exc = |e: *mut ffi::PyObject| dealloc_of(e.cast());
        // BaseException_dealloc took up the trashcan in 3.11 (bpo-44348).
        let exception = if cfg!(Py_3_11) { Kind::Trashcan } else { Kind::Plain };
        let mut deallocs = vec![
            (dealloc_of(&raw mut ffi::PyBaseObject_Type), Kind::Plain),
            (dealloc_of(&raw mut ffi::PyType_Type), Kind::Plain),
            (dealloc_of(&raw mut ffi::PyFunction_Type), Kind::Plain),
            (dealloc_of(&raw mut PyMethod_Type), Kind::Plain),
            (dealloc_of(&raw mut ffi::PyGen_Type), Kind::Plain),
            (dealloc_of(&raw mut ffi::PyCoro_Type), Kind::Plain),
            (dealloc_of(&raw mut ffi::PyAsyncGen_Type), Kind::Plain),
            (exc(ffi::PyExc_BaseException), exception),
            (exc(ffi::PyExc_OSError), Kind::Plain),
            (exc(ffi::PyExc_SyntaxError), Kind::Plain),
            (exc(ffi::PyExc_ImportError), Kind::Plain),
            (exc(ffi::PyExc_StopIteration), Kind::Plain),
            (exc(ffi::PyExc_SystemExit), Kind::Plain),
            (exc(ffi::PyExc_UnicodeError), Kind::Plain),
        ];
        #[cfg(Py_3_10)]
        deallocs.extend([(exc(ffi::PyExc_AttributeError), Kind::Plain), (exc(ffi::PyExc_NameError), Kind::Plain)]);
        #[cfg(Py_3_11)]
        deallocs.push((exc(ffi::PyExc_BaseExceptionGroup), Kind::Plain));
        if trashcan_supported() {
            deallocs.extend([
                (dealloc_of(&raw mut ffi::PyList_Type), Kind::Trashcan),
                (dealloc_of(&raw mut ffi::PyDict_Type), Kind::Trashcan),
                (dealloc_of(&raw mut ffi::PySet_Type), Kind::Trashcan),
                (dealloc_of(&raw mut ffi::PyCFunction_Type), Kind::Trashcan),
            ]);
        } else {
            deallocs.retain(|&(_, k)| k == Kind::Plain);
        }
        deallocs.retain(|&(d, _)| d != 0);
        Known { deallocs, subtype: subtype_dealloc() }
    }
}

/// `subtype_dealloc`, read from a class made for it.
///
/// # Safety
/// GIL held.
unsafe fn subtype_dealloc() -> usize {
    // SAFETY: this fn's contract (GIL held); the class made here is a new reference, read and
    // released before returning.
    unsafe {
        let name = c"squall._probe";
        let tp = ffi::PyErr_NewException(name.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut());
        if tp.is_null() {
            ffi::PyErr_Clear();
            return 0;
        }
        let d = dealloc_of(tp.cast());
        ffi::Py_DecRef(tp);
        d
    }
}

/// 3.13 has no `_PyTrash_begin`: its macro reads `tstate->c_recursion_remaining` (a field of the
/// public struct `_ts`, after the one holding the recursion limit, which checks the layout).
#[cfg(Py_3_13)]
const C_RECURSION_REMAINING: usize = 52;
#[cfg(Py_3_13)]
const PY_RECURSION_LIMIT: usize = 48;
/// `Py_TRASHCAN_HEADROOM`.
#[cfg(Py_3_13)]
const TRASHCAN_HEADROOM: std::ffi::c_int = 50;

fn trashcan_supported() -> bool {
    #[cfg(Py_3_13)]
    {
        // SAFETY: GIL held by the caller; the thread state is live.
        unsafe {
            let ts = ffi::PyThreadState_Get().cast::<u8>();
            *ts.add(PY_RECURSION_LIMIT).cast::<std::ffi::c_int>() == ffi::Py_GetRecursionLimit()
        }
    }
    #[cfg(not(Py_3_13))]
    true
}

fn hooks() -> &'static mut Hooks {
    // SAFETY: GIL held by every caller (the recorder, and deallocation).
    let h = unsafe { HOOKS.get() };
    h.get_or_insert_with(|| {
        // SAFETY: GIL held; nothing is hooked before the first `Hooks` exists.
        let known = unsafe { known() };
        Box::new(Hooks { known, table: [None; TABLE], seen: Default::default(), slots_used: 0 })
    })
}

/// Makes sure objects of type `tp` report their deaths; false if they cannot (then they must
/// not be given identities).
///
/// # Safety
/// GIL held; `tp` a valid type.
#[inline]
pub unsafe fn watched(tp: *mut ffi::PyTypeObject) -> bool {
    let h = hooks();
    if h.seen.is_empty() {
        // Classes die too: `dealloc_hook` then forgets that they were seen.
        // SAFETY: this fn's contract (GIL held); `PyType_Type` is a static type, valid for the
        // process.
        unsafe { hook_type_slow(h, &raw mut ffi::PyType_Type) };
    }
    match h.seen.get(&(tp as usize)) {
        Some(&w) => w,
        // SAFETY: this fn's contract: GIL held and `tp` a valid type, which is what
        // `hook_type_slow` needs.
        None => unsafe { hook_type_slow(h, tp) },
    }
}

#[cold]
unsafe fn hook_type_slow(h: &mut Hooks, tp: *mut ffi::PyTypeObject) -> bool {
    // SAFETY: this fn's contract: GIL held and `tp` a valid type, which is what `hook_base` needs.
    let watched = unsafe { hook_base(h, tp) };
    h.seen.insert(tp as usize, watched);
    watched
}

/// Hooks the deallocator that the objects of `tp` end in.
unsafe fn hook_base(h: &mut Hooks, tp: *mut ffi::PyTypeObject) -> bool {
    // SAFETY: this fn's contract: GIL held and `tp` a valid type; the bases walked (`tp_base`) are
    // kept alive by `tp`.
    unsafe {
        // What `subtype_dealloc` calls: the first base whose deallocator is not its own.
        let mut base = tp;
        while !base.is_null() && h.known.subtype != 0 && dealloc_of(base) == h.known.subtype {
            base = (*base).tp_base;
        }
        if base.is_null() {
            return false;
        }
        if h.find(base as usize).is_some() {
            return true;
        }
        let Some(orig) = (*base).tp_dealloc else { return false };
        if is_hook(orig as usize) {
            return false;
        }
        // A static type before 3.12, a heap type made from a spec since.
        let is_deque = std::ffi::CStr::from_ptr((*base).tp_name).to_bytes() == b"collections.deque";
        let kind = match h.known.deallocs.iter().find(|&&(d, _)| d == orig as usize) {
            Some(&(_, k)) => k,
            // deque_dealloc: no trashcan, and `_collections` is only known once seen.
            None if is_deque => Kind::Plain,
            None => return false,
        };
        if !h.insert(Hooked { tp: base as usize, orig, kind }) {
            return false;
        }
        (*base).tp_dealloc = Some(exact_hook(h, base, orig, kind));
        true
    }
}

/// Reproduces `Py_TRASHCAN_BEGIN` for `o`, whose own deallocator no longer sees itself in its
/// type's slot: true when `o` was deferred (the trashcan will call the hook again later).
///
/// # Safety
/// GIL held; `o` is being deallocated by a `Kind::Trashcan` deallocator that untracks it with
/// `PyObject_GC_UnTrack` before its `Py_TRASHCAN_BEGIN`.
#[inline]
unsafe fn trashcan_enter(o: *mut ffi::PyObject) -> Option<*mut ffi::PyThreadState> {
    // SAFETY: this fn's contract: GIL held and `o` being deallocated by a trashcan deallocator,
    // which is the state `Py_TRASHCAN_BEGIN`'s calls expect.
    unsafe {
        ffi::PyObject_GC_UnTrack(o.cast());
        let ts = ffi::PyThreadState_Get();
        #[cfg(not(Py_3_13))]
        {
            if _PyTrash_begin(ts, o) != 0 {
                return None;
            }
            Some(ts)
        }
        #[cfg(Py_3_13)]
        {
            // The original's own `Py_TRASHCAN_BEGIN`/`END` still count the depth and empty the
            // trashcan; only its deferral is off.
            if *ts.cast::<u8>().add(C_RECURSION_REMAINING).cast::<std::ffi::c_int>() <= TRASHCAN_HEADROOM {
                _PyTrash_thread_deposit_object(ts, o);
                return None;
            }
            Some(std::ptr::null_mut())
        }
    }
}

/// One hooked type's own deallocator, for the objects of exactly that type (the usual case: a
/// list, a dict), which then need no lookup: [`slot_hook`] number N serves `SLOTS[N]`.
struct Slot {
    tp: AtomicUsize,
    orig: AtomicUsize,
    trashcan: AtomicBool,
}

const SLOT_COUNT: usize = 16;

static SLOTS: [Slot; SLOT_COUNT] =
    [const { Slot { tp: AtomicUsize::new(0), orig: AtomicUsize::new(0), trashcan: AtomicBool::new(false) } };
        SLOT_COUNT];

macro_rules! slot_hooks {
    ($($n:literal)*) => { [$(slot_hook::<$n> as Dealloc),*] };
}

/// The deallocator installed in the type of `SLOTS[N]`.
static SLOT_HOOKS: [Dealloc; SLOT_COUNT] = slot_hooks!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

/// True if `f` is one of this module's hooks (a type that inherited one is not hooked itself).
fn is_hook(f: usize) -> bool {
    f == dealloc_hook as *const () as usize || SLOT_HOOKS.iter().any(|&h| h as usize == f)
}

/// The hook to install in `base`: a slot of its own while there are free ones, except for `type`,
/// whose objects (classes) need `dealloc_hook`'s bookkeeping.
fn exact_hook(h: &mut Hooks, base: *mut ffi::PyTypeObject, orig: Dealloc, kind: Kind) -> Dealloc {
    if base == &raw mut ffi::PyType_Type || h.slots_used >= SLOT_COUNT {
        return dealloc_hook;
    }
    let n = h.slots_used;
    h.slots_used += 1;
    let slot = &SLOTS[n];
    slot.orig.store(orig as usize, Ordering::Relaxed);
    slot.trashcan.store(kind == Kind::Trashcan, Ordering::Relaxed);
    slot.tp.store(base as usize, Ordering::Relaxed);
    SLOT_HOOKS[n]
}

/// The hooked `tp_dealloc` of the type in `SLOTS[N]`: an object of exactly that type is forgotten
/// and handed to the type's own deallocator (through the trashcan as [`dealloc_hook`] does);
/// any other (a subclass's instance, through `subtype_dealloc`) takes [`dealloc_hook`]'s lookup.
unsafe extern "C" fn slot_hook<const N: usize>(o: *mut ffi::PyObject) {
    forget(o);
    let slot = &SLOTS[N];
    // SAFETY: CPython calls a `tp_dealloc` with the GIL held and `o` an object whose last reference
    // is gone; the original deallocator is called exactly once, as CPython would have.
    unsafe {
        if ffi::Py_TYPE(o) as usize != slot.tp.load(Ordering::Relaxed) {
            return dealloc_found(o);
        }
        // SAFETY: stored from a `Dealloc` before this hook was installed; never changed after.
        let orig: Dealloc = std::mem::transmute::<usize, Dealloc>(slot.orig.load(Ordering::Relaxed));
        if slot.trashcan.load(Ordering::Relaxed) {
            let Some(_ts) = trashcan_enter(o) else { return };
            orig(o);
            #[cfg(not(Py_3_13))]
            _PyTrash_end(_ts);
            return;
        }
        orig(o)
    }
}

/// The hooked `tp_dealloc` of static types without a slot.
unsafe extern "C" fn dealloc_hook(o: *mut ffi::PyObject) {
    forget(o);
    // SAFETY: CPython calls a `tp_dealloc` with the GIL held and `o` being deallocated:
    // `dealloc_found`'s contract.
    unsafe { dealloc_found(o) }
}

/// The deallocation of `o`, forgotten already: finds the hooked base its deallocation ends in.
///
/// # Safety
/// GIL held; `o` is being deallocated through a hook.
unsafe fn dealloc_found(o: *mut ffi::PyObject) {
    // SAFETY: this fn's contract: GIL held and `o` being deallocated through a hook; the
    // deallocator it hands `o` to is the one CPython would have called.
    unsafe {
        let own = ffi::Py_TYPE(o);
        let h = hooks();
        if ffi::PyType_Check(o) != 0 {
            // A class is freed: a later class at its address must be looked at afresh.
            h.seen.remove(&(o as usize));
        }
        let mut tp = own;
        while !tp.is_null() {
            if let Some(hooked) = h.find(tp as usize) {
                // Py_TRASHCAN_BEGIN's condition: `o`'s own type is the one being run.
                if hooked.kind == Kind::Trashcan && tp == own {
                    let Some(_ts) = trashcan_enter(o) else { return };
                    (hooked.orig)(o);
                    #[cfg(not(Py_3_13))]
                    _PyTrash_end(_ts);
                    return;
                }
                return (hooked.orig)(o);
            }
            tp = (*tp).tp_base;
        }
        // Unreachable: the hook is only installed on hooked types, and what calls it (the
        // type or a subclass's `subtype_dealloc`) has one of them as a base.
        ffi::PyObject_Free(o.cast());
    }
}
