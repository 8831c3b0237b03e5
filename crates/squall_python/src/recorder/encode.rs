//! Encoding a Python object into its timeline's [`ValueStore`] at the moment it is recorded
//! (DESIGN.md, "Values": a recording holds nothing of the program).
//!
//! - `None`, bools and ints that fit in 31 bits are inline in the entry.
//! - Everything else becomes nodes: numbers, strings and bytes (cut at `max_string`, their
//!   length kept); containers by their items; other objects by their type and their own storage
//!   (instance dict, `__slots__` and C members, an exception's args); functions, classes and
//!   modules by name. Within the budget (`max_depth` levels, `max_length` items per container,
//!   `max_items` nodes per value); what it cuts is marked (a container's `len` above its item
//!   count, a `Cut` node beyond the depth).
//! - Nothing of the program runs: storage is read directly (`ob_item`, `PyDict_Next`, the
//!   base type's own iterator for sets and deques, members by offset), so no `__repr__`,
//!   `__len__`, `__iter__`, `__eq__`, `__hash__`, `__getattribute__` or property is called, and
//!   no reference is kept once the entry is written. The one exception is an encoder the user
//!   registered for a type (`values.register_snapshot`).
//! - Shared where unchanged: an address remembers the last node made for the object there (in a
//!   bounded direct-mapped cache: a collision only loses a chance to share);
//!   a new encoding equal to it (same identity, same children) reuses it. Children are encoded
//!   first, so an unchanged part of a changed container is shared too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use pyo3::ffi;
use squall_trace::{
    CutNode, MapNode, Node, ObjId, ObjectNode, OpaqueNode, SeqDeltaNode, SeqKind, SeqNode, ValRef, ValueStore,
};

use crate::recorder::identity::IDS;

mod fingerprint;
mod memo;
mod rows;

/// `f(o)` with this thread's recording suspended: how a user-registered encoder is called.
///
/// # Safety
/// GIL held; `f` and `o` live.
pub type CallUnrecorded = unsafe fn(f: *mut ffi::PyObject, o: *mut ffi::PyObject) -> *mut ffi::PyObject;

/// Set once at module init (`lib.rs`, with the engine's `call_unrecorded`): a registered
/// encoder is rare, so it is looked up here rather than carried by every encoding.
static CALL_UNRECORDED: OnceLock<CallUnrecorded> = OnceLock::new();

pub fn set_call_unrecorded(f: CallUnrecorded) {
    let _ = CALL_UNRECORDED.set(f);
}

/// `collections.deque` (set at module init; sets and deques are read through their own C
/// iterators).
static DEQUE_TYPE: AtomicUsize = AtomicUsize::new(0);

pub fn set_deque_type(tp: *mut ffi::PyTypeObject) {
    DEQUE_TYPE.store(tp as usize, Ordering::Relaxed);
}

pub fn deque_type() -> *mut ffi::PyTypeObject {
    DEQUE_TYPE.load(Ordering::Relaxed) as *mut ffi::PyTypeObject
}

pub struct Budget {
    pub max_depth: u32,
    pub max_length: usize,
    /// Nodes made for one recorded value, all levels together.
    pub max_items: usize,
    /// Characters of a string (bytes of a bytes object) kept.
    pub max_string: usize,
    /// Levels of instances (objects other than containers) whose contents are encoded afresh
    /// (the recorded value is level 1; a container counts as part of the object that holds
    /// it). Deeper, an object or container this timeline already holds a state of is a
    /// reference to it (a [`CutNode`] with its identity), shown with that earlier state,
    /// marked as earlier; one it never saw is encoded (its first state). At 0 the recorded
    /// value itself is such a reference when it is an instance this timeline already holds a
    /// state of (as a receiver always is: `encode_receiver`).
    pub object_depth: u32,
}

pub const DEFAULT_BUDGET: Budget =
    Budget { max_depth: 5, max_length: 100, max_items: 1000, max_string: 1000, object_depth: 1 };

/// A value per address, direct-mapped: bounded memory, one cache line per lookup (an unbounded
/// map of every address ever recorded cost a random memory access per recorded string: 26% of a
/// loop's recording time). A slot holds the last value inserted for any address mapping to it.
pub struct AddrMap<T> {
    slots: Box<[(usize, T)]>,
    mask: usize,
    /// What an unused slot holds (its address, 0, is never looked up).
    empty: T,
}

/// The last node made at each address.
pub type LastNodes = AddrMap<ValRef>;

const LAST_SLOTS: usize = 1 << 16;
const CUT_SLOTS: usize = 1 << 12;

impl Default for LastNodes {
    fn default() -> Self {
        LastNodes::with_slots(LAST_SLOTS, ValRef::ABSENT)
    }
}

impl<T: Copy> AddrMap<T> {
    /// `n` slots (a power of two), allocated at the first insert.
    fn with_slots(n: usize, empty: T) -> Self {
        debug_assert!(n.is_power_of_two());
        AddrMap { slots: Box::default(), mask: n - 1, empty }
    }

    #[inline(always)]
    fn slot(&self, addr: usize) -> usize {
        ((addr >> 4) ^ (addr >> 18)) & self.mask
    }

    #[inline(always)]
    fn get(&self, addr: usize) -> Option<T> {
        let &(a, v) = self.slots.get(self.slot(addr))?;
        (a == addr).then_some(v)
    }

    #[inline(always)]
    fn insert(&mut self, addr: usize, v: T) {
        if self.slots.is_empty() {
            self.slots = vec![(0, self.empty); self.mask + 1].into_boxed_slice();
        }
        let k = self.slot(addr);
        self.slots[k] = (addr, v);
    }

    fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<(usize, T)>()
    }
}

/// What a timeline keeps besides its store to encode fast: the last node per address, and
/// scratch space reused by every encoding.
pub struct EncodeCache {
    last: LastNodes,
    types: TypeCache,
    /// The last reference ([`CutNode`]) made at each address, with its contents (read here, not
    /// from the node table: a cache miss per reference), apart from `last` so that a reference
    /// never evicts the full state that makes it a reference.
    cuts: AddrMap<(ValRef, CutNode)>,
    /// Per address, a node `known_at_limit` found to be a state of object `obj` (not a
    /// reference, not empty): while it is still the last node there, the object is known
    /// without reading the node table.
    known: AddrMap<(ValRef, ObjId)>,
    /// Per class recorded as a value, its version tag (`type_key`) and the node made for it
    /// then: a class's name and module are set through `type_setattro`, which gives it a new
    /// tag, so an equal tag means the same class, named as then (`class`).
    classes: AddrMap<(u32, ValRef)>,
    /// Types' qualified names as interned in the store, for static types (which never die).
    static_types: foldhash::HashMap<usize, u32>,
    /// Heap types' names by address and `tp_version_tag`: a tag is never reused, and a change to
    /// the type (`__qualname__`, `__module__`) clears it (`PyType_Modified`), so an entry with
    /// the type's current nonzero tag is its current name (building the name looked `__module__`
    /// up in the type's dict and allocated twice, for every object recorded).
    heap_types: foldhash::HashMap<usize, (u32, usize, u32)>,
    /// Attribute names by the address of their str: the interned id, checked against the text
    /// (a str dying and another taking its address is then a miss, not a wrong name).
    attr_names: Box<[(usize, ffi::Py_hash_t, u32)]>,
    stack: Vec<ValRef>,
    pairs: Vec<(ValRef, ValRef)>,
    attrs: Vec<(u32, ValRef)>,
    text: String,
    /// The addresses of the objects with identity being encoded (a cycle is a reference).
    path: Vec<usize>,
    /// The store length at the last write to any object.
    last_write: u32,
    /// Per type with members (`TypeInfo::members`): each member's interned name and offset.
    member_lists: Vec<Box<[(u32, isize)]>>,
    /// Big containers' fingerprints (`fingerprint`): an unchanged one reuses its last node.
    prints: fingerprint::Prints,
    /// What the last record of each instance's attributes or list's items read (`memo`).
    memos: memo::Memos,
    /// Attribute names of inline values by their split keys (`key_names`).
    key_names: KeyNames,
    /// Lists and tuples of immortals found unchanged: their items' addresses (`rows`).
    rows: rows::Rows,
}

/// The interned names of split keys' entries, direct-mapped by the keys' address: per entry
/// index, the key str's address and hash and its name. A split table's entries never change
/// once written, and the str is checked by address and hash as `Cx::attr_name` checks it, so
/// a hit is the name `attr_name` would give, found without its lookup per attribute.
#[derive(Default)]
struct KeyNames {
    slots: Vec<(usize, Vec<KeyName>)>,
}

/// A key str's address and hash, and its interned name.
type KeyName = (usize, ffi::Py_hash_t, u32);

#[cfg_attr(not(Py_3_11), allow(dead_code))] // inline values: 3.11-3.13
const KEY_NAME_SLOTS: usize = 1 << 8;

#[cfg_attr(not(Py_3_11), allow(dead_code))] // inline values: 3.11-3.13
impl KeyNames {
    fn slot(keys: usize) -> usize {
        ((keys >> 4) ^ (keys >> 12)) & (KEY_NAME_SLOTS - 1)
    }

    fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<(usize, Vec<KeyName>)>()
            + self.slots.iter().map(|(_, v)| v.capacity() * std::mem::size_of::<KeyName>()).sum::<usize>()
    }
}

const ATTR_SLOTS: usize = 1 << 10;

/// How the encoder reads a type's instances (decided once per type, `classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TypeKind {
    List,
    Tuple,
    Dict,
    Set,
    FrozenSet,
    /// `collections.deque` or a subclass: read through the deque's own iterator.
    Deque(*mut ffi::PyTypeObject),
    /// Subclasses of int, str, float, bytes and bytearray: their builtin value and attributes.
    WithBaseValue,
    Type,
    Function,
    Method,
    CFunction,
    Module,
    Code,
    Object,
}

#[derive(Clone, Copy, Debug)]
struct TypeInfo {
    kind: TypeKind,
    name: u32,
    /// Its objects' deaths are seen (`deaths::watched`): they can have an identity.
    watched: bool,
    exception: bool,
    /// Its object members to read: `EncodeCache::member_lists[members - 1]`; 0: none.
    members: u32,
}

/// `TypeInfo` by type, two-way: a type is in its slot or the one beside it (`slot ^ 1`). A static
/// type is the same type for the process's life; a heap type is checked by its `tp_version_tag`
/// (never reused, cleared by any change to the type or its bases), and one without a valid tag
/// is not cached. Direct-mapped, two of a program's classes whose addresses met in one slot
/// evicted each other at every record (richards: 286 K misses, 3% of its recorded work, after a
/// change elsewhere moved the classes).
struct TypeCache {
    slots: Box<[TypeSlot]>,
}

