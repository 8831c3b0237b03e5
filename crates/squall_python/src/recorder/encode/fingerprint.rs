//! Fingerprints: a cheap test that a container is as it was when it was last encoded.
//!
//! Encoding an unchanged container again costs a node lookup or two per item, only to end by
//! reusing the node made the time before: a function called in a loop with the same big list
//! (a matrix, a board, a table of candidates) paid it at every call (pyperformance's scimark
//! and meteor_contest: 30–40x in calls mode). A fingerprint is what that node depends on, read
//! straight from storage in one pass: per item its scalar value (floats and ints by value, ASCII
//! strs by address and hash, `None`, bools and small ints inline), per nested container its
//! type (and its name: a class can be renamed), identity and length (a dict's pairs in order),
//! per opaque C object its type and identity. When a list, tuple, set, frozenset or dict of [`MIN_ITEMS`] or more items was
//! encoded (as far as the item budget went, no instance in it shown as a reference) and its
//! fingerprint now equals the one taken then, the node made then is its value. Containers
//! holding anything else (instances, ints past 64 bits, non-ASCII strs ...) take none. A
//! container at the depth limit is what the encoder makes of it there, a reference by type,
//! identity and length: it refers to no earlier state (`Cx::has_dep`).
//!
//! A fingerprint is compared with the one taken then as the walk reads it (`Words`): a
//! changed container costs the walk up to its first difference, and nothing is stored.
//!
//! A run of a list's or tuple's items that live as long as the interpreter (`None`, bools, the
//! cached small ints -5..=256) is their addresses, compared as one slice (go's 81-square lists of
//! positions, hexiom's cells: a word compare per item instead of a walk).
//!
//! Items of a list or tuple that are the same object as the item before (`[row] * n`, the
//! nested lists of pyperformance's gc_traversal) are walked once: while the budget left is
//! more than the first one's walk took, each would read the same, and the run is one word.
//!
//! A str is recognised by its address and its 64-bit hash: a different str at the same address
//! with the same hash and length is the one case a fingerprint would take for unchanged.
//!
//! A frozenset of scalars (ints, floats, ASCII strs, `None`, bools) can never change, so its
//! fingerprint is its identity (deaths of frozensets are seen: an identity is one object's life)
//! once one walk found it whole and scalar: `Frozen` remembers per address what the walk took of
//! the item budget, and later walks take that without reading the set (meteor_contest passes
//! lists of thousands of such sets at every call).
//!
//! Identities kept: a group that holds an identity holds the object's address too, and a print
//! the sorted addresses of all it holds and the count of identities ended when each was last
//! found as it is there (`Identities::lost_count`). An identity ends only where the identity
//! map logs it (a death, or a new identity given at an address found with another type), so
//! when none of those addresses is in the log since then, an object at an address the print
//! holds is the object it was then: its identity is the one the print holds (no lookup), and an
//! exact frozenset whose `TAG_FROZEN` group is expected there is passed as a whole for its
//! address (`Words::kept_frozen`: a compare per set). The log is read only as far as its length
//! and a bound per print go; past that a compare looks every identity up.

use pyo3::ffi;
use squall_trace::{Node, ObjId, ValRef};

use super::{inline_value, obj_len, set_key, set_table, Cx, Items, TypeKind};

/// Containers with fewer items are encoded without a fingerprint (the walk would cost about
/// what the encoding does).
pub(super) const MIN_ITEMS: u64 = 16;
const SLOTS: usize = 1 << 10;

const TAG_INLINE: u64 = 1 << 40;
const TAG_FLOAT: u64 = 2 << 40;
const TAG_INT: u64 = 3 << 40;
const TAG_STR: u64 = 4 << 40;
const TAG_SEQ: u64 = 5 << 40;
const TAG_OPAQUE: u64 = 6 << 40;
/// A `TAG_OPAQUE` group: tag, type, type name, identity, address.
const OPAQUE_WORDS: usize = 5;
const TAG_MAP: u64 = 7 << 40;
const TAG_FROZEN: u64 = 8 << 40;
const TAG_CUT: u64 = 9 << 40;
/// Plus a count: that many more items, each the same object as the item before, whose walks
/// would each have read what that item's walk read.
const TAG_REPEAT: u64 = 10 << 40;
/// Plus a count: that many items of a list or tuple, each an object that lives as long as the
/// interpreter (`None`, `True`, `False`, a cached small int), whose address is its value; the
/// addresses follow, one word each. A run is as long as such items go (`immortal`).
const TAG_IMMORTALS: u64 = 11 << 40;
/// Plus a count: that many more items of a list or tuple, each an opaque C object without an
/// identity of the type of the item before (whose group, `[TAG_OPAQUE, type, name, 0, 0]`, is
/// every one of theirs): scimark's rows of `array.array`, compared by their types alone.
const TAG_OPAQUE_RUN: u64 = 12 << 40;
/// The cached small ints, -5 ..= 256: CPython makes every exact int of those values this one
/// object, never freed while the interpreter lives.
const SMALL_INT_MIN: i64 = -5;
const SMALL_INT_MAX: i64 = 256;
static SMALL_INTS: crate::gil_cell::GilCell<[usize; (SMALL_INT_MAX - SMALL_INT_MIN + 1) as usize]> =
    crate::gil_cell::GilCell::new([0; (SMALL_INT_MAX - SMALL_INT_MIN + 1) as usize]);

