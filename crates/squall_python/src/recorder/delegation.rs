//! Delegates nested under their delegators: a generator or coroutine run by `yield from` or
//! `await` inside another recorded frame shows inside that frame's segment, as on the program's
//! stack, so a recursive generator keeps its recursion in the call tree.
//!
//! The rewriter records `yield from X` and `await X` as a suspension of the delegating frame
//! *before* it delegates (`python/squall/_instrument/rewrite/calls.py`), so the delegate's call
//! and resumes would otherwise run with the delegator closed and hang off whatever resumed the
//! delegator. CPython links a running delegate's frame to the frame driving it (`f_back`: the
//! delegator, executing its `yield from` / `await`), so:
//! - a frame that suspends at an await site (`yield from`, `await`, the implicit awaits of
//!   `async for` / `async with`) is noted as *waiting*, by frame address; when what it awaits
//!   runs a rewritten frame at once (a generator, a coroutine, an async generator's
//!   `__anext__()` / `asend()`: `delegates_inside`), it stays open instead of suspending, so a
//!   recursive async generator enters each level once per value (re-opening every ancestor
//!   at every level's `__anext__()` made depth^2 / 2 resumes per value);
//! - when a resumable frame is entered (its call or a resume) and its `f_back` is a waiting frame
//!   not already open, that frame is re-opened first by a resume entry carrying the same sent
//!   value, and so on up the chain of waiting frames (the outermost opened first);
//! - when a frame suspends and frames re-opened for it are then on top of the open-frame stack,
//!   they suspend too, each at its own await site with the same value, which passes through them
//!   to their consumer (not for an async generator's `yield`: that completes its driver's
//!   `await`, so the driver goes on running);
//! - a waiting frame's own resume (its delegate returned or raised into it) continues the
//!   re-opened segment instead of opening another; the result it carries (the `yield from` /
//!   `await` value) is recorded as the expression value at the await site.
//!
//! Only what is recorded changes: frame addresses are compared, never dereferenced after the
//! frame may have died (`waiting` keeps the code's address too, to tell a new frame at a reused
//! address apart), and no reference is kept.

use pyo3::ffi;
use squall_trace::{FormKind, Kind, Recorded, SiteKind, ValRef, NONE};

use crate::gil_cell::GilCell;
use crate::recorder::delegation_state::{Reopened, Waiting};
use crate::recorder::engine::capture;
use crate::recorder::engine::{Engine, ThreadRec};

/// Beyond this many waiting frames the notes are dropped (stale ones pile up only when a
/// delegator catches its delegate's exception and later returns): nesting then falls back to flat.
const MAX_WAITING: usize = 65_536;

/// The longest chain of delegators re-opened for one entry.
const MAX_CHAIN: usize = 100_000;

/// The address of `frame`'s code object.
unsafe fn code_of(frame: *mut ffi::PyFrameObject) -> usize {
    // SAFETY: the caller holds the GIL and a live `frame`; `PyFrame_GetCode` returns a strong
    // reference, released at once (only the address is kept).
    unsafe {
        let code = ffi::PyFrame_GetCode(frame);
        let at = code as usize;
        ffi::Py_XDECREF(code.cast());
        at
    }
}

/// After the current frame's suspension at `site` carrying `value` was recorded.
///
/// # Safety
/// GIL held; `value` live; called from an entry point, so the current frame is the one that
/// suspended.
pub unsafe fn after_suspend(eng: &mut Engine, rec: &mut ThreadRec, site: u32, value: *mut ffi::PyObject) {
    let Some((form, kind)) = eng.forms.site(site).map(|s| (s.form, s.kind)) else { return };
    if !rec.deleg.reopened.is_empty() {
        let into_driver =
            kind == SiteKind::Yield && eng.forms.form(form).is_some_and(|f| f.kind == FormKind::AsyncGenerator);
        if !into_driver {
            // SAFETY: as this fn's contract.
            unsafe { close_reopened(eng, rec, value) };
        }
    }
    if kind == SiteKind::Await {
        // SAFETY: GIL held; the borrowed frame is live while its code runs (it called us).
        unsafe {
            let frame = ffi::PyEval_GetFrame();
            if frame.is_null() {
                return;
            }
            if rec.deleg.waiting.len() >= MAX_WAITING {
                rec.deleg.waiting.clear();
            }
            rec.deleg.waiting.insert(frame as usize, Waiting { code: code_of(frame), form, site });
        }
    }
}

