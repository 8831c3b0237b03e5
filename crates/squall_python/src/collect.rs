//! Full garbage collections see the program's heap as if the recording were not there.
//!
//! The recording keeps the objects it recorded alive, which a program can observe: a finalizer
//! that does not run, a weak reference that stays alive, a class still in `__subclasses__()`
//! (attrs' test suite checks exactly that). Objects the program dropped are usually freed by
//! reference counting the moment the recording lets go of them; objects in reference cycles
//! need the cycle collector. So, around every full collection (generation 2, which includes
//! each `gc.collect()`), installed in `gc.callbacks`:
//!
//! - at `start`, every recorded object that could keep another object alive is let go of:
//!   held only by the recording (the program dropped it): it is snapshotted ([`Snap`]) and
//!   released, in full within a time budget and shallowly past it; otherwise, if it can be weakly
//!   referenced, the recording keeps a weak reference instead; if it cannot (a tuple, a dict, a
//!   descriptor, a `__slots__` object), a *holder* keeps it: a list whose only reference is its
//!   own, which the collector finds unreachable along with everything only it reaches.
//!   `gc.DEBUG_SAVEALL` is set for this collection, so cycle garbage is kept in `gc.garbage`
//!   instead of being cleared (its finalizers and weak reference callbacks run as usual);
//! - at `stop`, objects still alive are held again (their value refs deref to the same object);
//!   recorded objects found in the new garbage are snapshotted, then the garbage is cleared
//!   and freed the way the collector would have (`tp_clear`, then the last reference dropped),
//!   and `gc.garbage` and the debug flags are as they were.
//!
//! A released slot's value is its snapshot: kept in `ThreadRec::snaps` until the flusher saves
//! it to the recording file. What stays held strongly: objects that cannot hold references
//! (strings, numbers, classes' `ClassRef`s, the recording's own copies of plain data, which it
//! keeps out of the collector's sight) and, when the program set `DEBUG_SAVEALL` itself, objects
//! that cannot be weakly referenced.
//!
//! Everything the recording holds must be visible to the collector for this to work: the
//! recording's copies of containers stay tracked when they hold tracked objects (capture.rs).

// Keys are object addresses: a fast hasher (the scans run at every full collection).
use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use squall_trace::Snap;

use crate::engine::{without_recording, Engine, ENGINE};
use crate::gil_cell::GilCell;
use crate::snap::{snap_of, SnapBudget, FILE_BUDGET};

/// How long a collection's start, and again its stop, snapshots dropped objects in full. Past
/// it they are snapshotted shallowly ([`SHALLOW_BUDGET`]): they are still freed, because a dropped
/// object the recording keeps alive is something the program can observe (and the pause, too,
/// is a pause of the program).
const SNAPSHOT_TIME_BUDGET: std::time::Duration = std::time::Duration::from_millis(25);

/// The value itself and its direct items or attributes, briefly.
const SHALLOW_BUDGET: SnapBudget =
    SnapBudget { max_depth: 1, max_length: 20, max_repr: 300, max_nested_repr: 60, max_nodes: 21 };

/// Snapshots of dropped objects, in full until the time budget is spent.
struct Snapper {
    started: std::time::Instant,
}

impl Snapper {
    fn new() -> Self {
        Snapper { started: std::time::Instant::now() }
    }

    fn take(&self, o: &Bound<'_, PyAny>) -> Snap {
        let budget = if self.started.elapsed() < SNAPSHOT_TIME_BUDGET { &FILE_BUDGET } else { &SHALLOW_BUDGET };
        snap_of(o, budget)
    }
}

/// (recording, slot) pairs.
type Slots = Vec<(usize, usize)>;

/// A recorded object let go of during a collection.
struct Weakened {
    /// (recording, slot) of each slot that held it.
    slots: Vec<(usize, usize)>,
    /// A weak reference to it, or null when it cannot be weakly referenced: then the holder
    /// ([`Collection::holder`]) keeps it.
    weakref: *mut ffi::PyObject,
    /// The object's address, to find it in `gc.garbage` (dereferenced only while the holder
    /// keeps it).
    addr: usize,
}