/// (type, key, `names_of`, facts).
type TypeSlot = (usize, u32, usize, Option<TypeInfo>);

const TYPE_SLOTS: usize = 1 << 9;

impl Default for TypeCache {
    fn default() -> Self {
        TypeCache { slots: vec![(0, 0, 0, None); TYPE_SLOTS].into_boxed_slice() }
    }
}

impl TypeCache {
    #[inline(always)]
    fn slot(tp: *mut ffi::PyTypeObject) -> usize {
        let a = tp as usize;
        ((a >> 4) ^ (a >> 13)) & (TYPE_SLOTS - 1)
    }

    /// Never a hit for `key` 0: no entry holds it (`insert`), and an empty slot's address is 0.
    #[inline(always)]
    fn get(&self, tp: *mut ffi::PyTypeObject, key: u32, names: usize) -> Option<TypeInfo> {
        let s = Self::slot(tp);
        let (a, k, q, info) = self.slots[s];
        if a == tp as usize && k == key && q == names {
            return info;
        }
        self.get_beside(s, tp, key, names)
    }

    #[inline(never)]
    fn get_beside(&self, s: usize, tp: *mut ffi::PyTypeObject, key: u32, names: usize) -> Option<TypeInfo> {
        let (a, k, q, info) = self.slots[s ^ 1];
        if a == tp as usize && k == key && q == names {
            info
        } else {
            None
        }
    }

    /// Into the type's slot; the type there before, if another, moves to the slot beside it.
    /// `key` is never 0 (such a type is not cached).
    fn insert(&mut self, tp: *mut ffi::PyTypeObject, key: u32, names: usize, info: TypeInfo) {
        let s = Self::slot(tp);
        let before = self.slots[s];
        if before.0 != 0 && before.0 != tp as usize {
            self.slots[s ^ 1] = before;
        }
        self.slots[s] = (tp as usize, key, names, Some(info));
    }
}

/// The cache key of a type: `u32::MAX` for a static type, its valid version tag for a heap type,
/// 0 (not cacheable) for a heap type without one.
#[inline(always)]
unsafe fn type_key(tp: *mut ffi::PyTypeObject) -> u32 {
    // SAFETY: this fn's contract: `tp` is a live type (the type of a live object).
    unsafe {
        let flags = (*tp).tp_flags;
        if flags & ffi::Py_TPFLAGS_HEAPTYPE == 0 {
            return u32::MAX;
        }
        // Py_TPFLAGS_VALID_VERSION_TAG: before 3.11 `PyType_Modified` clears only the flag.
        // 3.13 no longer sets it (a tag is valid when it is not 0): tested there, no heap type
        // was ever cached and each instance recorded took `type_info_slow` (47% of go's
        // recorded work in calls mode).
        #[cfg(not(Py_3_13))]
        if flags & (1 << 19) == 0 {
            return 0;
        }
        (*tp).tp_version_tag
    }
}

/// What a heap type's shown name is read from besides its version tag: its `__qualname__`
/// object's address, on 3.13, where setting `__qualname__` leaves the tag as it was (3.11 and
/// 3.12 give the type a new tag); 0 elsewhere. A cache keyed by the tag checks this too.
#[inline(always)]
pub(super) unsafe fn names_of(tp: *mut ffi::PyTypeObject) -> usize {
    #[cfg(Py_3_13)]
    // SAFETY: this fn's contract: `tp` is a live type, a heap type's object read as one.
    unsafe {
        if (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE != 0 {
            return (*tp.cast::<ffi::PyHeapTypeObject>()).ht_qualname as usize;
        }
    }
    let _ = tp;
    0
}

/// How instances of `tp` are encoded (what `enc` used to find by a chain of checks).
unsafe fn classify(tp: *mut ffi::PyTypeObject) -> TypeKind {
    // SAFETY: this fn's contract: `tp` is a live type; subtype checks read its MRO only.
    unsafe {
        let flags = (*tp).tp_flags;
        let sub = |base: *mut ffi::PyTypeObject| ffi::PyType_IsSubtype(tp, base) != 0;
        if flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0 {
            TypeKind::List
        } else if flags & ffi::Py_TPFLAGS_TUPLE_SUBCLASS != 0 {
            TypeKind::Tuple
        } else if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
            TypeKind::Dict
        } else if sub(&raw mut ffi::PyFrozenSet_Type) {
            TypeKind::FrozenSet
        } else if sub(&raw mut ffi::PySet_Type) {
            TypeKind::Set
        } else if let Some(d) = deque_base(tp) {
            TypeKind::Deque(d)
        } else if flags & ffi::Py_TPFLAGS_UNICODE_SUBCLASS != 0
            || flags & ffi::Py_TPFLAGS_LONG_SUBCLASS != 0
            || flags & ffi::Py_TPFLAGS_BYTES_SUBCLASS != 0
            || sub(&raw mut ffi::PyFloat_Type)
            || sub(&raw mut ffi::PyByteArray_Type)
        {
            TypeKind::WithBaseValue
        } else if flags & ffi::Py_TPFLAGS_TYPE_SUBCLASS != 0 {
            TypeKind::Type
        } else if sub(&raw mut ffi::PyFunction_Type) {
            TypeKind::Function
        } else if tp == &raw mut PyMethod_Type {
            TypeKind::Method
        } else if sub(&raw mut ffi::PyCFunction_Type) {
            TypeKind::CFunction
        } else if sub(&raw mut ffi::PyModule_Type) {
            TypeKind::Module
        } else if tp == &raw mut ffi::PyCode_Type {
            TypeKind::Code
        } else {
            TypeKind::Object
        }
    }
}

impl Default for EncodeCache {
    fn default() -> Self {
        EncodeCache {
            last: LastNodes::default(),
            cuts: AddrMap::with_slots(CUT_SLOTS, (ValRef::ABSENT, CutNode { ty: 0, obj: 0, len: 0 })),
            known: AddrMap::with_slots(CUT_SLOTS, (ValRef::ABSENT, 0)),
            classes: AddrMap::with_slots(CUT_SLOTS, (0, ValRef::ABSENT)),
            types: TypeCache::default(),
            static_types: Default::default(),
            heap_types: Default::default(),
            attr_names: vec![(0, -1, 0); ATTR_SLOTS].into_boxed_slice(),
            stack: Vec::new(),
            pairs: Vec::new(),
            attrs: Vec::new(),
            text: String::new(),
            member_lists: Vec::new(),
            path: Vec::new(),
            last_write: 0,
            prints: fingerprint::Prints::default(),
            memos: memo::Memos::default(),
            key_names: KeyNames::default(),
            rows: rows::Rows::default(),
        }
    }
}

impl EncodeCache {
    /// A write was recorded when the store held `store_len` nodes.
    #[inline]
    pub fn note_write(&mut self, store_len: u32) {
        self.last_write = self.last_write.max(store_len);
    }

    pub fn bytes(&self) -> u64 {
        (self.last.bytes() + self.cuts.bytes() + self.known.bytes() + self.classes.bytes() + self.static_types.capacity() * 16 + self.stack.capacity() * 4) as u64
            + (self.heap_types.capacity() * 24 + self.attr_names.len() * 24) as u64
            + (self.pairs.capacity() * 8 + self.attrs.capacity() * 8 + self.text.capacity()) as u64
            + self.prints.bytes() as u64
            // The type cache, the cycle path and the types' member lists.
            + (std::mem::size_of_val(&*self.types.slots) + self.path.capacity() * 8) as u64
            + self.member_lists.iter().map(|m| 16 + std::mem::size_of_val(&**m) as u64).sum::<u64>()
            + self.memos.bytes() as u64
            + self.key_names.bytes() as u64
            + self.rows.bytes() as u64
    }
}

unsafe extern "C" {
    // Exported by CPython 3.9-3.13 (cpython/object.h, cpython/longobject.h, classobject.h);
    // pyo3-ffi leaves them out.
    fn _PyObject_GetDictPtr(o: *mut ffi::PyObject) -> *mut *mut ffi::PyObject;
    fn _PyLong_NumBits(o: *mut ffi::PyObject) -> usize;
    static mut PyMethod_Type: ffi::PyTypeObject;
}

/// The head of a `PyDictKeysObject` (3.11-3.13 with the GIL: pycore_dict.h); its index table
/// follows, `1 << dk_log2_index_bytes` bytes, then the entries.
#[cfg(Py_3_11)]
#[repr(C)]
struct DictKeys {
    dk_refcnt: isize,
    dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    dk_version: u32,
    dk_usable: isize,
    dk_nentries: isize,
}