/// The re-opened frames on top of the stack suspend with `value` (it passes through them).
unsafe fn close_reopened(eng: &mut Engine, rec: &mut ThreadRec, value: *mut ffi::PyObject) {
    rec.deleg.prune(&rec.tl);
    let mut passed: Option<ValRef> = None;
    while let Some(r) = rec.deleg.top(&rec.tl) {
        rec.deleg.reopened.pop();
        let v = match passed {
            Some(v) => v,
            // SAFETY: GIL held and `value` live (the caller's contract).
            None => *passed.insert(unsafe { capture(eng, rec, value) }),
        };
        let outcome = rec.tl.exit(Kind::Return, r.site, r.form, true, v, &eng.limits);
        eng.note(rec, outcome);
    }
}

/// Before the current frame, of a resumable form, is entered: by its call (`resume` false) or a
/// resume sending `sent`. Re-opens the waiting frames driving it; `true`: this is a waiting
/// frame's own resume continuing its re-opened segment, so record no resume.
///
/// # Safety
/// GIL held; called from an entry point, so the current frame is the one entered.
pub unsafe fn before_enter(eng: &mut Engine, rec: &mut ThreadRec, sent: ValRef, resume: bool) -> bool {
    // SAFETY: GIL held; every frame reached is live (the current one and those driving it), and
    // each strong reference `PyFrame_GetBack` returns is released before moving on.
    unsafe {
        let frame = ffi::PyEval_GetFrame();
        if frame.is_null() {
            return false;
        }
        rec.deleg.prune(&rec.tl);
        if resume && rec.deleg.waiting.remove(&(frame as usize)).is_some() {
            if let Some(r) = rec.deleg.top(&rec.tl) {
                if r.frame == frame as usize {
                    rec.deleg.reopened.pop();
                    // The `yield from` / `await` result, which a resume row would have shown:
                    // the value of the expression at its site.
                    let outcome = rec.tl.event(Kind::Expr, r.site, r.form, true, sent, &eng.limits);
                    eng.note(rec, outcome);
                    return true;
                }
            }
        }
        if rec.deleg.waiting.is_empty() {
            return false;
        }
        let mut chain = std::mem::take(&mut rec.deleg.chain);
        chain.clear();
        let mut f = ffi::PyFrame_GetBack(frame);
        while !f.is_null() && chain.len() < MAX_CHAIN {
            let at = f as usize;
            let hit = match rec.deleg.waiting.get(&at) {
                Some(w) if w.code == code_of(f) && !rec.deleg.reopened.iter().any(|r| r.frame == at) => Some(*w),
                _ => None,
            };
            let back = if hit.is_some() { ffi::PyFrame_GetBack(f) } else { std::ptr::null_mut() };
            ffi::Py_DECREF(f.cast());
            f = back;
            match hit {
                Some(w) => chain.push((at, w)),
                None => break,
            }
        }
        if !f.is_null() {
            ffi::Py_DECREF(f.cast());
        }
        for &(at, w) in chain.iter().rev() {
            let outcome = rec.tl.resume(w.form, sent, &eng.limits);
            eng.note(rec, outcome);
            if outcome != Recorded::Written {
                break;
            }
            let depth = rec.tl.open_depth() - 1;
            let call_idx = rec.tl.open_call_at(depth).unwrap_or(NONE);
            rec.deleg.reopened.push(Reopened { depth, call_idx, frame: at, form: w.form, site: w.site });
        }
        rec.deleg.chain = chain;
        false
    }
}

/// The current frame unwound: it waits no more.
///
/// # Safety
/// GIL held; called from an entry point.
pub unsafe fn after_unwind(rec: &mut ThreadRec) {
    if rec.deleg.waiting.is_empty() {
        return;
    }
    // SAFETY: GIL held (the caller's contract); only the address is used.
    let frame = unsafe { ffi::PyEval_GetFrame() };
    rec.deleg.waiting.remove(&(frame as usize));
}

