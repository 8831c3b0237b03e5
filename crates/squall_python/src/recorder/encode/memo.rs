//! Memos: what the last record of an instance's `__dict__`, or of a list's or tuple's items,
//! read (per field its object and the value it encoded to), so that a record of the same thing
//! reuses a field's value when the field provably encodes the same, without encoding it
//! (DESIGN.md, "Where recorded time goes"). The test is made while the fields are read, by
//! the encoding pass itself: a miss costs a compare, and the field is encoded as it would be.
//! Attributes kept in inline values (3.11-3.13) have no version to replay by: a plain
//! instance's are compared field by field (`SHAPE_INLINE`). That lost to plain encoding while a
//! field hit cost ~200 instructions (docs/benchmarks.md, fifth session); a hit now leaves the
//! memo unwritten and checks a reference by one identity slot (`Identities::find`).
//!
//! A field is reused when it holds the same object as then (by address) and:
//! - `None`, a bool, an int of 31 bits: re-read (inline values cost nothing);
//! - an exact float or an exact int of 64 bits: its value is the same (an object freed and
//!   another made at its address is read, not trusted);
//! - an instance at the object-depth limit, encoded then as a reference to its earlier state:
//!   same type (same version tag) and same identity (`Identities::find`: deaths are hooked, so
//!   an identity is one object's life): the reference node is the same whatever states the
//!   object was recorded in since (the value then refers to an earlier state: `Cx::has_dep`);
//! - anything else (containers, which change in place; strs; instances above the limit) is
//!   encoded again.
//!
//! An instance whose attributes are a real `__dict__` is checked first by the dict's version
//! tag (PEP 509, 3.9-3.13: drawn from a process-wide counter at every change of the dict and
//! when one is made): the same dict at the same version holds the same objects, alive since,
//! so its fields are replayed without reading the dict and without the value checks (a str or
//! bytes too), containers still encoded again.
//!
//! A run of fields that replay by these checks (no encoding) is read by a loop of its own that
//! writes nothing back (`memo_items_prefix` for a list's items, `memo_inline_prefix` for inline
//! values, where a compact ASCII str is the same when its last node still has its text): an
//! unchanged list of references costs a few compares per item.
//!
//! When every field is reused, the record is the last one and its node, still the last made
//! at the address, is the value (named again through a `Node::Same` when it refers to other
//! objects' states: `encode_at_level`).
//!
//! An inline-values instance is first compared with its memo where the memo lies
//! (`memo_inline_whole`), by the same checks, a container encoded and compared with the node
//! it had: the same record costs no copy of the memo out of its slot and back. The first
//! difference hands the fields compared so far to the usual reading (`memo_take_prefix`).
//! Its memo also keeps the instance's keys, insertion order and values as they were
//! (`InlineOrder`): a record with the same order and the same values (one compare of each)
//! checks only the fields that are not immortal (`None`, bools, cached small ints need none:
//! the same address is the same value), without reading the order or the keys per attribute
//! (`memo_inline_same`; richards in calls mode: 0.88x the work).

use pyo3::ffi;
use squall_trace::{Node, ObjId, ValRef, ValueStore};

use super::{inline_value, type_key, Cx, LastNodes};
use crate::recorder::identity::IDS;

const SLOTS: usize = 1 << 12;

/// What a memo was made of.
pub(super) const SHAPE_DICT: u8 = 1;
/// Attributes in inline values (3.11-3.13).
#[cfg_attr(not(Py_3_11), expect(dead_code, reason = "inline values are 3.11 to 3.13"))]
pub(super) const SHAPE_INLINE: u8 = 2;
/// Plus the `SeqKind` as a number.
pub(super) const SHAPE_SEQ: u8 = 8;

/// One record of a thing's fields, at its address.
struct Memo {
    /// The address; 0: an empty slot.
    addr: usize,
    head: Head,
    max_string: usize,
    /// A sequence's length.
    len: u64,
    /// Every field was read (the item budget did not stop the reading).
    complete: bool,
    /// The thing's node made (or reused) by that record; `ABSENT` until it is.
    node: ValRef,
    /// A sequence's records still to take without reading or writing this memo
    /// (`memo_wanted`); `fields` and `node` stay those of the last record that took it.
    skip: u8,
    fields: Vec<FieldMemo>,
    /// The keys' address of the inline values whose order and values `Memos::orders` keeps
    /// at this memo's slot (`InlineOrder`); 0: none kept.
    order_keys: usize,
}

/// The keys and the insertion order (its index bytes, as they lie in memory) of the
/// inline values a memo's fields were read from, one field per attribute in order, and the
/// values then. A record with the same keys and the same order bytes has its `n`-th attribute
/// at the index the order names `n`-th, under the memo's `n`-th name (a live type's split keys
/// only grow: an entry's key never changes); with the same values too, each attribute is the
/// memo's object, and only those that are not immortal need their own check (`checks`).
#[derive(Clone, Copy)]
#[cfg_attr(not(Py_3_11), expect(dead_code, reason = "inline values are 3.11 to 3.13"))]
struct InlineOrder {
    /// The memo slot whose order this is (`Memos::orders` holds fewer entries than memos).
    memo: u16,
    len: u8,
    /// How many of `vals` and of `checks` hold.
    vals_len: u8,
    checks_len: u8,
    /// The order's `len` index bytes as they lie in memory (`encode::inline_order`).
    bytes: [u8; ORDER_MAX],
    /// The fields (by position) that are not `Replay::Immortal`, in order.
    checks: [u8; ORDER_MAX],
    /// The values' first `vals_len` pointers (every index the order names is below).
    vals: [usize; ORDER_MAX],
}

/// Attributes (and values slots) in an order kept: most instances have fewer, and each
/// entry of `Memos::orders` is sized for this many.
const ORDER_MAX: usize = 16;
/// Entries of `Memos::orders`, by memo slot modulo this: 4096 x 168 bytes per timeline that
/// records an inline-values instance again (1024 made deltablue 1% slower: evictions).
#[cfg(Py_3_11)]
const ORDER_SLOTS: usize = 1 << 12;