/// Managed-dict object `o`'s inline values and its type's shared keys (3.11-3.13), when its
/// attributes are there: not when its dict was made, or the type's cached keys are missing or
/// not split (pycore_object.h: the values pointer before the object on 3.11 and 3.12, the values
/// after it on 3.13; pycore_dict.h).
///
/// # Safety
/// GIL held; `o` a valid object of type `tp` with `Py_TPFLAGS_MANAGED_DICT`.
#[cfg(all(Py_3_11, not(Py_3_13)))]
unsafe fn inline_values(
    o: *mut ffi::PyObject,
    tp: *mut ffi::PyTypeObject,
) -> Option<(*mut *mut ffi::PyObject, *const DictKeys)> {
    // SAFETY: this fn's contract (GIL held, `o` live of type `tp` with a managed dict, 3.11/3.12);
    // the layout is read as pycore_object.h / pycore_dict.h lay it out on those versions, and
    // checked (heap type, split keys) before the values are.
    unsafe {
        if (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0 {
            return None;
        }
        #[cfg(not(Py_3_12))]
        let values = *o.cast::<*mut *mut ffi::PyObject>().sub(4);
        #[cfg(Py_3_12)]
        let values = {
            let tagged = *o.cast::<usize>().sub(3);
            if tagged & 1 == 0 {
                return None;
            }
            (tagged + 1) as *mut *mut ffi::PyObject
        };
        if values.is_null() {
            return None;
        }
        let keys = (*tp.cast::<ffi::PyHeapTypeObject>()).ht_cached_keys.cast::<DictKeys>();
        if keys.is_null() || (*keys).dk_kind != 2 {
            return None;
        }
        Some((values, keys))
    }
}

/// 3.13 keeps a plain instance's attributes in values laid out right after the object
/// (`_PyObject_InlineValues`: `Py_TPFLAGS_INLINE_VALUES`, a type of `object`'s basic size) until
/// its `__dict__` is asked for, under a 4-byte head (capacity, size, embedded, valid) padded to a
/// word; the managed dict pointer lies three words before the object. `_PyObject_GetDictPtr`
/// would make that dict (`_PyObject_MaterializeManagedDict`): the program's object would grow
/// by it, and `gc` would see one more object per instance recorded.
#[cfg(Py_3_13)]
const INLINE_HEAD: usize = 8;

/// As the 3.11/3.12 `inline_values`, for 3.13's layout (`INLINE_HEAD`).
///
/// # Safety
/// GIL held; `o` a valid object of type `tp` with `Py_TPFLAGS_MANAGED_DICT`.
#[cfg(Py_3_13)]
unsafe fn inline_values(
    o: *mut ffi::PyObject,
    tp: *mut ffi::PyTypeObject,
) -> Option<(*mut *mut ffi::PyObject, *const DictKeys)> {
    // SAFETY: this fn's contract (GIL held, `o` live of type `tp` with a managed dict, 3.13 with
    // the GIL); the layout is read as pycore_object.h / pycore_dict.h lay it out there, and
    // checked (heap type, inline values, the basic size they follow, no dict made, the values
    // valid, split keys) before the values are.
    unsafe {
        const INLINE_VALUES: std::ffi::c_ulong = 1 << 2;
        if (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0
            || (*tp).tp_flags & INLINE_VALUES == 0
            || (*tp).tp_basicsize != std::mem::size_of::<ffi::PyObject>() as ffi::Py_ssize_t
        {
            return None;
        }
        if !(*o.cast::<*mut ffi::PyObject>().sub(3)).is_null() {
            return None;
        }
        let head = o.cast::<u8>().add(std::mem::size_of::<ffi::PyObject>());
        if *head.add(3) == 0 {
            return None;
        }
        let values = head.add(INLINE_HEAD).cast::<*mut ffi::PyObject>();
        let keys = (*tp.cast::<ffi::PyHeapTypeObject>()).ht_cached_keys.cast::<DictKeys>();
        if keys.is_null() || (*keys).dk_kind != 2 {
            return None;
        }
        Some((values, keys))
    }
}

/// The `i`-th attribute, in the order the object's dict would give (`inline_order`,
/// `_PyDictValues_AddToInsertionOrder`), of an object whose [`inline_values`] are `values` and
/// `keys`, with its index in the keys: `None` past the last one, `Some(None)` for an empty slot.
/// A split table's keys are all exact strs (CPython stores no other key in one).
///
/// # Safety
/// As [`inline_values`], with `values` and `keys` what it gave for the object, still its own.
#[cfg(Py_3_11)]
#[inline(always)]
unsafe fn inline_attr(
    values: *mut *mut ffi::PyObject,
    keys: *const DictKeys,
    i: usize,
) -> Option<Option<(usize, *mut ffi::PyObject, *mut ffi::PyObject)>> {
    // SAFETY: as `inline_values` (this fn's contract); the order is read within its count, and
    // an index is checked against the keys' count before its entry is read.
    unsafe {
        let ix = usize::from(order_nth(inline_order(values), i)?);
        if ix >= (*keys).dk_nentries.max(0) as usize {
            return Some(None);
        }
        let entries = keys
            .cast::<u8>()
            .add(std::mem::size_of::<DictKeys>() + (1usize << (*keys).dk_log2_index_bytes))
            .cast::<[*mut ffi::PyObject; 2]>();
        let k = (*entries.add(ix))[0];
        let v = *values.add(ix);
        Some((!k.is_null() && !v.is_null()).then_some((ix, k, v)))
    }
}

/// The insertion order of the inline values `values` (as `inline_values` gave them) as it lies
/// in memory, one index byte per attribute: before the values, the last attribute's first (3.11,
/// 3.12); after the values' capacity, the first attribute's first (3.13). `order_nth` reads it.
///
/// # Safety
/// GIL held; `values` what `inline_values` gave for a live instance, the slice used before any
/// Python code runs.
#[cfg(Py_3_11)]
#[inline(always)]
pub(super) unsafe fn inline_order<'a>(values: *mut *mut ffi::PyObject) -> &'a [u8] {
    // SAFETY: this fn's contract: the count and the index bytes lie where each version's layout
    // puts them (pycore_dict.h).
    unsafe {
        #[cfg(not(Py_3_13))]
        {
            let at = values.cast::<u8>();
            let len = usize::from(*at.sub(2));
            std::slice::from_raw_parts(at.sub(2 + len), len)
        }
        #[cfg(Py_3_13)]
        {
            let head = values.cast::<u8>().sub(INLINE_HEAD);
            std::slice::from_raw_parts(values.add(usize::from(*head)).cast::<u8>(), usize::from(*head.add(1)))
        }
    }
}

/// The `n`-th attribute's index in an order as `inline_order` gives it (or as it was copied).
#[cfg(Py_3_11)]
#[inline(always)]
pub(super) fn order_nth(order: &[u8], n: usize) -> Option<u8> {
    if cfg!(Py_3_13) {
        order.get(n).copied()
    } else {
        order.len().checked_sub(n + 1).map(|k| order[k])
    }
}

/// A bound method's layout (`PyMethodObject`, the same in 3.9-3.13): its function first.
#[repr(C)]
struct MethodObject {
    ob_base: ffi::PyObject,
    im_func: *mut ffi::PyObject,
}

/// The values that need no node: `None`, bools, and exact ints of 31 bits.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn inline_value(o: *mut ffi::PyObject) -> Option<ValRef> {
    // SAFETY: this fn's contract (GIL held, `o` live); each check reads only `o`'s type or an exact
    // type's own layout.
    unsafe {
        if o == ffi::Py_None() {
            return Some(ValRef::NONE);
        }
        let tp = ffi::Py_TYPE(o);
        if tp == &raw mut ffi::PyLong_Type {
            return crate::recorder::ints::exact_int_value(o).and_then(ValRef::small_int);
        }
        if tp == &raw mut ffi::PyBool_Type {
            return Some(if o == ffi::Py_True() { ValRef::TRUE } else { ValRef::FALSE });
        }
        None
    }
}

/// `encode` of the values the entry points' fast paths take: inline ones, exact floats, ints
/// of 64 bits and compact ASCII strings within the budget. `None` for any other value, having
/// done nothing. Runs no Python code and does not unwind.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn scalar(
    values: &mut ValueStore,
    enc: &mut EncodeCache,
    max_string: usize,
    o: *mut ffi::PyObject,
) -> Option<ValRef> {
    // SAFETY: this fn's contract (GIL held, `o` live); no Python code runs, so `values` and `enc`
    // are the only references to them.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        // One conversion of an int: inline when it fits in 31 bits, else a node.
        if tp == &raw mut ffi::PyLong_Type {
            let v = crate::recorder::ints::exact_int_value(o)?;
            return ValRef::small_int(v).or_else(|| values.push(Node::Int(v)));
        }
        if let Some(v) = inline_value(o) {
            return Some(v);
        }
        let node = if tp == &raw mut ffi::PyFloat_Type {
            Node::Float(ffi::PyFloat_AS_DOUBLE(o))
        } else if tp == &raw mut ffi::PyUnicode_Type {
            return ascii_str(values, enc, o, max_string);
        } else {
            return None;
        };
        // Numbers are pushed without looking for an earlier node: a float or big int is seldom
        // recorded twice at one address, and the lookup costs more than the node.
        values.push(node)
    }
}

/// The usual string, compact ASCII within the budget: its bytes are its UTF-8 text, compared
/// with the last node at its address without a copy. `None` for other strings.
///
/// # Safety
/// GIL held; `o` a valid str.
#[inline(always)]
unsafe fn ascii_str(
    store: &mut ValueStore,
    cache: &mut EncodeCache,
    o: *mut ffi::PyObject,
    max: usize,
) -> Option<ValRef> {
    // SAFETY: this fn's contract (GIL held, `o` a live str); a compact ASCII str's bytes follow its
    // header, `len` of them.
    unsafe {
        if ffi::PyUnicode_IS_COMPACT_ASCII(o) == 0 {
            return None;
        }
        let n = ffi::PyUnicode_GET_LENGTH(o).max(0) as usize;
        if n > max {
            return None;
        }
        let text = std::str::from_utf8_unchecked(std::slice::from_raw_parts(ffi::PyUnicode_DATA(o).cast::<u8>(), n));
        let addr = o as usize;
        if let Some(prev) = cache.last.get(addr) {
            if matches!(store.node(prev.0), Some(Node::Str(s)) if **s == *text) {
                return Some(prev);
            }
        }
        let r = store.push(Node::Str(text.into()))?;
        cache.last.insert(addr, r);
        Some(r)
    }
}

/// Encodes `o` as it is now into `rec`'s store. Runs no Python code (except an encoder the
/// user registered for its type) and cannot fail: what cannot be read is encoded by its type.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
pub unsafe fn encode(
    budget: &Budget,
    registered: &[(*mut ffi::PyTypeObject, *mut ffi::PyObject)],
    store: &mut ValueStore,
    cache: &mut EncodeCache,
    o: *mut ffi::PyObject,
) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe { encode_at_level(budget, registered, store, cache, o, budget.object_depth) }
}

/// Encodes an expression's value into `store` with one level of instances less than `encode`
/// (`object_depth - 1`; at the default, 0): an instance this timeline holds a state of already
/// is a reference to it, as a receiver is (`encode_receiver`), shown as that earlier state with
/// the writes recorded since applied, marked, with the entry it is as of. An expression's
/// object is most often one an argument, a binding, a receiver or a return recorded as it was
/// (`self.board`, `c.output()`, `items[i]`), and reading it afresh at every expression was most
/// of the recording's time on object-heavy programs (docs/benchmarks.md, "Twelfth session").
/// Values passed, returned and bound keep `object_depth` levels: those are what frames and
/// locals show.
///
/// # Safety
/// As `encode`.
pub unsafe fn encode_expr(
    budget: &Budget,
    registered: &[(*mut ffi::PyTypeObject, *mut ffi::PyObject)],
    store: &mut ValueStore,
    cache: &mut EncodeCache,
    o: *mut ffi::PyObject,
) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe { encode_at_level(budget, registered, store, cache, o, budget.object_depth.saturating_sub(1)) }
}

/// Encodes a receiver (the `x` of `x.a`, `x[k]`, `x.m()`) into `store`: an instance this
/// timeline holds a state of already is recorded as a reference to it (readers show that state
/// with the writes recorded since applied, marked as earlier); one never recorded is encoded,
/// its instance fields as references where known. A container is encoded as `encode` does,
/// its instance items as references where known. The state a receiver is in was recorded where
/// it was bound, passed or last written, so re-encoding it at every `self.x` is mostly
/// repetition, and on object-heavy programs it was half the recording's cost (DESIGN.md).
///
/// # Safety
/// As `encode`.
pub unsafe fn encode_receiver(
    budget: &Budget,
    registered: &[(*mut ffi::PyTypeObject, *mut ffi::PyObject)],
    store: &mut ValueStore,
    cache: &mut EncodeCache,
    o: *mut ffi::PyObject,
) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe { encode_at_level(budget, registered, store, cache, o, 0) }
}

