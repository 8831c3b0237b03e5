//! How the recording's big tables (a timeline's entries and args, a store's nodes) grow.
//!
//! Past a step ([`step_bytes`], at most [`STEP_BYTES`]) they grow by that step instead of
//! doubling: what the memory limit counts (capacity) stays close to what is used, and the room a
//! table holds ahead of use stays bounded (the Python engine's allocator faults that room in on
//! another thread before the recording thread writes it: `crates/squall_python/src/recorder/bigalloc.rs`).
//! The memory limit counts capacity and is checked after a table grew, so it may be passed by
//! one step: [`set_step_for_limit`] keeps a step a small share of the limit.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Above this capacity a table grows by this much at most, not by doubling.
pub const STEP_BYTES: usize = 16 << 20;
/// The smallest step (below it, tables double).
pub const MIN_STEP_BYTES: usize = 1 << 20;

static STEP: AtomicUsize = AtomicUsize::new(STEP_BYTES);

/// The growth step now.
pub fn step_bytes() -> usize {
    STEP.load(Ordering::Relaxed)
}

/// Sets the step to a 64th of `limit` (a memory limit in bytes; `None`: no limit), between
/// [`MIN_STEP_BYTES`] and [`STEP_BYTES`]: a table grown just before the limit is checked passes
/// it by 1/64 at most (a 128 MiB limit was passed by 16 MiB, 12%, by one growth).
pub fn set_step_for_limit(limit: Option<u64>) {
    let step = limit.map_or(STEP_BYTES, |l| usize::try_from(l / 64).unwrap_or(STEP_BYTES));
    STEP.store(step.clamp(MIN_STEP_BYTES, STEP_BYTES), Ordering::Relaxed);
}

/// `v.push(x)`, growing `v` as described in the module doc.
#[inline(always)]
pub fn push<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        grow(v, 1);
    }
    v.push(x);
}

/// `v.extend_from_slice(xs)`, growing `v` as described in the module doc.
#[inline(always)]
pub fn extend<T: Copy>(v: &mut Vec<T>, xs: &[T]) {
    if v.capacity() - v.len() < xs.len() {
        grow(v, xs.len());
    }
    v.extend_from_slice(xs);
}

/// Makes room for `at_least` more items in `v`.
#[cold]
#[inline(never)]
pub fn grow<T>(v: &mut Vec<T>, at_least: usize) {
    let elem = std::mem::size_of::<T>().max(1);
    let step = v.capacity().clamp(256, (step_bytes() / elem).max(1)).max(at_least);
    v.reserve_exact(step);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_steps_past_the_step_size() {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..(STEP_BYTES / 8 + 10) as u64 {
            push(&mut v, i);
        }
        assert_eq!(v.len(), STEP_BYTES / 8 + 10);
        assert!(v.capacity() * 8 <= 2 * STEP_BYTES + 8 * 256, "capacity {}", v.capacity());
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        extend(&mut v, &[1, 2, 3]);
        assert_eq!(&v[v.len() - 3..], &[1, 2, 3]);
    }

    #[test]
    fn the_step_is_a_share_of_the_memory_limit() {
        set_step_for_limit(Some(128 << 20));
        assert_eq!(step_bytes(), 2 << 20);
        set_step_for_limit(Some(1 << 20));
        assert_eq!(step_bytes(), MIN_STEP_BYTES);
        set_step_for_limit(None);
        assert_eq!(step_bytes(), STEP_BYTES);
        set_step_for_limit(Some(64 << 30));
        assert_eq!(step_bytes(), STEP_BYTES);
    }
}