/// Whether `o` is `None`, `True`, `False` or a cached small int: an object that lives as long
/// as the interpreter, so that an item at its address is that value.
///
/// # Safety
/// GIL held; `o` live.
#[inline(always)]
pub(super) unsafe fn immortal(o: *mut ffi::PyObject) -> bool {
    // SAFETY: this fn's contract (GIL held, `o` live); the table holds addresses only, read once
    // from CPython's own cache (`PyLong_FromLong` of a small value returns its cached object).
    unsafe {
        if o == ffi::Py_None() || o == ffi::Py_True() || o == ffi::Py_False() {
            return true;
        }
        if ffi::Py_TYPE(o) != &raw mut ffi::PyLong_Type {
            return false;
        }
        let Some(v) = crate::recorder::ints::exact_int_value(o) else { return false };
        if !(SMALL_INT_MIN..=SMALL_INT_MAX).contains(&v) {
            return false;
        }
        let table = SMALL_INTS.get();
        if table[0] == 0 {
            for (i, slot) in table.iter_mut().enumerate() {
                let x = ffi::PyLong_FromLongLong(SMALL_INT_MIN + i as i64);
                if x.is_null() {
                    ffi::PyErr_Clear();
                    *slot = 1;
                    continue;
                }
                *slot = x as usize;
                ffi::Py_DecRef(x);
            }
        }
        table[(v - SMALL_INT_MIN) as usize] == o as usize
    }
}
/// Appends the exact int `o`'s fingerprint (as `Cx::walk`), its value read once from its
/// digits: of 31 bits inline (as `inline_value` gives it), else of 64 bits by value taking one
/// from `left`, else none (`false`). (`inline_value` then `PyLong_AsLongLongAndOverflow` read a
/// 64-bit int twice, ~110 instructions: go's set of hashes paid it per item at every record.)
///
/// # Safety
/// GIL held; `o` a live exact int.
#[inline(always)]
unsafe fn walk_int(o: *mut ffi::PyObject, words: &mut Words, left: &mut usize) -> bool {
    // SAFETY: this fn's contract.
    let v = unsafe { crate::recorder::ints::exact_int_value(o) };
    if let Some(r) = v.and_then(ValRef::small_int) {
        words.push(TAG_INLINE | u64::from(r.0));
        return true;
    }
    *left = left.saturating_sub(1);
    let Some(v) = v else { return false };
    words.extend([TAG_INT, v as u64]);
    true
}

const FROZEN_SLOTS: usize = 1 << 12;
/// A tag word's payload (`TAG_FROZEN`'s: what its walk took of the item budget).
const PAYLOAD: u64 = (1 << 40) - 1;
/// A `TAG_FROZEN` group: tag and budget taken, type, type name, identity, address.
const FROZEN_WORDS: usize = 5;

/// One container's fingerprint: taken when `node` was made for it.
struct Print {
    addr: usize,
    obj: ObjId,
    node: ValRef,
    /// What its encoding took of the value's item budget (`Budget::max_items`).
    used: usize,
    words: Vec<u64>,
    /// The addresses of the objects whose identities `words` hold, sorted.
    held: Vec<usize>,
    /// `Identities::lost_count` when every identity in `words` was last found as it is there.
    kept_at: u64,
}

/// A frozenset of scalars read whole once: its identity and what its walk took of the item
/// budget (the same at every walk that has more left than that).
#[derive(Clone, Copy, Default)]
struct Frozen {
    addr: usize,
    obj: ObjId,
    used: usize,
}

/// The last fingerprint per address, direct-mapped.
#[derive(Default)]
pub(super) struct Prints {
    slots: Vec<Print>,
    frozen: Vec<Frozen>,
    /// `walk_frozen`'s word list, kept between walks (one allocation per frozenset walked
    /// cost meteor_contest 6% of its time in malloc and free).
    scratch: Vec<u64>,
    /// The last type checked by `same_anonymous_opaque`: (address, version tag, `names_of`,
    /// name word, whether its objects are opaque without an identity).
    anonymous: (usize, u32, usize, u64, bool),
}

/// Where a walk puts its words: kept (a fingerprint taken), or compared as they come with the
/// one taken then (`differs` ends the walk at the first word that is not the same).
struct Words {
    buf: Vec<u64>,
    check: bool,
    /// Words walked so far (compare mode).
    pos: usize,
    differs: bool,
    /// Compare mode: every object whose identity `buf` holds still has it (no identity ended
    /// at its address since): an object at an address `buf` holds is the object it was then.
    kept: bool,
    /// Keep mode: the addresses of the objects whose identities `buf` holds.
    held: Vec<usize>,
}

impl Words {
    fn keep() -> Self {
        Words { buf: Vec::new(), check: false, pos: 0, differs: false, kept: false, held: Vec::new() }
    }

    fn check(expected: Vec<u64>, kept: bool) -> Self {
        Words { buf: expected, check: true, pos: 0, differs: false, kept, held: Vec::new() }
    }

    /// The address word of a group for object `o` of identity `obj` (0 without one); keep mode
    /// notes it held.
    #[inline(always)]
    fn addr_word(&mut self, o: *mut ffi::PyObject, obj: ObjId) -> u64 {
        if obj == 0 {
            return 0;
        }
        if !self.check {
            self.held.push(o as usize);
        }
        o as u64
    }

    /// Compare mode, identities kept: the identity object `o` has, when the expected words hold
    /// at this point a group with tag word `tag` whose address word (at `addr_at`; the identity
    /// at `obj_at`) is `o`'s. Every word before this one was the same, so the two walks are at
    /// the same group (a group's length follows from its tag word), which was taken of the same
    /// object, still alive with that identity.
    #[inline(always)]
    fn kept_identity(&self, tag: u64, o: *mut ffi::PyObject, obj_at: usize, addr_at: usize) -> Option<ObjId> {
        if !self.kept || self.differs {
            return None;
        }
        let g = self.buf.get(self.pos..=self.pos + addr_at)?;
        (g[0] == tag && g[addr_at] == o as u64).then(|| g[obj_at])
    }

    #[inline(always)]
    fn push(&mut self, w: u64) {
        if self.check {
            self.differs |= self.buf.get(self.pos) != Some(&w);
            self.pos += 1;
        } else {
            self.buf.push(w);
        }
    }