/// `encode` with `obj_left` levels of instances encoded afresh (below them, instances this
/// timeline holds a state of are references).
///
/// # Safety
/// As `encode`.
unsafe fn encode_at_level(
    budget: &Budget,
    registered: &[(*mut ffi::PyTypeObject, *mut ffi::PyObject)],
    store: &mut ValueStore,
    cache: &mut EncodeCache,
    o: *mut ffi::PyObject,
    obj_left: u32,
) -> ValRef {
    // SAFETY: this fn's contract (GIL held, `o` live). The encoder reads objects' storage and runs
    // no Python code except a user-registered encoder (`registered_encoder`, by request).
    unsafe {
        if let Some(v) = inline_value(o) {
            return v;
        }
        let mut left = budget.max_items;
        let len = store.len();
        let mut cx =
            Cx { budget, registered, store, cache, left: &mut left, obj_left, has_dep: false, last_known: None };
        let v = cx.enc(o, budget.max_depth);
        let has_dep = cx.has_dep;
        match v.decode() {
            // An unchanged value's earlier node, which refers to other objects' states: named
            // again here, so that a reader resolves those references as of now (`Node::Same`),
            // unless nothing was stored or written since that node.
            squall_trace::Decoded::Slot(s)
                if has_dep
                    && (s as usize) < len
                    && (s as usize + 1 != len || cache.last_write > s)
                    && !matches!(store.node(s), Some(Node::Cut(_) | Node::Ref(_))) =>
            {
                store.push(Node::Same(s)).unwrap_or(ValRef::ABSENT)
            }
            _ => v,
        }
    }
}

struct Cx<'a> {
    budget: &'a Budget,
    registered: &'a [(*mut ffi::PyTypeObject, *mut ffi::PyObject)],
    store: &'a mut ValueStore,
    cache: &'a mut EncodeCache,
    left: &'a mut usize,
    /// Levels of objects with an identity still encoded afresh below this point (`object_depth`).
    obj_left: u32,
    /// The value refers to an object's earlier state (a reference at the depth limit): an
    /// earlier node of it is named again through a `Node::Same` (`encode_at_level`).
    has_dep: bool,
    /// The last reference `known_at_limit` made to an instance's earlier state: (its address,
    /// its identity), for `memo`.
    last_known: Option<(usize, ObjId)>,
}

/// What a sequence node is of besides its items.
#[derive(Clone, Copy)]
struct SeqOf {
    obj: ObjId,
    /// Its type's interned name.
    ty: u32,
    kind: SeqKind,
    len: u64,
}

/// Sequence storage read directly.
enum Items {
    Array(*mut *mut ffi::PyObject, usize),
    /// A set's hash table (`set_table`), in the order its iterator gives.
    Set(*mut ffi::setentry, usize),
    /// Through the base type's own C iterator (deques): runs no Python code.
    Iter(ffi::iternextfunc, *mut ffi::PyObject),
}

/// The hash table of set or frozenset `o` (of any subclass: the storage is the base's). Its
/// iterator walks the same slots in the same order, skipping empty ones and removed ones
/// (setobject.c: a removed key is the dummy with hash -1, which no live key has); read here
/// without making an iterator object per set.
///
/// # Safety
/// GIL held; `o` a valid set or frozenset.
unsafe fn set_table(o: *mut ffi::PyObject) -> Items {
    // SAFETY: this fn's contract: `o` is a live set or frozenset, whose table has `mask + 1` slots.
    unsafe {
        let so = o.cast::<ffi::PySetObject>();
        Items::Set((*so).table, ((*so).mask.max(0) as usize) + 1)
    }
}

/// The key in slot `i` of a set's table, if one is there.
///
/// # Safety
/// As `set_table`, `i` below its slot count.
#[inline(always)]
unsafe fn set_key(table: *mut ffi::setentry, i: usize) -> Option<*mut ffi::PyObject> {
    // SAFETY: this fn's contract: `table` is a live set's table and `i` is below its slot count.
    unsafe {
        let e = &*table.add(i);
        (!e.key.is_null() && e.hash != -1).then_some(e.key)
    }
}

