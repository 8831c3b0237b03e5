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
//!
//! Rows of scalars: the same for a row whose items are immortals, exact ints of 64 bits and
//! exact floats, each of the latter kept with its value (`ScalarItem`): a later record whose
//! items are those addresses, each such item of the same type with the same value, is that node
//! (an int or a float encodes by its value alone; its node is shared at its address while
//! equal). Each float and each int past 31 bits takes one of the item budget, as its encoding
//! would; an int that encodes inline takes none. go's squares
//! hold three 63-bit hashes each, read through the memo at every record of a square.
//!
//! Rows of references: a list or tuple read where instances are references to their earlier
//! states (no object level left, `Cx::obj_left`), every item of which the reused node holds as a
//! reference to that item's identity (go's `Board.squares`, 81 squares, and each square's
//! neighbours, at every record of a board or a square). A later record whose items are those
//! addresses, each of the same type at the same type version, each object alive since, is that
//! node: the memo would replay each item as the same reference (`memo::Replay::Cut`, by the same
//! checks), and take one item of the budget for each. "Alive since" is one count when no
//! recorded object died since the row was last found (`Identities::kept_since`), else a lookup
//! per item. The node then refers to the items' earlier states (`Cx::has_dep`).

use pyo3::ffi;
use squall_trace::{Decoded, Node, ObjId, SeqKind, ValRef, MAX_SLOT};

use super::fingerprint::{immortal, MIN_ITEMS};
use super::{type_key, Cx};
use crate::recorder::identity::IDS;

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
    /// A row of references: per item its type, type version and identity (empty for a row of
    /// immortals or scalars, and only then).
    refs: Vec<RefItem>,
    /// A row of scalars: its items that are not immortals, each with its value (empty for
    /// others).
    scalars: Vec<ScalarItem>,
    /// A row of scalars: how many of its items take one of the item budget when read, as
    /// `Cx::enc` takes them: floats and ints past an inline value's 31 bits (an int that
    /// encodes inline takes none).
    charged: usize,
    /// A row of references: the items' addresses sorted, for `Identities::kept_since`.
    held: Vec<usize>,
    /// A row of references: `Identities::lost_count` when its items were last found alive.
    kept_at: u64,
}

/// An item of a row of references, as the encoding made it one.
#[derive(Clone, Copy)]
struct RefItem {
    tp: usize,
    key: u32,
    obj: ObjId,
}

/// An item of a row of scalars that is not an immortal: an exact int of 64 bits or an exact
/// float, by its value.
#[derive(Clone, Copy)]
struct ScalarItem {
    at: u32,
    float: bool,
    bits: u64,
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
            + self
                .slots
                .iter()
                .map(|r| {
                    (r.items.capacity() + r.held.capacity()) * 8
                        + r.refs.capacity() * std::mem::size_of::<RefItem>()
                        + r.scalars.capacity() * std::mem::size_of::<ScalarItem>()
                })
                .sum::<usize>()
    }
}

/// Whether every item encoded inline (an int of 31 bits, `None`, a bool): the only rows whose
/// items may all be immortals, told without reading an object.
#[inline(always)]
pub(super) fn all_inline(items: &[ValRef]) -> bool {
    items.iter().all(|v| v.0 >= MAX_SLOT)
}

/// Whether `o` may be an item of a row of immortals or scalars, told by its address and type
/// alone: a row whose first item is not is not kept, and is not looked up (lists of instances,
/// go's and deltablue's, paid the lookup at every record).
///
/// # Safety
/// GIL held; `o` live.
#[inline(always)]
pub(super) unsafe fn may_be_scalar(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract: `o` is live, so its type is readable.
    unsafe {
        o == ffi::Py_None()
            || o == ffi::Py_True()
            || o == ffi::Py_False()
            || ffi::Py_TYPE(o) == &raw mut ffi::PyLong_Type
            || ffi::Py_TYPE(o) == &raw mut ffi::PyFloat_Type
    }
}

/// The value of `o` as a row of scalars keeps it, when it is an exact int of 64 bits or an
/// exact float (not an immortal: the caller tells those first).
///
/// # Safety
/// GIL held; `o` live.
#[inline(always)]
unsafe fn scalar_bits(o: *mut ffi::PyObject) -> Option<(bool, u64)> {
    // SAFETY: this fn's contract: `o` is live, read by the layout its exact type gives.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if tp == &raw mut ffi::PyFloat_Type {
            return Some((true, ffi::PyFloat_AS_DOUBLE(o).to_bits()));
        }
        if tp == &raw mut ffi::PyLong_Type {
            return crate::recorder::ints::exact_int_value(o).map(|v| (false, v as u64));
        }
        None
    }
}

