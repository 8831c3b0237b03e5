//! The recorded program's recursion headroom. `squall run` runs the program's `__main__` below
//! frames of its own (the console script, `cli.main`, ...), which count against
//! `sys.getrecursionlimit()` as the program's frames do: without a correction a recorded program
//! reaches fewer frames before `RecursionError` than under plain `python`. `shift_recursion(n)`
//! makes the calling thread's counter say `n` fewer frames are in use (`cli._execute` shifts
//! back when the program returns), changing neither the limit nor any frame.
//!
//! The counters are fields of `PyThreadState` (`struct _ts` in CPython's public
//! `cpython/pystate.h`), at offsets that differ per version; the values read there are checked
//! against `Py_GetRecursionLimit()` before anything is written, so a layout this code does not
//! know leaves the counter alone.

use pyo3::ffi;
use pyo3::prelude::*;

const P: usize = std::mem::size_of::<*const ()>();

/// `recursion_depth` (frames and C calls in use), after `prev`, `next`, `interp`, `frame`.
#[cfg(not(Py_3_11))]
const DEPTH: usize = 4 * P;
/// `recursion_remaining` and `recursion_limit`, after 3 pointers and `_initialized`, `_static`.
#[cfg(all(Py_3_11, not(Py_3_12)))]
const REMAINING: usize = 3 * P + 8;
/// `py_recursion_remaining` and `py_recursion_limit`, after 3 pointers and `_status`.
#[cfg(all(Py_3_12, not(Py_3_13)))]
const REMAINING: usize = 3 * P + 4;
/// After 3 pointers, `eval_breaker`, `_status`, `_whence` and `state`.
#[cfg(Py_3_13)]
const REMAINING: usize = 4 * P + 12;

/// The calling thread's counter of frames in use, and a pointer to the field to shift: `sign`
/// is +1 when the field counts what is in use (before 3.11), -1 when it counts what is left.
/// `None` when the values found there do not fit the interpreter's limit.
fn counter() -> Option<(*mut i32, i32, i32)> {
    // SAFETY: GIL held (called from Python); PyThreadState_Get never returns null then, and the
    // offsets are within `struct _ts` of the version this module was built for.
    unsafe {
        let ts = ffi::PyThreadState_Get().cast::<u8>();
        let limit = ffi::Py_GetRecursionLimit();
        #[cfg(not(Py_3_11))]
        {
            let depth = ts.add(DEPTH).cast::<i32>();
            let used = depth.read();
            (0..=limit).contains(&used).then_some((depth, used, 1))
        }
        #[cfg(Py_3_11)]
        {
            let remaining = ts.add(REMAINING).cast::<i32>();
            let own_limit = ts.add(REMAINING + 4).cast::<i32>().read();
            let used = own_limit - remaining.read();
            (own_limit == limit && (0..=limit).contains(&used)).then_some((remaining, used, -1))
        }
    }
}

/// How many frames (and, before 3.12, C calls) of the calling thread count against the
/// recursion limit now; `None` if this interpreter's layout is not the one expected.
#[pyfunction]
pub fn recursion_used() -> Option<i32> {
    counter().map(|c| c.1)
}

/// Makes the calling thread's counter say `n` fewer frames are in use (`n` negative: more).
/// Returns whether it did: not when the layout is unknown or the result would leave less
/// than nothing in use or more than the limit.
#[pyfunction]
pub fn shift_recursion(n: i32) -> bool {
    let Some((field, used, sign)) = counter() else { return false };
    // SAFETY: GIL held.
    let limit = unsafe { ffi::Py_GetRecursionLimit() };
    let Some(after) = used.checked_sub(n) else { return false };
    if after < -(limit / 2) || after > limit {
        return false;
    }
    // SAFETY: the field `counter` found and checked, of the calling thread, with the GIL held.
    unsafe { field.write(field.read() - sign * n) };
    true
}
