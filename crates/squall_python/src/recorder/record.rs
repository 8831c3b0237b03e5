//! The recording entry points called by instrumented code.
//!
//! They are raw `METH_FASTCALL` C functions (DESIGN.md: pyo3's `#[pyfunction]` wrapper costs
//! ~10 ns more per event). Each one never raises and never panics into CPython: a malformed call
//! or an internal failure drops the event and counts it in `engine_stats()["dropped"]`; `ret`,
//! `suspend`, `expr` and `bind` always hand back the value they were given.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use pyo3::ffi;
use squall_trace::{Kind, Recorded, SiteKind, ValRef, Value};

use crate::recorder::delegation;
use crate::recorder::engine::{capture, capture_entry_value, capture_expr, capture_receiver, exact_float, scalar};
use crate::recorder::engine::{current_rec, current_rec_cached, memory_check_due, ENGINE, RECORDING};

type Args = *mut *mut ffi::PyObject;

/// Most parameters a call records inline on the stack before spilling to the heap.
const INLINE_ARGS: usize = 8;

use crate::recorder::ints::id_of as small_id;

unsafe fn new_none() -> *mut ffi::PyObject {
    // SAFETY: the entry points run with the GIL held; `None` is immortal or kept alive by the
    // reference added.
    unsafe {
        let none = ffi::Py_None();
        ffi::Py_INCREF(none);
        none
    }
}

unsafe fn new_true() -> *mut ffi::PyObject {
    // SAFETY: the entry points run with the GIL held; `True` is immortal or kept alive by the
    // reference added.
    unsafe {
        let t = ffi::Py_True();
        ffi::Py_INCREF(t);
        t
    }
}

/// An event that came while recording was paused for the live UI: counted, not recorded.
#[cold]
fn lost_to_ui() {
    if crate::recorder::engine::UI_PAUSE.load(Ordering::Relaxed) {
        // SAFETY: the entry points run with the GIL held.
        unsafe { ENGINE.get().lost_during_ui += 1 };
    }
}

/// Runs a recording step; a panic inside it is contained and counted.
#[inline(always)]
fn guarded(step: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(step)).is_err() {
        // SAFETY: the entry points run with the GIL held.
        unsafe { ENGINE.get().dropped += 1 };
    }
}

/// `call(form_id, *param_values) -> None`
pub unsafe extern "C" fn call(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    if nargs >= 1 {
        // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs >=
        // 1` live arguments here: the form and the `nargs - 1` parameters after it.
        unsafe { call_at(*args, args.add(1), nargs as usize - 1) };
    } else {
        lost_to_ui();
    }
    // SAFETY: GIL held (an entry point).
    unsafe { new_none() }
}

/// `_sq_call_F(*param_values) -> None`: `call` bound to one form, whose id is the function's
/// `self` (see `bound_entry`): one argument fewer to pass and no global `_sq_call` to look up.
pub unsafe extern "C" fn call_bound(
    form: *mut ffi::PyObject,
    args: Args,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this bound entry point attached, with `form` its live `self` and
    // `nargs` live arguments.
    unsafe {
        call_at(form, args, nargs as usize);
        new_none()
    }
}

/// A call of the form `form_obj` (an int) with the `n` parameter values at `params`.
#[inline(always)]
unsafe fn call_at(form_obj: *mut ffi::PyObject, params: Args, n: usize) {
    if RECORDING.load(Ordering::Relaxed) {
        // SAFETY: this fn's callers pass `n` live parameters at `params` (at most one here) and
        // hold the GIL.
        if !(n <= 1 && unsafe { call_fast(form_obj, params, n) }) {
            // SAFETY: as above: GIL held, `n` live parameters at `params`.
            guarded(|| unsafe { record_call(form_obj, params, n) });
        }
    } else {
        lost_to_ui();
    }
}