impl Cx<'_> {
    unsafe fn enc(&mut self, o: *mut ffi::PyObject, depth: u32) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` live): every path reads `o` by the layout its
        // exact type (`type_info`) gives.
        unsafe {
            let tp = ffi::Py_TYPE(o);
            if tp == &raw mut ffi::PyLong_Type {
                return self.int(o);
            }
            if let Some(v) = inline_value(o) {
                return v;
            }
            *self.left = self.left.saturating_sub(1);
            if tp == &raw mut ffi::PyFloat_Type {
                // Shared with the last node at its address: an object's float field unchanged
                // keeps the object's node unchanged.
                return self.shared(o, Node::Float(ffi::PyFloat_AS_DOUBLE(o)));
            }
            if tp == &raw mut ffi::PyUnicode_Type {
                return self.string(o);
            }
            if tp == &raw mut ffi::PyBytes_Type {
                return self.bytes(o);
            }
            if tp == &raw mut ffi::PyComplex_Type {
                let c = (*o.cast::<ffi::PyComplexObject>()).cval;
                return self.shared(o, Node::Complex(Box::new((c.real, c.imag))));
            }
            if !self.registered.is_empty() {
                if let Some(&(_, f)) = self.registered.iter().find(|&&(t, _)| t == tp) {
                    return self.registered_encoder(f, o, depth);
                }
            }
            let info = self.type_info(tp);
            match info.kind {
                TypeKind::List => {
                    let items =
                        Items::Array((*o.cast::<ffi::PyListObject>()).ob_item, ffi::PyList_GET_SIZE(o) as usize);
                    self.seq(o, SeqKind::List, items, depth, true)
                }
                TypeKind::Tuple => {
                    let items = Items::Array(
                        (*o.cast::<ffi::PyTupleObject>()).ob_item.as_mut_ptr(),
                        ffi::PyTuple_GET_SIZE(o) as usize,
                    );
                    self.seq(o, SeqKind::Tuple, items, depth, false)
                }
                TypeKind::Dict => self.map(o, depth),
                set @ (TypeKind::Set | TypeKind::FrozenSet) => {
                    let frozen = set == TypeKind::FrozenSet;
                    let kind = if frozen { SeqKind::FrozenSet } else { SeqKind::Set };
                    self.seq(o, kind, set_table(o), depth, !frozen)
                }
                TypeKind::Deque(deque) => match base_iter(deque, o) {
                    Some(items) => self.seq(o, SeqKind::Other, items, depth, true),
                    None => self.opaque(o, String::new()),
                },
                TypeKind::WithBaseValue => self.object(o, info, depth, true),
                TypeKind::Type => self.class(o),
                TypeKind::Function => self.opaque(o, str_field((*o.cast::<ffi::PyFunctionObject>()).func_qualname)),
                TypeKind::Method => {
                    let f = (*o.cast::<MethodObject>()).im_func;
                    let text = if ffi::PyFunction_Check(f) != 0 {
                        str_field((*f.cast::<ffi::PyFunctionObject>()).func_qualname)
                    } else {
                        String::new()
                    };
                    self.opaque(o, text)
                }
                TypeKind::CFunction => {
                    let def = (*o.cast::<ffi::PyCFunctionObject>()).m_ml;
                    let text = if def.is_null() || (*def).ml_name.is_null() {
                        String::new()
                    } else {
                        std::ffi::CStr::from_ptr((*def).ml_name).to_string_lossy().into_owned()
                    };
                    self.opaque(o, text)
                }
                TypeKind::Module => {
                    let name = ffi::PyModule_GetNameObject(o);
                    let text = if name.is_null() {
                        ffi::PyErr_Clear();
                        String::new()
                    } else {
                        let t = str_field(name);
                        ffi::Py_DecRef(name);
                        t
                    };
                    self.opaque(o, text)
                }
                TypeKind::Code => self.opaque(o, String::new()),
                TypeKind::Object => self.object(o, info, depth, false),
            }
        }
    }

    /// What kind of value `tp`'s instances are, their type's interned name and whether their
    /// deaths are seen: cached per type (`TypeCache`), so that encoding an object costs one
    /// lookup instead of a dozen subtype checks and two hash lookups.
    #[inline(always)]
    unsafe fn type_info(&mut self, tp: *mut ffi::PyTypeObject) -> TypeInfo {
        // SAFETY: this fn's contract: `tp` is a live type; the cache's entry for it is dropped when
        // its class dies (deaths.rs).
        unsafe {
            let key = type_key(tp);
            match self.cache.types.get(tp, key, names_of(tp)) {
                Some(info) => info,
                None => self.type_info_slow(tp, key),
            }
        }
    }

    /// `type_info` on a miss of the cache: the type classified, named and its members listed.
    #[cold]
    #[inline(never)]
    unsafe fn type_info_slow(&mut self, tp: *mut ffi::PyTypeObject, key: u32) -> TypeInfo {
        // SAFETY: this fn's contract: `tp` is a live type.
        unsafe {
            let members = self.member_list(tp);
            let members = if members.is_empty() {
                0
            } else {
                // Equal lists share one entry: a type missed in the direct-mapped cache, or one
                // without a version tag (never cached), must not add a list at every object.
                match self.cache.member_lists.iter().position(|l| **l == *members) {
                    Some(i) => i as u32 + 1,
                    None => {
                        self.cache.member_lists.push(members.into());
                        self.cache.member_lists.len() as u32
                    }
                }
            };
            let info = TypeInfo {
                kind: classify(tp),
                name: self.type_name_slow(tp),
                watched: crate::recorder::deaths::watched(tp),
                exception: (*tp).tp_flags & ffi::Py_TPFLAGS_BASE_EXC_SUBCLASS != 0,
                members,
            };
            if key != 0 {
                self.cache.types.insert(tp, key, names_of(tp), info);
            }
            info
        }
    }

    /// `node` for the id-less value at `o`, or the earlier node made at that address when equal.
    unsafe fn shared(&mut self, o: *mut ffi::PyObject, node: Node) -> ValRef {
        let addr = o as usize;
        if let Some(prev) = self.cache.last.get(addr) {
            if let Some(p) = self.store.node(prev.0) {
                if same_scalar(p, &node) {
                    return prev;
                }
            }
        }
        self.push_at(addr, node)
    }

    fn push_at(&mut self, addr: usize, node: Node) -> ValRef {
        match self.store.push(node) {
            Some(r) => {
                self.cache.last.insert(addr, r);
                r
            }
            None => ValRef::ABSENT,
        }
    }

    unsafe fn string(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live str).
        unsafe {
            if let Some(r) = ascii_str(self.store, self.cache, o, self.budget.max_string) {
                return r;
            }
            let mut text = std::mem::take(&mut self.cache.text);
            text.clear();
            let len = read_str(o, self.budget.max_string, &mut text);
            let addr = o as usize;
            let cut = (text.chars().count() as u64) < len;
            let r = match self.cache.last.get(addr).and_then(|p| self.store.node(p.0).map(|n| (p, n))) {
                Some((prev, Node::Str(s))) if !cut && **s == *text => prev,
                Some((prev, Node::StrCut(b))) if cut && *b.0 == *text && b.1 == len => prev,
                _ => {
                    let node = if cut {
                        Node::StrCut(Box::new((text.as_str().into(), len)))
                    } else {
                        Node::Str(text.as_str().into())
                    };
                    self.push_at(addr, node)
                }
            };
            self.cache.text = text;
            r
        }
    }

    /// An exact int, converted once: inline within 31 bits, else a node shared with the last one
    /// at its address when equal.
    #[inline(always)]
    unsafe fn int(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live exact int).
        unsafe {
            match crate::recorder::ints::exact_int_value(o) {
                Some(v) => match ValRef::small_int(v) {
                    Some(r) => r,
                    None => {
                        *self.left = self.left.saturating_sub(1);
                        self.shared(o, Node::Int(v))
                    }
                },
                None => {
                    *self.left = self.left.saturating_sub(1);
                    self.big_int(o)
                }
            }
        }
    }

    /// An int beyond 64 bits, by its decimal text.
    #[inline(never)]
    unsafe fn big_int(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live int); an error of the conversion is
        // cleared.
        unsafe {
            // An exact int's str runs CPython's own conversion (no user code); past the
            // interpreter's digit limit it raises, and the size is shown instead.
            let s = ffi::PyObject_Str(o);
            let text = if s.is_null() {
                ffi::PyErr_Clear();
                let bits = _PyLong_NumBits(o);
                format!("<int of {bits} bits>")
            } else {
                let t = str_field(s);
                ffi::Py_DecRef(s);
                t
            };
            self.shared(o, Node::BigInt(text.into()))
        }
    }

    unsafe fn bytes(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` live bytes): `ob_size` bytes follow the header.
        unsafe {
            let n = ffi::Py_SIZE(o).max(0) as usize;
            let data =
                std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(o).cast::<u8>(), n.min(self.budget.max_string));
            let cut = n > self.budget.max_string;
            // The last node at its address when it holds these bytes, compared in place: a copy
            // made only to be compared and freed cost pyflate a fifth of its recorded work.
            let addr = o as usize;
            if let Some(prev) = self.cache.last.get(addr) {
                let same = match self.store.node(prev.0) {
                    Some(Node::Bytes(b)) => !cut && **b == *data,
                    Some(Node::BytesCut(b)) => cut && *b.0 == *data && b.1 == n as u64,
                    _ => false,
                };
                if same {
                    return prev;
                }
            }
            let node = if cut { Node::BytesCut(Box::new((data.into(), n as u64))) } else { Node::Bytes(data.into()) };
            self.push_at(addr, node)
        }
    }

    #[inline]
    unsafe fn type_name(&mut self, tp: *mut ffi::PyTypeObject) -> u32 {
        // SAFETY: this fn's contract: `tp` is a live type.
        unsafe { self.type_info(tp).name }
    }

    unsafe fn type_name_slow(&mut self, tp: *mut ffi::PyTypeObject) -> u32 {
        // SAFETY: this fn's contract: `tp` is a live type; its name and dict are read, not called.
        unsafe {
            if (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0 {
                if let Some(&id) = self.cache.static_types.get(&(tp as usize)) {
                    return id;
                }
                let id = self.store.intern(&qualified_name(tp));
                self.cache.static_types.insert(tp as usize, id);
                return id;
            }
            // Py_TPFLAGS_VALID_VERSION_TAG: before 3.11 `PyType_Modified` clears only the flag,
            // leaving the old tag in place.
            // 3.13 no longer sets the flag: a tag is valid when it is not 0 (`type_key`).
            let valid = cfg!(Py_3_13) || (*tp).tp_flags & (1 << 19) != 0;
            let tag = if valid { (*tp).tp_version_tag } else { 0 };
            if tag != 0 {
                if let Some(&(t, names, id)) = self.cache.heap_types.get(&(tp as usize)) {
                    if t == tag && names == names_of(tp) {
                        return id;
                    }
                }
            }
            let id = self.store.intern(&qualified_name(tp));
            if tag != 0 {
                self.cache.heap_types.insert(tp as usize, (tag, names_of(tp), id));
            }
            id
        }
    }

    /// The interned id of attribute name `k` (a str).
    unsafe fn attr_name(&mut self, k: *mut ffi::PyObject) -> u32 {
        // SAFETY: this fn's contract: `k` is a live str (a key of an attribute dict).
        unsafe {
            if ffi::PyUnicode_IS_COMPACT_ASCII(k) == 0 {
                return self.store.intern(&str_field(k));
            }
            let n = ffi::PyUnicode_GET_LENGTH(k).max(0) as usize;
            let text =
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(ffi::PyUnicode_DATA(k).cast::<u8>(), n));
            let addr = k as usize;
            let slot = ((addr >> 4) ^ (addr >> 14)) & (ATTR_SLOTS - 1);
            // The str's hash tells a str that took a dead name's address from the name (a text
            // compare here was a tenth of an object's encoding).
            let hash = (*k.cast::<ffi::PyASCIIObject>()).hash;
            let (a, h, id) = self.cache.attr_names[slot];
            if a == addr && h == hash && (hash != -1 || self.store.name(id) == text) {
                return id;
            }
            let id = self.store.intern(text);
            self.cache.attr_names[slot] = (addr, hash, id);
            id
        }
    }

    /// The `KeyNames` slot of split keys `keys`, emptied if it held other keys' names.
    #[cfg_attr(not(Py_3_11), allow(dead_code))] // inline values: 3.11-3.13
    fn key_names_of(&mut self, keys: usize) -> usize {
        let slots = &mut self.cache.key_names.slots;
        if slots.is_empty() {
            slots.resize_with(KEY_NAME_SLOTS, || (0, Vec::new()));
        }
        let ks = KeyNames::slot(keys);
        let (at, names) = &mut slots[ks];
        if *at != keys {
            *at = keys;
            names.clear();
        }
        ks
    }

    /// The name of attribute `k`, the key at index `i` of the split keys whose `KeyNames` slot
    /// is `ks` (`key_names_of`).
    ///
    /// # Safety
    /// GIL held; `k` a live str, the key at `i` in those live split keys.
    #[inline(always)]
    #[cfg_attr(not(Py_3_11), allow(dead_code))] // inline values: 3.11-3.13
    unsafe fn key_name(&mut self, ks: usize, i: usize, k: *mut ffi::PyObject) -> u32 {
        // SAFETY: this fn's contract: `k` is a live str.
        unsafe {
            let hash = (*k.cast::<ffi::PyASCIIObject>()).hash;
            if let Some(&(a, h, id)) = self.cache.key_names.slots[ks].1.get(i) {
                if a == k as usize && h == hash && hash != -1 {
                    return id;
                }
            }
            let id = self.attr_name(k);
            let names = &mut self.cache.key_names.slots[ks].1;
            if names.len() <= i {
                names.resize(i + 1, (0, -1, 0));
            }
            names[i] = (k as usize, hash, id);
            id
        }
    }

    /// `o`'s identity; 0 (none) for objects whose deaths the recorder cannot see: an identity
    /// found by address could be a freed object's.
    unsafe fn identity(&mut self, o: *mut ffi::PyObject) -> ObjId {
        // SAFETY: this fn's contract (GIL held, `o` live).
        unsafe {
            if !self.type_info(ffi::Py_TYPE(o)).watched {
                return 0;
            }
            IDS.get().of(o)
        }
    }

    /// A list, tuple, set, frozenset or deque: its last node when a big one's fingerprint is
    /// unchanged (`fingerprint`), else `seq_encode`.
    unsafe fn seq(&mut self, o: *mut ffi::PyObject, kind: SeqKind, items: Items, depth: u32, identity: bool) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live container whose storage `items`
        // describes).
        unsafe {
            let len = match &items {
                Items::Array(_, n) => *n as u64,
                Items::Set(..) | Items::Iter(..) => obj_len(o),
            };
            if len < fingerprint::MIN_ITEMS || depth == 0 || kind == SeqKind::Other {
                return self.seq_encode(o, kind, items, depth, identity);
            }
            let obj = if identity { self.identity(o) } else { 0 };
            if let Some(v) = self.unchanged(o, obj, depth) {
                if let Items::Iter(_, it) = items {
                    ffi::Py_DecRef(it);
                }
                return v;
            }
            if let Items::Array(p, n) = items {
                if let Some(v) = self.immortals_changed(o, SeqOf { obj, ty: 0, kind, len }, p, n) {
                    return v;
                }
            }
            let left_before = *self.left;
            let v = self.seq_encode(o, kind, items, depth, identity);
            self.remember(o, obj, depth, v, left_before);
            v
        }
    }

    unsafe fn seq_encode(
        &mut self,
        o: *mut ffi::PyObject,
        kind: SeqKind,
        items: Items,
        depth: u32,
        identity: bool,
    ) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live container whose storage `items`
        // describes); items are read below the size stored, and no Python code runs meanwhile.
        unsafe {
            let tp = ffi::Py_TYPE(o);
            let obj = if identity { self.identity(o) } else { 0 };
            let ty = self.type_name(tp);
            let (len, base) = match &items {
                Items::Array(_, n) => (*n as u64, self.cache.stack.len()),
                Items::Set(..) | Items::Iter(..) => (obj_len(o), self.cache.stack.len()),
            };
            let at_limit =
                if depth == 0 { Some(CutNode { ty, obj, len }) } else { self.known_at_limit(o, ty, obj, len, false) };
            if let Some(cut) = at_limit {
                if let Items::Iter(_, it) = items {
                    ffi::Py_DecRef(it);
                }
                return self.cut(o, cut);
            }
            // A list's or tuple's items as they are in storage, for `same_row` and `keep_row`.
            let array = match items {
                Items::Array(p, n) if matches!(kind, SeqKind::List | SeqKind::Tuple) => Some((p, n)),
                _ => None,
            };
            // A row whose first item is not an immortal is looked up only where instances are
            // references (lists of instances read afresh paid the lookup at every record).
            if let Some((p, n)) = array.filter(|&(p, n)| n == 0 || self.obj_left == 0 || rows::may_be_scalar(*p)) {
                if let Some(node) = self.same_row(o, rows::RowOf { obj, ty, kind }, p, n) {
                    return node;
                }
            }
            let outer = self.descend(o, obj, false);
            let max = self.budget.max_length;
            // A list's or tuple's items reuse what its last record read (`memo`); `replayed`:
            // that record's node is the value.
            let mut replayed = None;
            let head = memo::Head {
                obj,
                ty,
                depth,
                obj_left: outer,
                shape: memo::SHAPE_SEQ + kind as u8,
                dict: 0,
                version: 0,
            };
            match items {
                Items::Array(p, n) if self.registered.is_empty() && self.memo_wanted(o, &head) => {
                    let mut open = self.memo_begin(o, &head);
                    let mut complete = true;
                    let start = self.memo_items_prefix(&mut open, p, n.min(max));
                    for i in start..n.min(max) {
                        if *self.left == 0 {
                            complete = false;
                            break;
                        }
                        let v = self.memo_field(&mut open, *p.add(i), 0, depth - 1);
                        self.cache.stack.push(v);
                    }
                    replayed = self.memo_end(o, head, open, complete, len);
                }
                Items::Array(p, n) => {
                    for i in 0..n.min(max) {
                        if *self.left == 0 {
                            break;
                        }
                        let v = self.enc(*p.add(i), depth - 1);
                        self.cache.stack.push(v);
                    }
                }
                Items::Set(table, slots) => {
                    let mut i = 0;
                    while i < slots && self.cache.stack.len() - base < max && *self.left > 0 {
                        if let Some(key) = set_key(table, i) {
                            let v = self.enc(key, depth - 1);
                            self.cache.stack.push(v);
                        }
                        i += 1;
                    }
                }
                Items::Iter(next, it) => {
                    while self.cache.stack.len() - base < max && *self.left > 0 {
                        let item = next(it);
                        if item.is_null() {
                            break;
                        }
                        let v = self.enc(item, depth - 1);
                        ffi::Py_DecRef(item);
                        self.cache.stack.push(v);
                    }
                    ffi::Py_DecRef(it);
                    if !ffi::PyErr_Occurred().is_null() {
                        ffi::PyErr_Clear();
                    }
                }
            }
            self.ascend(obj, outer);
            let addr = o as usize;
            if let Some(node) = replayed {
                if let Some(row) = array {
                    self.keep_row(o, rows::RowOf { obj, ty, kind }, row, base, depth, node);
                }
                self.cache.stack.truncate(base);
                return node;
            }
            let (r, reused) = self.seq_node(addr, SeqOf { obj, ty, kind, len }, base, false);
            self.memo_node(addr, r);
            if reused {
                if let Some(row) = array {
                    self.keep_row(o, rows::RowOf { obj, ty, kind }, row, base, depth, r);
                }
            }
            self.cache.stack.truncate(base);
            r
        }
    }

    /// The node of the sequence at `addr` (`of`) whose items are the encoding stack's from
    /// `base`: the last state at its address when it is the same (`true`: reused), else a new
    /// one, stored as its changes against the last full state of the same object when fewer
    /// than a quarter of its items differ (`delta`). `changed`: the caller knows the items
    /// differ from the last state's, which is not compared. The stack is left as it is.
    #[inline(always)]
    fn seq_node(&mut self, addr: usize, of: SeqOf, base: usize, changed: bool) -> (ValRef, bool) {
        let SeqOf { obj, ty, kind, len } = of;
        let items = &self.cache.stack[base..];
        // The last state at this address: the same one again, or the full state a delta of
        // this one is made against.
        let mut delta_base = None;
        if let Some(prev) = self.cache.last.get(addr) {
            let same = match self.store.node(prev.0) {
                Some(Node::Seq(p)) if p.obj == obj && p.ty == ty && p.kind == kind => {
                    delta_base = Some(prev.0);
                    !changed && p.len == len && *p.items == *items
                }
                Some(Node::SeqDelta(d)) if d.obj == obj && d.ty == ty && d.kind == kind => {
                    delta_base = Some(d.base);
                    !changed && d.len == len && delta_equals(self.store, d, items)
                }
                _ => false,
            };
            if same {
                return (prev, true);
            }
        }
        let node = match delta_base.filter(|_| obj != 0).and_then(|b| delta(self.store, b, kind, ty, obj, len, items)) {
            Some(d) => Node::SeqDelta(Box::new(d)),
            None => Node::Seq(Box::new(SeqNode { kind, ty, obj, len, items: items.into() })),
        };
        (self.push_at(addr, node), false)
    }

    /// A dict: its last node when a big one's fingerprint is unchanged (`fingerprint`), else
    /// `map_encode`.
    unsafe fn map(&mut self, o: *mut ffi::PyObject, depth: u32) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live dict).
        unsafe {
            if (ffi::PyDict_Size(o).max(0) as u64) < fingerprint::MIN_ITEMS || depth == 0 {
                return self.map_encode(o, depth);
            }
            let obj = self.identity(o);
            if let Some(v) = self.unchanged(o, obj, depth) {
                return v;
            }
            let left_before = *self.left;
            let v = self.map_encode(o, depth);
            self.remember(o, obj, depth, v, left_before);
            v
        }
    }

    unsafe fn map_encode(&mut self, o: *mut ffi::PyObject, depth: u32) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live dict); iterated with PyDict_Next, which
        // runs no Python code, and items are borrowed while it does not.
        unsafe {
            let obj = self.identity(o);
            let ty = self.type_name(ffi::Py_TYPE(o));
            let len = ffi::PyDict_Size(o).max(0) as u64;
            let at_limit =
                if depth == 0 { Some(CutNode { ty, obj, len }) } else { self.known_at_limit(o, ty, obj, len, false) };
            if let Some(cut) = at_limit {
                return self.cut(o, cut);
            }
            let outer = self.descend(o, obj, false);
            let base = self.cache.pairs.len();
            let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            while self.cache.pairs.len() - base < self.budget.max_length
                && *self.left > 0
                && ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0
            {
                let ke = self.enc(k, depth - 1);
                let ve = self.enc(v, depth - 1);
                self.cache.pairs.push((ke, ve));
            }
            self.ascend(obj, outer);
            let addr = o as usize;
            let entries = &self.cache.pairs[base..];
            if let Some(prev) = self.cache.last.get(addr) {
                if let Some(Node::Map(p)) = self.store.node(prev.0) {
                    if p.obj == obj && p.ty == ty && p.len == len && *p.entries == *entries {
                        self.cache.pairs.truncate(base);
                        return prev;
                    }
                }
            }
            let node = Node::Map(Box::new(MapNode { ty, obj, len, entries: entries.into() }));
            self.cache.pairs.truncate(base);
            self.push_at(addr, node)
        }
    }

    /// An object by its own storage: a builtin base's value (int, str, float, bytes and
    /// bytearray subclasses), C members and `__slots__`, an exception's args, its `__dict__`;
    /// `info` is its type's `type_info`.
    unsafe fn object(&mut self, o: *mut ffi::PyObject, info: TypeInfo, depth: u32, has_base_value: bool) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` live, `info` its type's): its members, dict
        // and base value are read at the offsets its type gives.
        unsafe {
            let tp = ffi::Py_TYPE(o);
            let obj = if info.watched { IDS.get().of(o) } else { 0 };
            let ty = info.name;
            let at_limit =
                if depth == 0 { Some(CutNode { ty, obj, len: 0 }) } else { self.known_at_limit(o, ty, obj, 0, true) };
            if let Some(cut) = at_limit {
                return self.cut(o, cut);
            }
            // 3.11-3.13 keep a managed-dict object's attributes in inline values until its
            // `__dict__` is asked for; `_PyObject_GetDictPtr` would make that dict (the program's
            // attribute loads then take a slower path, and every object recorded grows by it).
            // They are read where they are, in the order the dict would give.
            #[cfg(Py_3_11)]
            let inline_at =
                if (*tp).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT != 0 { inline_values(o, tp) } else { None };
            let outer = self.descend(o, obj, true);
            // A plain instance recorded again is first compared with its memo's last record
            // (`memo_inline_whole`): with every attribute as then, that record's node, without
            // reading into the memo or writing it back; else the reading below goes on from
            // the first attribute that differs.
            #[cfg(Py_3_11)]
            let mut resume: Option<memo::Resume> = None;
            #[cfg(Py_3_11)]
            if let Some(at) = inline_at.filter(|_| {
                obj != 0 && !has_base_value && !info.exception && info.members == 0 && self.registered.is_empty()
            }) {
                let head =
                    memo::Head { obj, ty, depth, obj_left: outer, shape: memo::SHAPE_INLINE, dict: 0, version: 0 };
                let left_before = *self.left;
                match self.memo_inline_whole(o, &head, at.0, at.1, depth - 1) {
                    memo::Whole::Same { node } => {
                        self.ascend(obj, outer);
                        return node;
                    }
                    memo::Whole::Prefix { i, n, changed } => resume = Some((i, n, changed)),
                    memo::Whole::No => {}
                    memo::Whole::Lost => *self.left = left_before,
                }
            }
            let base = self.cache.attrs.len();
            if has_base_value {
                let v = self.base_value(o);
                let k = self.store.intern("value");
                self.cache.attrs.push((k, v));
            }
            if info.exception {
                let args = (*o.cast::<ffi::PyBaseExceptionObject>()).args;
                if !args.is_null() {
                    let v = self.enc(args, depth - 1);
                    let k = self.store.intern("args");
                    self.cache.attrs.push((k, v));
                }
            }
            self.members(o, info.members, depth);
            // A registered encoder (the user's code) may have changed the object meanwhile.
            #[cfg(Py_3_11)]
            let inline_at = if self.registered.is_empty() {
                inline_at
            } else if (*tp).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT != 0 {
                inline_values(o, tp)
            } else {
                None
            };
            #[cfg(Py_3_11)]
            let inline = inline_at.is_some();
            #[cfg(not(Py_3_11))]
            let inline = false;
            // Attributes in inline values (3.11, 3.12) have no version to replay by: a plain
            // instance's are compared field by field with what its last record read (`memo`).
            #[cfg(Py_3_11)]
            let mut inline_replayed = None;
            #[cfg(Py_3_11)]
            if let Some(mut at) = inline_at {
                let mut ks = self.key_names_of(at.1 as usize);
                let head =
                    (obj != 0 && self.cache.attrs.len() == base && self.registered.is_empty()).then_some(memo::Head {
                        obj,
                        ty,
                        depth,
                        obj_left: outer,
                        shape: memo::SHAPE_INLINE,
                        dict: 0,
                        version: 0,
                    });
                let mut open = head.map(|h| self.memo_begin(o, &h));
                let mut complete = false;
                let mut i = 0;
                if let (Some(open), Some((from, n, changed))) = (&mut open, resume) {
                    self.memo_take_prefix(open, n, changed);
                    i = from;
                }
                loop {
                    // The run of fields from `i` that replay without encoding; the field it
                    // stopped at (a container, a change) is read below.
                    if let Some(open) = open.as_mut().filter(|open| open.has_next()) {
                        i = self.memo_inline_prefix(open, at.0, at.1, ks, base, i);
                    }
                    if self.cache.attrs.len() - base >= self.budget.max_length || *self.left == 0 {
                        break;
                    }
                    // A registered encoder (the user's code) may have changed the object.
                    if !self.registered.is_empty() {
                        let Some(now) = inline_values(o, tp) else { break };
                        at = now;
                        ks = self.key_names_of(at.1 as usize);
                    }
                    let Some(slot) = inline_attr(at.0, at.1, i) else {
                        complete = true;
                        break;
                    };
                    i += 1;
                    let Some((ix, k, v)) = slot else { continue };
                    let ke = self.key_name(ks, ix, k);
                    let ve = match &mut open {
                        Some(open) => self.memo_field(open, v, ke, depth - 1),
                        None => self.enc(v, depth - 1),
                    };
                    self.cache.attrs.push((ke, ve));
                }
                if let (Some(head), Some(open)) = (head, open) {
                    // An instance recorded again (not one met for the first time at its slot)
                    // is likely to be again: its order and values are kept for the next record.
                    let again = open.recorded_before();
                    inline_replayed = self.memo_end(o, head, open, complete, 0);
                    if complete && again {
                        self.memo_inline_order(o, &head, at.0, at.1);
                    }
                }
            }
            let dict_ptr = if inline {
                std::ptr::null_mut()
            } else if (*tp).tp_dictoffset != 0 || (*tp).tp_flags & (1 << 4) != 0 {
                let p = _PyObject_GetDictPtr(o);
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                }
                p
            } else {
                std::ptr::null_mut()
            };
            // A plain instance (its attributes are all there is to it) with a dict reuses what
            // its last record read (`memo`); `replayed`: that record's node is the value.
            let plain = self.cache.attrs.len() == base && self.registered.is_empty();
            let mut replayed = None;
            if !dict_ptr.is_null() && !(*dict_ptr).is_null() && ffi::PyDict_Check(*dict_ptr) != 0 {
                let d = *dict_ptr;
                let head = memo::Head {
                    obj,
                    ty,
                    depth,
                    obj_left: outer,
                    shape: memo::SHAPE_DICT,
                    dict: d as usize,
                    version: memo::dict_version(d),
                };
                // 3.13 writes an attribute into inline values its materialized dict shares
                // without a new version (scripts/test_pythons.sh 3.13 showed a stale field): the
                // dict is compared field by field there, never replayed by its version.
                let by_version = plain && !cfg!(Py_3_13);
                let replay = if by_version { self.memo_replay(o, head, base, depth - 1) } else { None };
                replayed = match replay {
                    Some(r) => r,
                    None => self.read_dict(o, d, depth, base, plain.then_some(head)),
                };
            }
            #[cfg(Py_3_11)]
            if inline_replayed.is_some() {
                replayed = inline_replayed;
            }
            self.ascend(obj, outer);
            if let Some(node) = replayed {
                self.cache.attrs.truncate(base);
                return node;
            }
            if self.cache.attrs.len() == base && !has_base_value && !info.exception {
                return self.opaque(o, String::new());
            }
            let addr = o as usize;
            let attrs = &self.cache.attrs[base..];
            if let Some(prev) = self.cache.last.get(addr) {
                if let Some(Node::Object(p)) = self.store.node(prev.0) {
                    if p.obj == obj && p.ty == ty && *p.attrs == *attrs {
                        self.cache.attrs.truncate(base);
                        self.memo_node(addr, prev);
                        return prev;
                    }
                }
            }
            let node = Node::Object(Box::new(ObjectNode { ty, obj, attrs: attrs.into() }));
            self.cache.attrs.truncate(base);
            let r = self.push_at(addr, node);
            self.memo_node(addr, r);
            r
        }
    }

    /// Pushes instance `o`'s attributes read from its dict `d`; with `head` (a plain instance),
    /// through its memo (`memo`): `Some(node)` when the record is the last one.
    unsafe fn read_dict(
        &mut self,
        o: *mut ffi::PyObject,
        d: *mut ffi::PyObject,
        depth: u32,
        base: usize,
        head: Option<memo::Head>,
    ) -> Option<ValRef> {
        // SAFETY: this fn's contract (GIL held, `o` and its dict `d` live); iterated with
        // PyDict_Next, which runs no Python code, and items are borrowed while it does not.
        unsafe {
            let mut open = head.map(|h| self.memo_begin(o, &h));
            let mut complete = false;
            let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            while self.cache.attrs.len() - base < self.budget.max_length && *self.left > 0 {
                if ffi::PyDict_Next(d, &mut pos, &mut k, &mut v) == 0 {
                    complete = true;
                    break;
                }
                if ffi::PyUnicode_Check(k) == 0 {
                    continue;
                }
                let ke = self.attr_name(k);
                let ve = match &mut open {
                    Some(open) => self.memo_field(open, v, ke, depth - 1),
                    None => self.enc(v, depth - 1),
                };
                self.cache.attrs.push((ke, ve));
            }
            match (head, open) {
                (Some(head), Some(open)) => self.memo_end(o, head, open, complete, 0),
                _ => None,
            }
        }
    }

    /// The builtin value under an int, str, float, bytes or bytearray subclass instance.
    unsafe fn base_value(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live instance of a builtin value type's
        // subclass, per the flags checked).
        unsafe {
            let flags = (*ffi::Py_TYPE(o)).tp_flags;
            let node = if flags & ffi::Py_TPFLAGS_UNICODE_SUBCLASS != 0 {
                let mut text = String::new();
                let len = read_str(o, self.budget.max_string, &mut text);
                if (text.chars().count() as u64) < len {
                    Node::StrCut(Box::new((text.into(), len)))
                } else {
                    Node::Str(text.into())
                }
            } else if flags & ffi::Py_TPFLAGS_LONG_SUBCLASS != 0 {
                let mut overflow = 0;
                let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
                if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                    ffi::PyErr_Clear();
                    Node::BigInt(format!("<int of {} bits>", _PyLong_NumBits(o)).into())
                } else if let Some(r) = ValRef::small_int(v) {
                    return r;
                } else {
                    Node::Int(v)
                }
            } else if ffi::PyFloat_Check(o) != 0 {
                Node::Float(ffi::PyFloat_AS_DOUBLE(o))
            } else if flags & ffi::Py_TPFLAGS_BYTES_SUBCLASS != 0 {
                let n = ffi::Py_SIZE(o).max(0) as usize;
                Node::Bytes(
                    std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(o).cast::<u8>(), n.min(self.budget.max_string))
                        .into(),
                )
            } else {
                let n = ffi::PyByteArray_GET_SIZE(o) as usize;
                let data = std::slice::from_raw_parts(
                    ffi::PyByteArray_AS_STRING(o).cast::<u8>(),
                    n.min(self.budget.max_string),
                );
                if n > self.budget.max_string {
                    Node::BytesCut(Box::new((data.into(), n as u64)))
                } else {
                    Node::Bytes(data.into())
                }
            };
            self.store.push(node).unwrap_or(ValRef::ABSENT)
        }
    }

    /// Object members (`__slots__` and C struct members) of every type in `tp`'s MRO that are
    /// the value: their interned names and offsets (what the member descriptors would read).
    unsafe fn member_list(&mut self, tp: *mut ffi::PyTypeObject) -> Vec<(u32, isize)> {
        // SAFETY: this fn's contract: `tp` is a live type; its MRO is a tuple of live types and
        // each type's member table ends with a null name.
        unsafe {
            let mut out = Vec::new();
            let mro = (*tp).tp_mro;
            if mro.is_null() || ffi::PyTuple_Check(mro) == 0 {
                return out;
            }
            for i in 0..ffi::PyTuple_GET_SIZE(mro) {
                let t = ffi::PyTuple_GET_ITEM(mro, i).cast::<ffi::PyTypeObject>();
                // A builtin type's members (a generator's gi_frame, a frame's f_locals ...) are
                // its machinery, different in every Python version: only user classes' slots and
                // exceptions' fields (StopIteration.value, OSError.errno ...) are the value.
                if t == &raw mut ffi::PyBaseObject_Type
                    || ((*t).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0
                        && (*t).tp_flags & ffi::Py_TPFLAGS_BASE_EXC_SUBCLASS == 0)
                {
                    continue;
                }
                let mut m = (*t).tp_members;
                while !m.is_null() && !(*m).name.is_null() {
                    let def = *m;
                    m = m.add(1);
                    // T_OBJECT (6) and Py_T_OBJECT_EX (16): object pointers.
                    if def.type_code != 6 && def.type_code != ffi::Py_T_OBJECT_EX {
                        continue;
                    }
                    let name = std::ffi::CStr::from_ptr(def.name).to_string_lossy();
                    if name.starts_with("__") && name.ends_with("__") {
                        continue;
                    }
                    out.push((self.store.intern(&name), def.offset));
                }
            }
            out
        }
    }

    /// Reads object `o`'s members (`member_list` of its type) at their offsets.
    unsafe fn members(&mut self, o: *mut ffi::PyObject, list: u32, depth: u32) {
        // SAFETY: this fn's contract (GIL held, `o` live); each member is read at an offset inside
        // `o`'s type's basic size, from the member list of `o`'s own type.
        unsafe {
            let Some(k) = list.checked_sub(1) else { return };
            let mut i = 0;
            while let Some(&(name, offset)) = self.cache.member_lists.get(k as usize).and_then(|l| l.get(i)) {
                i += 1;
                let p = *(o.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>());
                if p.is_null() || *self.left == 0 {
                    continue;
                }
                let v = self.enc(p, depth - 1);
                self.cache.attrs.push((name, v));
            }
        }
    }

    /// Class `o` as a value: the node made for it last while its version tag is the same
    /// (`EncodeCache::classes`), which spares `qualified_name` its allocations and dict lookup.
    unsafe fn class(&mut self, o: *mut ffi::PyObject) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` a live class).
        unsafe {
            let addr = o as usize;
            let key = type_key(o.cast());
            if key != 0 {
                if let Some((k, r)) = self.cache.classes.get(addr) {
                    if k == key && self.cache.last.get(addr) == Some(r) {
                        return r;
                    }
                }
            }
            let r = self.opaque(o, qualified_name(o.cast()));
            if key != 0 && r != ValRef::ABSENT {
                self.cache.classes.insert(addr, (key, r));
            }
            r
        }
    }

    unsafe fn opaque(&mut self, o: *mut ffi::PyObject, text: String) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `o` live).
        unsafe {
            let obj = self.identity(o);
            let ty = self.type_name(ffi::Py_TYPE(o));
            // The last node at its address when it is this one, compared before a node is built
            // (a box made to be compared and dropped: pyflate's file object at every record).
            if let Some(prev) = self.cache.last.get(o as usize) {
                if matches!(self.store.node(prev.0), Some(Node::Opaque(p)) if p.ty == ty && p.obj == obj && *p.text == *text)
                {
                    return prev;
                }
            }
            self.push_at(o as usize, Node::Opaque(Box::new(OpaqueNode { ty, obj, text: text.into() })))
        }
    }

    /// At the object-depth limit, a reference to instance `o` (identity `obj`) when this
    /// timeline holds a state of it already; `None`: encode its contents (above the limit, or
    /// its first state). An earlier state missed in the direct-mapped cache only costs an
    /// encoding.
    fn known_at_limit(
        &mut self,
        o: *mut ffi::PyObject,
        ty: u32,
        obj: ObjId,
        len: u64,
        instance: bool,
    ) -> Option<CutNode> {
        if obj == 0 {
            return None;
        }
        // A cycle back to an object being encoded: a reference (shown as that object, once).
        if self.cache.path.contains(&(o as usize)) {
            return Some(CutNode { ty, obj, len });
        }
        // A container is encoded with the object that holds it (within the depth budget).
        if self.obj_left > 0 || !instance {
            return None;
        }
        let prev = self.cache.last.get(o as usize)?;
        // An object recorded while it had no attributes yet (`self` entering `__init__`) has an
        // empty state: one with contents is worth encoding instead.
        let known = self.cache.known.get(o as usize) == Some((prev, obj)) || {
            let state = self
                .store
                .node(prev.0)
                .is_some_and(|n| n.obj() == obj && !matches!(n, Node::Cut(_) | Node::Ref(_) | Node::Opaque(_)));
            if state {
                self.cache.known.insert(o as usize, (prev, obj));
            }
            state
        };
        if known {
            self.has_dep = true;
            self.last_known = Some((o as usize, obj));
        }
        known.then_some(CutNode { ty, obj, len })
    }

    /// Entering the contents of object `o` with identity `obj`: `o` on the path, and for an
    /// instance (not a container: a list held by an object is shown as part of it) one object
    /// level less below it. Returns the level to restore after (`ascend`).
    fn descend(&mut self, o: *mut ffi::PyObject, obj: ObjId, instance: bool) -> u32 {
        let outer = self.obj_left;
        if obj != 0 {
            if instance {
                self.obj_left = outer.saturating_sub(1);
            }
            self.cache.path.push(o as usize);
        }
        outer
    }

    fn ascend(&mut self, obj: ObjId, outer: u32) {
        if obj != 0 {
            self.cache.path.pop();
        }
        self.obj_left = outer;
    }

    /// A reference node for the object at `o`, shared with the last one made there when equal.
    /// A reference that is a whole value (a receiver's, or any at `object_depth` 0) is resolved
    /// as of its own node, the objects its state refers to too: an older one is reused only
    /// while nothing was stored or written after it.
    fn cut(&mut self, o: *mut ffi::PyObject, cut: CutNode) -> ValRef {
        let addr = o as usize;
        if let Some((prev, c)) = self.cache.cuts.get(addr) {
            let fresh = !self.cache.path.is_empty()
                || (prev.0 as usize + 1 == self.store.len() && self.cache.last_write <= prev.0);
            if c == cut && fresh {
                return prev;
            }
        }
        match self.store.push(cut.into_node()) {
            Some(r) => {
                self.cache.cuts.insert(addr, (r, cut));
                r
            }
            None => ValRef::ABSENT,
        }
    }

    /// A user-registered encoder's result stands for `o` (the user's own code, by request).
    unsafe fn registered_encoder(&mut self, f: *mut ffi::PyObject, o: *mut ffi::PyObject, depth: u32) -> ValRef {
        // SAFETY: this fn's contract (GIL held, `f` and `o` live). It calls the user's encoder
        // (Python code) with recording off on this thread; the result is owned and released here.
        unsafe {
            let Some(call) = CALL_UNRECORDED.get() else {
                return self
                    .opaque(o, "<its registered snapshot function was not called: squall is not initialised>".into());
            };
            let r = call(f, o);
            if r.is_null() {
                ffi::PyErr_Clear();
                return self.opaque(o, "<its registered snapshot function raised>".into());
            }
            let v = if r == o {
                let info = self.type_info(ffi::Py_TYPE(o));
                self.object(o, info, depth, false)
            } else {
                self.enc(r, depth)
            };
            ffi::Py_DecRef(r);
            v
        }
    }
}