struct Collection {
    weakened: Vec<Weakened>,
    /// `gc.get_debug()` before this collection, and `len(gc.garbage)`.
    debug_before: i64,
    garbage_before: usize,
    /// Each recording's slot count when the collection started.
    marks: Vec<usize>,
    /// Each recording's objects held (non-null slots) when it started.
    held_before: Vec<u64>,
    /// A list holding the recorded objects that cannot be weakly referenced, and itself: its
    /// only reference is its own, so the collector finds it unreachable, and with it every object
    /// nothing else reaches. `DEBUG_SAVEALL` moves them all to `gc.garbage` instead of freeing
    /// them, where `restore` tells the dead from the living. Null when not needed.
    holder: *mut ffi::PyObject,
}

fn held(eng: &Engine) -> Vec<u64> {
    eng.recs
        .iter()
        .map(|r| r.as_ref().map_or(0, |r| r.values[r.released_upto..].iter().filter(|p| !p.is_null()).count() as u64))
        .collect()
}

static COLLECTION: GilCell<Option<Collection>> = GilCell::new(None);

/// `COLLECTION.is_some()`, cheap to test where values are kept (capture.rs).
pub static COLLECTING: AtomicBool = AtomicBool::new(false);

/// Keeps a value recorded while a full collection runs (a finalizer's `self`, a weak reference
/// callback's argument): weakly if it can be, else through the holder, so that recording a
/// finalizer does not resurrect the object being collected. Returns what the slot holds (null
/// when held weakly or by the holder).
///
/// # Safety
/// GIL held; `owned` an owned reference, for slot `slot` of recording `rec`.
pub unsafe fn keep_during_collection(rec: usize, slot: usize, owned: *mut ffi::PyObject) -> *mut ffi::PyObject {
    unsafe {
        let Some(col) = COLLECTION.get().as_mut() else { return owned };
        if !may_hold_objects(ENGINE.get(), owned, 3) {
            return owned;
        }
        let weakref = if weakrefable(owned) {
            let w = ffi::PyWeakref_NewRef(owned, std::ptr::null_mut());
            if w.is_null() {
                ffi::PyErr_Clear();
                return owned;
            }
            w
        } else {
            // The holder is in the collector's unreachable set: what it holds stays there
            // unless reached from elsewhere (a finalizer's `self` that cannot be weakly
            // referenced is not resurrected by the recording).
            if col.holder.is_null() || ffi::PyObject_GC_IsTracked(owned) == 0 || !hold(col.holder, owned) {
                return owned;
            }
            std::ptr::null_mut()
        };
        col.weakened.push(Weakened { slots: vec![(rec, slot)], weakref, addr: owned as usize });
        // Not the last reference: the caller's own keeps it alive for now.
        ffi::Py_DecRef(owned);
        std::ptr::null_mut()
    }
}

/// Engine work that reads value slots across calls into Python (which can start a collection)
/// sets this; a collection starting meanwhile leaves the recording as it is.
static BUSY: GilCell<u32> = GilCell::new(0);

/// Runs `f` with collections unable to release the recording's objects.
pub fn busy<R>(f: impl FnOnce() -> R) -> R {
    struct Busy;
    impl Drop for Busy {
        fn drop(&mut self) {
            // SAFETY: GIL held (as when it was made).
            unsafe { *BUSY.get() -= 1 };
        }
    }
    // SAFETY: GIL held by every caller (engine code).
    unsafe { *BUSY.get() += 1 };
    let _busy = Busy;
    f()
}

/// squall's entry in `gc.callbacks`.
#[pyfunction]
pub fn gc_callback(py: Python<'_>, phase: &str, info: &Bound<'_, PyDict>) {
    let full = info.get_item("generation").ok().flatten().and_then(|g| g.extract::<i64>().ok()).is_some_and(|g| g >= 2);
    let t0 = std::time::Instant::now();
    let result = match phase {
        "start" if full => on_start(py),
        "stop" => on_stop(py),
        _ => Ok(()),
    };
    if std::env::var_os("SQUALL_DEBUG_PAUSES").is_some() && t0.elapsed().as_millis() > 30 {
        eprintln!("squall gc {phase}: {} ms", t0.elapsed().as_millis());
    }
    if let Err(e) = result {
        // Never into the program: a failure here leaves objects held, as without this module.
        // SAFETY: GIL held.
        unsafe { ENGINE.get().snapshot_errors += 1 };
        e.restore(py);
        // SAFETY: GIL held; the error was just restored.
        unsafe { ffi::PyErr_Clear() };
    }
}