/// The usual case of a call with 0 or 1 argument, without the unwinding guard: nothing below
/// runs Python code or can panic. Writes what `record_call` would; `false`: nothing was done,
/// take `record_call`.
#[inline(always)]
unsafe fn call_fast(form_obj: *mut ffi::PyObject, params: Args, n: usize) -> bool {
    // SAFETY: GIL held, `n` (0 or 1) live parameters at `params` (this fn's callers); nothing here
    // runs Python code, so the ENGINE reference is the only one while it lives.
    unsafe {
        let eng = ENGINE.get();
        let Some(form) = small_id(form_obj) else { return false };
        let Some(rec) = current_rec_cached() else { return false };
        if !rec.tl.call_is_plain(&eng.limits) || !rec.deleg.is_idle() {
            return false;
        }
        let arg = if n == 1 {
            match scalar(rec, eng.budget.max_string, *params) {
                Some(v) => v,
                None => return false,
            }
        } else {
            ValRef::ABSENT
        };
        rec.tl.push_call(form, arg);
        written(rec);
        true
    }
}

/// After the fast paths wrote an entry: what `Engine::note` does for `Written`.
#[inline(always)]
unsafe fn written(rec: &mut crate::recorder::engine::ThreadRec) {
    if memory_check_due(rec) {
        // SAFETY: GIL held (an entry point's fast path); the encoder and the limit check run no
        // Python code.
        guarded(|| unsafe { ENGINE.get().note(rec, Recorded::Written) });
    }
}

unsafe fn record_call(form_obj: *mut ffi::PyObject, params: Args, n: usize) {
    // SAFETY: GIL held and `n` live parameters at `params` (this fn's callers); the encoder runs no
    // Python code, so the ENGINE reference is the only one while it lives.
    unsafe {
        let eng = ENGINE.get();
        let Some(form) = small_id(form_obj) else {
            eng.dropped += 1;
            return;
        };
        let Some(rec) = current_rec() else { return };
        if !rec.deleg.is_idle() && eng.forms.form(form).is_some_and(|f| f.kind.is_resumable()) {
            delegation::before_enter(eng, rec, ValRef::ABSENT, false);
        }
        let outcome = if n <= INLINE_ARGS {
            let mut vals = [ValRef::NONE; INLINE_ARGS];
            for (i, slot) in vals.iter_mut().enumerate().take(n) {
                *slot = capture(eng, rec, *params.add(i));
            }
            rec.tl.call(form, &vals[..n], &eng.limits)
        } else {
            let vals: Vec<ValRef> = (0..n).map(|i| capture(eng, rec, *params.add(i))).collect();
            rec.tl.call(form, &vals, &eng.limits)
        };
        eng.note(rec, outcome);
    }
}

/// `ret(site_id, value) -> value`
pub unsafe extern "C" fn ret(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; `value_through_site` checks the count.
    unsafe { value_through_site(Kind::Return, args, nargs) }
}

/// `suspend(site_id, value) -> value`: a yield, await or yield from. The site's kind tells which.
pub unsafe extern "C" fn suspend(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; `value_through_site` checks the count, and two are checked here before reading.
    unsafe {
        if nargs != 2 || !RECORDING.load(Ordering::Relaxed) {
            return value_through_site(Kind::Return, args, nargs);
        }
        suspend_at(*args, *args.add(1))
    }
}

/// `_sq_suspend_S(value) -> value`: `suspend` bound to one site (`METH_O`).
pub unsafe extern "C" fn suspend_bound(site: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `site` its live `self` and
    // `value` live.
    unsafe {
        if !RECORDING.load(Ordering::Relaxed) {
            return value_at(Kind::Return, site, value);
        }
        suspend_at(site, value)
    }
}

