//! Recording-wide object identities, kept without holding the objects.
//!
//! An object gets an [`ObjId`] the first time it is recorded; recording it again, while it
//! lives, finds the same id by its address. The map holds addresses only (no reference, no
//! weakref: the program sees nothing of it). An address reused by a later object must not give
//! that object the dead one's id: `deaths.rs` hooks the deallocation of the types the recorder
//! gives identities to and forgets the address there (`addr_filter.rs` tells it which addresses
//! may hold one); objects of types it cannot hook get no identity. This map knows nothing of
//! the hooks (`deaths.rs` is above it). An address found with another type than before is a new object too.
//!
//! Every identity that ends (forgotten at a death, or replaced at an address found with another
//! type) is logged by address, the last few thousand of them: a holder of identities found
//! earlier (a fingerprint, `encode/fingerprint.rs`) knows they all still hold when none of their
//! addresses is in the log since then (`kept_since`), without looking any up.

use pyo3::ffi;
use squall_trace::ObjId;

use crate::gil_cell::GilCell;

type AddrMap = std::collections::HashMap<usize, (ObjId, usize), foldhash::fast::FixedState>;

pub struct Identities {
    /// Address -> (identity, type address when it was given).
    by_addr: AddrMap,
    next: ObjId,
    /// The identities last found or given, (address, type address, identity), any order: the
    /// same few objects are often recorded many times in a row (a dict and an object written in
    /// a loop). `forget` clears an address's entry when it is freed, so an entry never outlives
    /// the map's.
    last: [(usize, usize, ObjId); LAST],
    /// The entry of `last` the next miss replaces (round robin).
    victim: usize,
    /// (address, type address, identity) by address, direct-mapped, in front of `by_addr`: an
    /// object-heavy program records thousands of live objects in turn (go's board squares), and
    /// a hash map probe per object missed the cache (7% of go's recorded time). Same invariant
    /// as `last`: `forget` clears an address's slot, so a slot never outlives the map's entry.
    near: Vec<(usize, usize, ObjId)>,
    /// The addresses whose identity ended (`forget`, or a new identity given at an address
    /// found with another type), the last `LOST_LOG` of them by `lost` modulo `LOST_LOG`.
    lost_log: Vec<usize>,
    /// Identities ended so far (more after `clear`, so that no count taken before reaches past it).
    lost: u64,
}

const LAST: usize = 4;
const NEAR_SLOTS: usize = 1 << 12;
const LOST_LOG: usize = 1 << 12;

#[inline(always)]
fn near_slot(addr: usize) -> usize {
    ((addr >> 4) ^ (addr >> 16)) & (NEAR_SLOTS - 1)
}

pub static IDS: GilCell<Identities> = GilCell::new(Identities {
    by_addr: AddrMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5ca11)),
    next: 1,
    last: [(0, 0, 0); LAST],
    victim: 0,
    near: Vec::new(),
    lost_log: Vec::new(),
    lost: 0,
});

impl Identities {
    #[inline(always)]
    fn remembered(&self, addr: usize, tp: usize) -> Option<ObjId> {
        self.last.iter().find(|&&(a, t, _)| a == addr && t == tp).map(|&(_, _, id)| id)
    }

    #[inline(always)]
    fn remember(&mut self, addr: usize, tp: usize, id: ObjId) -> ObjId {
        self.last[self.victim] = (addr, tp, id);
        self.victim = (self.victim + 1) % LAST;
        id
    }

    /// The identity of the live object `o` (a new one if it was never recorded).
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    #[inline]
    pub unsafe fn of(&mut self, o: *mut ffi::PyObject) -> ObjId {
        // SAFETY: this fn's contract: `o` is a live object, so its type is readable.
        let tp = unsafe { ffi::Py_TYPE(o) } as usize;
        let addr = o as usize;
        if let Some(id) = self.remembered(addr, tp) {
            return id;
        }
        self.of_slow(addr, tp)
    }

    /// The identity at `addr` if the map holds one given with type `tp`.
    #[inline(always)]
    fn mapped(&mut self, addr: usize, tp: usize) -> Option<ObjId> {
        if self.near.is_empty() {
            self.near = vec![(0, 0, 0); NEAR_SLOTS];
        }
        let slot = near_slot(addr);
        let (a, t, id) = self.near[slot];
        if a == addr && t == tp {
            return Some(id);
        }
        match self.by_addr.get(&addr) {
            Some(&(id, t)) if t == tp => {
                self.near[slot] = (addr, tp, id);
                Some(id)
            }
            _ => None,
        }
    }

    #[inline(never)]
    fn of_slow(&mut self, addr: usize, tp: usize) -> ObjId {
        let id = match self.mapped(addr, tp) {
            Some(id) => id,
            None => {
                let found = self.by_addr.contains_key(&addr);
                let id = self.next;
                self.next += 1;
                if found {
                    self.log_lost(addr);
                } else {
                    // Counted before the identity exists (the filter may be high, never low).
                    crate::recorder::addr_filter::watch(addr);
                }
                self.by_addr.insert(addr, (id, tp));
                self.near[near_slot(addr)] = (addr, tp, id);
                id
            }
        };
        self.remember(addr, tp, id)
    }