/// At the current frame's suspension at `site` carrying `target`: when it is an await site (a
/// `yield from` or `await`) and `target` a generator or coroutine of rewritten code, the
/// delegate's frame is entered at once inside this frame's `yield from` / `await`. Then the frame
/// stays open, noted as waiting and re-opened, and nothing is recorded (`true`): the delegate's
/// entries nest in this segment, which suspends when a value passes out through it.
///
/// # Safety
/// GIL held; `target` live; called from an entry point, so the current frame is the one
/// suspending.
pub unsafe fn delegates_inside(eng: &mut Engine, rec: &mut ThreadRec, site: u32, target: *mut ffi::PyObject) -> bool {
    let Some((form, kind)) = eng.forms.site(site).map(|s| (s.form, s.kind)) else { return false };
    if kind != SiteKind::Await {
        return false;
    }
    // SAFETY: GIL held, `target` live (this fn's contract).
    if !unsafe { is_rewritten_delegate(target) } {
        return false;
    }
    let Some(call_idx) = rec.tl.innermost_frame_of(form, &eng.limits) else { return false };
    // SAFETY: GIL held; the borrowed frame is live while its code runs (it called us).
    unsafe {
        let frame = ffi::PyEval_GetFrame();
        if frame.is_null() {
            return false;
        }
        if rec.deleg.waiting.len() >= MAX_WAITING {
            rec.deleg.waiting.clear();
        }
        rec.deleg.waiting.insert(frame as usize, Waiting { code: code_of(frame), form, site });
        let depth = rec.tl.open_depth() - 1;
        rec.deleg.reopened.push(Reopened { depth, call_idx, frame: frame as usize, form, site });
    }
    true
}

/// `obj` is a generator or coroutine whose code the rewriter instrumented (its handler catches
/// what leaves the function in a local named `_sq_exc`), so entering it records.
///
/// Asked at every `await` / `yield from` of a rewritten frame. A code object found rewritten is
/// marked in its extra slot (PEP 523's per-code storage, squall's own index: it lives and dies
/// with the code, so a new code at a freed one's address is never taken for it), and the next
/// ask reads the mark instead of making `co_varnames` (a new tuple on 3.11) and scanning it.
/// Only squall's own code objects are marked; others are scanned each time.
unsafe fn is_rewritten_delegate(obj: *mut ffi::PyObject) -> bool {
    // SAFETY: GIL held, `obj` live (the caller's contract); the attributes read are the builtin
    // types' own descriptors (no Python code runs); a failed lookup's error is cleared; every
    // strong reference taken is released; the extra slot is read and set only at squall's own
    // index, with a marker that owns nothing (no free function).
    unsafe {
        let names = names();
        // `__anext__()` / `asend()` of an async generator: its frame is the generator's.
        let obj = if ffi::Py_TYPE(obj) == &raw mut _PyAsyncGenASend_Type {
            (*obj.cast::<AsyncGenASend>()).ags_gen
        } else {
            obj
        };
        let tp = ffi::Py_TYPE(obj);
        if tp != &raw mut ffi::PyGen_Type && tp != &raw mut ffi::PyCoro_Type && tp != &raw mut ffi::PyAsyncGen_Type {
            return false;
        }
        let code = delegate_code(obj);
        if code.is_null() {
            return false;
        }
        ffi::Py_INCREF(code);
        if names.extra_index >= 0 {
            let mut mark = std::ptr::null_mut();
            if ffi::PyUnstable_Code_GetExtra(code, names.extra_index, &mut mark) == 0 && mark == REWRITTEN_MARK {
                ffi::Py_DECREF(code);
                return true;
            }
            ffi::PyErr_Clear();
        }
        let found = has_exc_local(code, names.co_varnames);
        if found
            && names.extra_index >= 0
            && ffi::PyUnstable_Code_SetExtra(code, names.extra_index, REWRITTEN_MARK) != 0
        {
            ffi::PyErr_Clear();
        }
        ffi::Py_DECREF(code);
        found
    }
}