#[cfg_attr(not(Py_3_11), expect(dead_code, reason = "inline values are 3.11 to 3.13"))]
impl InlineOrder {
    const EMPTY: InlineOrder = InlineOrder {
        memo: u16::MAX,
        len: 0,
        vals_len: 0,
        checks_len: 0,
        bytes: [0; ORDER_MAX],
        checks: [0; ORDER_MAX],
        vals: [0; ORDER_MAX],
    };
}

impl Memos {
    /// The order kept for the memo at slot `k`, if its entry still holds it (entries are
    /// shared by memo slots modulo `ORDER_SLOTS`).
    #[cfg(Py_3_11)]
    #[inline(always)]
    fn order_of(&self, k: usize) -> Option<&InlineOrder> {
        self.orders.get(k % ORDER_SLOTS).filter(|io| usize::from(io.memo) == k)
    }
}

impl Memo {
    /// This memo is of the thing at `o` described by `head`, read with strings cut at
    /// `max_string`.
    #[inline(always)]
    fn is_of(&self, o: *mut ffi::PyObject, head: &Head, max_string: usize) -> bool {
        self.addr == o as usize && self.head.same_thing(head) && self.max_string == max_string
    }
}

/// What must be the same for a memo to be of this record's thing, read the same way.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    pub obj: ObjId,
    pub ty: u32,
    pub depth: u32,
    /// `Cx::obj_left` when the thing was met: which fields are references depends on it.
    pub obj_left: u32,
    pub shape: u8,
    /// An instance's dict and its version tag (0, 0 for others): the same when the memo is
    /// replayed whole (`memo_replay`), not when it is only compared field by field.
    pub dict: usize,
    pub version: u64,
}

impl Head {
    #[inline(always)]
    fn same_thing(&self, other: &Head) -> bool {
        self.obj == other.obj
            && self.ty == other.ty
            && self.depth == other.depth
            && self.obj_left == other.obj_left
            && self.shape == other.shape
    }
}

#[derive(Clone, Copy)]
pub(super) struct FieldMemo {
    /// The attribute's interned name (0 for items).
    name: u32,
    value: usize,
    v: ValRef,
    how: Replay,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Replay {
    /// `None`, a bool, a cached small int (-5 ..= 256): an object that lives as long as the
    /// interpreter, so that the same address is the same value.
    Immortal,
    /// Another int of 31 bits: re-read.
    Inline,
    /// An exact float, by its bits.
    Float(u64),
    /// An exact int of 64 bits.
    Int(i64),
    /// Another immutable value (str, bytes, complex, an int past 64 bits): reused only from an
    /// unchanged dict.
    Held,
    /// A reference to an instance of type `tp` (version tag `key`) with identity `obj` at the
    /// depth limit.
    Cut { tp: usize, key: u32, obj: ObjId },
    /// Encoded again.
    Again,
}

impl Replay {
    /// A later record can reuse it without encoding it (a float, an int past 31 bits, a
    /// reference at the depth limit).
    #[inline(always)]
    fn reusable(self) -> bool {
        matches!(self, Replay::Float(_) | Replay::Int(_) | Replay::Cut { .. })
    }

    /// Its value is inline in the entry: it takes nothing from the item budget.
    #[inline(always)]
    fn inline(self) -> bool {
        matches!(self, Replay::Immortal | Replay::Inline)
    }

    /// How an inline value `p` (one `inline_value` encodes) replays.
    ///
    /// # Safety
    /// GIL held; `p` live.
    #[inline(always)]
    unsafe fn of_inline(p: *mut ffi::PyObject) -> Replay {
        // SAFETY: this fn's contract.
        if unsafe { super::fingerprint::immortal(p) } {
            Replay::Immortal
        } else {
            Replay::Inline
        }
    }
}

/// The memo of one thing being read: its slot, the last record's fields (empty when that was
/// of another thing), overwritten as the fields are read.
pub(super) struct Open {
    k: usize,
    fields: Vec<FieldMemo>,
    n: usize,
    /// Every field read so far encoded as in the last record.
    same: bool,
    prev_node: ValRef,
    prev_len: u64,
    prev_count: usize,
    /// Fields read so far that a later record could reuse without encoding them (a float, an
    /// int past 31 bits, a reference at the depth limit).
    reusable: u32,
}

/// Where `memo_inline_whole` stopped, for the reading of the attributes to go on from: slot `i` of
/// the order, the memo's first `n` fields this record's, the last of them changed (`Whole::Prefix`).
#[cfg(Py_3_11)]
pub(super) type Resume = (usize, usize, Option<(ValRef, Replay)>);

/// What `memo_inline_whole` found.
#[cfg(Py_3_11)]
pub(super) enum Whole {
    /// No memo of this record's thing, read whole, with its node the last at its address.
    No,
    /// The record is the memo's last one: its node; as `Prefix` with every field.
    Same { node: ValRef },
    /// The memo's first `n` fields are this record's, the last of them `changed` to another
    /// node (with how it replays now); the next attribute is at slot `i` of the order.
    Prefix { i: usize, n: usize, changed: Option<(ValRef, Replay)> },
    /// An encoding took the memo's slot: what was read is not known.
    Lost,
}

impl Open {
    /// The memo held a record of this thing when it was opened (not a first record at its
    /// slot).
    #[cfg_attr(not(Py_3_11), expect(dead_code, reason = "inline values are 3.11 to 3.13"))]
    pub(super) fn recorded_before(&self) -> bool {
        self.prev_count > 0
    }

    /// The last record read a field past those read so far.
    #[cfg_attr(not(Py_3_11), expect(dead_code, reason = "inline values are 3.11 to 3.13"))]
    #[inline(always)]
    pub(super) fn has_next(&self) -> bool {
        self.n < self.fields.len()
    }
}

/// A list's or tuple's records taken without its memo after one in which no item could be
/// reused (items that are inline values or containers or instances encoded again: the memo
/// only adds its compares to what `seq_encode` does anyway).
const SKIP_WITHOUT_REUSABLE: u8 = 15;

/// The memos, direct-mapped by address.
#[derive(Default)]
pub(super) struct Memos {
    slots: Vec<Memo>,
    /// Per slot, the inline values' order and values its memo's `order_keys` names (made on
    /// first use: 3.11 to 3.13 only).
    orders: Vec<InlineOrder>,
}

impl Memos {
    fn slot(addr: usize) -> usize {
        ((addr >> 4) ^ (addr >> 16)) & (SLOTS - 1)
    }

