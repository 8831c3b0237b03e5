//! The engine's global allocator: large blocks straight from the kernel, in huge pages.
//!
//! A recording's timeline, value table and args arena grow to tens or hundreds of MiB, by
//! doubling. Through malloc each growth may copy the whole block (once glibc's dynamic mmap
//! threshold has risen, big blocks come from the heap and `realloc` copies them), and every
//! fresh 4 KiB page costs a page fault on first write: together ~1–5 ns per recorded event,
//! measured in bench/run.py. Blocks of `BIG` bytes or more are instead mapped with `mmap`, marked
//! `MADV_HUGEPAGE` (one fault per 2 MiB where transparent huge pages are enabled, even in
//! `madvise` mode), grown with `mremap` (the pages move, nothing is copied) and unmapped when
//! freed (the memory goes back to the system at once). Smaller blocks go to the system
//! allocator. Linux only; elsewhere everything goes to the system allocator.
//!
//! New room in a big block is faulted in ahead of use by a thread of its own (`ahead`): the
//! kernel zeroing fresh pages was a quarter to three quarters of a recorded program's time on
//! the 2-core VMs measured (docs/DESIGN.md); done by `madvise(MADV_POPULATE_WRITE)` on the other
//! core, the recording thread finds its pages there.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct BigAlloc;

/// Starts faulting new big blocks in ahead of use on a thread of its own (Linux; elsewhere
/// nothing). Started with saving, stopped for a fork (`sink.rs`).
pub fn start_prefaulter() {
    #[cfg(target_os = "linux")]
    ahead::start();
}

/// Stops that thread and waits for it (before a fork: the process then forks with the
/// program's threads only, and with the queue's lock free).
pub fn stop_prefaulter() {
    #[cfg(target_os = "linux")]
    ahead::stop();
}

#[cfg(target_os = "linux")]
mod sys {
    use std::ffi::{c_int, c_void};

    unsafe extern "C" {
        pub fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void;
        pub fn munmap(addr: *mut c_void, len: usize) -> c_int;
        pub fn mremap(old: *mut c_void, old_len: usize, new_len: usize, flags: c_int, ...) -> *mut c_void;
        pub fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }

    pub const PROT_READ_WRITE: c_int = 0x1 | 0x2;
    pub const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    pub const MREMAP_MAYMOVE: c_int = 1;
    pub const MADV_HUGEPAGE: c_int = 14;
    /// Linux 5.14+: fault the range in, writable, without writing to it.
    pub const MADV_POPULATE_WRITE: c_int = 23;
    pub const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
}

/// Blocks this big or bigger are mapped directly.
#[cfg(target_os = "linux")]
const BIG: usize = 4 << 20;
/// Mapped lengths are multiples of a huge page.
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
#[inline]
fn is_big(size: usize, align: usize) -> bool {
    size >= BIG && align <= 4096
}

#[cfg(target_os = "linux")]
#[inline]
fn mapped_len(size: usize) -> usize {
    size.next_multiple_of(HUGE_PAGE)
}