impl Cx<'_> {
    /// The node of the list or tuple at `o` (`of`), whose `n` items are at `items`, when they
    /// are the immortals of the row kept for it, or the references of one read where they are
    /// references (taking an item of the budget each, as the reading would).
    ///
    /// # Safety
    /// GIL held; `items` the live list's or tuple's `n` item pointers.
    #[inline(always)]
    pub(super) unsafe fn same_row(
        &mut self,
        o: *mut ffi::PyObject,
        of: RowOf,
        items: *mut *mut ffi::PyObject,
        n: usize,
    ) -> Option<ValRef> {
        let r = self.cache.rows.slots.get(Rows::slot(o as usize))?;
        if r.addr != o as usize || r.of != of || r.items.len() != n {
            return None;
        }
        // The reading stops at the first item when the budget is spent, or past `max_length`:
        // a reference, a float or a wide int takes one each, an immortal or an inline int none.
        let refs = !r.refs.is_empty();
        let taken = if refs { n } else { r.charged };
        let need = if refs { n } else { taken + usize::from(n > 0) };
        if *self.left < need || n > self.budget.max_length || (refs && self.obj_left != 0) {
            return None;
        }
        if self.cache.last.get(o as usize) != Some(r.node) {
            return None;
        }
        // SAFETY: this fn's contract: `n` item pointers are readable at `items`.
        let now = unsafe { std::slice::from_raw_parts(items.cast::<usize>(), n) };
        if now != r.items.as_slice() {
            return None;
        }
        if refs {
            // SAFETY: this fn's contract: each item is live (the row holds it), so is its type.
            if !unsafe { same_references(r, now) } {
                return None;
            }
            *self.left -= n;
            self.has_dep = true;
            let r = &mut self.cache.rows.slots[Rows::slot(o as usize)];
            r.kept_at = IDS.get().lost_count();
            return Some(r.node);
        }
        if !r.scalars.is_empty() {
            for si in &r.scalars {
                // SAFETY: this fn's contract: each item is live (the row holds it).
                if unsafe { scalar_bits(*items.add(si.at as usize)) } != Some((si.float, si.bits)) {
                    return None;
                }
            }
            *self.left -= taken;
        }
        Some(r.node)
    }

    /// After a record at `depth` of the list or tuple at `o` reused `node`, its last node, whose
    /// items `vals` are: keeps its items' addresses with it when every one is an immortal, or
    /// with their types and identities when every one is a reference to the item's identity
    /// read with no object level left (`same_row`). Not for a row of immortals a fingerprint
    /// is taken of (`Cx::seq`): a big one changed in place and found unchanged in turn (go's
    /// lists of empty points) would pay the scan at each record, for nothing.
    ///
    /// `vals` are the encoding stack's values from `base`.
    ///
    /// # Safety
    /// As [`Cx::same_row`].
    pub(super) unsafe fn keep_row(
        &mut self,
        o: *mut ffi::PyObject,
        of: RowOf,
        row: (*mut *mut ffi::PyObject, usize),
        base: usize,
        depth: u32,
        node: ValRef,
    ) {
        // Out of the cache while the row is kept (`references` reads the store and the
        // identities, not the stack), put back as it was.
        let vals = std::mem::take(&mut self.cache.stack);
        // SAFETY: this fn's contract.
        unsafe { self.keep_row_of(o, of, row, vals.get(base..).unwrap_or(&[]), depth, node) };
        self.cache.stack = vals;
    }

    /// `keep_row` with the items' values `vals`.
    ///
    /// # Safety
    /// As [`Cx::same_row`].
    unsafe fn keep_row_of(
        &mut self,
        o: *mut ffi::PyObject,
        of: RowOf,
        (items, n): (*mut *mut ffi::PyObject, usize),
        vals: &[ValRef],
        depth: u32,
        node: ValRef,
    ) {
        if n > self.budget.max_length || vals.len() != n || !matches!(of.kind, SeqKind::List | SeqKind::Tuple) {
            return;
        }
        // SAFETY: this fn's contract; each item is live (the container holds it).
        let now = unsafe { std::slice::from_raw_parts(items.cast::<usize>(), n) };
        let mut refs = Vec::new();
        let mut scalars = Vec::new();
        let mut charged = 0;
        let printed = n as u64 >= MIN_ITEMS && depth > 0;
        // SAFETY: GIL held (this fn's contract); each item is live.
        let scalar_first = now.first().is_some_and(|&p| unsafe { may_be_scalar(p as *mut ffi::PyObject) });
        if all_inline(vals) {
            // SAFETY: GIL held (this fn's contract); each item is live.
            if printed || !now.iter().all(|&p| unsafe { immortal(p as *mut ffi::PyObject) }) {
                return;
            }
        } else if self.registered.is_empty() && scalar_first {
            if printed {
                return;
            }
            for (at, &p) in now.iter().enumerate() {
                let p = p as *mut ffi::PyObject;
                // SAFETY: GIL held (this fn's contract); each item is live.
                if unsafe { immortal(p) } {
                    continue;
                }
                // SAFETY: as above.
                let Some((float, bits)) = (unsafe { scalar_bits(p) }) else { return };
                if float || ValRef::small_int(bits as i64).is_none() {
                    charged += 1;
                }
                scalars.push(ScalarItem { at: at as u32, float, bits });
            }
        } else {
            // SAFETY: as above.
            match unsafe { self.references(now, vals) } {
                Some(r) => refs = r,
                None => return,
            }
        }
        let mut held = Vec::new();
        if !refs.is_empty() {
            held.extend_from_slice(now);
            held.sort_unstable();
        }
        let rows = &mut self.cache.rows;
        if rows.slots.is_empty() {
            rows.slots.resize_with(SLOTS, || Row {
                addr: 0,
                of: RowOf { obj: 0, ty: 0, kind: SeqKind::Other },
                node: ValRef::ABSENT,
                items: Vec::new(),
                refs: Vec::new(),
                scalars: Vec::new(),
                charged: 0,
                held: Vec::new(),
                kept_at: 0,
            });
        }
        let r = &mut rows.slots[Rows::slot(o as usize)];
        r.addr = o as usize;
        r.of = of;
        r.node = node;
        r.items.clear();
        r.items.extend_from_slice(now);
        r.refs = refs;
        r.scalars = scalars;
        r.charged = charged;
        r.held = held;
        r.kept_at = IDS.get().lost_count();
    }

    /// The items at `now`, encoded to `vals`, as a row of references: `None` unless they were
    /// read with no object level left and each value is a reference to its item's identity.
    ///
    /// # Safety
    /// GIL held; each item at `now` live.
    unsafe fn references(&mut self, now: &[usize], vals: &[ValRef]) -> Option<Vec<RefItem>> {
        let is_reference = |v: ValRef| match v.decode() {
            Decoded::Slot(s) => self.store.node(s).and_then(Node::cut),
            _ => None,
        };
        // Most rows reused are of other things (ints past the cache, strs, a `None` first):
        // told by the first item, before anything is allocated.
        if self.obj_left != 0 || !self.registered.is_empty() || is_reference(*vals.first()?).is_none() {
            return None;
        }
        let mut refs = Vec::with_capacity(now.len());
        for (&p, &v) in now.iter().zip(vals) {
            let cut = is_reference(v)?;
            let o = p as *mut ffi::PyObject;
            // SAFETY: this fn's contract: `o` is live, so is its type.
            let (tp, obj) = unsafe { (ffi::Py_TYPE(o), IDS.get().find(o)?) };
            // SAFETY: as above.
            let key = unsafe { type_key(tp) };
            if cut.obj != obj || key == 0 {
                return None;
            }
            refs.push(RefItem { tp: tp as usize, key, obj });
        }
        Some(refs)
    }
}

/// Whether the items at `now` (the addresses row `r` keeps) are the objects `r` made references
/// to, alive since, of the same types at the same versions.
///
/// # Safety
/// GIL held; each item at `now` live.
#[inline(always)]
unsafe fn same_references(r: &Row, now: &[usize]) -> bool {
    // SAFETY: this fn's contract: each item and its type are live.
    let typed = r.refs.iter().zip(now).all(|(ri, &p)| unsafe {
        let tp = ffi::Py_TYPE(p as *mut ffi::PyObject);
        tp as usize == ri.tp && type_key(tp) == ri.key
    });
    if !typed {
        return false;
    }
    let ids = IDS.get();
    // Checking an ended identity costs a binary search; past that many, a lookup per item.
    let max_checks = now.len() as u64 / 4 + 16;
    ids.kept_since(r.kept_at, max_checks, |a| r.held.binary_search(&a).is_ok())
        // SAFETY: as above.
        || r.refs.iter().zip(now).all(|(ri, &p)| unsafe { ids.find(p as *mut ffi::PyObject) } == Some(ri.obj))
}