    pub(super) fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Memo>()
            + self.orders.capacity() * std::mem::size_of::<InlineOrder>()
            + self.slots.iter().map(|m| m.fields.capacity() * std::mem::size_of::<FieldMemo>()).sum::<usize>()
    }

    fn ensure(&mut self) {
        if self.slots.is_empty() {
            self.slots = (0..SLOTS)
                .map(|_| Memo {
                    addr: 0,
                    head: Head { obj: 0, ty: 0, depth: 0, obj_left: 0, shape: 0, dict: 0, version: 0 },
                    max_string: 0,
                    len: 0,
                    complete: false,
                    node: ValRef::ABSENT,
                    skip: 0,
                    fields: Vec::new(),
                    order_keys: 0,
                })
                .collect();
        }
    }
}

/// The version tag of dict `d`.
///
/// # Safety
/// `d` a live dict.
#[inline(always)]
pub(super) unsafe fn dict_version(d: *mut ffi::PyObject) -> u64 {
    /// The head of a `PyDictObject` (3.9-3.13): the version tag after the size.
    #[repr(C)]
    struct DictHead {
        ob_base: ffi::PyObject,
        ma_used: ffi::Py_ssize_t,
        ma_version_tag: u64,
    }
    // SAFETY: this fn's contract: `d` is a live dict, laid out as above on 3.9-3.13.
    unsafe { (*d.cast::<DictHead>()).ma_version_tag }
}

