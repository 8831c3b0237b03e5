//! How the recording's big tables (a timeline's entries and args, a store's nodes) grow.
//!
//! Past [`STEP_BYTES`] they grow by that step instead of doubling: what the memory limit counts
//! (capacity) stays close to what is used, and the room a table holds ahead of use stays
//! bounded (the Python engine's allocator faults that room in on another thread before the
//! recording thread writes it: `crates/squall_python/src/recorder/bigalloc.rs`).

/// Above this capacity a table grows by this much, not by doubling.
pub const STEP_BYTES: usize = 16 << 20;

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
    let step = v.capacity().clamp(256, (STEP_BYTES / elem).max(1)).max(at_least);
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
}