/// Whether keeping `o` could keep another object alive.
///
/// # Safety
/// GIL held; `o` a valid object.
unsafe fn may_hold_objects(eng: &Engine, o: *mut ffi::PyObject, depth: u32) -> bool {
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if ffi::PyType_HasFeature(tp, ffi::Py_TPFLAGS_HAVE_GC) == 0 {
            return false;
        }
        if eng.class_ref.is_some_and(|c| c.cast() == tp) {
            return false;
        }
        if eng.truncation_marker.is_some_and(|m| m.cast() == tp) {
            return false;
        }
        if depth == 0 {
            return true;
        }
        // The recording's own copies (exact builtin containers) of strings and numbers.
        if tp == &raw mut ffi::PyList_Type {
            let n = ffi::PyList_GET_SIZE(o);
            return (0..n).any(|i| may_hold_objects(eng, ffi::PyList_GET_ITEM(o, i), depth - 1));
        }
        if tp == &raw mut ffi::PyTuple_Type {
            let n = ffi::PyTuple_GET_SIZE(o);
            return (0..n).any(|i| may_hold_objects(eng, ffi::PyTuple_GET_ITEM(o, i), depth - 1));
        }
        if tp == &raw mut ffi::PyDict_Type {
            let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            while ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0 {
                if may_hold_objects(eng, k, depth - 1) || may_hold_objects(eng, v, depth - 1) {
                    return true;
                }
            }
            return false;
        }
        true
    }
}

/// # Safety
/// GIL held; `o` a valid object.
unsafe fn weakrefable(o: *mut ffi::PyObject) -> bool {
    unsafe { (*ffi::Py_TYPE(o)).tp_weaklistoffset != 0 }
}

/// Makes the holder: a list whose first item is itself. Null if it could not be (out of
/// memory): then the slots keep holding what it would have.
///
/// # Safety
/// GIL held.
unsafe fn make_holder() -> *mut ffi::PyObject {
    unsafe {
        let h = ffi::PyList_New(0);
        if h.is_null() || ffi::PyList_Append(h, h) != 0 {
            ffi::PyErr_Clear();
            if !h.is_null() {
                ffi::Py_DecRef(h);
            }
            return std::ptr::null_mut();
        }
        h
    }
}

/// Adds `p` to the holder. False if it could not be (out of memory): then the slots keep
/// holding `p`.
///
/// # Safety
/// GIL held; `p` a valid object; `holder` a list made by [`make_holder`].
unsafe fn hold(holder: *mut ffi::PyObject, p: *mut ffi::PyObject) -> bool {
    unsafe {
        if ffi::PyList_Append(holder, p) != 0 {
            ffi::PyErr_Clear();
            return false;
        }
        true
    }
}

/// Every recorded object that could keep another alive: (recording, slot, object).
fn candidates(eng: &Engine) -> Vec<(usize, usize, *mut ffi::PyObject)> {
    let mut out = Vec::new();
    for (r, rec) in eng.recs.iter().enumerate() {
        let Some(rec) = rec.as_deref() else { continue };
        for slot in rec.released_upto..rec.values.len() {
            let p = rec.values[slot];
            // SAFETY: non-null slots own a strong reference.
            if !p.is_null() && unsafe { may_hold_objects(eng, p, 3) } {
                out.push((r, slot, p));
            }
        }
    }
    out
}

/// How many slots hold each object.
fn slot_counts(cands: &[(usize, usize, *mut ffi::PyObject)]) -> HashMap<usize, isize> {
    let mut counts: HashMap<usize, isize> = HashMap::with_capacity_and_hasher(cands.len(), Default::default());
    for &(_, _, p) in cands {
        *counts.entry(p as usize).or_default() += 1;
    }
    counts
}