/// True when delta `d` holds exactly `items` (never when its base left memory: what it held
/// there is not known).
fn delta_equals(store: &ValueStore, d: &SeqDeltaNode, items: &[ValRef]) -> bool {
    d.n_items as usize == items.len() && !store.is_evicted(d.base) && store.delta_items(d).eq(items.iter().copied())
}

/// `items` as changes against full state `base`, when fewer than a quarter of them differ (a
/// list appended to, a few items replaced); `None`: store them in full.
fn delta(
    store: &ValueStore,
    base: u32,
    kind: SeqKind,
    ty: u32,
    obj: ObjId,
    len: u64,
    items: &[ValRef],
) -> Option<SeqDeltaNode> {
    let Some(Node::Seq(b)) = store.node(base) else { return None };
    // Each change costs 8 bytes against an item's 4: worth it below a quarter of the items.
    let most = items.len() / 4;
    if most == 0 {
        return None;
    }
    let mut changes = Vec::new();
    for (i, &v) in items.iter().enumerate() {
        if b.items.get(i) != Some(&v) {
            if changes.len() == most {
                return None;
            }
            changes.push((i as u32, v));
        }
    }
    Some(SeqDeltaNode { kind, ty, obj, len, base, n_items: items.len() as u32, changes: changes.into() })
}