impl Cx<'_> {
    /// Whether the record of the sequence at `o` described by `head` reads its items through
    /// its memo (`memo_begin` .. `memo_end`). Not when the sequence is met for the first time
    /// at its slot (its slot is taken, so that a second record makes the memo: a list made,
    /// recorded once and dropped costs one write), nor while the memo says to skip records
    /// (`SKIP_WITHOUT_REUSABLE`). A record taken without the memo leaves it not `complete`:
    /// the next record through the memo reuses fields proven by their own checks, but never
    /// takes the memo's `node` (set by `memo_node` after any record) for its value.
    pub(super) fn memo_wanted(&mut self, o: *mut ffi::PyObject, head: &Head) -> bool {
        self.cache.memos.ensure();
        let max_string = self.budget.max_string;
        let m = &mut self.cache.memos.slots[Memos::slot(o as usize)];
        if !m.is_of(o, head, max_string) {
            m.addr = o as usize;
            m.head = *head;
            m.max_string = max_string;
            m.len = 0;
            m.complete = false;
            m.node = ValRef::ABSENT;
            m.skip = 0;
            m.fields.clear();
            m.order_keys = 0;
            return false;
        }
        if m.skip > 0 {
            m.skip -= 1;
            // The next record through the memo compares its fields with the last one that
            // read them, and never takes `node` (of that older record) for its value.
            m.complete = false;
            m.node = ValRef::ABSENT;
            return false;
        }
        true
    }

    /// Opens the memo of the thing at `o` described by `head`.
    pub(super) fn memo_begin(&mut self, o: *mut ffi::PyObject, head: &Head) -> Open {
        self.cache.memos.ensure();
        let k = Memos::slot(o as usize);
        let max_string = self.budget.max_string;
        let m = &mut self.cache.memos.slots[k];
        let valid = m.is_of(o, head, max_string);
        m.order_keys = 0;
        let mut fields = std::mem::take(&mut m.fields);
        if !valid {
            fields.clear();
        }
        Open {
            k,
            n: 0,
            same: valid && m.complete,
            prev_node: m.node,
            prev_len: m.len,
            prev_count: fields.len(),
            fields,
            reusable: 0,
        }
    }

    /// Field `p` (named `name`, 0 for an item) encoded at `depth`, its last record reused when
    /// it provably encodes the same.
    ///
    /// # Safety
    /// GIL held; `p` a valid borrowed reference.
    #[inline(always)]
    pub(super) unsafe fn memo_field(
        &mut self,
        open: &mut Open,
        p: *mut ffi::PyObject,
        name: u32,
        depth: u32,
    ) -> ValRef {
        // SAFETY: this fn's contract.
        unsafe {
            let n = open.n;
            open.n = n + 1;
            // The same object as the last record's field here: its own check, and the memo
            // stays as it is (nothing written back but an inline value's ref).
            let mut was = None;
            if let Some(f) = open.fields.get_mut(n) {
                if f.value == p as usize && f.name == name {
                    if let Some(v) = self.reuse(p, f, false) {
                        open.same &= v == f.v;
                        f.v = v;
                        open.reusable += u32::from(f.how.reusable());
                        return v;
                    }
                    was = Some(f.v);
                }
            }
            let (v, how) = match inline_value(p) {
                // What `enc` would do, without the memo's dispatch.
                Some(v) => (v, Replay::of_inline(p)),
                None => self.memo_enc(p, depth, None, false),
            };
            // A field encoded again (a container, a str) to the node it had is the same too.
            open.same &= was == Some(v);
            open.reusable += u32::from(how.reusable());
            let f = FieldMemo { name, value: p as usize, v, how };
            match open.fields.get_mut(n) {
                Some(slot) => *slot = f,
                None => open.fields.push(f),
            }
            v
        }
    }

    /// The items of a list or tuple from `open.n` on (`items`, `n` of them read) that are the
    /// memo's objects and replay without encoding (`replays`), pushed onto the stack by a loop
    /// that keeps its state in registers: an unchanged list of references costs a few compares
    /// per item. Stops at the first item that does not (`memo_field` reads it) or when the item
    /// budget is out; returns the index it stopped at.
    ///
    /// # Safety
    /// GIL held; `items` the live sequence's `n` item pointers.
    #[inline(never)]
    pub(super) unsafe fn memo_items_prefix(
        &mut self,
        open: &mut Open,
        items: *mut *mut ffi::PyObject,
        n: usize,
    ) -> usize {
        // SAFETY: this fn's contract: each item is live, read by the layout its type gives.
        unsafe {
            let cache = &mut *self.cache;
            let (stack, last, store) = (&mut cache.stack, &cache.last, &*self.store);
            let fields = &open.fields;
            let end = n.min(fields.len());
            let (mut i, mut left, mut dep, mut reusable) = (open.n, *self.left, self.has_dep, 0);
            while i < end && left > 0 {
                let p = *items.add(i);
                let f = &fields[i];
                if f.value != p as usize || f.name != 0 || !replays(p, f, store, last, &mut dep) {
                    break;
                }
                if !f.how.inline() {
                    left -= 1;
                }
                reusable += u32::from(f.how.reusable());
                stack.push(f.v);
                i += 1;
            }
            *self.left = left;
            self.has_dep = dep;
            open.reusable += reusable;
            open.n = i;
            i
        }
    }

    /// `memo_items_prefix` for the attributes of an instance in inline values (3.11-3.13):
    /// from slot `from` of their order (`values`, `keys` as `inline_values` gave them, `ks` their
    /// `KeyNames` slot), the attributes that are the memo's objects under the memo's names and
    /// replay without encoding, pushed onto `attrs` (`base` where the instance's start). Returns
    /// the order slot it stopped at.
    ///
    /// # Safety
    /// GIL held; `values` and `keys` what `inline_values` gave for the live instance.
    #[cfg(Py_3_11)]
    #[inline(never)]
    pub(super) unsafe fn memo_inline_prefix(
        &mut self,
        open: &mut Open,
        values: *mut *mut ffi::PyObject,
        keys: *const super::DictKeys,
        ks: usize,
        base: usize,
        from: usize,
    ) -> usize {
        // SAFETY: this fn's contract; `inline_attr` reads the order and the entries within
        // their counts.
        unsafe {
            let max_length = self.budget.max_length;
            let cache = &mut *self.cache;
            let (attrs, last, store) = (&mut cache.attrs, &cache.last, &*self.store);
            let names = &cache.key_names.slots[ks].1;
            let fields = &open.fields;
            let (mut i, mut n, mut left, mut dep, mut reusable) = (from, open.n, *self.left, self.has_dep, 0);
            while attrs.len() - base < max_length && left > 0 {
                let Some(slot) = super::inline_attr(values, keys, i) else { break };
                let Some((ix, k, v)) = slot else {
                    i += 1;
                    continue;
                };
                let Some(f) = fields.get(n) else { break };
                // The name `key_name` gives, read from its cache without writing it.
                let hash = (*k.cast::<ffi::PyASCIIObject>()).hash;
                let named =
                    names.get(ix).is_some_and(|&(a, h, id)| a == k as usize && h == hash && hash != -1 && id == f.name);
                if f.value != v as usize || !named || !replays(v, f, store, last, &mut dep) {
                    break;
                }
                if !f.how.inline() {
                    left -= 1;
                }
                reusable += u32::from(f.how.reusable());
                attrs.push((f.name, f.v));
                i += 1;
                n += 1;
            }
            *self.left = left;
            self.has_dep = dep;
            open.reusable += reusable;
            open.n = n;
            i
        }
    }

    /// The first pass over the attributes of the plain instance `o` whose attributes are in
    /// inline values (3.11-3.13; `values` and `keys` as `inline_values` gave them), described
    /// by `head` (`o` entered: `descend`), against the memo's last record when it is of `o`,
    /// read whole, and its node is still the last made at `o`: attribute by attribute in
    /// order, each the memo's object under the memo's name that replays by its own check
    /// (`replays`) or, one the memo encodes again (a container), encodes (at `depth`) to the
    /// node it had. Writes nothing but what those encodings write: no field pushed, the memo
    /// as it was. Takes from the item budget what those fields take and sets `has_dep` for
    /// their references, as reading them through the memo would.
    ///
    /// # Safety
    /// GIL held; `values` and `keys` what `inline_values` gave for the live instance `o`.
    #[cfg(Py_3_11)]
    #[inline(never)]
    pub(super) unsafe fn memo_inline_whole(
        &mut self,
        o: *mut ffi::PyObject,
        head: &Head,
        values: *mut *mut ffi::PyObject,
        keys: *const super::DictKeys,
        depth: u32,
    ) -> Whole {
        // SAFETY: this fn's contract; `inline_attr` reads the order and the entries within
        // their counts. An encoding runs no Python code (no encoder is registered: the caller's
        // condition), so `values` and `keys` stay the instance's.
        unsafe {
            let k = Memos::slot(o as usize);
            let ks = super::KeyNames::slot(keys as usize);
            let max_string = self.budget.max_string;
            let max_length = self.budget.max_length;
            let (mut i, mut n) = (0, 0);
            // A field was encoded since the memo was last found in its slot.
            let mut encoded = false;
            {
                let cache = &*self.cache;
                let Some(m) = cache.memos.slots.get(k) else { return Whole::No };
                if !m.is_of(o, head, max_string)
                    || !m.complete
                    || m.node == ValRef::ABSENT
                    || cache.last.get(o as usize) != Some(m.node)
                {
                    return Whole::No;
                }
            }
            if let Some(whole) = self.memo_inline_same(o, head, values, keys, depth, k) {
                return whole;
            }
            loop {
                // A run of attributes that replay by their own checks, read with the caches
                // borrowed; it stops at the end, at a difference, or at one encoded again.
                let again = {
                    let cache = &*self.cache;
                    let m = &cache.memos.slots[k];
                    // An encoding may have taken the memo's or the names' slot.
                    if encoded && !m.is_of(o, head, max_string) {
                        return Whole::Lost;
                    }
                    // The memo's order is this record's: attribute `n` is at the index the
                    // order names `n`-th, under field `n`'s name (`InlineOrder`).
                    let order = (i == n && m.order_keys == keys as usize)
                        .then(|| cache.memos.order_of(k))
                        .flatten()
                        .filter(|io| same_order(values, io))
                        .map(|io| &io.bytes[..usize::from(io.len)]);
                    let names = match cache.key_names.slots.get(ks).filter(|(at, _)| *at == keys as usize) {
                        Some((_, names)) => names.as_slice(),
                        None if order.is_some() => &[],
                        None => return Whole::Prefix { i, n, changed: None },
                    };
                    let (last, store) = (&cache.last, &*self.store);
                    let (mut left, mut dep) = (*self.left, self.has_dep);
                    let again = loop {
                        // The reading loop's own stops (`Cx::object`): the record would not be
                        // complete.
                        if n >= max_length || left == 0 {
                            break Err(());
                        }
                        let (f, v) = if let Some(order) = order {
                            let Some(ix) = super::order_nth(order, n) else {
                                break Ok(None);
                            };
                            let Some(f) = m.fields.get(n) else { break Err(()) };
                            let v = *values.add(usize::from(ix));
                            if f.value != v as usize {
                                break Err(());
                            }
                            (f, v)
                        } else {
                            let Some(slot) = super::inline_attr(values, keys, i) else {
                                break Ok(None);
                            };
                            let Some((ix, key, v)) = slot else {
                                i += 1;
                                continue;
                            };
                            let Some(f) = m.fields.get(n) else { break Err(()) };
                            let hash = (*key.cast::<ffi::PyASCIIObject>()).hash;
                            let named = names.get(ix).is_some_and(|&(a, h, id)| {
                                a == key as usize && h == hash && hash != -1 && id == f.name
                            });
                            if f.value != v as usize || !named {
                                break Err(());
                            }
                            (f, v)
                        };
                        if matches!(f.how, Replay::Again) {
                            i += 1;
                            n += 1;
                            break Ok(Some((v, f.v)));
                        }
                        if !replays(v, f, store, last, &mut dep) {
                            break Err(());
                        }
                        if !f.how.inline() {
                            left -= 1;
                        }
                        i += 1;
                        n += 1;
                    };
                    *self.left = left;
                    self.has_dep = dep;
                    again
                };
                match again {
                    Err(()) => return Whole::Prefix { i, n, changed: None },
                    Ok(None) => break,
                    Ok(Some((v, was))) => {
                        encoded = true;
                        if let Some(whole) = self.memo_inline_again(o, head, k, v, was, depth, (i, n)) {
                            return whole;
                        }
                    }
                }
            }
            let m = &self.cache.memos.slots[k];
            if encoded && !m.is_of(o, head, max_string) {
                return Whole::Lost;
            }
            if n != m.fields.len() {
                return Whole::Prefix { i, n, changed: None };
            }
            let node = m.node;
            // Recorded the same twice in a row: the next records are likely the same again,
            // compared by the memo's order and values (`memo_inline_same`).
            if m.order_keys == 0 {
                self.memo_inline_order(o, head, values, keys);
            }
            Whole::Same { node }
        }
    }

    /// `memo_inline_whole` when the memo's order and values are the record's (`InlineOrder`):
    /// every attribute is the memo's object under the memo's name, so only the fields that are
    /// not immortal are checked, each by its own replay (a container encoded again and compared
    /// with the node it had), with the same outcome and the same budget taken as the reading
    /// attribute by attribute. `None` when the memo's order or values are not the record's (or
    /// the budget is at an end before the first attribute): nothing was done.
    ///
    /// # Safety
    /// As `memo_inline_whole`, with `k` the memo's slot, found of `o`, complete, its node the
    /// last at `o`.
    #[cfg(Py_3_11)]
    #[inline(always)]
    unsafe fn memo_inline_same(
        &mut self,
        o: *mut ffi::PyObject,
        head: &Head,
        values: *mut *mut ffi::PyObject,
        keys: *const super::DictKeys,
        depth: u32,
        k: usize,
    ) -> Option<Whole> {
        // SAFETY: this fn's contract; the values are read as far as the memo read them then (a
        // live instance's inline values hold as many slots as its keys have entries, and the
        // keys are the same); the fields' objects are the values now, so alive.
        unsafe {
            let max_string = self.budget.max_string;
            let len = {
                let m = &self.cache.memos.slots[k];
                if m.order_keys != keys as usize || *self.left == 0 || m.fields.len() >= self.budget.max_length {
                    return None;
                }
                let io = self.cache.memos.order_of(k)?;
                let vals = &io.vals[..usize::from(io.vals_len)];
                if !same_order(values, io) || std::slice::from_raw_parts(values.cast::<usize>(), vals.len()) != vals {
                    return None;
                }
                m.fields.len()
            };
            let mut c = 0;
            let mut encoded = false;
            loop {
                let again = {
                    let cache = &*self.cache;
                    let m = &cache.memos.slots[k];
                    // An encoding may have taken the memo's slot.
                    if encoded && (!m.is_of(o, head, max_string) || m.order_keys != keys as usize) {
                        return Some(Whole::Lost);
                    }
                    let Some(io) = cache.memos.order_of(k) else { return Some(Whole::Lost) };
                    let (last, store) = (&cache.last, &*self.store);
                    let (mut left, mut dep) = (*self.left, self.has_dep);
                    let again = loop {
                        let Some(&n) = io.checks[..usize::from(io.checks_len)].get(c) else { break Ok(None) };
                        let n = usize::from(n);
                        let Some(f) = m.fields.get(n) else { break Err(n) };
                        c += 1;
                        if matches!(f.how, Replay::Again) {
                            break Ok(Some((n, f.value, f.v)));
                        }
                        let p = f.value as *mut ffi::PyObject;
                        if !replays(p, f, store, last, &mut dep) {
                            break Err(n);
                        }
                        if !f.how.inline() {
                            left -= 1;
                            // The reading stops before the next attribute: not complete.
                            if left == 0 && n + 1 < len {
                                break Err(n + 1);
                            }
                        }
                    };
                    *self.left = left;
                    self.has_dep = dep;
                    again
                };
                match again {
                    Err(n) => return Some(Whole::Prefix { i: n, n, changed: None }),
                    Ok(None) => break,
                    Ok(Some((n, p, was))) => {
                        encoded = true;
                        let p = p as *mut ffi::PyObject;
                        if let Some(whole) = self.memo_inline_again(o, head, k, p, was, depth, (n + 1, n + 1)) {
                            return Some(whole);
                        }
                        if *self.left == 0 && n + 1 < len {
                            return Some(Whole::Prefix { i: n + 1, n: n + 1, changed: None });
                        }
                    }
                }
            }
            let m = &self.cache.memos.slots[k];
            if encoded && !m.is_of(o, head, max_string) {
                return Some(Whole::Lost);
            }
            Some(Whole::Same { node: m.node })
        }
    }

    /// A field of the memo at slot `k` (of instance `o`, `head`) that is encoded again (a
    /// container): `p` encoded at `depth` and compared with `was`, the node it had. `None` when
    /// it is the same; else what `memo_inline_whole` answers: the memo's first `n` fields are
    /// the record's, the last of them changed to the node now, the next attribute at slot `i`
    /// of the order (or `Lost` when the encoding took the memo's slot).
    ///
    /// # Safety
    /// GIL held; `p` the live object of the memo's field `n - 1`.
    #[cfg(Py_3_11)]
    #[inline(never)]
    #[expect(
        clippy::too_many_arguments,
        reason = "the memo's slot and what it was found of, the field, and where the reading stands"
    )]
    unsafe fn memo_inline_again(
        &mut self,
        o: *mut ffi::PyObject,
        head: &Head,
        k: usize,
        p: *mut ffi::PyObject,
        was: ValRef,
        depth: u32,
        (i, n): (usize, usize),
    ) -> Option<Whole> {
        // SAFETY: this fn's contract.
        unsafe {
            self.last_known = None;
            let now = self.enc(p, depth);
            if now == was {
                return None;
            }
            let how = self.replay_kind(p);
            if !self.cache.memos.slots[k].is_of(o, head, self.budget.max_string) {
                return Some(Whole::Lost);
            }
            Some(Whole::Prefix { i, n, changed: Some((now, how)) })
        }
    }

    /// After `memo_inline_whole` gave `Prefix { n, changed, .. }`, with `open` the memo just
    /// opened: the memo's first `n` fields pushed onto `attrs` as this record's (the last one
    /// `changed` to the node it encoded to now), and `open` past them.
    #[cfg(Py_3_11)]
    pub(super) fn memo_take_prefix(&mut self, open: &mut Open, n: usize, changed: Option<(ValRef, Replay)>) {
        let fields = &mut open.fields[..n];
        if let (Some((v, how)), Some(f)) = (changed, fields.last_mut()) {
            f.v = v;
            f.how = how;
            open.same = false;
        }
        self.cache.attrs.extend(fields.iter().map(|f| (f.name, f.v)));
        open.n = n;
    }

    /// Keeps the insertion order and the values of the inline values (`values`, `keys` as
    /// `inline_values` gave them) of the instance `o`, just found the same as its memo's
    /// record (`head`), when the memo's fields are its attributes one for one (`InlineOrder`).
    ///
    /// # Safety
    /// GIL held; `values` and `keys` what `inline_values` gave for the live instance `o`.
    #[cfg(Py_3_11)]
    pub(super) unsafe fn memo_inline_order(
        &mut self,
        o: *mut ffi::PyObject,
        head: &Head,
        values: *mut *mut ffi::PyObject,
        keys: *const super::DictKeys,
    ) {
        // SAFETY: this fn's contract: the order's count and index bytes lie where
        // `inline_order` reads them, and an index is checked against the keys' count before its value
        // is read.
        unsafe {
            let max_string = self.budget.max_string;
            let k = Memos::slot(o as usize);
            let memos = &mut self.cache.memos;
            let Some(m) = memos.slots.get_mut(k) else { return };
            m.order_keys = 0;
            let bytes = super::inline_order(values);
            let len = bytes.len();
            if !m.is_of(o, head, max_string) || !m.complete || len > ORDER_MAX || m.fields.len() != len {
                return;
            }
            if memos.orders.is_empty() {
                memos.orders = vec![InlineOrder::EMPTY; ORDER_SLOTS];
            }
            let io = &mut memos.orders[k % ORDER_SLOTS];
            // The entry is another memo's no longer, whatever is kept below.
            io.memo = u16::MAX;
            let nentries = ((*keys).dk_nentries.max(0) as usize).min(ORDER_MAX);
            let (mut end, mut checks) = (0, 0);
            for (n, f) in m.fields.iter().enumerate() {
                let Some(ix) = super::order_nth(bytes, n).map(usize::from) else { return };
                if ix >= nentries || *values.add(ix) as usize != f.value || f.value == 0 {
                    return;
                }
                end = end.max(ix + 1);
                if !matches!(f.how, Replay::Immortal) {
                    io.checks[checks] = n as u8;
                    checks += 1;
                }
            }
            io.len = len as u8;
            io.bytes[..len].copy_from_slice(bytes);
            io.vals_len = end as u8;
            io.vals[..end].copy_from_slice(std::slice::from_raw_parts(values.cast::<usize>(), end));
            io.checks_len = checks as u8;
            io.memo = k as u16;
            m.order_keys = keys as usize;
        }
    }

    /// Closes the memo of the thing at `o`: `Some(node)` when this record is the last one
    /// (every field the same, as many, as long) and its node is still the last at `o`.
    pub(super) fn memo_end(
        &mut self,
        o: *mut ffi::PyObject,
        head: Head,
        mut open: Open,
        complete: bool,
        len: u64,
    ) -> Option<ValRef> {
        open.fields.truncate(open.n);
        let same = open.same
            && complete
            && open.n == open.prev_count
            && len == open.prev_len
            && open.prev_node != ValRef::ABSENT
            && self.cache.last.get(o as usize) == Some(open.prev_node);
        let node = if same { open.prev_node } else { ValRef::ABSENT };
        let skip = if head.shape >= SHAPE_SEQ && open.reusable == 0 { SKIP_WITHOUT_REUSABLE } else { 0 };
        self.cache.memos.slots[open.k] = Memo {
            addr: o as usize,
            head,
            max_string: self.budget.max_string,
            len,
            complete,
            node,
            skip,
            fields: open.fields,
            order_keys: 0,
        };
        same.then_some(node)
    }

    /// A record of the thing at `addr` made without its memo (as one `memo_wanted` skips): the
    /// memo's fields are not that record's, so a later record compares its own with them but
    /// never takes the memo's node for its value.
    pub(super) fn memo_forget(&mut self, addr: usize) {
        if let Some(m) = self.cache.memos.slots.get_mut(Memos::slot(addr)) {
            if m.addr == addr {
                m.complete = false;
                m.node = ValRef::ABSENT;
            }
        }
    }

    /// The node made (or reused) for the thing at `addr` by the record that made its memo.
    #[inline]
    pub(super) fn memo_node(&mut self, addr: usize, r: ValRef) {
        if let Some(m) = self.cache.memos.slots.get_mut(Memos::slot(addr)) {
            if m.addr == addr {
                m.node = r;
            }
        }
    }

    /// Instance `o`'s attributes pushed as its last record read them, when its dict is the same
    /// dict at the same version (`head.dict`, `head.version`) and that record read it whole:
    /// `Some(Some(node))` when every field encoded as then (the value is `node`), `Some(None)`
    /// when some did not. `None`: no such record, nothing pushed.
    ///
    /// # Safety
    /// GIL held; `o` live with the dict `head` names.
    pub(super) unsafe fn memo_replay(
        &mut self,
        o: *mut ffi::PyObject,
        head: Head,
        base: usize,
        depth: u32,
    ) -> Option<Option<ValRef>> {
        // SAFETY: this fn's contract. The memo's objects are the unchanged dict's values: alive.
        unsafe {
            let m = self.cache.memos.slots.get(Memos::slot(o as usize))?;
            if m.addr != o as usize
                || m.head != head
                || m.max_string != self.budget.max_string
                || !m.complete
                || m.node == ValRef::ABSENT
            {
                return None;
            }
            if let Some(node) = self.memo_dict_same(o, &head, depth) {
                return Some(Some(node));
            }
            let mut open = self.memo_begin(o, &head);
            let mut complete = true;
            while open.n < open.fields.len() {
                // The reading loop's own stop: the same fields in the same order.
                if self.cache.attrs.len() - base >= self.budget.max_length || *self.left == 0 {
                    complete = false;
                    break;
                }
                let f = open.fields[open.n];
                let (v, how) = self.memo_enc(f.value as *mut ffi::PyObject, depth, Some(f), true);
                open.same &= v == f.v;
                open.fields[open.n] = FieldMemo { v, how, ..f };
                open.n += 1;
                self.cache.attrs.push((f.name, v));
            }
            if !complete {
                // The fields not reached are no part of this record.
                open.fields.truncate(open.n);
            }
            Some(self.memo_end(o, head, open, complete, 0))
        }
    }

    /// `memo_replay` when every field encodes as then, without opening the memo or pushing the
    /// fields: the dict is the same at the same version, so each field is the memo's object,
    /// alive; a scalar encodes as then, a reference at the depth limit while its type is at
    /// the same version (`reuse` with the dict held), and only a container (`Replay::Again`) is
    /// encoded again and compared with the node it had. All the same, and the memo's node still
    /// the last at `o`, that node is the value and the memo stays as it is (`memo_end` would
    /// write it back unchanged). `None` when a field differs, the reading loop would stop early,
    /// or an encoding took the memo's slot: the item budget and `has_dep` are as before, for
    /// the reading field by field. go's squares (a dict each on 3.11, two lists among eleven
    /// fields) paid the memo's copy out and back and a push per field at every record.
    ///
    /// # Safety
    /// As `memo_replay`, with the memo found of `o` and `head`, complete, its node not `ABSENT`.
    unsafe fn memo_dict_same(&mut self, o: *mut ffi::PyObject, head: &Head, depth: u32) -> Option<ValRef> {
        // SAFETY: this fn's contract: the fields' objects are the unchanged dict's values, alive.
        unsafe {
            let k = Memos::slot(o as usize);
            let max_string = self.budget.max_string;
            let max_length = self.budget.max_length;
            let (left_before, dep_before) = (*self.left, self.has_dep);
            let mut i = 0;
            // An encoding (of a container field) may have taken the memo's slot.
            let mut encoded = false;
            let node = loop {
                let m = &self.cache.memos.slots[k];
                if encoded && (m.addr != o as usize || m.head != *head || m.max_string != max_string) {
                    break None;
                }
                let Some(&f) = m.fields.get(i) else { break Some(m.node) };
                // The reading loop's own stop (`memo_replay`): that record would not be complete.
                if i >= max_length || *self.left == 0 {
                    break None;
                }
                i += 1;
                // `reuse` with the dict held, written out: it re-reads an inline value and
                // tests `held` per field (go's squares: +22% of this function's instructions).
                match f.how {
                    Replay::Immortal | Replay::Inline => {}
                    Replay::Float(_) | Replay::Int(_) | Replay::Held => *self.left -= 1,
                    Replay::Cut { tp, key, .. } => {
                        let t = ffi::Py_TYPE(f.value as *mut ffi::PyObject);
                        if t as usize != tp || type_key(t) != key {
                            break None;
                        }
                        self.has_dep = true;
                        *self.left -= 1;
                    }
                    Replay::Again => {
                        self.last_known = None;
                        encoded = true;
                        if self.enc(f.value as *mut ffi::PyObject, depth) != f.v {
                            break None;
                        }
                    }
                }
            };
            match node {
                Some(node) if self.cache.last.get(o as usize) == Some(node) => Some(node),
                _ => {
                    *self.left = left_before;
                    self.has_dep = dep_before;
                    None
                }
            }
        }
    }

    /// `p` encoded at `depth`, or `prev`'s value when it provably encodes the same (`held`: `p`
    /// is the object of an unchanged dict's entry that `prev` recorded); with how to replay it.
    ///
    /// # Safety
    /// GIL held; `p` a valid borrowed reference.
    #[inline(always)]
    unsafe fn memo_enc(
        &mut self,
        p: *mut ffi::PyObject,
        depth: u32,
        prev: Option<FieldMemo>,
        held: bool,
    ) -> (ValRef, Replay) {
        // SAFETY: this fn's contract.
        unsafe {
            if let Some(f) = prev {
                if let Some(v) = self.reuse(p, &f, held) {
                    return (v, f.how);
                }
            }
            self.last_known = None;
            let v = self.enc(p, depth);
            (v, self.replay_kind(p))
        }
    }

    /// `f`'s value for `p` (the object `f` recorded), if it still encodes to it; takes what
    /// encoding it would from the item budget.
    #[inline(always)]
    unsafe fn reuse(&mut self, p: *mut ffi::PyObject, f: &FieldMemo, held: bool) -> Option<ValRef> {
        // SAFETY: `p` is live (the caller's contract); it is read by the layout its type gives.
        unsafe {
            let tp = ffi::Py_TYPE(p);
            let ok = match f.how {
                Replay::Immortal => return Some(f.v),
                Replay::Inline => return inline_value(p),
                Replay::Float(bits) => {
                    held || (tp == &raw mut ffi::PyFloat_Type && ffi::PyFloat_AS_DOUBLE(p).to_bits() == bits)
                }
                Replay::Int(x) => {
                    held || (tp == &raw mut ffi::PyLong_Type && crate::recorder::ints::exact_int_value(p) == Some(x))
                }
                Replay::Held => held,
                Replay::Cut { tp: t, key, obj } => {
                    // The same object alive since: every node at its address since the memo
                    // is a state of it (or, its attributes all deleted, an empty one).
                    // The same object alive since (deaths are hooked: an identity is one
                    // object's life), so it has the state the reference was made after.
                    let same = tp as usize == t && type_key(tp) == key && (held || IDS.get().find(p) == Some(obj));
                    self.has_dep |= same;
                    same
                }
                Replay::Again => false,
            };
            if !ok {
                return None;
            }
            *self.left = self.left.saturating_sub(1);
            Some(f.v)
        }
    }

    /// How `p`, just encoded, is replayed (`last_known` tells a reference at the depth limit).
    #[inline(always)]
    unsafe fn replay_kind(&self, p: *mut ffi::PyObject) -> Replay {
        // SAFETY: `p` is live (the caller's contract): its type is read, an int's value.
        unsafe {
            let tp = ffi::Py_TYPE(p);
            if let Some((a, obj)) = self.last_known {
                if a == p as usize {
                    let key = type_key(tp);
                    return if key != 0 { Replay::Cut { tp: tp as usize, key, obj } } else { Replay::Again };
                }
            }
            if p == ffi::Py_None() || tp == &raw mut ffi::PyBool_Type {
                return Replay::Immortal;
            }
            if tp == &raw mut ffi::PyLong_Type {
                return match crate::recorder::ints::exact_int_value(p) {
                    Some(x) if ValRef::small_int(x).is_some() => Replay::of_inline(p),
                    Some(x) => Replay::Int(x),
                    None => Replay::Held,
                };
            }
            if tp == &raw mut ffi::PyFloat_Type {
                return Replay::Float(ffi::PyFloat_AS_DOUBLE(p).to_bits());
            }
            if tp == &raw mut ffi::PyUnicode_Type
                || tp == &raw mut ffi::PyBytes_Type
                || tp == &raw mut ffi::PyComplex_Type
            {
                return Replay::Held;
            }
            Replay::Again
        }
    }
}