fn on_start(py: Python<'_>) -> PyResult<()> {
    // SAFETY: GIL held (a Python callback).
    if unsafe { *BUSY.get() } > 0 || unsafe { COLLECTION.get() }.is_some() {
        return Ok(());
    }
    // Nothing held and nothing to record (a finalizer recorded now would be held).
    let recording = crate::engine::RECORDING.load(Ordering::Relaxed);
    if !recording && unsafe { ENGINE.get() }.recs.iter().flatten().all(|r| r.values.len() == r.released_upto) {
        return Ok(());
    }
    let gc = py.import("gc")?;
    let debug_before: i64 = gc.call_method0("get_debug")?.extract()?;
    let saveall: i64 = gc.getattr("DEBUG_SAVEALL")?.extract()?;
    let garbage_before = gc.getattr("garbage")?.len()?;
    // SAFETY: GIL held. Set before any user code runs: the flusher skips while it is set.
    let marks = unsafe { ENGINE.get() }.recs.iter().map(|r| r.as_ref().map_or(0, |r| r.values.len())).collect();
    let held_before = held(unsafe { ENGINE.get() });
    unsafe {
        *COLLECTION.get() = Some(Collection {
            weakened: Vec::new(),
            debug_before,
            garbage_before,
            marks,
            held_before,
            holder: std::ptr::null_mut(),
        })
    };
    COLLECTING.store(true, Ordering::Relaxed);

    // Objects held by the recording alone (the program has let go of them): snapshotted, then
    // freed. Freeing a copy can leave objects it held alone in turn: a few rounds (what is left
    // then goes to the holder below, and is snapshotted at the stop).
    let snapper = Snapper::new();
    let mut cands = candidates(unsafe { ENGINE.get() });
    let mut counts = slot_counts(&cands);
    for _round in 0..3 {
        let mut alone: Vec<_> =
            cands.iter().copied().filter(|&(_, _, p)| unsafe { ffi::Py_REFCNT(p) } == counts[&(p as usize)]).collect();
        if alone.is_empty() {
            break;
        }
        // Newest first: what a program just dropped (and may be checking for) is snapshotted
        // in full first.
        alone.sort_unstable_by_key(|&(_, slot, _)| std::cmp::Reverse(slot));
        // Snapshots run `repr` (user code, during which other threads may record): each slot
        // is looked up again after them. Slots the recording file has already saved need none.
        let mut snaps: HashMap<usize, Arc<Snap>> = HashMap::default();
        // One cache of type names and module reprs for the round: the slots hold every object
        // snapshotted, and so their types.
        crate::snap::with_snap_cache(|| {
            for &(r, slot, p) in &alone {
                if slot < crate::sink::saved_values(r) || snaps.contains_key(&(p as usize)) {
                    continue;
                }
                // SAFETY: the slot still owns `p` (only this thread releases slots).
                snaps.insert(p as usize, Arc::new(snapper.take(unsafe { &Bound::from_borrowed_ptr(py, p) })));
            }
        });
        let mut freed = Vec::new();
        let eng = unsafe { ENGINE.get() };
        for (r, slot, p) in alone {
            let Some(rec) = eng.recs.get_mut(r).and_then(|r| r.as_deref_mut()) else { continue };
            if rec.values.get(slot) == Some(&p) {
                if let Some(snap) = snaps.get(&(p as usize)).filter(|_| slot >= crate::sink::saved_values(r)) {
                    rec.snaps.insert(slot, Arc::clone(snap));
                }
                rec.values[slot] = std::ptr::null_mut();
                freed.push(p);
            }
        }
        // Their finalizers run now, unrecorded (without squall they would have run earlier).
        without_recording(|| {
            for p in freed {
                // SAFETY: the slots owned these references.
                unsafe { ffi::Py_DecRef(p) };
            }
        });
        cands = candidates(unsafe { ENGINE.get() });
        counts = slot_counts(&cands);
    }

    // Objects also held elsewhere: weakly during the collection, or by the holder. No Python
    // code runs here (creating weak references cannot start a collection during one), and no
    // object is freed: each keeps a reference from elsewhere. The holder is used only when
    // `DEBUG_SAVEALL` is ours to set: a program's own `gc.garbage` must not receive it.
    let saveall_ours = debug_before & saveall == 0;
    // Made now even if empty: finalizers may record objects it must take (above).
    let holder = if saveall_ours { unsafe { make_holder() } } else { std::ptr::null_mut() };
    let eng = unsafe { ENGINE.get() };
    let mut by_obj: HashMap<usize, usize> = HashMap::default();
    let mut weakened: Vec<Weakened> = Vec::new();
    for (r, slot, p) in cands {
        // SAFETY: the slot owns `p`.
        // Checked once per object, before any of its slots lets go of it.
        let i = match by_obj.get(&(p as usize)) {
            Some(&i) => i,
            None => {
                // Held by the recording alone still (freed by the rounds above in turn): the
                // holder makes it garbage, snapshotted at the stop. Untracked objects cannot
                // be part of a cycle: they stay.
                let alone = unsafe { ffi::Py_REFCNT(p) } <= counts[&(p as usize)];
                if alone && unsafe { ffi::PyObject_GC_IsTracked(p) } == 0 {
                    continue;
                }
                let w = if !alone && unsafe { weakrefable(p) } {
                    let w = unsafe { ffi::PyWeakref_NewRef(p, std::ptr::null_mut()) };
                    if w.is_null() {
                        unsafe { ffi::PyErr_Clear() };
                        continue;
                    }
                    w
                } else {
                    if holder.is_null() || !unsafe { hold(holder, p) } {
                        continue;
                    }
                    std::ptr::null_mut()
                };
                weakened.push(Weakened { slots: Vec::new(), weakref: w, addr: p as usize });
                by_obj.insert(p as usize, weakened.len() - 1);
                weakened.len() - 1
            }
        };
        weakened[i].slots.push((r, slot));
        if let Some(rec) = eng.recs.get_mut(r).and_then(|r| r.as_deref_mut()) {
            rec.values[slot] = std::ptr::null_mut();
            // SAFETY: the slot owned this reference; the weak reference or the holder stands
            // for it now.
            unsafe { ffi::Py_DecRef(p) };
        }
    }
    if !holder.is_null() {
        // SAFETY: ours; its own reference (the list's first item) keeps it alive from here.
        unsafe { ffi::Py_DecRef(holder) };
    }
    if let Some(col) = unsafe { COLLECTION.get() }.as_mut() {
        col.weakened.extend(weakened);
        col.holder = holder;
    }
    if saveall_ours {
        gc.call_method1("set_debug", (debug_before | saveall,))?;
    }
    Ok(())
}