fn same_scalar(a: &Node, b: &Node) -> bool {
    match (a, b) {
        // By bits: NaN is the same NaN, and -0.0 is not 0.0.
        (Node::Float(x), Node::Float(y)) => x.to_bits() == y.to_bits(),
        (Node::Complex(x), Node::Complex(y)) => x.0.to_bits() == y.0.to_bits() && x.1.to_bits() == y.1.to_bits(),
        _ => a == b,
    }
}

/// `collections.deque` or the deque base of `tp`.
unsafe fn deque_base(tp: *mut ffi::PyTypeObject) -> Option<*mut ffi::PyTypeObject> {
    let deque = deque_type();
    if deque.is_null() {
        return None;
    }
    let mut t = tp;
    while !t.is_null() {
        if t == deque {
            return Some(deque);
        }
        // SAFETY: `t` is a live type or null, and each type's `tp_base` is a live type or null.
        t = unsafe { (*t).tp_base };
    }
    None
}

/// An iterator over `o`'s storage made by `base`'s own `tp_iter` (C code), whatever `o`'s
/// class overrides.
unsafe fn base_iter(base: *mut ffi::PyTypeObject, o: *mut ffi::PyObject) -> Option<Items> {
    // SAFETY: this fn's contract: `base` is a C base type of live `o`; its `tp_iter` is C code that
    // reads `o`'s storage.
    unsafe {
        let make = (*base).tp_iter?;
        let it = make(o);
        if it.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        match (*ffi::Py_TYPE(it)).tp_iternext {
            Some(next) => Some(Items::Iter(next, it)),
            None => {
                ffi::Py_DecRef(it);
                None
            }
        }
    }
}