/// A suspension at the site `site_obj` carrying `value`, recording on; hands `value` back.
#[inline(always)]
unsafe fn suspend_at(site_obj: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `site_obj` and `value` live (this fn's callers).
    unsafe {
        // A plain `yield` with no delegator re-opened (the usual case) takes no detour.
        let site = small_id(site_obj);
        let at_await = is_await_site(site);
        if at_await && delegates_at(site, value) {
            ffi::Py_INCREF(value);
            return value;
        }
        let out = value_at(Kind::Return, site_obj, value);
        if at_await || current_rec_cached().is_some_and(|rec| rec.deleg.has_reopened()) {
            guarded(|| {
                let eng = ENGINE.get();
                let (Some(site), Some(rec)) = (site, current_rec()) else { return };
                delegation::after_suspend(eng, rec, site, value);
            });
        }
        out
    }
}

/// Whether `site` is a registered await site (`yield from`, `await`, an implicit await).
///
/// # Safety
/// GIL held.
#[inline(always)]
unsafe fn is_await_site(site: Option<u32>) -> bool {
    // SAFETY: this fn's contract.
    unsafe { site.and_then(|s| ENGINE.get().forms.site(s)).is_some_and(|s| s.kind == SiteKind::Await) }
}

/// Whether the current frame, suspending at await site `site` to await `target`, delegates to
/// a rewritten frame that runs inside it (`delegation::delegates_inside`): then no suspension
/// is recorded.
///
/// # Safety
/// GIL held; `target` live; called while the suspending frame is the current one.
unsafe fn delegates_at(site: Option<u32>, target: *mut ffi::PyObject) -> bool {
    let mut inside = false;
    guarded(|| {
        // SAFETY: this fn's contract.
        let eng = unsafe { ENGINE.get() };
        let (Some(site), Some(rec)) = (site, current_rec()) else { return };
        // SAFETY: this fn's contract (GIL held, `target` live, the suspending frame current).
        inside = unsafe { delegation::delegates_inside(eng, rec, site, target) };
    });
    inside
}

/// For the `async for` / `async with` wrappers (`awaiting.rs`), which record their awaits
/// themselves: whether the await at site `site_obj` of the awaitable `target` delegates (as
/// `suspend` finds for `await x`), in which case they record no suspension.
///
/// # Safety
/// GIL held; `site_obj` and `target` live; called while the awaiting frame is the current one.
pub unsafe fn await_delegates(site_obj: *mut ffi::PyObject, target: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract.
    unsafe {
        if !RECORDING.load(Ordering::Relaxed) {
            return false;
        }
        let site = small_id(site_obj);
        is_await_site(site) && delegates_at(site, target)
    }
}

/// Records an event at `args[0]`'s site carrying `args[1]`, and hands `args[1]` back.
#[inline(always)]
unsafe fn value_through_site(kind: Kind, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: GIL held and `args` holds `nargs` live arguments (the entry points' contract); two
    // are required before any is read.
    unsafe {
        if nargs != 2 {
            ENGINE.get().dropped += 1;
            return new_none();
        }
        value_at(kind, *args, *args.add(1))
    }
}

/// Records an event at the site `site_obj` (an int) carrying `value`, and hands `value` back.
#[inline(always)]
unsafe fn value_at(kind: Kind, site_obj: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this fn's callers' contract.
    unsafe { value_or_receiver_at(kind, site_obj, value, false) }
}

/// `value_at`; a `receiver`'s value is encoded by `capture_receiver`.
#[inline(always)]
unsafe fn value_or_receiver_at(
    kind: Kind,
    site_obj: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
    receiver: bool,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `site_obj` and `value` live (the entry points' contract); `value` is handed
    // back with a reference of its own.
    unsafe {
        if RECORDING.load(Ordering::Relaxed) {
            if !site_fast(kind, site_obj, value) {
                guarded(|| record_at_site(kind, site_obj, value, receiver));
            }
        } else {
            lost_to_ui();
        }
        ffi::Py_INCREF(value);
        value
    }
}

/// `_sq_ret_S(value) -> value`: `ret` bound to one site, whose id is the function's `self`
/// (`METH_O`, see `bound_entry`).
pub unsafe extern "C" fn ret_bound(site: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `site` its live `self` and
    // `value` live.
    unsafe { value_at(Kind::Return, site, value) }
}

/// `_sq_expr_S(value) -> value`: `expr` bound to one site.
pub unsafe extern "C" fn expr_bound(site: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `site` its live `self` and
    // `value` live.
    unsafe { value_at(Kind::Expr, site, value) }
}

/// `_sq_recv_S(value) -> value`: `recv` bound to one site.
pub unsafe extern "C" fn recv_bound(site: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `site` its live `self` and
    // `value` live.
    unsafe { value_or_receiver_at(Kind::Expr, site, value, true) }
}

/// `_sq_bind_S(value) -> value`: `bind` bound to one site.
pub unsafe extern "C" fn bind_bound(site: *mut ffi::PyObject, value: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `site` its live `self` and
    // `value` live.
    unsafe {
        record_bind(site, value);
        ffi::Py_INCREF(value);
        value
    }
}

/// `unwind(form_id, exc) -> None`
pub unsafe extern "C" fn unwind(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    if RECORDING.load(Ordering::Relaxed) && nargs == 2 {
        // SAFETY: GIL held (an entry point) and `nargs == 2` live arguments, checked above; the
        // encoder runs no Python code.
        guarded(|| unsafe {
            let eng = ENGINE.get();
            let Some(form) = small_id(*args) else {
                eng.dropped += 1;
                return;
            };
            let Some(resumable) = eng.forms.form(form).map(|f| f.kind.is_resumable()) else {
                eng.dropped += 1;
                return;
            };
            let Some(rec) = current_rec() else { return };
            let v = capture(eng, rec, *args.add(1));
            let outcome = rec.tl.exit(Kind::Unwind, form, form, resumable, v, &eng.limits);
            eng.note(rec, outcome);
            if resumable {
                delegation::after_unwind(rec);
            }
        });
    }
    // SAFETY: GIL held (an entry point).
    unsafe { new_none() }
}

/// `resume(form_id, sent) -> sent`
pub unsafe extern "C" fn resume(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; two are required before any is read.
    unsafe {
        if nargs != 2 {
            ENGINE.get().dropped += 1;
            return new_none();
        }
        resume_at(*args, *args.add(1))
    }
}

/// `_sq_resume_F(sent) -> sent`: `resume` bound to one form (`METH_O`).
pub unsafe extern "C" fn resume_bound(form: *mut ffi::PyObject, sent: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_O bound entry point attached, with `form` its live `self` and
    // `sent` live.
    unsafe { resume_at(form, sent) }
}

/// A resumption of a frame of the form `form_obj` (an int) receiving `sent`; hands `sent` back.
#[inline(always)]
unsafe fn resume_at(form_obj: *mut ffi::PyObject, sent: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `form_obj` and `sent` live (this fn's callers); the encoder runs no Python
    // code.
    unsafe {
        if RECORDING.load(Ordering::Relaxed) {
            if !resume_fast(form_obj, sent) {
                guarded(|| {
                    let eng = ENGINE.get();
                    let Some(form) = small_id(form_obj) else {
                        eng.dropped += 1;
                        return;
                    };
                    let Some(rec) = current_rec() else { return };
                    let v = capture(eng, rec, sent);
                    if !rec.deleg.is_idle() && delegation::before_enter(eng, rec, v, true) {
                        return;
                    }
                    let outcome = rec.tl.resume(form, v, &eng.limits);
                    eng.note(rec, outcome);
                });
            }
        } else {
            lost_to_ui();
        }
        ffi::Py_INCREF(sent);
        sent
    }
}

/// The usual case of a resumption, without the unwinding guard: no delegation pending, a simple
/// sent value (see `scalar`: most often None), recording going on below the trace limit.
/// Writes what the guarded path would; `false`: nothing was done, take it.
#[inline(always)]
unsafe fn resume_fast(form_obj: *mut ffi::PyObject, sent: *mut ffi::PyObject) -> bool {
    // SAFETY: GIL held, `form_obj` and `sent` live (this fn's callers); nothing here runs Python
    // code, so the ENGINE reference is the only one while it lives.
    unsafe {
        let eng = ENGINE.get();
        let Some(form) = small_id(form_obj) else { return false };
        let Some(rec) = current_rec_cached() else { return false };
        if !rec.deleg.is_idle() || !rec.tl.resume_is_plain(&eng.limits) {
            return false;
        }
        let Some(v) = scalar(rec, eng.budget.max_string, sent) else { return false };
        rec.tl.push_resume(form, v);
        written(rec);
        true
    }
}

/// `expr(site_id, value) -> value`: a sub-expression's value (full mode).
pub unsafe extern "C" fn expr(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; `value_through_site` checks the count.
    unsafe { value_through_site(Kind::Expr, args, nargs) }
}

/// `recv(site_id, value) -> value`: the value of a receiver, the `x` of `x.a`, `x[k]` or
/// `x.m()` (full mode): an expression entry whose value, when it is an instance this timeline
/// holds a state of, is a reference to that state (`capture_receiver`).
pub unsafe extern "C" fn recv(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; two are required before any is read.
    unsafe {
        if nargs != 2 {
            ENGINE.get().dropped += 1;
            return new_none();
        }
        value_or_receiver_at(Kind::Expr, *args, *args.add(1), true)
    }
}

/// `bind(site_id, value) -> value`: a local binding (full mode). Hands the value back, so that
/// `x = _sq_bind(SITE, v)` binds and records in one call.
pub unsafe extern "C" fn bind(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; two are required before any is read.
    unsafe {
        if nargs != 2 {
            ENGINE.get().dropped += 1;
            return new_none();
        }
        let value = *args.add(1);
        record_bind(*args, value);
        ffi::Py_INCREF(value);
        value
    }
}

/// Records a binding of `value` at the site `site_obj` (an int): what `bind` records.
#[inline(always)]
pub unsafe fn record_bind(site_obj: *mut ffi::PyObject, value: *mut ffi::PyObject) {
    // SAFETY: this fn's callers hold the GIL and pass live `site_obj` and `value`.
    unsafe {
        if RECORDING.load(Ordering::Relaxed) {
            if !site_fast(Kind::Bind, site_obj, value) {
                guarded(|| record_at_site(Kind::Bind, site_obj, value, false));
            }
        } else {
            lost_to_ui();
        }
    }
}

/// `binds(first_site, *values) -> True`: the bindings of the names one statement stores (`a, b =
/// t`, `for k, v in it`), their sites consecutive from `first_site`: what a `bind` per name
/// records, in one call. `True`, so that a comprehension's `if _sq_binds(S, k, v)` keeps every
/// item.
pub unsafe extern "C" fn binds(_m: *mut ffi::PyObject, args: Args, nargs: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this METH_FASTCALL entry point attached (GIL held) with `nargs` live
    // arguments; one is required before any is read.
    unsafe {
        if nargs >= 1 {
            record_binds(*args, args.add(1), nargs as usize - 1);
        } else {
            ENGINE.get().dropped += 1;
        }
        new_true()
    }
}

/// `_sq_binds_S(*values) -> True`: `binds` bound to its first site.
pub unsafe extern "C" fn binds_bound(
    first: *mut ffi::PyObject,
    args: Args,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this bound entry point attached, with `first` its live `self` and
    // `nargs` live arguments.
    unsafe {
        record_binds(first, args, nargs as usize);
        new_true()
    }
}

/// Records the bindings of the `n` values at `values`, the i-th at site `first_obj + i`.
#[inline(always)]
unsafe fn record_binds(first_obj: *mut ffi::PyObject, values: Args, n: usize) {
    // SAFETY: GIL held and `n` live values at `values` (this fn's callers).
    unsafe {
        let Some(first) = small_id(first_obj) else {
            ENGINE.get().dropped += n as u64;
            return;
        };
        let done = binds_fast(first, values, n);
        for i in done..n {
            let value = *values.add(i);
            let Some(site_id) = first.checked_add(i as u32) else {
                ENGINE.get().dropped += 1;
                continue;
            };
            if RECORDING.load(Ordering::Relaxed) {
                if !site_fast_id(Kind::Bind, site_id, value) {
                    guarded(|| record_at_site_id(Kind::Bind, site_id, value, false));
                }
            } else {
                lost_to_ui();
            }
        }
    }
}

/// The usual case of `record_binds`: recording on, the statement's frame the innermost open
/// one, room for every binding under the trace limit. Writes the leading run of simple values
/// (see `scalar`) as `site_fast_id` writes each, looking up the form, thread and frame once:
/// the sites `first..first + n` were registered together for one statement, so one form owns
/// them all (its first and last are checked). Returns how many were written; the caller
/// records the rest one by one.
#[inline(always)]
unsafe fn binds_fast(first: u32, values: Args, n: usize) -> usize {
    // SAFETY: GIL held and `n` live values at `values` (this fn's callers); nothing here runs
    // Python code, so the ENGINE reference is the only one while it lives.
    unsafe {
        if n < 2 || !RECORDING.load(Ordering::Relaxed) {
            return 0;
        }
        let Some(last) = first.checked_add(n as u32 - 1) else { return 0 };
        let eng = ENGINE.get();
        let Some((form, _)) = eng.forms.site_owner(first) else { return 0 };
        if eng.forms.site_owner(last).map(|(f, _)| f) != Some(form) {
            return 0;
        }
        let Some(rec) = current_rec_cached() else { return 0 };
        let Some(frame) = rec.tl.innermost_frame_of(form, &eng.limits) else { return 0 };
        if !rec.tl.has_room_for(n, &eng.limits) {
            return 0;
        }
        let max_string = eng.budget.max_string;
        let mut done = 0;
        while done < n {
            let value = *values.add(done);
            let v: Value = match exact_float(value) {
                Some(f) => Value::Float(f),
                None => match scalar(rec, max_string, value) {
                    Some(v) => v.into(),
                    None => break,
                },
            };
            rec.tl.push_event(Kind::Bind, first + done as u32, frame, v);
            done += 1;
            if memory_check_due(rec) {
                written(rec);
                // The limit may have stopped recording: the rest take the general path.
                if rec.tl.innermost_frame_of(form, &eng.limits).is_none() {
                    break;
                }
            }
        }
        done
    }
}

/// The usual case of `record_at_site`, without the unwinding guard: a simple value (see
/// `scalar`) in the innermost open frame, which is the site's form's. Nothing below runs
/// Python code or can panic. Writes what `record_at_site` would; `false`: nothing was done, take
/// `record_at_site`.
#[inline(always)]
unsafe fn site_fast(kind: Kind, site_obj: *mut ffi::PyObject, value: *mut ffi::PyObject) -> bool {
    // SAFETY: GIL held, `site_obj` and `value` live (this fn's callers); nothing here runs Python
    // code, so the ENGINE reference is the only one while it lives.
    unsafe {
        let Some(site_id) = small_id(site_obj) else { return false };
        site_fast_id(kind, site_id, value)
    }
}

/// `site_fast` at the site `site_id`.
#[inline(always)]
unsafe fn site_fast_id(kind: Kind, site_id: u32, value: *mut ffi::PyObject) -> bool {
    // SAFETY: GIL held, `value` live (this fn's callers); nothing here runs Python code, so the
    // ENGINE reference is the only one while it lives.
    unsafe {
        let eng = ENGINE.get();
        let Some((form, _)) = eng.forms.site_owner(site_id) else { return false };
        let Some(rec) = current_rec_cached() else { return false };
        let Some(frame) = rec.tl.innermost_frame_of(form, &eng.limits) else { return false };
        let v: Value = match exact_float(value) {
            Some(f) => Value::Float(f),
            None => match scalar(rec, eng.budget.max_string, value) {
                Some(v) => v.into(),
                None => return false,
            },
        };
        if kind == Kind::Return {
            rec.tl.push_innermost_exit(kind, site_id, v);
        } else {
            rec.tl.push_event(kind, site_id, frame, v);
        }
        written(rec);
        true
    }
}

/// An event at a site (a return or suspension, an expression, a binding): the site names its
/// form, whose innermost open frame the event belongs to. A `receiver`'s value is encoded by
/// `capture_receiver`.
#[inline(always)]
unsafe fn record_at_site(kind: Kind, site_obj: *mut ffi::PyObject, value: *mut ffi::PyObject, receiver: bool) {
    // SAFETY: GIL held, `site_obj` and `value` live (this fn's callers); the encoder runs no Python
    // code, so the ENGINE reference is the only one while it lives.
    unsafe {
        let Some(site_id) = small_id(site_obj) else {
            ENGINE.get().dropped += 1;
            return;
        };
        record_at_site_id(kind, site_id, value, receiver);
    }
}

/// `record_at_site` at the site `site_id`.
#[inline(never)]
unsafe fn record_at_site_id(kind: Kind, site_id: u32, value: *mut ffi::PyObject, receiver: bool) {
    // SAFETY: GIL held, `value` live (this fn's callers); the encoder runs no Python code, so the
    // ENGINE reference is the only one while it lives.
    unsafe {
        let eng = ENGINE.get();
        let Some((form, resumable)) = eng.forms.site_owner(site_id) else {
            eng.dropped += 1;
            return;
        };
        let Some(rec) = current_rec() else { return };
        let v = match exact_float(value) {
            None if receiver => capture_receiver(eng, rec, value).into(),
            None if kind == Kind::Expr => capture_expr(eng, rec, value).into(),
            _ => capture_entry_value(eng, rec, value),
        };
        let outcome = if kind == Kind::Return {
            rec.tl.exit(kind, site_id, form, resumable, v, &eng.limits)
        } else {
            rec.tl.event(kind, site_id, form, resumable, v, &eng.limits)
        };
        eng.note(rec, outcome);
    }
}