#[cfg(target_os = "linux")]
unsafe fn map(size: usize) -> *mut u8 {
    use sys::*;
    let len = mapped_len(size);
    // SAFETY: an anonymous private mapping of `len` bytes touches no existing memory; a failure is
    // returned as null, and the advice and prefault request cover exactly the new mapping.
    unsafe {
        let p = mmap(std::ptr::null_mut(), len, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
        if p == MAP_FAILED {
            return std::ptr::null_mut();
        }
        madvise(p, len, MADV_HUGEPAGE);
        ahead::request(p as usize, len);
        p.cast()
    }
}

/// The thread that faults big blocks in ahead of use. Invariant: it touches a range only while
/// holding `QUEUE`, and a block's ranges leave the queue (`forget`) before the block is unmapped
/// or moved, so it never faults in memory that is no longer the engine's.
#[cfg(target_os = "linux")]
pub mod ahead {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::thread::JoinHandle;

    const SLOTS: usize = 32;
    /// Faulted in per turn of the lock: a page-table walk when already there, at most one 2 MiB
    /// huge page (or 512 small ones) zeroed when not.
    const CHUNK: usize = 2 << 20;

    struct Queue {
        ranges: [(usize, usize); SLOTS],
        len: usize,
        stop: bool,
    }

    static QUEUE: Mutex<Queue> = Mutex::new(Queue { ranges: [(0, 0); SLOTS], len: 0, stop: false });
    static WAKE: Condvar = Condvar::new();
    static RUNNING: AtomicBool = AtomicBool::new(false);
    /// The process the thread runs in: a forked child inherits `RUNNING` but not the thread
    /// (nor, if it forked with the lock held, a usable lock), and must not queue or wait.
    static OWNER: AtomicU32 = AtomicU32::new(0);
    static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

    fn ours() -> bool {
        RUNNING.load(Ordering::Acquire) && OWNER.load(Ordering::Acquire) == std::process::id()
    }

    /// Starts the thread, if it is not running in this process.
    pub fn start() {
        if ours() {
            return;
        }
        if let Ok(mut q) = QUEUE.lock() {
            q.len = 0;
            q.stop = false;
        }
        let Ok(mut slot) = THREAD.lock() else { return };
        match squall_trace::quiet_thread::spawn(
            std::thread::Builder::new().name("squall-prefault".into()).stack_size(64 << 10),
            run,
        ) {
            Ok(handle) => {
                *slot = Some(handle);
                OWNER.store(std::process::id(), Ordering::Release);
                RUNNING.store(true, Ordering::Release);
            }
            Err(_) => RUNNING.store(false, Ordering::Release),
        }
    }

    /// Stops the thread and waits for it.
    pub fn stop() {
        if !ours() {
            RUNNING.store(false, Ordering::Release);
            return;
        }
        RUNNING.store(false, Ordering::Release);
        if let Ok(mut q) = QUEUE.lock() {
            q.stop = true;
            q.len = 0;
        }
        WAKE.notify_all();
        let handle = THREAD.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// Asks for `[start, start + len)` to be faulted in (dropped when the queue is full).
    pub fn request(start: usize, len: usize) {
        if !ours() || len == 0 {
            return;
        }
        let Ok(mut q) = QUEUE.lock() else { return };
        if q.len < SLOTS {
            let n = q.len;
            q.ranges[n] = (start, start + len);
            q.len += 1;
            WAKE.notify_one();
        }
    }

    /// Drops every queued part of `[start, start + len)`: it is about to be unmapped or moved.
    pub fn forget(start: usize, len: usize) {
        if !ours() {
            return;
        }
        let end = start + len;
        let Ok(mut q) = QUEUE.lock() else { return };
        let mut kept = 0;
        for i in 0..q.len {
            let (a, b) = q.ranges[i];
            if b <= start || a >= end {
                q.ranges[kept] = (a, b);
                kept += 1;
            } else if a < start {
                q.ranges[kept] = (a, start);
                kept += 1;
            } else if b > end {
                q.ranges[kept] = (end, b);
                kept += 1;
            }
        }
        q.len = kept;
    }

    fn run() {
        loop {
            let Ok(mut q) = QUEUE.lock() else { return };
            while q.len == 0 && !q.stop {
                q = match WAKE.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
            if q.stop {
                return;
            }
            let (a, b) = q.ranges[0];
            let page = 4096;
            let from = a.next_multiple_of(page);
            let to = (from + CHUNK).min(b);
            if to > from {
                let len = (to - from).next_multiple_of(page).min(b.next_multiple_of(page) - from);
                // SAFETY: the range lies in a block the allocator mapped and has not unmapped
                // (`forget` runs under this lock first); POPULATE_WRITE writes nothing.
                let r = unsafe { super::sys::madvise(from as *mut _, len, super::sys::MADV_POPULATE_WRITE) };
                if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(22) {
                    // EINVAL: a kernel before 5.14. Stop asking.
                    RUNNING.store(false, Ordering::Release);
                    q.len = 0;
                    return;
                }
            }
            if to >= b {
                let n = q.len;
                q.ranges.copy_within(1..n, 0);
                q.len -= 1;
            } else {
                q.ranges[0].0 = to;
            }
        }
    }
}

#[cfg(target_os = "linux")]
// SAFETY: `alloc` returns null or a block of at least `layout.size()` bytes aligned to
// `layout.align()` (a big block: page aligned, and `is_big` takes only alignments up to a page);
// `dealloc` and `realloc` tell a big block from a small one by the same `is_big` on the layout, so
// each block goes back to the allocator that made it.
unsafe impl GlobalAlloc for BigAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract (a non-zero size); a big block is mapped, the
        // rest is the system allocator's.
        unsafe {
            if is_big(layout.size(), layout.align()) {
                map(layout.size())
            } else {
                System.alloc(layout)
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract; fresh anonymous pages are zero, the rest is
        // the system allocator's `alloc_zeroed`.
        unsafe {
            if is_big(layout.size(), layout.align()) {
                // Fresh anonymous pages are zero.
                map(layout.size())
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's `GlobalAlloc` contract: `ptr` came from this allocator with
        // `layout`, so `is_big` tells which allocator made it; a big block leaves the prefault
        // queue before it is unmapped.
        unsafe {
            if is_big(layout.size(), layout.align()) {
                ahead::forget(ptr as usize, mapped_len(layout.size()));
                sys::munmap(ptr.cast(), mapped_len(layout.size()));
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract: `ptr` came from this allocator with
        // `layout`; a big block leaves the prefault queue before `mremap` may move it, a failed
        // `mremap` leaves it intact (null returned), and a block crossing the threshold is copied
        // into a new block of the other kind before the old one is freed.
        unsafe {
            let align = layout.align();
            match (is_big(layout.size(), align), is_big(new_size, align)) {
                (false, false) => System.realloc(ptr, layout, new_size),
                (true, true) => {
                    let (old_len, new_len) = (mapped_len(layout.size()), mapped_len(new_size));
                    if old_len == new_len {
                        return ptr;
                    }
                    ahead::forget(ptr as usize, old_len);
                    let p = sys::mremap(ptr.cast(), old_len, new_len, sys::MREMAP_MAYMOVE);
                    if p == sys::MAP_FAILED {
                        return std::ptr::null_mut();
                    }
                    if new_len > old_len {
                        // The advice is kept by the moved pages, not necessarily by new ones.
                        sys::madvise(p, new_len, sys::MADV_HUGEPAGE);
                        ahead::request(p as usize + old_len, new_len - old_len);
                    }
                    p.cast()
                }
                _ => {
                    // Across the threshold: a new block of the other kind, and a copy.
                    let new_layout = Layout::from_size_align_unchecked(new_size, align);
                    let p = self.alloc(new_layout);
                    if !p.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    p
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
// SAFETY: every call is the system allocator's, with the caller's arguments unchanged.
unsafe impl GlobalAlloc for BigAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's `GlobalAlloc` contract, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's `GlobalAlloc` contract, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_grow_shrink_and_keep_their_contents() {
        let a = BigAlloc;
        // SAFETY: the layout has a non-zero size; the block is written within its size, resized
        // through `realloc` with the layout it has, and freed with its final layout.
        unsafe {
            let l = Layout::from_size_align(1 << 20, 8).unwrap();
            let p = a.alloc(l);
            assert!(!p.is_null());
            for i in 0..l.size() {
                *p.add(i) = (i % 251) as u8;
            }
            // small -> big -> bigger -> small, contents kept each time
            let sizes = [5 << 20, 21 << 20, 6 << 20, 3 << 20];
            let mut cur = (p, l);
            for &s in &sizes {
                let q = a.realloc(cur.0, cur.1, s);
                assert!(!q.is_null());
                for i in (0..(1 << 20)).step_by(4093) {
                    assert_eq!(*q.add(i), (i % 251) as u8);
                }
                cur = (q, Layout::from_size_align(s, 8).unwrap());
            }
            a.dealloc(cur.0, cur.1);
            let z = Layout::from_size_align(9 << 20, 16).unwrap();
            let p = a.alloc_zeroed(z);
            assert!((0..z.size()).step_by(4096).all(|i| *p.add(i) == 0));
            a.dealloc(p, z);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn new_big_blocks_are_faulted_in_by_the_prefault_thread() {
        unsafe extern "C" {
            fn mincore(addr: *mut std::ffi::c_void, len: usize, vec: *mut u8) -> std::ffi::c_int;
        }
        start_prefaulter();
        let a = BigAlloc;
        let l = Layout::from_size_align(32 << 20, 4096).unwrap();
        // SAFETY: the block is used within its size and freed with its layout; `mincore` is given
        // the block's page-aligned start, its length and a vector of one byte per page.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            let pages = l.size() / 4096;
            let mut resident = vec![0u8; pages];
            let t0 = std::time::Instant::now();
            let count = loop {
                assert_eq!(mincore(p.cast(), l.size(), resident.as_mut_ptr()), 0);
                let n = resident.iter().filter(|&&b| b & 1 != 0).count();
                if n == pages || t0.elapsed().as_secs() > 20 {
                    break n;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            // Nothing here wrote to the block: only the prefault thread can have faulted it in.
            assert_eq!(count, pages, "{count} of {pages} pages resident");
            assert!((0..l.size()).step_by(4096).all(|i| *p.add(i) == 0));
            a.dealloc(p, l);
        }
    }
}