/// True between a full collection's start and stop, while slots are released without their
/// snapshots yet (the flusher waits).
pub fn collecting() -> bool {
    // SAFETY: GIL held by every caller (engine code).
    unsafe { COLLECTION.get() }.is_some()
}

fn on_stop(py: Python<'_>) -> PyResult<()> {
    // SAFETY: GIL held (a Python callback).
    let Some(col) = (unsafe { COLLECTION.get() }).as_mut() else { return Ok(()) };
    COLLECTING.store(false, Ordering::Relaxed);
    let weakened = std::mem::take(&mut col.weakened);
    let marks = std::mem::take(&mut col.marks);
    let (debug_before, garbage_before) = (col.debug_before, col.garbage_before);
    let held_before = std::mem::take(&mut col.held_before);
    let holder = std::mem::replace(&mut col.holder, std::ptr::null_mut());
    let result = restore(py, weakened, holder, &marks, debug_before, garbage_before);
    // The estimate of what the recording keeps alive (memory limit) follows what it let go of:
    // sizes are not kept per slot, so in proportion.
    let eng = unsafe { ENGINE.get() };
    let after = held(eng);
    for (r, rec) in eng.recs.iter_mut().enumerate() {
        let (Some(rec), Some(&before)) = (rec.as_deref_mut(), held_before.get(r)) else { continue };
        let now = after.get(r).copied().unwrap_or(0);
        if before > 0 && now < before {
            rec.kept_bytes = ((rec.kept_bytes as u128 * now as u128) / before as u128) as u64;
        }
    }
    unsafe { *COLLECTION.get() = None };
    result
}

/// Objects recorded while the collection ran (by finalizers and weak reference callbacks),
/// by address: the collector found a finalized object resurrected by such a slot and kept it,
/// although its weak references were cleared.
fn recorded_during(eng: &Engine, marks: &[usize]) -> HashMap<usize, *mut ffi::PyObject> {
    let mut out = HashMap::default();
    for (r, rec) in eng.recs.iter().enumerate() {
        let Some(rec) = rec.as_deref() else { continue };
        let from = marks.get(r).copied().unwrap_or(0).max(rec.released_upto);
        for &p in rec.values.get(from..).unwrap_or(&[]) {
            if !p.is_null() {
                out.insert(p as usize, p);
            }
        }
    }
    out
}

