//! Reading small Python ints without a call into libpython.
//!
//! The recorder reads an int on every event (the form or site id, often a value too).
//! `PyLong_AsLongAndOverflow` is an exported function call; for the one-digit ints that ids and
//! most small values are, the value can be read from the object header directly. The layout is
//! CPython's (not the limited API): `ob_size` + 30-bit digits before 3.12, `lv_tag` + digits from
//! 3.12 on.

use std::ffi::c_int;

use pyo3::ffi;

#[repr(C)]
struct LongHeader {
    ob_refcnt: ffi::Py_ssize_t,
    ob_type: *mut ffi::PyTypeObject,
    /// `ob_size` (signed digit count) before 3.12; `lv_tag` from 3.12.
    size_or_tag: isize,
    digit0: u32,
}

/// The value of an `int`, if it fits in an `i64`.
///
/// # Safety
/// GIL held; `o` is a valid `int` (exact, or a subclass without its own `__int__` layout).
#[inline(always)]
pub unsafe fn exact_int_value(o: *mut ffi::PyObject) -> Option<i64> {
    // SAFETY: this fn's contract (GIL held, `o` a live int). The header is read field by field
    // through the raw pointer, not as a `&LongHeader`: an int without digits (zero, before 3.12)
    // may be allocated shorter than the struct. Digits are read only below the int's count.
    unsafe {
        let h = o as *const LongHeader;
        #[cfg(Py_3_12)]
        {
            let tag = (*h).size_or_tag as usize;
            // Compact: at most one digit. Sign bits: 0 positive, 1 zero, 2 negative.
            if tag < (2 << 3) {
                let d = if tag & 3 == 1 { 0 } else { i64::from((*h).digit0) };
                return Some(match tag & 3 {
                    0 => d,
                    1 => 0,
                    _ => -d,
                });
            }
            // Two or three 30-bit digits (hashes, 64-bit ids): read here too.
            let n = tag >> 3;
            if n <= 3 {
                let v = digits_value(std::ptr::addr_of!((*h).digit0), n);
                return i64::try_from(if tag & 3 == 2 { -v } else { v }).ok();
            }
        }
        #[cfg(not(Py_3_12))]
        {
            match (*h).size_or_tag {
                0 => return Some(0),
                1 => return Some(i64::from((*h).digit0)),
                -1 => return Some(-i64::from((*h).digit0)),
                // Two or three 30-bit digits (hashes, 64-bit ids): read here too.
                n @ (-3..=-2 | 2..=3) => {
                    let v = digits_value(std::ptr::addr_of!((*h).digit0), n.unsigned_abs());
                    return i64::try_from(if n < 0 { -v } else { v }).ok();
                }
                _ => {}
            }
        }
        let mut overflow: c_int = 0;
        let v = ffi::PyLong_AsLongAndOverflow(o, &mut overflow);
        if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
            ffi::PyErr_Clear();
            return None;
        }
        Some(v as i64)
    }
}

/// The magnitude of `n` 30-bit digits, least significant first.
///
/// # Safety
/// `digits` points at `n` digits.
#[inline(always)]
unsafe fn digits_value(digits: *const u32, n: usize) -> i128 {
    let mut v: i128 = 0;
    for i in (0..n).rev() {
        // SAFETY: this fn's contract: `i` is below `n`.
        v = (v << 30) | i128::from(unsafe { *digits.add(i) });
    }
    v
}

/// A form or site id: a non-negative int below 2**32 (an exact int, or the rewriter's
/// `BoundSite`, an int subclass with the same layout).
///
/// # Safety
/// GIL held; `o` a valid object.
#[inline(always)]
pub unsafe fn id_of(o: *mut ffi::PyObject) -> Option<u32> {
    // SAFETY: this fn's contract (GIL held, `o` live); `exact_int_value` is called only on an int
    // (an exact int or a subclass instance, which keeps the int layout).
    unsafe {
        if ffi::Py_TYPE(o) != &raw mut ffi::PyLong_Type && ffi::PyLong_Check(o) == 0 {
            return None;
        }
        exact_int_value(o).and_then(|v| u32::try_from(v).ok())
    }
}