/// The code object of generator, coroutine or async generator `obj` (the heads of the last two
/// are a generator's),
/// borrowed: read from the object's own storage, where `gi_code` / `cr_code` would make an
/// attribute lookup (~225 instructions at every `await` of pyperformance's coroutines).
///
/// # Safety
/// GIL held; `obj` a live generator, coroutine or async generator of an exact builtin type.
unsafe fn delegate_code(obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this fn's contract; before 3.12 the code is the `PyGenObject` field both types
    // share, from 3.12 `PyGen_GetCode` (either type) returns a new reference to the code the
    // live object holds, released at once.
    unsafe {
        #[cfg(not(Py_3_12))]
        {
            (*obj.cast::<ffi::PyGenObject>()).gi_code
        }
        #[cfg(Py_3_12)]
        {
            let code = PyGen_GetCode(obj.cast()).cast::<ffi::PyObject>();
            ffi::Py_XDECREF(code);
            code
        }
    }
}

unsafe extern "C" {
    // Exported by CPython 3.9-3.13 (genobject.h; internal from 3.13, still exported).
    static mut _PyAsyncGenASend_Type: ffi::PyTypeObject;
}

/// The head of an `async_generator_asend` (genobject.c, the same in 3.9-3.13).
#[repr(C)]
struct AsyncGenASend {
    ob_base: ffi::PyObject,
    ags_gen: *mut ffi::PyObject,
}

#[cfg(Py_3_12)]
unsafe extern "C" {
    // Exported by CPython 3.12 and 3.13 (cpython/genobject.h).
    fn PyGen_GetCode(gen: *mut ffi::PyGenObject) -> *mut ffi::PyCodeObject;
}

/// Whether `code`'s locals include `EXC_NAME`.
unsafe fn has_exc_local(code: *mut ffi::PyObject, co_varnames: *mut ffi::PyObject) -> bool {
    // SAFETY: GIL held, `code` live (the caller's contract); the tuple taken is released.
    unsafe {
        if co_varnames.is_null() {
            return false;
        }
        let names = ffi::PyObject_GetAttr(code, co_varnames);
        if names.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let mut found = false;
        if ffi::PyTuple_Check(names) != 0 {
            for i in 0..ffi::PyTuple_GET_SIZE(names) {
                let name = ffi::PyTuple_GET_ITEM(names, i);
                if ffi::PyUnicode_Check(name) != 0
                    && ffi::PyUnicode_CompareWithASCIIString(name, EXC_NAME.as_ptr()) == 0
                {
                    found = true;
                    break;
                }
            }
        }
        ffi::Py_DECREF(names);
        found
    }
}

/// The extra-slot value marking a code object found rewritten (any non-null word: it owns
/// nothing).
const REWRITTEN_MARK: *mut std::ffi::c_void = std::ptr::dangling_mut();

/// The code-extra slot's free function: the mark owns nothing.
unsafe extern "C" fn free_mark(_: *mut std::ffi::c_void) {}

/// Interned attribute names and squall's code-extra index, made once (by `init_names`, at
/// module init).
struct Names {
    co_varnames: *mut ffi::PyObject,
    /// -1 when the interpreter gave none (it has 255).
    extra_index: ffi::Py_ssize_t,
}

static NAMES: GilCell<Names> = GilCell::new(Names { co_varnames: std::ptr::null_mut(), extra_index: -1 });

fn names() -> &'static Names {
    // SAFETY: the GIL is held by every caller; written once by `init_names`, under the GIL.
    unsafe { &*NAMES.get() }
}

/// Makes the interned names and asks the interpreter for a code-extra index (GIL held, once).
pub fn init_names(_py: pyo3::Python<'_>) {
    // SAFETY: the GIL is held (`_py`); the names are interned strings kept for the process's
    // life; a failure leaves a null name or index -1, which the lookups above treat as "unknown".
    unsafe {
        let n = NAMES.get();
        n.co_varnames = ffi::PyUnicode_InternFromString(c"co_varnames".as_ptr());
        n.extra_index = ffi::PyUnstable_Eval_RequestCodeExtraIndex(free_mark);
        if !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
        }
    }
}

/// The local that rewritten code catches what leaves a function in (`EXC_NAME` in
/// python/squall/_instrument/rewrite/names.py). Its entry points are constants of the code, not
/// names (python/squall/_instrument/rewrite/bound.py).
const EXC_NAME: &std::ffi::CStr = c"_sq_exc";