fn restore(
    py: Python<'_>,
    weakened: Vec<Weakened>,
    holder: *mut ffi::PyObject,
    marks: &[usize],
    debug_before: i64,
    garbage_before: usize,
) -> PyResult<()> {
    let gc = py.import("gc")?;
    let saveall: i64 = gc.getattr("DEBUG_SAVEALL")?.extract()?;
    let ours = debug_before & saveall == 0;
    if ours {
        gc.call_method1("set_debug", (debug_before,))?;
    }
    let garbage = gc.getattr("garbage")?.cast_into::<PyList>()?;
    let new: Vec<Bound<'_, PyAny>> = garbage.iter().skip(garbage_before).collect();
    let by_addr: HashMap<usize, usize> = new.iter().enumerate().map(|(i, o)| (o.as_ptr() as usize, i)).collect();
    // First hold the survivors again (no Python code runs), then snapshot the dead (user code).
    // (slots, index in `new` if the collector found it garbage) of each object that died.
    let mut dead: Vec<(Slots, Option<usize>)> = Vec::new();
    {
        let eng = unsafe { ENGINE.get() };
        let resurrected = recorded_during(eng, marks);
        for w in weakened {
            let alive = if w.weakref.is_null() {
                // SAFETY: the holder still keeps it (it is cleared below).
                (!by_addr.contains_key(&w.addr)).then(|| unsafe { Bound::from_borrowed_ptr(py, w.addr as *mut _) })
            } else {
                let alive = weakref_target(py, w.weakref).or_else(|| {
                    // SAFETY: a slot recorded since the start owns a reference to it: alive.
                    resurrected.get(&w.addr).map(|&p| unsafe { Bound::from_borrowed_ptr(py, p) })
                });
                unsafe { ffi::Py_DecRef(w.weakref) };
                alive
            };
            match alive {
                Some(obj) => {
                    for (r, slot) in w.slots {
                        let Some(rec) = eng.recs.get_mut(r).and_then(|r| r.as_deref_mut()) else { continue };
                        if let Some(v) = rec.values.get_mut(slot) {
                            *v = obj.clone().into_ptr();
                        }
                    }
                }
                None => dead.push((w.slots, by_addr.get(&w.addr).copied())),
            }
        }
    }
    // `new` holds every dead object, and so their types, while the cache lives.
    let snapper = Snapper::new();
    crate::snap::with_snap_cache(|| {
        for (slots, in_garbage) in dead {
            let unsaved: Vec<(usize, usize)> =
                slots.into_iter().filter(|&(r, slot)| slot >= crate::sink::saved_values(r)).collect();
            if unsaved.is_empty() {
                continue;
            }
            let snap = Arc::new(match in_garbage {
                Some(i) => snapper.take(&new[i]),
                None => Snap::Opaque { type_name: "object".into(), repr: "<freed during a garbage collection>".into() },
            });
            for (r, slot) in unsaved {
                if let Some(rec) = unsafe { ENGINE.get() }.recs.get_mut(r).and_then(|r| r.as_deref_mut()) {
                    rec.snaps.insert(slot, Arc::clone(&snap));
                }
            }
        }
    });
    if !holder.is_null() && !by_addr.contains_key(&(holder as usize)) {
        // Still reachable (a finalizer found it through `gc.get_objects()`): let go of it here.
        // SAFETY: alive (its own reference); the extra reference outlives the slice deletion,
        // which drops that one.
        unsafe {
            ffi::Py_IncRef(holder);
            if ffi::PyList_SetSlice(holder, 0, ffi::PY_SSIZE_T_MAX, std::ptr::null_mut()) != 0 {
                ffi::PyErr_Clear();
            }
            ffi::Py_DecRef(holder);
        }
    }
    if ours && !new.is_empty() {
        // Free the cycle garbage as the collector would have: clear each object (`gc.garbage`
        // keeps them all alive meanwhile), then drop the list's references. Objects with a
        // legacy `tp_del` go to `gc.garbage` in any case: they stay there.
        let legacy = |o: &Bound<'_, PyAny>| unsafe { (*ffi::Py_TYPE(o.as_ptr())).tp_del.is_some() };
        without_recording(|| {
            for o in new.iter().filter(|o| !legacy(o)) {
                if let Some(clear) = unsafe { (*ffi::Py_TYPE(o.as_ptr())).tp_clear } {
                    unsafe { clear(o.as_ptr()) };
                    if let Some(e) = PyErr::take(py) {
                        e.write_unraisable(py, Some(o));
                    }
                }
            }
        });
        let kept: Vec<Bound<'_, PyAny>> = new.iter().filter(|o| legacy(o)).cloned().collect();
        drop(new);
        without_recording(|| -> PyResult<()> {
            let len = garbage.len();
            garbage.del_slice(garbage_before, len)?;
            for o in kept {
                garbage.append(o)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A new reference to a weak reference's object, if it is alive.
fn weakref_target(py: Python<'_>, w: *mut ffi::PyObject) -> Option<Bound<'_, PyAny>> {
    // SAFETY: `w` is a weak reference we own; the borrowed result is made owned at once.
    unsafe {
        let o = ffi::PyWeakref_GetObject(w);
        if o.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        if o == ffi::Py_None() {
            return None;
        }
        Some(Bound::from_borrowed_ptr(py, o))
    }
}
