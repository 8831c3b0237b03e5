//! Global state guarded by the GIL instead of a lock.
//!
//! Every access happens from Python-facing code with the GIL held: the recording entry points
//! (called by instrumented Python code) and the query functions. The GIL serialises them, so a
//! lock would only add cost to the hot path. Free-threaded CPython builds are not supported.

use std::cell::UnsafeCell;

pub struct GilCell<T>(UnsafeCell<T>);

// SAFETY: see the module comment; all access is serialised by the GIL.
unsafe impl<T> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub const fn new(value: T) -> GilCell<T> {
        GilCell(UnsafeCell::new(value))
    }

    /// # Safety
    /// The caller holds the GIL and keeps no other reference from this cell alive across a
    /// point where Python code could run and re-enter the engine.
    #[expect(clippy::mut_from_ref, reason = "exclusivity is guaranteed by the GIL, see module docs")]
    pub unsafe fn get(&self) -> &mut T {
        // SAFETY: this fn's contract: the GIL serialises every access and the caller keeps no other
        // reference from the cell alive, so this `&mut` is the only one.
        unsafe { &mut *self.0.get() }
    }
}