    #[inline(always)]
    fn extend<const N: usize>(&mut self, ws: [u64; N]) {
        if self.check {
            // Word by word: a slice compare of two or three words is a call to memcmp.
            for w in ws {
                self.differs |= self.buf.get(self.pos) != Some(&w);
                self.pos += 1;
            }
        } else {
            self.buf.extend(ws);
        }
    }

    fn len(&self) -> usize {
        if self.check {
            self.pos
        } else {
            self.buf.len()
        }
    }

    /// Word `at`, walked already (compare mode: the one taken then, the same unless `differs`).
    fn get(&self, at: usize) -> u64 {
        self.buf.get(at).copied().unwrap_or(0)
    }

    /// Compare mode, identities kept: `true` when `o` is an exact frozenset whose group the
    /// expected words hold at this point (`TAG_FROZEN`: a frozenset of scalars walked whole),
    /// and the budget left is more than that walk took: it is the same object (an exact
    /// frozenset never changes, nor its type), whose walk would read it whole again. The group
    /// is passed and its budget taken, as `walk` would. The caller checks that the walk is
    /// below the depth limit and no encoder is registered.
    ///
    /// # Safety
    /// GIL held; `o` live.
    #[inline(always)]
    unsafe fn kept_frozen(&mut self, o: *mut ffi::PyObject, left: &mut usize) -> bool {
        // SAFETY: this fn's contract: `o` is live, so its type is readable.
        if !self.kept || self.differs || unsafe { ffi::Py_TYPE(o) } != &raw mut ffi::PyFrozenSet_Type {
            return false;
        }
        let Some(g) = self.buf.get(self.pos..self.pos + FROZEN_WORDS) else { return false };
        let used = g[0] & PAYLOAD;
        if g[0] & !PAYLOAD != TAG_FROZEN || g[FROZEN_WORDS - 1] != o as u64 || *left as u64 <= used + 1 {
            return false;
        }
        *left -= used as usize + 1;
        self.pos += FROZEN_WORDS;
        true
    }

    /// Whether the group just written (keep mode) or compared (compare mode) is the one of an
    /// opaque C object of type `tp` without an identity, `[TAG_OPAQUE, tp, name, 0, 0]`: the
    /// last group of a walk is its object's own, and only such an object's walk ends with one
    /// naming its own type.
    #[inline(always)]
    fn anonymous_opaque_before(&self, tp: *mut ffi::PyTypeObject) -> bool {
        let end = if self.check { self.pos } else { self.buf.len() };
        end.checked_sub(OPAQUE_WORDS)
            .and_then(|at| self.buf.get(at..end))
            .is_some_and(|g| g[0] == TAG_OPAQUE && g[1] == tp as u64 && g[3] == 0 && g[4] == 0)
    }

    /// Compare mode: every word the same, as many.
    fn same(&self) -> bool {
        !self.differs && self.pos == self.buf.len()
    }
}

/// Compare mode: where the group expected at this point ends, when it is the one
/// `walk_container` writes for exact list `o` of `n` immortals, unchanged: [TAG_SEQ, type, name,
/// identity, length, address], then one run of its `n` immortals' addresses (none for an empty
/// list). The type is the exact list type, whose name never changes.
///
/// # Safety
/// GIL held; `o` a live exact list of `n` items.
#[inline(always)]
unsafe fn immortal_row_end(words: &Words, o: *mut ffi::PyObject, n: usize) -> Option<usize> {
    let at = words.pos;
    let end = at + 6 + if n > 0 { 1 + n } else { 0 };
    let g = words.buf.get(at..end)?;
    if g[0] != TAG_SEQ
        || g[1] != &raw mut ffi::PyList_Type as u64
        || g[3] == 0
        || g[4] != n as u64
        || g[5] != o as u64
        || (n > 0 && g[6] != TAG_IMMORTALS | n as u64)
    {
        return None;
    }
    // SAFETY: this fn's contract: the list's items are read below its size. Item by item: a
    // slice compare of a few words is a call to memcmp.
    let items = unsafe { std::slice::from_raw_parts((*o.cast::<ffi::PyListObject>()).ob_item.cast::<u64>(), n) };
    (n == 0 || g[7..].iter().zip(items).all(|(a, b)| a == b)).then_some(end)
}

/// After an item of type `tp` whose group is an opaque C object's without an identity, the items
/// from `i` of the same type while the budget lasts (each takes one, as its walk would, and
/// each walk would write that group again): `TAG_OPAQUE_RUN` with their count, written or
/// compared; `i` and `left` past them. `false`: compare mode found another count.
///
/// # Safety
/// GIL held; `p` the live list's or tuple's `n` item pointers.
#[inline(always)]
unsafe fn opaque_run(
    p: *mut *mut ffi::PyObject,
    i: &mut usize,
    n: usize,
    tp: *mut ffi::PyTypeObject,
    words: &mut Words,
    left: &mut usize,
) -> bool {
    let mut run = 0u64;
    // SAFETY: this fn's contract: items are read below `n`, each a live object.
    while *i < n && *left > 0 && unsafe { ffi::Py_TYPE(*p.add(*i)) } == tp {
        *left -= 1;
        run += 1;
        *i += 1;
    }
    if run > 0 {
        words.push(TAG_OPAQUE_RUN | run);
    }
    !words.differs
}

impl Prints {
    fn slot(addr: usize) -> usize {
        ((addr >> 4) ^ (addr >> 14)) & (SLOTS - 1)
    }

    pub(super) fn bytes(&self) -> usize {
        self.slots.iter().map(|p| (p.words.capacity() + p.held.capacity()) * 8).sum::<usize>()
            + self.slots.capacity() * std::mem::size_of::<Print>()
            + self.frozen.capacity() * std::mem::size_of::<Frozen>()
            + self.scratch.capacity() * 8
    }
}

