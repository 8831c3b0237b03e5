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

use std::alloc::{GlobalAlloc, Layout, System};

pub struct BigAlloc;

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
    unsafe {
        let p = mmap(std::ptr::null_mut(), len, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
        if p == MAP_FAILED {
            return std::ptr::null_mut();
        }
        madvise(p, len, MADV_HUGEPAGE);
        p.cast()
    }
}

#[cfg(target_os = "linux")]
unsafe impl GlobalAlloc for BigAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
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
        unsafe {
            if is_big(layout.size(), layout.align()) {
                sys::munmap(ptr.cast(), mapped_len(layout.size()));
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            let align = layout.align();
            match (is_big(layout.size(), align), is_big(new_size, align)) {
                (false, false) => System.realloc(ptr, layout, new_size),
                (true, true) => {
                    let (old_len, new_len) = (mapped_len(layout.size()), mapped_len(new_size));
                    if old_len == new_len {
                        return ptr;
                    }
                    let p = sys::mremap(ptr.cast(), old_len, new_len, sys::MREMAP_MAYMOVE);
                    if p == sys::MAP_FAILED {
                        return std::ptr::null_mut();
                    }
                    if new_len > old_len {
                        // The advice is kept by the moved pages, not necessarily by new ones.
                        sys::madvise(p, new_len, sys::MADV_HUGEPAGE);
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
unsafe impl GlobalAlloc for BigAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_grow_shrink_and_keep_their_contents() {
        let a = BigAlloc;
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
}
