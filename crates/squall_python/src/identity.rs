//! Recording-wide object identities, kept without holding the objects.
//!
//! An object gets an [`ObjId`] the first time it is recorded; recording it again, while it
//! lives, finds the same id by its address. The map holds addresses only (no reference, no
//! weakref: the program sees nothing of it). An address reused by a later object must not give
//! that object the dead one's id: `deaths.rs` hooks the deallocation of the types the recorder
//! gives identities to and forgets the address there; objects of types it cannot hook get no
//! identity. An address found with another type than before is a new object too.

use pyo3::ffi;
use squall_trace::ObjId;

use crate::gil_cell::GilCell;

type AddrMap = std::collections::HashMap<usize, (ObjId, usize), foldhash::fast::FixedState>;

pub struct Identities {
    /// Address -> (identity, type address when it was given).
    by_addr: AddrMap,
    next: ObjId,
    /// The identities last found or given, (address, type address, identity), by address: the
    /// same few objects are often recorded many times in a row (a dict and an object written in
    /// a loop). `forget` clears an address's slot when it is freed, so a slot never outlives
    /// the map's entry.
    last: [(usize, usize, ObjId); LAST_SLOTS],
}

const LAST_SLOTS: usize = 8;

#[inline(always)]
fn last_slot(addr: usize) -> usize {
    ((addr >> 4) ^ (addr >> 10)) & (LAST_SLOTS - 1)
}

pub static IDS: GilCell<Identities> = GilCell::new(Identities {
    by_addr: AddrMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5ca11)),
    next: 1,
    last: [(0, 0, 0); LAST_SLOTS],
});

impl Identities {
    /// The identity of the live object `o` (a new one if it was never recorded).
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    #[inline]
    pub unsafe fn of(&mut self, o: *mut ffi::PyObject) -> ObjId {
        let tp = unsafe { ffi::Py_TYPE(o) } as usize;
        let addr = o as usize;
        let slot = last_slot(addr);
        let (a, t, id) = self.last[slot];
        if a == addr && t == tp {
            return id;
        }
        let id = match self.by_addr.get(&addr) {
            Some(&(id, t)) if t == tp => id,
            found => {
                let id = self.next;
                self.next += 1;
                if found.is_none() {
                    // Counted before the identity exists (the filter may be high, never low).
                    crate::deaths::watch(addr);
                }
                self.by_addr.insert(addr, (id, tp));
                id
            }
        };
        self.last[slot] = (addr, tp, id);
        id
    }

    /// `o`'s identity if objects of its type report their deaths (`deaths::watched`), else 0
    /// (none): an identity found by address could then be a freed object's.
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    #[inline]
    pub unsafe fn of_watched(&mut self, o: *mut ffi::PyObject) -> ObjId {
        let tp = unsafe { ffi::Py_TYPE(o) };
        // A remembered identity was given to a watched object, alive at its address since.
        let (a, t, id) = self.last[last_slot(o as usize)];
        if a == o as usize && t == tp as usize {
            return id;
        }
        if !unsafe { crate::deaths::watched(tp) } {
            return 0;
        }
        unsafe { self.of(o) }
    }

    /// The identity the live object `o` has, if it was recorded (without giving it one).
    ///
    /// # Safety
    /// GIL held; `o` a valid object.
    pub unsafe fn known(&self, o: *mut ffi::PyObject) -> Option<ObjId> {
        let tp = unsafe { ffi::Py_TYPE(o) } as usize;
        match self.by_addr.get(&(o as usize)) {
            Some(&(id, t)) if t == tp => Some(id),
            _ => None,
        }
    }

    /// The object at `addr` is being freed: a later object there is another one.
    pub fn forget(&mut self, addr: usize) {
        if self.by_addr.remove(&addr).is_some() {
            crate::deaths::unwatch(addr);
        }
        let slot = last_slot(addr);
        if self.last[slot].0 == addr {
            self.last[slot] = (0, 0, 0);
        }
    }

    /// Bytes the map holds.
    pub fn bytes(&self) -> u64 {
        (self.by_addr.capacity() * 32) as u64
    }

    /// Forgets every address, and numbers objects from 1 again: a cleared recording's values
    /// cannot be reached any more (value refs name the recording), so its ids cannot be confused
    /// with the next one's.
    pub fn clear(&mut self) {
        self.next = 1;
        self.last = [(0, 0, 0); LAST_SLOTS];
        self.by_addr = AddrMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5ca11));
        crate::deaths::unwatch_all();
    }
}