impl Cx<'_> {
    /// The node last made for container `o` (identity `obj`), if its fingerprint is unchanged;
    /// takes from the item budget what encoding it would.
    ///
    /// # Safety
    /// GIL held; `o` a valid list, tuple, set, frozenset or dict.
    pub(super) unsafe fn unchanged(&mut self, o: *mut ffi::PyObject, obj: ObjId, depth: u32) -> Option<ValRef> {
        // SAFETY: this fn's contract: GIL held, `o` a live container of the kinds named; the slot
        // read is this cache's own.
        unsafe {
            let addr = o as usize;
            let p = self.cache.prints.slots.get(Prints::slot(addr))?;
            if p.addr != addr || p.obj != obj || *self.left < p.used || self.cache.last.get(addr) != Some(p.node) {
                return None;
            }
            let ids = crate::recorder::identity::IDS.get();
            // Checking an ended identity costs a binary search; past that many, a walk that
            // looks identities up costs less.
            let max_checks = p.held.len() as u64 / 4 + 16;
            let kept = ids.kept_since(p.kept_at, max_checks, |a| p.held.binary_search(&a).is_ok());
            let k = Prints::slot(addr);
            let mut words = Words::check(std::mem::take(&mut self.cache.prints.slots[k].words), kept);
            let mut left = *self.left;
            let same = self.walk_container(o, depth, &mut words, &mut left) && words.same();
            let p = &mut self.cache.prints.slots[k];
            p.words = words.buf;
            if !same {
                return None;
            }
            // Every identity the words hold was found as it is there (looked up, or kept).
            p.kept_at = crate::recorder::identity::IDS.get().lost_count();
            *self.left = left;
            Some(p.node)
        }
    }

    /// A list or tuple of immortals changed in place since its fingerprint was taken (`None`,
    /// bools and cached small ints only, then and now: go's lists of empty points, a board's
    /// cells): its node made from the items' addresses, each an inline value, without reading
    /// it through the memo, and its fingerprint's addresses replaced where they lie. The node
    /// is the last state again when equal, else a delta against the last full state where
    /// worth it (`Cx::seq_node`), as `seq_encode` makes it; a list grown or shrunk by C code
    /// too. `None`: not such a row (not all immortals, another shape, longer than the item
    /// budget reads, empty), nothing done.
    ///
    /// # Safety
    /// GIL held; `items` the live list's or tuple's `n` item pointers, `of` its identity, kind
    /// and length; below the depth limit.
    pub(super) unsafe fn immortals_changed(
        &mut self,
        o: *mut ffi::PyObject,
        of: super::SeqOf,
        items: *mut *mut ffi::PyObject,
        n: usize,
    ) -> Option<ValRef> {
        // SAFETY: this fn's contract: the items are read below `n`, each live; immortals and
        // inline values are read by their exact types.
        unsafe {
            let addr = o as usize;
            if n == 0 || n > self.budget.max_length || *self.left == 0 || !self.registered.is_empty() {
                return None;
            }
            let tp = ffi::Py_TYPE(o);
            let ty = self.type_name(tp);
            let k = Prints::slot(addr);
            let p = self.cache.prints.slots.get(k)?;
            if p.addr != addr || p.obj != of.obj || self.cache.last.get(addr) != Some(p.node) {
                return None;
            }
            // [TAG_SEQ, type, name, identity, length, address, TAG_IMMORTALS | n, n addresses]
            let w = &p.words;
            let was = w.get(4).map_or(0, |&len| len as usize);
            if was == 0
                || w.len() != 7 + was
                || w[0] != TAG_SEQ
                || w[1] != tp as u64
                || w[2] != u64::from(ty)
                || w[3] != of.obj
                || w[6] != TAG_IMMORTALS | was as u64
            {
                return None;
            }
            // An address that holds an immortal holds it for the interpreter's life: only the
            // items at other addresses than then, and those past its length then (a list
            // appended to: a board's history), are tested. The fingerprint is of the last state
            // at `o`: an item at another address is another value, so the state differs.
            let now = std::slice::from_raw_parts(items.cast::<u64>(), n);
            let mut changed = n != was;
            for (i, &a) in now.iter().enumerate() {
                if w.get(7 + i) != Some(&a) {
                    if !immortal(a as *mut ffi::PyObject) {
                        return None;
                    }
                    changed = true;
                }
            }
            let base = self.cache.stack.len();
            for &a in now {
                let Some(v) = inline_value(a as *mut ffi::PyObject) else {
                    self.cache.stack.truncate(base);
                    return None;
                };
                self.cache.stack.push(v);
            }
            let (node, _) = self.seq_node(addr, super::SeqOf { ty, ..of }, base, changed);
            self.cache.stack.truncate(base);
            // Read without the memo: its fields are no longer the last record's.
            self.memo_forget(addr);
            let p = &mut self.cache.prints.slots[k];
            p.words[4] = n as u64;
            p.words[6] = TAG_IMMORTALS | n as u64;
            p.words.truncate(7);
            p.words.extend_from_slice(now);
            p.node = node;
            Some(node)
        }
    }

    /// After container `o` was encoded to `node`, having `left_before` of the item budget:
    /// takes its fingerprint when the encoding was whole and the walk read what it read.
    ///
    /// # Safety
    /// As [`Cx::unchanged`].
    pub(super) unsafe fn remember(
        &mut self,
        o: *mut ffi::PyObject,
        obj: ObjId,
        depth: u32,
        node: ValRef,
        left_before: usize,
    ) {
        // SAFETY: this fn's contract: GIL held, `o` the live container just encoded; the encoder
        // runs no Python code, so the container cannot change while it is walked.
        unsafe {
            if !matches!(self.store.node(node.0), Some(Node::Seq(_) | Node::SeqDelta(_) | Node::Map(_))) {
                return;
            }
            let mut words = Words::keep();
            let mut left = left_before;
            if !self.walk_container(o, depth, &mut words, &mut left) || left != *self.left {
                return;
            }
            let used = left_before - left;
            let kept_at = crate::recorder::identity::IDS.get().lost_count();
            let mut held = words.held;
            held.sort_unstable();
            held.dedup();
            let prints = &mut self.cache.prints;
            if prints.slots.is_empty() {
                prints.slots.resize_with(SLOTS, || Print {
                    addr: 0,
                    obj: 0,
                    node: ValRef::ABSENT,
                    used: 0,
                    words: Vec::new(),
                    held: Vec::new(),
                    kept_at: 0,
                });
            }
            prints.slots[Prints::slot(o as usize)] =
                Print { addr: o as usize, obj, node, used, words: words.buf, held, kept_at };
        }
    }

    /// Appends `o`'s fingerprint, taking from `left` what `enc` takes; `false`: it has none.
    unsafe fn walk(&mut self, o: *mut ffi::PyObject, depth: u32, words: &mut Words, left: &mut usize) -> bool {
        // SAFETY: the caller's contract (GIL held, `o` live); each kind's storage is read as
        // CPython lays it out for exactly that type (checked by pointer equality), and no Python
        // code runs while it is read.
        unsafe {
            if words.differs {
                return false;
            }
            let tp = ffi::Py_TYPE(o);
            if tp == &raw mut ffi::PyLong_Type {
                return walk_int(o, words, left);
            }
            if depth > 0 && self.registered.is_empty() && words.kept_frozen(o, left) {
                return true;
            }
            if let Some(v) = inline_value(o) {
                words.push(TAG_INLINE | u64::from(v.0));
                return true;
            }
            *left = left.saturating_sub(1);
            if tp == &raw mut ffi::PyFloat_Type {
                words.extend([TAG_FLOAT, ffi::PyFloat_AS_DOUBLE(o).to_bits()]);
                return true;
            }
            if tp == &raw mut ffi::PyUnicode_Type {
                if ffi::PyUnicode_IS_COMPACT_ASCII(o) == 0 {
                    return false;
                }
                let len = ffi::PyUnicode_GET_LENGTH(o).max(0) as u64;
                let hash = (*o.cast::<ffi::PyASCIIObject>()).hash;
                if len > self.budget.max_string as u64 || hash == -1 {
                    return false;
                }
                words.extend([TAG_STR | len, o as u64, hash as u64]);
                return true;
            }
            if !self.registered.is_empty() && self.registered.iter().any(|&(t, _)| t == tp) {
                return false;
            }
            let info = self.type_info(tp);
            match info.kind {
                TypeKind::List | TypeKind::Tuple | TypeKind::Set | TypeKind::FrozenSet | TypeKind::Dict => {
                    self.walk_container(o, depth, words, left)
                }
                // What `object` shows as an opaque C object of this type, by type and identity:
                // no dict, no members (an opaque state is never one a reference points to).
                TypeKind::Object => {
                    let flags = (*tp).tp_flags;
                    let plain = depth > 0
                        && info.members == 0
                        && !info.exception
                        && (*tp).tp_dictoffset == 0
                        // Py_TPFLAGS_MANAGED_DICT (3.11+): `object` reads such a dict.
                        && flags & (1 << 4) == 0;
                    if plain {
                        let obj = match words.kept_identity(TAG_OPAQUE, o, 3, 4) {
                            Some(obj) => obj,
                            None if info.watched => crate::recorder::identity::IDS.get().of(o),
                            None => 0,
                        };
                        if obj != 0 && self.cache.path.contains(&(o as usize)) {
                            return false;
                        }
                        let addr = words.addr_word(o, obj);
                        words.extend([TAG_OPAQUE, tp as u64, u64::from(info.name), obj, addr]);
                    }
                    plain
                }
                _ => false,
            }
        }
    }

    /// Compare mode: `true` when the expected words hold at this point the group `walk` writes
    /// for an opaque C object of type `tp` without an identity (its deaths are not seen):
    /// `[TAG_OPAQUE, tp, name, 0, 0]`, the same for every object of that type, so the group
    /// is passed without `walk`'s tests. The type is known by its version tag (unique to one
    /// type while it is valid: a renamed class gets a new one, a type at a dead one's address
    /// another), so its kind and name are looked up once per type met in a row. The caller
    /// checks that the object is below the depth limit, that no encoder is registered, and
    /// takes its share of the item budget.
    ///
    /// # Safety
    /// GIL held; `tp` a live object's type.
    #[inline(always)]
    unsafe fn same_anonymous_opaque(&mut self, words: &mut Words, tp: *mut ffi::PyTypeObject) -> bool {
        if !words.check || words.differs {
            return false;
        }
        let Some(g) = words.buf.get(words.pos..words.pos + OPAQUE_WORDS) else { return false };
        if g[0] != TAG_OPAQUE || g[1] != tp as u64 || g[3] != 0 || g[4] != 0 {
            return false;
        }
        let name = g[2];
        // SAFETY: this fn's contract: `tp` is a live type, whose fields are readable.
        let (version, flags, dictoffset) = unsafe { ((*tp).tp_version_tag, (*tp).tp_flags, (*tp).tp_dictoffset) };
        if version == 0 {
            return false;
        }
        // SAFETY: as above.
        let names = unsafe { super::names_of(tp) };
        let known = self.cache.prints.anonymous;
        let (opaque, type_name) = if known.0 == tp as usize && known.1 == version && known.2 == names {
            (known.4, known.3)
        } else {
            let info = self.type_info(tp);
            // What `walk` tests for an opaque object, without its identity (not watched).
            let opaque = info.kind == TypeKind::Object
                && !info.watched
                && info.members == 0
                && !info.exception
                && dictoffset == 0
                // Py_TPFLAGS_MANAGED_DICT (3.11+).
                && flags & (1 << 4) == 0;
            self.cache.prints.anonymous = (tp as usize, version, names, u64::from(info.name), opaque);
            (opaque, u64::from(info.name))
        };
        if !opaque || name != type_name {
            return false;
        }
        words.pos += OPAQUE_WORDS;
        true
    }

    /// A dict's fingerprint, as `map_encode` reads it: pairs in order while the item budget lasts
    /// (a pair's value is taken even when its key used the last of it).
    unsafe fn walk_map(&mut self, o: *mut ffi::PyObject, depth: u32, words: &mut Words, left: &mut usize) -> bool {
        // SAFETY: the caller's contract (GIL held, `o` a live dict); the dict is read without
        // running Python code, so it cannot change meanwhile.
        unsafe {
            let obj = self.identity_in(o, words, TAG_MAP);
            if obj != 0 && self.cache.path.contains(&(o as usize)) {
                return false;
            }
            let tp = ffi::Py_TYPE(o);
            let name = self.type_info(tp).name;
            let addr = words.addr_word(o, obj);
            words.extend([TAG_MAP, tp as u64, u64::from(name), obj, ffi::PyDict_Size(o).max(0) as u64, addr]);
            let (mut pos, mut k, mut v, mut n) = (0, std::ptr::null_mut(), std::ptr::null_mut(), 0);
            while n < self.budget.max_length && *left > 0 && ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0 {
                n += 1;
                if !self.walk(k, depth - 1, words, left) || !self.walk(v, depth - 1, words, left) {
                    return false;
                }
            }
            true
        }
    }

    /// A frozenset's fingerprint: `[TAG_FROZEN, identity]` when it holds scalars only and its
    /// walk is whole (so equal fingerprints mean the same immutable set), else its items.
    unsafe fn walk_frozen(&mut self, o: *mut ffi::PyObject, depth: u32, words: &mut Words, left: &mut usize) -> bool {
        // SAFETY: the caller's contract (GIL held, `o` a live frozenset); the identity map and
        // the set's table are read without running Python code, so neither changes meanwhile.
        unsafe {
            let addr = o as usize;
            let slot = ((addr >> 4) ^ (addr >> 16)) & (FROZEN_SLOTS - 1);
            let obj = crate::recorder::identity::IDS.get().of(o);
            let tp = ffi::Py_TYPE(o);
            let name = u64::from(self.type_info(tp).name);
            if let Some(f) = self.cache.prints.frozen.get(slot) {
                // More budget left than the whole walk took: the walk would read it all again.
                if f.addr == addr && f.obj == obj && *left > f.used {
                    *left -= f.used;
                    let addr = words.addr_word(o, obj);
                    words.extend([TAG_FROZEN | f.used as u64, tp as u64, name, obj, addr]);
                    return true;
                }
            }
            // Its items are walked apart and replaced by its identity when it is whole and
            // scalar: compared as they come with a fingerprint that holds that identity, they
            // would differ (a frozenset whose `Frozen` slot another one took since).
            let Items::Set(table, slots) = set_table(o) else { return false };
            let mut own = Words::keep();
            own.buf = std::mem::take(&mut self.cache.prints.scratch);
            own.buf.clear();
            let left_before = *left;
            let size = (*o.cast::<ffi::PySetObject>()).used.max(0) as u64;
            own.extend([TAG_SEQ, tp as u64, name, 0, size, 0]);
            let (mut i, mut n, mut scalars) = (0, 0, true);
            while i < slots && n < self.budget.max_length && *left > 0 {
                if let Some(key) = set_key(table, i) {
                    n += 1;
                    let at = own.len();
                    if !self.walk(key, depth - 1, &mut own, left) {
                        self.cache.prints.scratch = own.buf;
                        return false;
                    }
                    // A scalar's group holds no identity: `own.held` gets addresses only when
                    // the set is not scalars, and its words are then these.
                    // An item's first word is its tag (a scalar's: TAG_INLINE ..= TAG_STR).
                    scalars &= (TAG_INLINE >> 40..=TAG_STR >> 40).contains(&(own.get(at) >> 40));
                }
                i += 1;
            }
            // Whole: every item read (the loop ended at the table's end with budget left).
            if scalars && *left > 0 && n as u64 == size && obj != 0 {
                let frozen = &mut self.cache.prints.frozen;
                if frozen.is_empty() {
                    frozen.resize(FROZEN_SLOTS, Frozen::default());
                }
                let used = left_before - *left;
                frozen[slot] = Frozen { addr, obj, used };
                let addr = words.addr_word(o, obj);
                words.extend([TAG_FROZEN | used as u64, tp as u64, name, obj, addr]);
            } else {
                for &w in &own.buf {
                    words.push(w);
                }
                if !words.check {
                    words.held.append(&mut own.held);
                }
            }
            self.cache.prints.scratch = own.buf;
            true
        }
    }

    /// `o`'s identity (`Cx::identity`), for a group with tag word `tag` about to be walked:
    /// the one the expected words hold for it while identities are kept (`Words::kept_identity`).
    #[inline(always)]
    unsafe fn identity_in(&mut self, o: *mut ffi::PyObject, words: &Words, tag: u64) -> ObjId {
        match words.kept_identity(tag, o, 3, 5) {
            Some(obj) => obj,
            // SAFETY: the caller's contract (GIL held, `o` live).
            None => unsafe { self.identity(o) },
        }
    }

    /// Compare mode, identities kept: whether exact list `o`, walked at `depth` with `left` of
    /// the item budget, is the group expected at this point, unchanged, every item an immortal
    /// (`None`, a bool, a cached small int: hexiom's rows of candidate digits). Its words are then
    /// passed as the walk would compare them, without it (its type, its identity kept in the
    /// words, the addresses in one compare: ~300 instructions a row less). `false`: anything
    /// else, nothing passed, for `walk_container` to compare.
    ///
    /// # Safety
    /// GIL held; `o` a live exact list.
    #[inline(always)]
    unsafe fn same_immortal_list(&self, o: *mut ffi::PyObject, depth: u32, words: &mut Words, left: usize) -> bool {
        if !words.check || !words.kept || words.differs || depth == 0 {
            return false;
        }
        // SAFETY: this fn's contract: the list's items are read below the size it stores.
        unsafe {
            let n = ffi::PyList_GET_SIZE(o).max(0) as usize;
            if n > self.budget.max_length || (n > 0 && left == 0) {
                return false;
            }
            let Some(end) = immortal_row_end(words, o, n) else { return false };
            // No cycle to look for (`cache.path`): a list of immortals holds no container, so it
            // is none of the containers being encoded, which all hold the one walked.
            words.pos = end;
            true
        }
    }

    /// Compare mode, identities kept, no encoder registered, items at depth 1 or more: from
    /// item `i` of the `n` at `p` (a list's or tuple's, walked at `depth` > 1), the run of exact
    /// lists that are each the group expected, unchanged, every item an immortal
    /// (`same_immortal_list`), passed with their repeats (`TAG_REPEAT`) as the item loop of
    /// `walk_container` would, its per-item tests and the row's own ones made once for the run
    /// (hexiom's table of candidate digits, compared whole at every subscript of it). Returns
    /// the index of the first item not passed, for that loop to walk.
    ///
    /// # Safety
    /// GIL held; `p` the live container's `n` item pointers.
    #[inline(never)]
    unsafe fn same_immortal_rows(
        &self,
        p: *mut *mut ffi::PyObject,
        mut i: usize,
        n: usize,
        words: &mut Words,
        left: &mut usize,
    ) -> usize {
        let max = self.budget.max_length;
        // SAFETY: this fn's contract: items are read below `n`, each row's below its size.
        unsafe {
            while i < n && *left > 0 && !words.differs {
                let item = *p.add(i);
                if ffi::Py_TYPE(item) != &raw mut ffi::PyList_Type {
                    break;
                }
                // The row takes one from the budget; its items (immortals) take nothing.
                let after = *left - 1;
                let m = ffi::PyList_GET_SIZE(item).max(0) as usize;
                if m > max || (m > 0 && after == 0) {
                    break;
                }
                let Some(end) = immortal_row_end(words, item, m) else { break };
                words.pos = end;
                *left = after;
                i += 1;
                // The same row again: a repeat, as `walk_container` counts it (the row took 1).
                let mut run = 0;
                while i < n && *p.add(i) == item && *left > 1 {
                    *left -= 1;
                    run += 1;
                    i += 1;
                }
                if run > 0 {
                    words.push(TAG_REPEAT | run);
                }
            }
            i
        }
    }

    /// A list's, tuple's, set's, frozenset's or dict's fingerprint (`walk` of one).
    unsafe fn walk_container(
        &mut self,
        o: *mut ffi::PyObject,
        depth: u32,
        words: &mut Words,
        left: &mut usize,
    ) -> bool {
        // SAFETY: the caller's contract (GIL held, `o` live); `type_info`'s kind says which layout
        // `o` has, and items are read below the size CPython stores, with no Python code running
        // meanwhile.
        unsafe {
            let tp = ffi::Py_TYPE(o);
            let info = self.type_info(tp);
            if depth == 0 {
                // What `seq_encode` and `map_encode` make at the depth limit: a reference by
                // type, identity (none for tuples and frozensets) and length.
                let (obj, len) = match info.kind {
                    TypeKind::List => (self.identity_in(o, words, TAG_CUT), ffi::PyList_GET_SIZE(o).max(0) as u64),
                    TypeKind::Tuple => (0, ffi::PyTuple_GET_SIZE(o).max(0) as u64),
                    TypeKind::Set => (self.identity_in(o, words, TAG_CUT), obj_len(o)),
                    TypeKind::FrozenSet => (0, obj_len(o)),
                    TypeKind::Dict => (self.identity_in(o, words, TAG_CUT), ffi::PyDict_Size(o).max(0) as u64),
                    _ => return false,
                };
                let addr = words.addr_word(o, obj);
                words.extend([TAG_CUT, tp as u64, u64::from(info.name), obj, len, addr]);
                return true;
            }
            let (obj, items) = match info.kind {
                TypeKind::List => (
                    self.identity_in(o, words, TAG_SEQ),
                    Items::Array((*o.cast::<ffi::PyListObject>()).ob_item, ffi::PyList_GET_SIZE(o) as usize),
                ),
                TypeKind::Tuple => (
                    0,
                    Items::Array(
                        (*o.cast::<ffi::PyTupleObject>()).ob_item.as_mut_ptr(),
                        ffi::PyTuple_GET_SIZE(o) as usize,
                    ),
                ),
                TypeKind::Set => (self.identity_in(o, words, TAG_SEQ), set_table(o)),
                TypeKind::FrozenSet if info.watched => return self.walk_frozen(o, depth, words, left),
                TypeKind::FrozenSet => (0, set_table(o)),
                TypeKind::Dict => return self.walk_map(o, depth, words, left),
                _ => return false,
            };
            // A cycle back to a container being encoded is shown as a reference.
            if obj != 0 && self.cache.path.contains(&(o as usize)) {
                return false;
            }
            let max = self.budget.max_length;
            match items {
                Items::Array(p, n) => {
                    let addr = words.addr_word(o, obj);
                    words.extend([TAG_SEQ, tp as u64, u64::from(info.name), obj, n as u64, addr]);
                    // Where the item budget runs out, `seq_encode` stops taking items: so does this.
                    let n = n.min(max);
                    let mut i = 0;
                    let plain = self.registered.is_empty();
                    let frozen_kept = words.kept && depth > 1 && plain;
                    // A table's rows from its first item on (`same_immortal_rows`), outside the
                    // loop: its tests per item would cost the walks of other containers.
                    if words.check
                        && words.kept
                        && depth > 1
                        && plain
                        && n > 0
                        && *left > 0
                        && ffi::Py_TYPE(*p) == &raw mut ffi::PyList_Type
                    {
                        i = self.same_immortal_rows(p, 0, n, words, left);
                    }
                    while i < n && *left > 0 {
                        let item = *p.add(i);
                        let item_tp = ffi::Py_TYPE(item);
                        // An exact list first: never an immortal, and the rows of a table
                        // (hexiom's cells: a receiver read whole at every subscript) are most of
                        // what such a walk compares.
                        if item_tp != &raw mut ffi::PyList_Type && immortal(item) {
                            // A run of items whose addresses are their values: compared with
                            // the addresses then in one slice compare (equal addresses of such
                            // objects are such items). The run then was as long as such items
                            // went: if one follows it now, the next group expected is not a run
                            // and the next item's compare fails there.
                            let mut k = 1;
                            if words.check {
                                let tag = words.buf.get(words.pos).copied().unwrap_or(0);
                                k = (tag & PAYLOAD) as usize;
                                let same = tag & !PAYLOAD == TAG_IMMORTALS
                                    && i + k <= n
                                    && words.buf.get(words.pos + 1..words.pos + 1 + k)
                                        == Some(std::slice::from_raw_parts(p.add(i).cast::<u64>(), k));
                                if !same {
                                    words.differs = true;
                                    return false;
                                }
                                words.pos += 1 + k;
                            } else {
                                while i + k < n && immortal(*p.add(i + k)) {
                                    k += 1;
                                }
                                words.buf.push(TAG_IMMORTALS | k as u64);
                                words.buf.extend_from_slice(std::slice::from_raw_parts(p.add(i).cast::<u64>(), k));
                            }
                            i += k;
                            continue;
                        }
                        let before = *left;
                        // The item may be an opaque C object without an identity: only the last
                        // two ways below walk one.
                        let mut maybe_opaque = false;
                        // `walk` of an exact list, an inline scalar or a float, without the call
                        // and its tests of other kinds; `walk`'s own first test for a frozenset
                        // not repeated next (a run is counted below), here without a call per
                        // item (a list of thousands of them: meteor_contest's).
                        let walked = if item_tp == &raw mut ffi::PyList_Type && plain {
                            *left -= 1;
                            !words.differs
                                && (self.same_immortal_list(item, depth - 1, words, *left)
                                    || self.walk_container(item, depth - 1, words, left))
                        } else if item_tp == &raw mut ffi::PyLong_Type {
                            walk_int(item, words, left) && !words.differs
                        } else if let Some(v) = inline_value(item) {
                            words.push(TAG_INLINE | u64::from(v.0));
                            !words.differs
                        } else if item_tp == &raw mut ffi::PyFloat_Type {
                            *left -= 1;
                            words.extend([TAG_FLOAT, ffi::PyFloat_AS_DOUBLE(item).to_bits()]);
                            !words.differs
                        } else if frozen_kept
                            && item_tp == &raw mut ffi::PyFrozenSet_Type
                            && (i + 1 == n || *p.add(i + 1) != item)
                            && words.kept_frozen(item, left)
                        {
                            i += 1;
                            continue;
                        } else if plain && depth > 1 && self.same_anonymous_opaque(words, item_tp) {
                            // An opaque C object whose deaths are not seen (scimark's rows of
                            // `array.array`): its group names only its type.
                            *left -= 1;
                            maybe_opaque = true;
                            true
                        } else {
                            maybe_opaque = true;
                            self.walk(item, depth - 1, words, left)
                        };
                        if !walked {
                            return false;
                        }
                        i += 1;
                        if maybe_opaque && words.anonymous_opaque_before(item_tp) {
                            if !opaque_run(p, &mut i, n, item_tp, words, left) {
                                return false;
                            }
                            continue;
                        }
                        // The walk took `used` and never ran out (the budget only falls, and
                        // `left` stays above 0): a walk of the same object with more than `used`
                        // left reads the same (nothing changes meanwhile), so a run of it
                        // (`[x] * n`, a row repeated) is one word while the budget lasts.
                        let used = before - *left;
                        let mut run = 0;
                        while i < n && *p.add(i) == item && *left > used {
                            *left -= used;
                            run += 1;
                            i += 1;
                        }
                        if run > 0 {
                            words.push(TAG_REPEAT | run);
                        }
                    }
                    true
                }
                Items::Set(table, slots) => {
                    let addr = words.addr_word(o, obj);
                    words.extend([
                        TAG_SEQ,
                        tp as u64,
                        u64::from(info.name),
                        obj,
                        (*o.cast::<ffi::PySetObject>()).used.max(0) as u64,
                        addr,
                    ]);
                    let (mut i, mut n) = (0, 0);
                    while i < slots && n < max && *left > 0 {
                        if let Some(key) = set_key(table, i) {
                            n += 1;
                            // An int (go's set of 63-bit hashes) without `walk`'s call and its
                            // tests of other kinds: ~170 instructions an item before.
                            let walked = if ffi::Py_TYPE(key) == &raw mut ffi::PyLong_Type {
                                walk_int(key, words, left) && !words.differs
                            } else {
                                self.walk(key, depth - 1, words, left)
                            };
                            if !walked {
                                return false;
                            }
                        }
                        i += 1;
                    }
                    true
                }
                Items::Iter(..) => false,
            }
        }
    }
}
