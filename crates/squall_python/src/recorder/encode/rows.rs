//! Rows of immortals: a list or tuple whose items are all objects that live as long as the
//! interpreter (`None`, `True`, `False`, the cached small ints: `fingerprint::immortal`) is as
//! it was while its items are the same objects, compared by address.
//!
//! Encoding such a row again costs an `enc` per item and a compare with its last node, only to
//! reuse that node: an instance's field of ids recorded at every mention of the instance
//! (pyperformance's comprehensions: ~900 instructions per record of a widget's 0-23 derived ids,
//! more than the widget's other fields together). Rows shorter than a fingerprint's minimum
//! (`fingerprint::MIN_ITEMS`) take no fingerprint, and the memo skips lists of inline values.
//!
//! When a record of a list or tuple found it unchanged (its last node reused) and every item is
//! an immortal, the items' addresses are kept with that node. A later record of the same
//! identity, type name and kind, whose items are those addresses, while that node is still the
//! last made at its address, is that node, no item encoded: an immortal at an address is always
//! the same value, encodes the same at every depth, and takes nothing from the item budget
//! (inline values), so the reading would have made that node again. The memo is left as it is:
//! its node is taken only while it is still the last at the address (`memo_end`).

use pyo3::ffi;
use squall_trace::{ObjId, SeqKind, ValRef, MAX_SLOT};

use super::fingerprint::{immortal, MIN_ITEMS};
use super::Cx;

const SLOTS: usize = 1 << 9;

/// What a row is of besides its items: its identity, type name and kind.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct RowOf {
    pub(super) obj: ObjId,
    pub(super) ty: u32,
    pub(super) kind: SeqKind,
}

struct Row {
    addr: usize,
    of: RowOf,
    node: ValRef,
    items: Vec<usize>,
}

/// The last row of immortals kept per address, direct-mapped.
#[derive(Default)]
pub(super) struct Rows {
    slots: Vec<Row>,
}

impl Rows {
    fn slot(addr: usize) -> usize {
        ((addr >> 4) ^ (addr >> 13)) & (SLOTS - 1)
    }

    pub(super) fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Row>()
            + self.slots.iter().map(|r| r.items.capacity() * 8).sum::<usize>()
    }
}

/// Whether every item encoded inline (an int of 31 bits, `None`, a bool): the only rows whose
/// items may all be immortals, told without reading an object.
#[inline(always)]
pub(super) fn all_inline(items: &[ValRef]) -> bool {
    items.iter().all(|v| v.0 >= MAX_SLOT)
}

/// Whether `o` may be an immortal, told by its address and type alone: a row whose first item
/// is not is not kept, and is not looked up (lists of instances, go's and deltablue's, paid
/// the lookup at every record).
///
/// # Safety
/// GIL held; `o` live.
#[inline(always)]
pub(super) unsafe fn may_be_immortal(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live, so its type is readable.
    unsafe {
        o == ffi::Py_None()
            || o == ffi::Py_True()
            || o == ffi::Py_False()
            || ffi::Py_TYPE(o) == &raw mut ffi::PyLong_Type
    }
}

impl Cx<'_> {
    /// The node of the list or tuple at `o` (`of`), whose `n` items are at `items`, when they
    /// are the immortals of the row kept for it.
    ///
    /// # Safety
    /// GIL held; `items` the live list's or tuple's `n` item pointers.
    #[inline(always)]
    pub(super) unsafe fn same_row(
        &self,
        o: *mut ffi::PyObject,
        of: RowOf,
        items: *mut *mut ffi::PyObject,
        n: usize,
    ) -> Option<ValRef> {
        let r = self.cache.rows.slots.get(Rows::slot(o as usize))?;
        if r.addr != o as usize || r.of != of || r.items.len() != n {
            return None;
        }
        // The reading stops at the first item when the budget is spent, or past `max_length`.
        if n > 0 && (*self.left == 0 || n > self.budget.max_length) {
            return None;
        }
        if self.cache.last.get(o as usize) != Some(r.node) {
            return None;
        }
        // SAFETY: this fn's contract: `n` item pointers are readable at `items`.
        let now = unsafe { std::slice::from_raw_parts(items.cast::<usize>(), n) };
        (now == r.items.as_slice()).then_some(r.node)
    }

    /// After a record at `depth` of the list or tuple at `o` reused `node`, its last node: keeps
    /// its items' addresses with it when every one is an immortal (`same_row`). Not for a row a
    /// fingerprint is taken of (`Cx::seq`): a big one changed in place and found unchanged in
    /// turn (go's lists of empty points) would pay the scan at each record, for nothing.
    ///
    /// # Safety
    /// As [`Cx::same_row`].
    pub(super) unsafe fn keep_row(
        &mut self,
        o: *mut ffi::PyObject,
        of: RowOf,
        items: *mut *mut ffi::PyObject,
        n: usize,
        depth: u32,
        node: ValRef,
    ) {
        let printed = n as u64 >= MIN_ITEMS && depth > 0;
        if printed || n > self.budget.max_length || !matches!(of.kind, SeqKind::List | SeqKind::Tuple) {
            return;
        }
        // SAFETY: this fn's contract; each item is live (the container holds it).
        let now = unsafe { std::slice::from_raw_parts(items.cast::<usize>(), n) };
        // SAFETY: GIL held (this fn's contract); each item is live.
        if !now.iter().all(|&p| unsafe { immortal(p as *mut ffi::PyObject) }) {
            return;
        }
        let rows = &mut self.cache.rows;
        if rows.slots.is_empty() {
            rows.slots.resize_with(SLOTS, || Row {
                addr: 0,
                of: RowOf { obj: 0, ty: 0, kind: SeqKind::Other },
                node: ValRef::ABSENT,
                items: Vec::new(),
            });
        }
        let r = &mut rows.slots[Rows::slot(o as usize)];
        r.addr = o as usize;
        r.of = of;
        r.node = node;
        r.items.clear();
        r.items.extend_from_slice(now);
    }
}