/// Whether the insertion order before `values` (`inline_attr`) is `order`'s, byte for byte.
///
/// # Safety
/// GIL held; `values` what `inline_values` gave for a live instance.
#[cfg(Py_3_11)]
#[inline(always)]
unsafe fn same_order(values: *mut *mut ffi::PyObject, order: &InlineOrder) -> bool {
    // SAFETY: this fn's contract.
    unsafe {
        let len = usize::from(order.len);
        len > 0 && super::inline_order(values) == &order.bytes[..len]
    }
}

/// Whether `p`, the object field `f` recorded, still encodes to `f.v` by `f`'s own check (as
/// `Cx::reuse` without a held dict): an inline value re-read, a float or 64-bit int by value, a
/// reference at the depth limit by type, identity and a newest state at its address (its
/// dependencies raise `dep`, as `known_at_limit` takes them), a str by its last node's text.
///
/// # Safety
/// GIL held; `p` a valid borrowed reference.
#[inline(always)]
unsafe fn replays(p: *mut ffi::PyObject, f: &FieldMemo, store: &ValueStore, last: &LastNodes, dep: &mut bool) -> bool {
    // SAFETY: this fn's contract: `p` is live, read by the layout its type gives.
    unsafe {
        let tp = ffi::Py_TYPE(p);
        match f.how {
            Replay::Cut { tp: t, key, obj } => {
                if tp as usize != t || type_key(tp) != key || IDS.get().find(p) != Some(obj) {
                    return false;
                }
                *dep = true;
                true
            }
            Replay::Float(bits) => tp == &raw mut ffi::PyFloat_Type && ffi::PyFloat_AS_DOUBLE(p).to_bits() == bits,
            Replay::Int(x) => tp == &raw mut ffi::PyLong_Type && crate::recorder::ints::exact_int_value(p) == Some(x),
            Replay::Immortal => true,
            Replay::Inline => inline_value(p) == Some(f.v),
            // A compact ASCII str (within the budget: `f.v` is then a `Str` node) that is still
            // the last node's text at its address: `ascii_str` gives that node.
            Replay::Held => {
                tp == &raw mut ffi::PyUnicode_Type
                    && ffi::PyUnicode_IS_COMPACT_ASCII(p) != 0
                    && last.get(p as usize) == Some(f.v)
                    && matches!(store.node(f.v.0), Some(Node::Str(s)) if s.as_bytes() == std::slice::from_raw_parts(
                        ffi::PyUnicode_DATA(p).cast::<u8>(),
                        ffi::PyUnicode_GET_LENGTH(p).max(0) as usize,
                    ))
            }
            Replay::Again => false,
        }
    }
}