/// The length of a set or deque, from its storage.
unsafe fn obj_len(o: *mut ffi::PyObject) -> u64 {
    // SAFETY: this fn's contract: `o` is a live set or deque, read by its exact layout.
    unsafe {
        if ffi::PyAnySet_Check(o) != 0 {
            return (*o.cast::<ffi::PySetObject>()).used.max(0) as u64;
        }
        // A deque's `ob_size` is its length (it is a PyVarObject).
        ffi::Py_SIZE(o).max(0) as u64
    }
}

/// Up to `max` characters of str `o` into `out` (cleared first); its length in characters.
unsafe fn read_str(o: *mut ffi::PyObject, max: usize, out: &mut String) -> u64 {
    // SAFETY: this fn's contract (GIL held, `o` a live str): up to `max` characters are read within
    // its length.
    unsafe {
        out.clear();
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(o) == 0 {
            return 0;
        }
        let len = ffi::PyUnicode_GET_LENGTH(o).max(0) as usize;
        let n = len.min(max);
        let data = ffi::PyUnicode_DATA(o);
        match ffi::PyUnicode_KIND(o) {
            ffi::PyUnicode_1BYTE_KIND => {
                let b = std::slice::from_raw_parts(data.cast::<u8>(), n);
                if ffi::PyUnicode_IS_ASCII(o) != 0 {
                    out.push_str(std::str::from_utf8_unchecked(b));
                } else {
                    out.extend(b.iter().map(|&c| c as char));
                }
            }
            ffi::PyUnicode_2BYTE_KIND => {
                let b = std::slice::from_raw_parts(data.cast::<u16>(), n);
                out.extend(b.iter().map(|&c| char::from_u32(u32::from(c)).unwrap_or('\u{fffd}')));
            }
            _ => {
                let b = std::slice::from_raw_parts(data.cast::<u32>(), n);
                out.extend(b.iter().map(|&c| char::from_u32(c).unwrap_or('\u{fffd}')));
            }
        }
        len as u64
    }
}

/// The text of a str field (a name), read directly; "" when it is not a str.
unsafe fn str_field(s: *mut ffi::PyObject) -> String {
    // SAFETY: this fn's contract: `s` is null or live, and is read as a str only after the check.
    unsafe {
        if s.is_null() || ffi::PyUnicode_Check(s) == 0 {
            return String::new();
        }
        let mut out = String::new();
        read_str(s, 10_000, &mut out);
        out
    }
}

/// `module.QualName` of a type, read from the type itself (`__module__` in its dict for
/// classes defined in Python, `tp_name` for C types), as the program would spell it.
pub unsafe fn qualified_name(tp: *mut ffi::PyTypeObject) -> String {
    // SAFETY: this fn's contract: `tp` is a live type; a heap type's dict and qualname are read,
    // not called.
    unsafe {
        if (*tp).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE != 0 {
            let ht = tp.cast::<ffi::PyHeapTypeObject>();
            let qual = str_field((*ht).ht_qualname);
            let dict = (*tp).tp_dict;
            let module = if dict.is_null() {
                String::new()
            } else {
                let m = ffi::PyDict_GetItemString(dict, c"__module__".as_ptr());
                str_field(m)
            };
            return match module.as_str() {
                "" | "builtins" => qual,
                m => format!("{m}.{qual}"),
            };
        }
        std::ffi::CStr::from_ptr((*tp).tp_name).to_string_lossy().into_owned()
    }
}