    /// `o`'s identity if objects of its type report their deaths (`watched(type)`: the caller
    /// passes `deaths::watched`, which this map does not know of; it is called with the type of
    /// the live object `o`, GIL held), else 0 (none): an identity
    /// found by address could then be a freed object's.
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    #[inline]
    pub unsafe fn of_watched(
        &mut self,
        o: *mut ffi::PyObject,
        watched: impl FnOnce(*mut ffi::PyTypeObject) -> bool,
    ) -> ObjId {
        // SAFETY: this fn's contract: `o` is a live object, so its type is readable.
        let tp = unsafe { ffi::Py_TYPE(o) };
        let addr = o as usize;
        // An identity remembered or in the map was given to a watched object, alive at its
        // address since.
        if let Some(id) = self.remembered(addr, tp as usize) {
            return id;
        }
        if let Some(id) = self.mapped(addr, tp as usize) {
            return self.remember(addr, tp as usize, id);
        }
        if !watched(tp) {
            return 0;
        }
        self.of_slow(addr, tp as usize)
    }

    /// The identity the live object `o` has, if it was given one (without giving it one): the
    /// direct-mapped slot first (a memo's check of a reference met again: one slot read), then
    /// the last ones and the map.
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    #[inline(always)]
    pub unsafe fn find(&mut self, o: *mut ffi::PyObject) -> Option<ObjId> {
        // SAFETY: this fn's contract: `o` is a live object, so its type is readable.
        let tp = unsafe { ffi::Py_TYPE(o) } as usize;
        let addr = o as usize;
        if let Some(&(a, t, id)) = self.near.get(near_slot(addr)) {
            if a == addr && t == tp {
                return Some(id);
            }
        }
        self.find_slow(addr, tp)
    }

    #[inline(never)]
    fn find_slow(&mut self, addr: usize, tp: usize) -> Option<ObjId> {
        self.remembered(addr, tp).or_else(|| self.mapped(addr, tp))
    }

    /// The identity the live object `o` has, if it was recorded (without giving it one).
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    pub unsafe fn known(&self, o: *mut ffi::PyObject) -> Option<ObjId> {
        // SAFETY: this fn's contract: `o` is a live object, so its type is readable.
        let tp = unsafe { ffi::Py_TYPE(o) } as usize;
        match self.by_addr.get(&(o as usize)) {
            Some(&(id, t)) if t == tp => Some(id),
            _ => None,
        }
    }

    /// The object at `addr` is being freed: a later object there is another one.
    pub fn forget(&mut self, addr: usize) {
        if self.by_addr.remove(&addr).is_some() {
            crate::recorder::addr_filter::unwatch(addr);
            self.log_lost(addr);
        }
        if let Some(e) = self.near.get_mut(near_slot(addr)) {
            if e.0 == addr {
                *e = (0, 0, 0);
            }
        }
        for e in &mut self.last {
            if e.0 == addr {
                *e = (0, 0, 0);
            }
        }
    }

    fn log_lost(&mut self, addr: usize) {
        if self.lost_log.is_empty() {
            self.lost_log = vec![0; LOST_LOG];
        }
        self.lost_log[self.lost as usize % LOST_LOG] = addr;
        self.lost += 1;
    }

    /// A count to give [`Identities::kept_since`]: identities ended so far.
    pub fn lost_count(&self) -> u64 {
        self.lost
    }

    /// Whether every address for which `held` is true still has the identity it had when
    /// [`Identities::lost_count`] gave `since`: no identity ended at one of them since (`false`
    /// when the log no longer reaches back that far, or more than `max_checks` ended since).
    pub fn kept_since(&self, since: u64, max_checks: u64, held: impl Fn(usize) -> bool) -> bool {
        let n = self.lost.wrapping_sub(since);
        if since > self.lost || n > LOST_LOG as u64 || n > max_checks {
            return false;
        }
        (since..self.lost).all(|i| !held(self.lost_log[i as usize % LOST_LOG]))
    }

    /// Bytes the map holds.
    pub fn bytes(&self) -> u64 {
        (self.by_addr.capacity() * 32
            + self.near.capacity() * std::mem::size_of::<(usize, usize, ObjId)>()
            + self.lost_log.capacity() * 8) as u64
    }

    /// Forgets every address, and numbers objects from 1 again: a cleared recording's values
    /// cannot be reached any more (value refs name the recording), so its ids cannot be confused
    /// with the next one's.
    pub fn clear(&mut self) {
        self.next = 1;
        self.last = [(0, 0, 0); LAST];
        self.near = Vec::new();
        self.by_addr = AddrMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5ca11));
        // Every identity ended: no count taken before reaches past this one.
        self.lost += LOST_LOG as u64 + 1;
        crate::recorder::addr_filter::unwatch_all();
    }
}
