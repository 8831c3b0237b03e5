//! Which addresses may hold an object identity now (`identity.rs`), answered without the map:
//! a counter per bucket of addresses, tested by the deallocation hooks (`deaths.rs`) for every
//! freed object of a hooked type, so that the usual free (no identity) costs one load.

use std::sync::atomic::{AtomicU16, Ordering};

const FILTER_BUCKETS: usize = 1 << 18;
/// How many addresses with an identity fall in each bucket (`addr >> 4`, folded); a count that
/// reached `u16::MAX` stays there. Zero proves the freed object holds no identity: the usual
/// case, even at an address that held a recorded object earlier (free lists reuse addresses).
/// Counts may be too high (saturated), never too low: `watch` counts an address before its
/// identity exists, `unwatch` after it is gone.
static FILTER: [AtomicU16; FILTER_BUCKETS] = [const { AtomicU16::new(0) }; FILTER_BUCKETS];

#[inline(always)]
fn bucket(addr: usize) -> usize {
    ((addr >> 4) ^ (addr >> 22)) & (FILTER_BUCKETS - 1)
}

/// An identity was given to the object at `addr` (which held none).
#[inline]
pub fn watch(addr: usize) {
    let c = &FILTER[bucket(addr)];
    let n = c.load(Ordering::Relaxed);
    if n != u16::MAX {
        c.store(n + 1, Ordering::Relaxed);
    }
}

/// The identity at `addr` is gone (its object died).
#[inline]
pub fn unwatch(addr: usize) {
    let c = &FILTER[bucket(addr)];
    let n = c.load(Ordering::Relaxed);
    if n != u16::MAX && n != 0 {
        c.store(n - 1, Ordering::Relaxed);
    }
}

/// Every identity is gone (the identity map was cleared).
pub fn unwatch_all() {
    for c in &FILTER {
        c.store(0, Ordering::Relaxed);
    }
}

/// Whether the object at `addr` may hold an identity (false: it surely holds none).
#[inline(always)]
pub fn may_hold(addr: usize) -> bool {
    FILTER[bucket(addr)].load(Ordering::Relaxed) != 0
}
