//! The value store: what a recording keeps of the program's values, encoded when they were
//! recorded (DESIGN.md, "Values": a recording holds nothing of the program).
//!
//! A store is an append-only table of [`Node`]s. A node's children are [`ValRef`]s: inline
//! scalars, or slots of *earlier* nodes of the same store, so the nodes form a DAG in which
//! every edge points backwards (no cycle, and a reader can check each edge). An unchanged value
//! recorded again points at its earlier node instead of being stored twice, and a changed
//! container shares its unchanged children with its earlier states.
//!
//! Type and attribute names are interned per store ([`NameId`]). Objects carry a recording-wide
//! identity ([`ObjId`], 0 for values without one: strings, numbers, tuples, frozensets).

use std::collections::HashMap;

use crate::snapshot::{SeqKind, Snap};
use crate::thin::{ThinBytes, ThinStr};
use crate::value::{Decoded, ValRef, Value};

/// The attribute under which a version 1 file's repr of an object is kept.
const LEGACY_REPR: &str = "\u{0}repr";

/// A recording-wide object identity; 0: the value has none (it is compared by content).
pub type ObjId = u64;
/// An index into a store's name table.
pub type NameId = u32;

/// One value's encoding. 16 bytes: every variant's payload is one word (a thin pointer for
/// strings and bytes, `crate::thin`), since the store holds one per recorded non-inline value.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Float(f64),
    /// An integer outside the inline range of a [`ValRef`].
    Int(i64),
    /// An integer outside `i64`, in decimal (or a description when too long to convert).
    BigInt(ThinStr),
    Complex(Box<(f64, f64)>),
    Str(ThinStr),
    /// A string cut by the budget: its first characters and its full length in characters.
    StrCut(Box<(Box<str>, u64)>),
    Bytes(ThinBytes),
    /// Bytes cut by the budget: the first ones and the full length.
    BytesCut(Box<(Box<[u8]>, u64)>),
    /// Lists, tuples, sets, frozensets, deques, bytearrays and their subclasses.
    Seq(Box<SeqNode>),
    /// A later state of a sequence stored as its changes against an earlier full state `base`
    /// (a [`Node::Seq`] of the same object): a list appended to at every step costs its change,
    /// not a copy.
    SeqDelta(Box<SeqDeltaNode>),
    /// Dicts and their subclasses.
    Map(Box<MapNode>),
    /// An object read from its own storage: instance dict, slots, an exception's args.
    Object(Box<ObjectNode>),
    /// An object known by its type, identity and a name (functions, classes, modules, C objects).
    Opaque(Box<OpaqueNode>),
    /// A value beyond the depth or item budget: only its type, identity and size are known.
    Cut(Box<CutNode>),
    /// A `Cut` of no size whose type and identity fit one word (`RefNode`): what most
    /// references to instances are (a receiver's, an expression's), stored without a box.
    Ref(RefNode),
    /// The value of node `.0` (never itself a `Same`), recorded again at this node's moment:
    /// the references inside it resolve to states stored before this node, not before that
    /// one. The recorder reuses an unchanged value's node and, when the value refers to other
    /// objects' states, names it through one of these rather than prove that none of those
    /// objects was recorded or written since (format version 6).
    Same(u32),
}

const _: () = assert!(std::mem::size_of::<Node>() == 16);

/// What the system allocator holds for a request of `n` bytes (glibc's malloc: an 8-byte header,
/// rounded up to 16, 32 at least; nothing for an empty box, which allocates nothing). The memory
/// limit counts this, not the bytes asked for: small nodes' boxes cost up to twice their size, and
/// counting only the request let a recording's RSS pass its limit (docs/status.md, pyparsing).
pub fn allocated(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        ((n + 8 + 15) & !15).max(32)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SeqNode {
    pub kind: SeqKind,
    pub ty: NameId,
    pub obj: ObjId,
    /// The container's length; `items` holds the first ones (fewer when the budget cut it).
    pub len: u64,
    pub items: SeqItems,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SeqDeltaNode {
    pub kind: SeqKind,
    pub ty: NameId,
    pub obj: ObjId,
    pub len: u64,
    /// The slot of the [`Node::Seq`] this state differs from (always a full one: one step to
    /// resolve).
    pub base: u32,
    /// How many items this state holds (`len` or fewer when the budget cut it).
    pub n_items: u32,
    /// (index, item) where this state differs from `base`, by increasing index; every other
    /// index below `n_items` is `base`'s item there.
    pub changes: Box<[(u32, ValRef)]>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MapNode {
    pub ty: NameId,
    pub obj: ObjId,
    pub len: u64,
    pub entries: Box<[(ValRef, ValRef)]>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ObjectNode {
    pub ty: NameId,
    pub obj: ObjId,
    pub attrs: Attrs,
}

/// A sequence node's items: up to four in the node's own block (a short row, a pair, a point's
/// three coordinates: one allocation a node instead of two, the second of which cost as much
/// as the rest of recording the node: docs/benchmarks.md, "Twenty-fourth session").
pub type SeqItems = smallvec::SmallVec<[ValRef; 4]>;

/// An object node's attributes: up to three in the node's own block, as [`SeqItems`].
pub type Attrs = smallvec::SmallVec<[(NameId, ValRef); 3]>;

/// Heap bytes a small vector holds outside its node (none while its items are inline).
fn spilled_bytes<A: smallvec::Array>(v: &smallvec::SmallVec<A>) -> u64 {
    if v.spilled() {
        allocated((v.capacity() * std::mem::size_of::<A::Item>()) as u64)
    } else {
        0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct OpaqueNode {
    pub ty: NameId,
    pub obj: ObjId,
    /// What names the object (a function's or class's qualified name, a module's name), or "".
    pub text: Box<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutNode {
    pub ty: NameId,
    pub obj: ObjId,
    pub len: u64,
}

/// A [`CutNode`] of length 0 packed in a word: the type's name id in the top 24 bits, the
/// identity in the low 40. A reference was a 16-byte node and a 32-byte allocation each, at
/// every receiver and expression of a known instance (docs/benchmarks.md, "Twelfth session").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefNode(u64);

impl RefNode {
    const OBJ_BITS: u32 = 40;

    pub fn ty(self) -> NameId {
        (self.0 >> Self::OBJ_BITS) as NameId
    }

    pub fn obj(self) -> ObjId {
        self.0 & ((1 << Self::OBJ_BITS) - 1)
    }
}

impl CutNode {
    /// The node for this reference: packed when it fits one word.
    pub fn into_node(self) -> Node {
        if self.len == 0 && self.ty < (1 << (64 - RefNode::OBJ_BITS)) && self.obj < (1 << RefNode::OBJ_BITS) {
            Node::Ref(RefNode(u64::from(self.ty) << RefNode::OBJ_BITS | self.obj))
        } else {
            Node::Cut(Box::new(self))
        }
    }
}

impl Node {
    /// The identity of the object this node is a state of (0: none).
    pub fn obj(&self) -> ObjId {
        match self {
            Node::Seq(n) => n.obj,
            Node::SeqDelta(n) => n.obj,
            Node::Map(n) => n.obj,
            Node::Object(n) => n.obj,
            Node::Opaque(n) => n.obj,
            Node::Cut(n) => n.obj,
            Node::Ref(r) => r.obj(),
            _ => 0,
        }
    }

    /// Heap bytes this node owns, beyond its slot in the table (what the memory limit counts):
    /// each of its allocations as the system allocator takes it ([`allocated`]).
    pub fn heap_bytes(&self) -> u64 {
        let v = std::mem::size_of::<ValRef>() as u64;
        let boxed = |size: usize| allocated(size as u64);
        match self {
            Node::Float(_) | Node::Int(_) => 0,
            Node::BigInt(s) | Node::Str(s) => allocated(s.heap_bytes()),
            Node::Complex(_) => allocated(16),
            Node::StrCut(b) => allocated(24) + allocated(b.0.len() as u64),
            Node::Bytes(b) => allocated(b.heap_bytes()),
            Node::BytesCut(b) => allocated(24) + allocated(b.0.len() as u64),
            Node::Seq(n) => boxed(std::mem::size_of::<SeqNode>()) + spilled_bytes(&n.items),
            Node::SeqDelta(n) => boxed(std::mem::size_of::<SeqDeltaNode>()) + allocated(8 * n.changes.len() as u64),
            Node::Map(n) => boxed(std::mem::size_of::<MapNode>()) + allocated(2 * v * n.entries.len() as u64),
            Node::Object(n) => boxed(std::mem::size_of::<ObjectNode>()) + spilled_bytes(&n.attrs),
            Node::Opaque(n) => boxed(std::mem::size_of::<OpaqueNode>()) + allocated(n.text.len() as u64),
            Node::Cut(_) => boxed(std::mem::size_of::<CutNode>()),
            Node::Ref(_) | Node::Same(_) => 0,
        }
    }

    /// A reference's type, identity and length (`Cut` or `Ref`).
    pub fn cut(&self) -> Option<CutNode> {
        match self {
            Node::Cut(c) => Some(**c),
            Node::Ref(r) => Some(CutNode { ty: r.ty(), obj: r.obj(), len: 0 }),
            _ => None,
        }
    }

    /// Every value this node refers to, in order.
    pub fn children(&self, mut f: impl FnMut(ValRef)) {
        match self {
            Node::Seq(n) => n.items.iter().copied().for_each(f),
            Node::SeqDelta(n) => {
                f(ValRef(n.base));
                n.changes.iter().for_each(|&(_, v)| f(v))
            }
            Node::Map(n) => n.entries.iter().for_each(|&(k, v)| {
                f(k);
                f(v)
            }),
            Node::Object(n) => n.attrs.iter().for_each(|&(_, v)| f(v)),
            Node::Same(t) => f(ValRef(*t)),
            _ => {}
        }
    }
}

/// How much of a stored value [`ValueStore::to_snap`] expands (a DAG shared by many entries can
/// be large; a tree made of it for display is cut).
#[derive(Clone, Copy, Debug)]
pub struct ExpandBudget {
    pub max_depth: u32,
    pub max_nodes: usize,
}

impl ExpandBudget {
    pub const FULL: ExpandBudget = ExpandBudget { max_depth: 64, max_nodes: 100_000 };
}

/// One timeline's values.
#[derive(Debug, Default)]
pub struct ValueStore {
    /// The nodes held in memory: `nodes[i]` is slot `first + i`.
    nodes: Vec<Node>,
    /// Slots below this left memory (`evict_below`: saved to the recording file); 0 for a store
    /// read from a file.
    first: usize,
    names: Vec<Box<str>>,
    /// foldhash, not SipHash: every recorded attribute and type name is looked up here.
    name_ids: HashMap<Box<str>, NameId, foldhash::fast::FixedState>,
    heap_bytes: u64,
    names_bytes: u64,
    /// Files of format version 1 numbered values per entry, not per node: their entries' slot
    /// `i` is `legacy[i]` (empty for stores recorded since).
    legacy: Vec<ValRef>,
    /// Each object's states, built on first use and extended as the store grows (queries run
    /// while the live store is appended to).
    states: std::sync::Mutex<StateIndex>,
    /// The writes of this store's timeline by target, fed by `writes::sync_writes` (the store
    /// does not see the timeline): applied to an earlier state shown for a reference.
    writes: std::sync::Mutex<WriteLog>,
    /// What `states` and `writes` hold, built by queries (kept here so that the memory limit
    /// reads it without their locks).
    states_bytes: std::sync::atomic::AtomicU64,
    writes_bytes: std::sync::atomic::AtomicU64,
    /// Which entry recorded each node, coarsely (`crate::earlier_idx`, fed from the timeline as
    /// the writes are): the entry an earlier state shown for a reference is from.
    reach: std::sync::Mutex<EntryReach>,
    reach_bytes: std::sync::atomic::AtomicU64,
}

/// `NodeEntries`' running maximum (`crate::history`), kept only at the end of each block of
/// `crate::earlier_idx::BLOCK` entries: a node's entry is found by a search over the blocks and
/// a scan of one block of the timeline (a word per entry for a whole long timeline was 180 MB).
#[derive(Debug, Default)]
pub struct EntryReach {
    /// The first entry indexed (the timeline's first held in memory then).
    pub first_idx: usize,
    /// Entries below this are folded into `top` (and `blocks`, for the whole blocks).
    pub indexed: usize,
    /// One past the highest slot named by the entries indexed.
    pub top: u32,
    /// `top` at the end of each whole block from `first_idx`.
    pub blocks: Vec<u32>,
}

/// What a write changed: an attribute by name, or an item by its key as recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteKey {
    Attr(Box<str>),
    Item(Snap),
}

/// One write to an object: its key, the new value (`None`: deleted) and the store's length at
/// the write (nodes below it were stored before it).
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedWrite {
    pub key: WriteKey,
    pub value: Option<ValRef>,
    pub at: u32,
    /// The write entry's idx in its timeline.
    pub idx: u32,
}

#[derive(Debug, Default)]
struct WriteLog {
    /// The timeline entries up to this idx are logged.
    synced_to: usize,
    by_obj: HashMap<ObjId, Vec<LoggedWrite>, foldhash::fast::FixedState>,
    /// What the lists of `by_obj` hold (their capacities).
    list_bytes: usize,
}

/// The slots of every state of each object (nodes that are not `Cut`), in slot order, for the
/// nodes `0..indexed`.
#[derive(Debug, Default)]
struct StateIndex {
    indexed: usize,
    by_obj: HashMap<ObjId, Vec<u32>, foldhash::fast::FixedState>,
    /// The slots of the `Node::Same`s naming each object's states, in slot order: the object
    /// recorded again unchanged, its references as of then (`ValueStore::latest_before`).
    again: HashMap<ObjId, Vec<u32>, foldhash::fast::FixedState>,
    /// What the lists of `by_obj` hold (their capacities).
    list_bytes: usize,
}

/// The newest of `slots` (in slot order) below `bound`.
fn newest_before(slots: &[u32], bound: u32) -> Option<u32> {
    slots.partition_point(|&s| s < bound).checked_sub(1).map(|k| slots[k])
}

/// A value slot that holds no value (a reader's answer, never an error).
fn not_recorded(slot: u32) -> Snap {
    Snap::Opaque { type_name: "<missing>".into(), id: 0, repr: format!("<value #{slot} not recorded>") }
}

/// A value slot whose node left memory once saved (`ValueStore::evict_below`).
fn in_file(slot: u32) -> Snap {
    Snap::Opaque {
        type_name: IN_FILE.into(),
        id: 0,
        repr: format!("<value #{slot}: in the recording file, no longer in memory>"),
    }
}

/// The type name of a value shown for a node that left memory (`ValueStore::evict_below`).
pub const IN_FILE: &str = "<in the file>";

/// What a map of lists by object holds: its table (a control byte per bucket) and its lists.
fn map_bytes<V>(map: &HashMap<ObjId, Vec<V>, foldhash::fast::FixedState>, list_bytes: usize) -> u64 {
    (map.capacity() * (std::mem::size_of::<(ObjId, Vec<V>)>() + 1) + list_bytes) as u64
}

/// Where an expansion is: the objects being expanded around the current value, and the slot
/// the expanded value was stored at (references resolve to states before it).
struct Walk {
    objs: Vec<ObjId>,
    bound: u32,
    /// Inside an earlier state (a reference's): a container there is shown as its newest state
    /// before `bound` (`newer_container`).
    earlier: bool,
    /// The container state `newer_container` resolved last, rendered as it is.
    resolved: u32,
    /// References are resolved to earlier states (else shown as they are: `to_snap_unresolved`).
    resolve: bool,
}

/// How many levels below a reference its earlier state is expanded (each state can refer to
/// further objects: without a bound one value would expand into everything recorded).
const EARLIER_DEPTH: u32 = 4;

/// Why stored data is not a valid store (a damaged or foreign file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadStore(pub String);

impl ValueStore {
    pub fn new() -> ValueStore {
        ValueStore::default()
    }

    /// One past the last slot (evicted slots included).
    pub fn len(&self) -> usize {
        self.first + self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first slot held in memory: slots below it were saved and left (`evict_below`).
    pub fn first_held(&self) -> usize {
        self.first
    }

    /// Whether slot `slot` left memory (it is in the recording file).
    pub fn is_evicted(&self, slot: u32) -> bool {
        (slot as usize) < self.first
    }

    pub fn names_len(&self) -> usize {
        self.names.len()
    }

    /// The nodes held in memory, from slot [`ValueStore::first_held`] on (all of them unless
    /// saved ones were evicted).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node at slot `slot` as stored (a `Same` too), if held in memory.
    fn at(&self, slot: u32) -> Option<&Node> {
        self.nodes.get((slot as usize).checked_sub(self.first)?)
    }

    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// Node `slot`, the node it names when it is a [`Node::Same`].
    pub fn node(&self, slot: u32) -> Option<&Node> {
        match self.at(slot)? {
            Node::Same(t) => self.at(*t),
            n => Some(n),
        }
    }

    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id as usize).map_or("?", |s| s)
    }

    /// Memory the store holds: its tables and what each node owns.
    pub fn bytes(&self) -> u64 {
        (self.nodes.capacity() * std::mem::size_of::<Node>()) as u64 + self.heap_bytes + self.names_bytes
    }

    /// The id of `name`, interned.
    pub fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as NameId;
        self.names_bytes += 2 * name.len() as u64 + 48;
        self.names.push(name.into());
        self.name_ids.insert(name.into(), id);
        id
    }

    /// Appends `node`; `None` when the table is full (the value is then not recorded).
    pub fn push(&mut self, node: Node) -> Option<ValRef> {
        let r = ValRef::slot(self.len() as u32)?;
        self.heap_bytes += node.heap_bytes();
        // Past 16 MB grown by steps, not doubled: what the memory limit counts stays close to
        // what is used (and the new room is faulted in ahead: `grow`).
        crate::grow::push(&mut self.nodes, node);
        Some(r)
    }

    /// Drops the nodes below slot `slot` from memory (a saving recorder's, once they are in the
    /// file): [`ValueStore::node`] answers `None` for them and a tree shows them as saved to
    /// the file (`in_file`). Later nodes may still name them (a delta's base, an unchanged
    /// value's node reused): the file has them. The table keeps its capacity, so the nodes
    /// stored next reuse its pages, as the freed contents' memory is reused by theirs.
    pub fn evict_below(&mut self, slot: usize) {
        let n = slot.min(self.len()).saturating_sub(self.first);
        if n == 0 {
            return;
        }
        let freed: u64 = self.nodes[..n].iter().map(Node::heap_bytes).sum();
        self.nodes.drain(..n);
        self.heap_bytes -= freed;
        self.first += n;
    }

    /// Appends nodes and names read from a file (`first_*`: where they start, which must be the
    /// current ends), checking that every child and name points at something earlier.
    pub fn extend_checked(
        &mut self,
        first_name: u64,
        names: Vec<String>,
        first_node: u64,
        nodes: Vec<Node>,
    ) -> Result<(), BadStore> {
        if first_name != self.names.len() as u64 || first_node != self.len() as u64 {
            return Err(BadStore(format!(
                "values chunk continues at name {first_name} / node {first_node}, but {} / {} were read",
                self.names.len(),
                self.len()
            )));
        }
        for n in names {
            let id = self.names.len() as NameId;
            self.names_bytes += 2 * n.len() as u64 + 48;
            self.name_ids.entry(n.as_str().into()).or_insert(id);
            self.names.push(n.into());
        }
        for node in nodes {
            let here = self.len() as u32;
            let mut bad = None;
            node.children(|c| {
                if let Decoded::Slot(s) = c.decode() {
                    if s >= here {
                        bad = Some(s);
                    }
                }
            });
            if let Some(s) = bad {
                return Err(BadStore(format!("value node {here} refers to node {s}, which is not before it")));
            }
            if let Node::SeqDelta(d) = &node {
                self.check_delta(here, d)?;
            }
            if let Node::Same(t) = node {
                if matches!(self.at(t), Some(Node::Same(_))) {
                    return Err(BadStore(format!("value node {here} names node {t}, which names another")));
                }
            }
            let ty = match &node {
                Node::Seq(n) => Some(n.ty),
                Node::SeqDelta(n) => Some(n.ty),
                Node::Map(n) => Some(n.ty),
                Node::Object(n) => Some(n.ty),
                Node::Opaque(n) => Some(n.ty),
                Node::Cut(n) => Some(n.ty),
                Node::Ref(r) => Some(r.ty()),
                _ => None,
            };
            let attr_names = match &node {
                Node::Object(n) => n.attrs.iter().map(|a| a.0).max(),
                _ => None,
            };
            if ty.into_iter().chain(attr_names).any(|id| id as usize >= self.names.len()) {
                return Err(BadStore(format!("value node {here} names a type or attribute that is not in the file")));
            }
            self.push(node);
        }
        Ok(())
    }

    /// Checks a delta read from a file: its base is an earlier full sequence of the same object,
    /// and every item it names is in it or in its changes.
    fn check_delta(&self, here: u32, d: &SeqDeltaNode) -> Result<(), BadStore> {
        let bad = |why: &str| Err(BadStore(format!("value node {here} (a sequence's changes) {why}")));
        let Some(Node::Seq(b)) = self.at(d.base) else {
            return bad(&format!("names node {} as its base, which is not an earlier sequence", d.base));
        };
        if b.obj != d.obj {
            return bad("has a base of another object");
        }
        let mut next = 0u32;
        for &(i, _) in d.changes.iter() {
            if i < next || i >= d.n_items {
                return bad("lists its changes out of order or past its items");
            }
            if (next..i).any(|j| j as usize >= b.items.len()) {
                return bad("leaves an item out that its base does not have");
            }
            next = i + 1;
        }
        if (next..d.n_items).any(|j| j as usize >= b.items.len()) {
            return bad("leaves an item out that its base does not have");
        }
        Ok(())
    }

    /// The items of sequence state `slot` (a full node or a delta), in order.
    pub fn seq_items(&self, slot: u32) -> Vec<ValRef> {
        match self.at(slot) {
            Some(Node::Seq(n)) => n.items.to_vec(),
            Some(Node::SeqDelta(d)) => self.delta_items(d).collect(),
            _ => Vec::new(),
        }
    }

    /// The items delta `d` holds: its changes, and its base's items elsewhere (`ABSENT` where a
    /// damaged base has none, a file's deltas are checked when read, or where the base left
    /// memory: [`ValueStore::is_evicted`]).
    pub fn delta_items<'a>(&'a self, d: &'a SeqDeltaNode) -> impl Iterator<Item = ValRef> + 'a {
        let base: &[ValRef] = match self.at(d.base) {
            Some(Node::Seq(b)) => &b.items,
            _ => &[],
        };
        let mut changes = d.changes.iter().peekable();
        (0..d.n_items).map(move |i| match changes.peek() {
            Some(&&(j, v)) if j == i => {
                changes.next();
                v
            }
            _ => base.get(i as usize).copied().unwrap_or(ValRef::ABSENT),
        })
    }

    /// A tree of the value an entry's `v` names, as it was recorded, for display and for the
    /// Python API.
    pub fn to_snap(&self, v: impl Into<Value>, budget: ExpandBudget) -> Snap {
        let v = match v.into() {
            Value::Ref(r) => r,
            Value::Float(f) => return Snap::Float(f),
        };
        let mut left = budget.max_nodes;
        self.snap_at(self.entry_ref(v), budget.max_depth, &mut left)
    }

    /// A tree of node `slot` itself (not an entry's value: see `entry_ref`).
    pub fn node_to_snap(&self, slot: u32, budget: ExpandBudget) -> Snap {
        let mut left = budget.max_nodes;
        self.snap_at(ValRef(slot), budget.max_depth, &mut left)
    }

    /// The node an entry's value `v` names (the same ref, except in version 1 files).
    pub fn entry_ref(&self, v: ValRef) -> ValRef {
        match v.decode() {
            Decoded::Slot(s) if !self.legacy.is_empty() => {
                // A slot no store reaches: shown as not recorded.
                self.legacy.get(s as usize).copied().unwrap_or(ValRef(crate::value::MAX_SLOT - 1))
            }
            _ => v,
        }
    }

    /// Appends an old file's entry value (a whole tree): entry slot `legacy.len()` names it.
    pub fn push_legacy(&mut self, s: &Snap) {
        let r = self.push_snap(s);
        self.legacy.push(r);
    }

    /// How many entry values an old file's store holds.
    pub fn legacy_len(&self) -> usize {
        self.legacy.len()
    }

    /// Up to which timeline idx the writes are logged (`writes::sync_writes`).
    pub fn writes_synced_to(&self) -> usize {
        self.writes.lock().map_or(0, |w| w.synced_to)
    }

    /// Logs writes of the timeline's entries up to `upto`, oldest first.
    pub fn log_writes(&self, upto: usize, writes: impl IntoIterator<Item = (ObjId, LoggedWrite)>) {
        let Ok(mut log) = self.writes.lock() else { return };
        let log = &mut *log;
        for (obj, w) in writes {
            let list = log.by_obj.entry(obj).or_default();
            let before = list.capacity();
            list.push(w);
            log.list_bytes += (list.capacity() - before) * std::mem::size_of::<LoggedWrite>();
        }
        log.synced_to = log.synced_to.max(upto);
        self.writes_bytes.store(map_bytes(&log.by_obj, log.list_bytes), std::sync::atomic::Ordering::Relaxed);
    }

    /// Memory the query indexes of this store hold (each object's states and its writes, built
    /// on first use by queries): the memory limit counts them besides [`ValueStore::bytes`].
    pub fn index_bytes(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        self.states_bytes.load(Relaxed) + self.writes_bytes.load(Relaxed) + self.reach_bytes.load(Relaxed)
    }

    /// `f` over the entry index this store keeps for its timeline (`crate::earlier_idx`).
    pub fn with_entry_reach<T>(&self, f: impl FnOnce(&mut EntryReach) -> T) -> Option<T> {
        let mut reach = self.reach.lock().ok()?;
        let out = f(&mut reach);
        self.reach_bytes.store(reach.blocks.capacity() as u64 * 4, std::sync::atomic::Ordering::Relaxed);
        Some(out)
    }

    /// The writes to `obj` made after node `after` was stored and before node `before` was.
    fn writes_between(&self, obj: ObjId, after: u32, before: u32) -> Vec<LoggedWrite> {
        let Ok(log) = self.writes.lock() else { return Vec::new() };
        log.by_obj
            .get(&obj)
            .map_or_else(Vec::new, |ws| ws.iter().filter(|w| w.at > after && w.at <= before).cloned().collect())
    }

    /// The writes to `obj` made after node `after` was stored, by entries up to idx `upto`.
    fn writes_after(&self, obj: ObjId, after: u32, upto: u32) -> Vec<LoggedWrite> {
        let Ok(log) = self.writes.lock() else { return Vec::new() };
        log.by_obj
            .get(&obj)
            .map_or_else(Vec::new, |ws| ws.iter().filter(|w| w.at > after && w.idx <= upto).cloned().collect())
    }

    /// The writes (`writes::sync_writes` logs them) to the object of node `slot` made after that
    /// node was stored, by entries up to idx `upto`: how many, and the idx of the last.
    pub fn writes_since(&self, slot: u32, upto: u32) -> Option<(usize, u32)> {
        let obj = self.node(slot).map_or(0, Node::obj);
        if obj == 0 {
            return None;
        }
        let writes = self.writes_after(obj, slot, upto);
        writes.iter().map(|w| w.idx).max().map(|last| (writes.len(), last))
    }

    /// A tree of node `slot` (an object's state) with the writes made to that object after it,
    /// by entries up to idx `upto`, applied (see `writes_since`): the object as of `upto`, as
    /// far as the recording knows (code that is not instrumented may have changed it too).
    pub fn node_as_of(&self, slot: u32, upto: u32, budget: ExpandBudget) -> Snap {
        let mut left = budget.max_nodes;
        let mut path = Walk { objs: Vec::new(), bound: slot, earlier: false, resolved: u32::MAX, resolve: true };
        let mut snap = self.snap_in(ValRef(slot), budget.max_depth, &mut left, &mut path);
        let obj = self.node(slot).map_or(0, Node::obj);
        if obj != 0 {
            let writes = self.writes_after(obj, slot, upto);
            let _ = self.apply_logged(obj, writes, &mut snap, budget.max_depth, &mut left, &mut path);
        }
        snap
    }

    /// `state` (a tree of an object's earlier state, node `slot`) with the writes made to it
    /// since, up to node `bound`, applied: attributes of objects, items of dicts.
    fn apply_writes(
        &self,
        obj: ObjId,
        (slot, bound): (u32, u32),
        state: &mut Snap,
        depth: u32,
        left: &mut usize,
        path: &mut Walk,
    ) -> Option<u32> {
        let writes = self.writes_between(obj, slot, bound);
        self.apply_logged(obj, writes, state, depth, left, path)
    }

    /// `writes` (to `obj`, oldest first) applied to `state`, a tree of one of its states; the
    /// idx of the last one applied.
    fn apply_logged(
        &self,
        obj: ObjId,
        writes: Vec<LoggedWrite>,
        state: &mut Snap,
        depth: u32,
        left: &mut usize,
        path: &mut Walk,
    ) -> Option<u32> {
        if writes.is_empty() || depth == 0 {
            return None;
        }
        let last = writes.iter().map(|w| w.idx).max();
        path.objs.push(obj);
        for w in writes {
            let value = w.value.map(|v| self.snap_in(v, depth - 1, left, path));
            // An object recorded with no attributes is `<Type#id>` (an opaque node with no
            // text): an attribute written to it makes it one with that attribute.
            if let (Snap::Opaque { type_name, id, repr }, WriteKey::Attr(_)) = (&*state, &w.key) {
                if *repr == crate::printer::opaque_repr(type_name, *id, "") {
                    let (type_name, id) = (type_name.clone(), *id);
                    *state = Snap::Object { type_name, id, repr: String::new(), attrs: Vec::new() };
                }
            }
            match (state as &mut Snap, w.key) {
                (Snap::Object { attrs, repr, type_name, id }, WriteKey::Attr(name)) => {
                    let at = attrs.iter().position(|(k, _)| **k == *name);
                    match (at, value) {
                        (Some(i), Some(v)) => attrs[i].1 = v,
                        (None, Some(v)) => attrs.push((name.into(), v)),
                        (Some(i), None) => {
                            attrs.remove(i);
                        }
                        (None, None) => {}
                    }
                    *repr = crate::printer::object_repr(type_name, *id, attrs);
                }
                (Snap::Map { entries, len, .. }, WriteKey::Item(key)) => {
                    let at = entries.iter().position(|(k, _)| *k == key);
                    match (at, value) {
                        (Some(i), Some(v)) => entries[i].1 = v,
                        (None, Some(v)) => {
                            entries.push((key, v));
                            *len += 1;
                        }
                        (Some(i), None) => {
                            entries.remove(i);
                            *len = len.saturating_sub(1);
                        }
                        (None, None) => {}
                    }
                }
                _ => {}
            }
        }
        path.objs.pop();
        last
    }

    /// `f` over the slots of object `obj`'s states (every node of it but a `Cut`: the budget or
    /// a reference stopped before its contents), oldest first, indexing nodes stored since the
    /// last call.
    fn with_states<T>(&self, obj: ObjId, f: impl FnOnce(&[u32]) -> T) -> Option<T> {
        self.with_index(obj, |index| index.by_obj.get(&obj).map(|slots| f(slots))).flatten()
    }

    /// `f` over the index of each object's states and records again, indexing nodes stored
    /// since the last call (`None` for no object, or a poisoned lock).
    fn with_index<T>(&self, obj: ObjId, f: impl FnOnce(&StateIndex) -> T) -> Option<T> {
        if obj == 0 {
            return None;
        }
        let Ok(mut index) = self.states.lock() else { return None };
        let index = &mut *index;
        if index.indexed < self.len() {
            let from = index.indexed.max(self.first);
            for (slot, node) in (from..).zip(&self.nodes[from - self.first..]) {
                let (o, map) = match node {
                    Node::Cut(_) | Node::Ref(_) => continue,
                    Node::Same(t) => (self.at(*t).map_or(0, Node::obj), &mut index.again),
                    _ => (node.obj(), &mut index.by_obj),
                };
                if o != 0 {
                    let list = map.entry(o).or_default();
                    let before = list.capacity();
                    list.push(slot as u32);
                    index.list_bytes += (list.capacity() - before) * 4;
                }
            }
            index.indexed = self.len();
            let bytes = map_bytes(&index.by_obj, index.list_bytes) + map_bytes(&index.again, 0);
            self.states_bytes.store(bytes, std::sync::atomic::Ordering::Relaxed);
        }
        Some(f(index))
    }

    /// The newest node before `bound` that shows object `obj` as it was recorded: a state of
    /// it, or a `Node::Same` naming one (the object recorded again unchanged, the references
    /// in it resolving as of then).
    pub fn latest_before(&self, obj: ObjId, bound: u32) -> Option<u32> {
        self.with_index(obj, |index| {
            let state = index.by_obj.get(&obj).and_then(|slots| newest_before(slots, bound));
            state.max(index.again.get(&obj).and_then(|slots| newest_before(slots, bound)))
        })
        .flatten()
    }

    /// The slots of every state of object `obj`, oldest first.
    pub fn states_of(&self, obj: ObjId) -> Vec<u32> {
        self.with_states(obj, <[u32]>::to_vec).unwrap_or_default()
    }

    /// The newest state of object `obj` stored before node `bound`.
    pub fn state_before(&self, obj: ObjId, bound: u32) -> Option<u32> {
        self.with_states(obj, |slots| newest_before(slots, bound)).flatten()
    }

    fn snap_at(&self, v: ValRef, depth: u32, left: &mut usize) -> Snap {
        self.snap_from(v, depth, left, true)
    }

    fn snap_from(&self, v: ValRef, depth: u32, left: &mut usize, resolve: bool) -> Snap {
        // References resolve to states stored before the value itself: never a later one.
        let bound = match v.decode() {
            Decoded::Slot(s) => s,
            _ => 0,
        };
        let mut path = Walk { objs: Vec::new(), bound, earlier: false, resolved: u32::MAX, resolve };
        self.snap_in(v, depth, left, &mut path)
    }

    /// [`ValueStore::to_snap`] with references shown as they are, not resolved to their
    /// objects' earlier states: it builds no index (the recorder's flusher reads exception
    /// texts this way, before their nodes leave memory; building each object's states over a
    /// long recording for them grew without bound).
    pub fn to_snap_unresolved(&self, v: impl Into<Value>, budget: ExpandBudget) -> Snap {
        let v = match v.into() {
            Value::Ref(r) => r,
            Value::Float(f) => return Snap::Float(f),
        };
        let mut left = budget.max_nodes;
        self.snap_from(self.entry_ref(v), budget.max_depth, &mut left, false)
    }

    /// `snap_at`, with the identities of the objects being expanded around this one (`path`):
    /// a reference to one of them is a cycle, shown as a `Cut`.
    fn snap_in(&self, v: ValRef, depth: u32, left: &mut usize, path: &mut Walk) -> Snap {
        let slot = match v.decode() {
            Decoded::Int(i) => return Snap::Int(i),
            Decoded::None | Decoded::Absent => return Snap::None,
            Decoded::Bool(b) => return Snap::Bool(b),
            Decoded::Float(f) => return Snap::Float(f),
            Decoded::Slot(s) => s,
        };
        let Some(node) = self.at(slot) else {
            return if self.is_evicted(slot) { in_file(slot) } else { not_recorded(slot) };
        };
        if let Node::Same(t) = *node {
            // Recorded again here: its references resolve as of this node (`Node::Same`).
            if matches!(self.at(t), Some(Node::Same(_))) {
                return not_recorded(slot);
            }
            let bound = path.bound;
            path.bound = bound.max(slot);
            let snap = self.snap_in(ValRef(t), depth, left, path);
            path.bound = bound;
            return snap;
        }
        if path.earlier && slot != path.resolved {
            if let Some(snap) = self.newer_container(node, slot, depth, left, path) {
                return snap;
            }
        }
        *left = left.saturating_sub(1);
        // An object met again inside its own expansion is a cycle: shown once, as a `Cut`.
        let cut = depth == 0 || *left == 0 || (node.obj() != 0 && path.objs.contains(&node.obj()));
        match node {
            Node::Float(f) => Snap::Float(*f),
            Node::Int(i) => Snap::Int(*i),
            Node::BigInt(s) => Snap::BigInt(s.to_string()),
            Node::Complex(c) => Snap::Complex { re: c.0, im: c.1 },
            Node::Str(s) => Snap::Str(s.to_string()),
            Node::StrCut(b) => Snap::StrCut { prefix: b.0.to_string(), len: b.1 },
            Node::Bytes(b) => Snap::Bytes(b.to_vec()),
            Node::BytesCut(b) => Snap::BytesCut { prefix: b.0.to_vec(), len: b.1 },
            Node::Seq(n) if cut => Snap::Cut { type_name: self.name(n.ty).into(), id: n.obj, len: n.len },
            Node::Seq(n) => Snap::Seq {
                kind: n.kind,
                type_name: self.name(n.ty).into(),
                id: n.obj,
                items: self.children_in(n.obj, path, |s, path| {
                    n.items.iter().map(|&i| s.snap_in(i, depth - 1, left, path)).collect()
                }),
                len: n.len,
            },
            Node::SeqDelta(n) if cut => Snap::Cut { type_name: self.name(n.ty).into(), id: n.obj, len: n.len },
            // Its unchanged items are its base's, which left memory: the state is in the file.
            Node::SeqDelta(n) if self.is_evicted(n.base) => in_file(slot),
            Node::SeqDelta(n) => {
                let items = self.seq_items(slot);
                Snap::Seq {
                    kind: n.kind,
                    type_name: self.name(n.ty).into(),
                    id: n.obj,
                    items: self.children_in(n.obj, path, |s, path| {
                        items.iter().map(|&i| s.snap_in(i, depth - 1, left, path)).collect()
                    }),
                    len: n.len,
                }
            }
            Node::Map(n) if cut => Snap::Cut { type_name: self.name(n.ty).into(), id: n.obj, len: n.len },
            Node::Map(n) => Snap::Map {
                type_name: self.name(n.ty).into(),
                id: n.obj,
                entries: self.children_in(n.obj, path, |s, path| {
                    n.entries
                        .iter()
                        .map(|&(k, v)| (s.snap_in(k, depth - 1, left, path), s.snap_in(v, depth - 1, left, path)))
                        .collect()
                }),
                len: n.len,
            },
            Node::Object(n) if cut => Snap::Cut { type_name: self.name(n.ty).into(), id: n.obj, len: 0 },
            Node::Object(n) => {
                let mut attrs: Vec<(String, Snap)> = self.children_in(n.obj, path, |s, path| {
                    n.attrs.iter().map(|&(k, v)| (s.name(k).to_string(), s.snap_in(v, depth - 1, left, path))).collect()
                });
                let type_name = self.name(n.ty).to_string();
                // A version 1 file kept the program's repr as an attribute.
                if let Some(i) = attrs.iter().position(|(k, v)| k == LEGACY_REPR && matches!(v, Snap::Str(_))) {
                    let Snap::Str(repr) = attrs.remove(i).1 else { unreachable!() };
                    if attrs.is_empty() {
                        return Snap::Opaque { type_name, id: n.obj, repr };
                    }
                    return Snap::Object { type_name, id: n.obj, repr, attrs };
                }
                let repr = crate::printer::object_repr(&type_name, n.obj, &attrs);
                Snap::Object { type_name, id: n.obj, repr, attrs }
            }
            Node::Opaque(n) => {
                let type_name = self.name(n.ty).to_string();
                let repr = crate::printer::opaque_repr(&type_name, n.obj, &n.text);
                Snap::Opaque { type_name, id: n.obj, repr }
            }
            // Expanded above.
            Node::Same(_) => Snap::None,
            Node::Cut(_) | Node::Ref(_) => {
                let Some(n) = node.cut() else { unreachable!() };
                let cut = Snap::Cut { type_name: self.name(n.ty).into(), id: n.obj, len: n.len };
                if depth == 0 || path.objs.contains(&n.obj) || !path.resolve {
                    return cut;
                }
                // Not encoded at this moment: its newest state stored before this reference
                // (every reference is made after a state of its object, `encode.rs`).
                let bound = path.bound.max(slot);
                // A state that left memory is not looked for further back: shown as the `Cut`.
                match self.state_before(n.obj, bound).filter(|&s| !self.is_evicted(s)) {
                    Some(state) => {
                        let depth = depth.min(EARLIER_DEPTH);
                        let earlier = std::mem::replace(&mut path.earlier, true);
                        // The state itself is shown as it is (a container's too: its writes
                        // are applied below).
                        let resolved = std::mem::replace(&mut path.resolved, state);
                        let mut value = self.snap_in(ValRef(state), depth, left, path);
                        path.resolved = resolved;
                        // Writes recorded since that state (instrumented code's `obj.a = v`)
                        // are known: shown, still marked earlier (other code may have changed
                        // the object too).
                        let idx = self.apply_writes(n.obj, (state, bound), &mut value, depth, left, path);
                        path.earlier = earlier;
                        Snap::Earlier { slot: state, idx, value: Box::new(value) }
                    }
                    None => cut,
                }
            }
        }
    }

    /// Inside an earlier state, a container (node `slot`) that the state holds as it was then:
    /// its newest state stored before the bound, with the writes to it recorded since applied
    /// (a list the object holds was often recorded again since, as a receiver or an argument:
    /// `self.items.append(x)` records `self.items`). Never a later state: both come before
    /// the bound. `None`: not a container, or a cycle.
    fn newer_container(&self, node: &Node, slot: u32, depth: u32, left: &mut usize, path: &mut Walk) -> Option<Snap> {
        if !matches!(node, Node::Seq(_) | Node::SeqDelta(_) | Node::Map(_)) {
            return None;
        }
        let obj = node.obj();
        if obj == 0 || depth == 0 || path.objs.contains(&obj) {
            return None;
        }
        let from = self.state_before(obj, path.bound).filter(|&s| s > slot).unwrap_or(slot);
        let outer = std::mem::replace(&mut path.resolved, from);
        let mut value = self.snap_in(ValRef(from), depth, left, path);
        path.resolved = outer;
        let _ = self.apply_writes(obj, (from, path.bound), &mut value, depth, left, path);
        Some(value)
    }

    /// `f` over the children of object `obj` (0: none), with `obj` on the path meanwhile.
    fn children_in<T>(&self, obj: ObjId, path: &mut Walk, f: impl FnOnce(&Self, &mut Walk) -> T) -> T {
        if obj != 0 {
            path.objs.push(obj);
        }
        let out = f(self, path);
        if obj != 0 {
            path.objs.pop();
        }
        out
    }

    /// The identity of the object an entry's value `v` is a state of (0: none).
    pub fn obj_of(&self, v: impl Into<Value>) -> ObjId {
        let Value::Ref(v) = v.into() else { return 0 };
        match self.entry_ref(v).decode() {
            Decoded::Slot(s) => self.node(s).map_or(0, Node::obj),
            _ => 0,
        }
    }

    /// Builds nodes for a tree read from an old (version 1) file.
    pub fn push_snap(&mut self, s: &Snap) -> ValRef {
        let node = match s {
            Snap::None => return ValRef::NONE,
            Snap::Bool(b) => return if *b { ValRef::TRUE } else { ValRef::FALSE },
            Snap::Int(i) => match ValRef::small_int(*i) {
                Some(r) => return r,
                None => Node::Int(*i),
            },
            Snap::BigInt(d) => Node::BigInt(d.as_str().into()),
            Snap::Float(f) => Node::Float(*f),
            Snap::Complex { re, im } => Node::Complex(Box::new((*re, *im))),
            Snap::Str(t) => Node::Str(t.as_str().into()),
            Snap::StrCut { prefix, len } => Node::StrCut(Box::new((prefix.as_str().into(), *len))),
            Snap::Bytes(b) => Node::Bytes(b.as_slice().into()),
            Snap::BytesCut { prefix, len } => Node::BytesCut(Box::new((prefix.as_slice().into(), *len))),
            Snap::Seq { kind, type_name, id, items, len } => {
                let items: Vec<ValRef> = items.iter().map(|i| self.push_snap(i)).collect();
                let ty = self.intern(type_name);
                Node::Seq(Box::new(SeqNode { kind: *kind, ty, obj: *id, len: *len, items: items.into() }))
            }
            Snap::Map { type_name, id, entries, len } => {
                let entries: Vec<(ValRef, ValRef)> =
                    entries.iter().map(|(k, v)| (self.push_snap(k), self.push_snap(v))).collect();
                let ty = self.intern(type_name);
                Node::Map(Box::new(MapNode { ty, obj: *id, len: *len, entries: entries.into() }))
            }
            Snap::Object { type_name, id, repr, attrs } => {
                let mut out: Vec<(NameId, ValRef)> = Vec::with_capacity(attrs.len() + 1);
                // An old file kept the repr the program's `__repr__` gave when it was saved.
                let r = self.push_snap(&Snap::Str(repr.clone()));
                out.push((self.intern(LEGACY_REPR), r));
                for (k, v) in attrs {
                    let v = self.push_snap(v);
                    out.push((self.intern(k), v));
                }
                let ty = self.intern(type_name);
                Node::Object(Box::new(ObjectNode { ty, obj: *id, attrs: out.into() }))
            }
            Snap::Opaque { type_name, id, repr } => {
                let r = self.push_snap(&Snap::Str(repr.clone()));
                let attrs = vec![(self.intern(LEGACY_REPR), r)];
                let ty = self.intern(type_name);
                Node::Object(Box::new(ObjectNode { ty, obj: *id, attrs: attrs.into() }))
            }
            Snap::Cut { type_name, id, len } => {
                let ty = self.intern(type_name);
                CutNode { ty, obj: *id, len: *len }.into_node()
            }
            Snap::Earlier { value, .. } => return self.push_snap(value),
        };
        self.push(node).unwrap_or(ValRef::ABSENT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `allocated` is what glibc's malloc holds per allocation (its usable size plus the 8-byte
    /// header), for the sizes nodes ask for: exactly, or less than the 32 bytes by which malloc
    /// leaves a free chunk it takes unsplit.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn allocated_is_what_malloc_holds() {
        for n in 1..=4096u64 {
            // SAFETY: a plain malloc/free pair; the pointer is only measured.
            let held = unsafe {
                let p = libc::malloc(n as usize);
                assert!(!p.is_null());
                let usable = libc::malloc_usable_size(p) as u64;
                libc::free(p);
                usable + 8
            };
            assert!(allocated(n) <= held && held < allocated(n) + 32, "malloc({n}): {held} held");
        }
        assert_eq!(allocated(0), 0);
        // A node counts its allocations as held, not as asked for (a 2-char str asks 2 bytes).
        assert_eq!(Node::Str("ab".into()).heap_bytes(), 32);
        assert_eq!(Node::Complex(Box::new((1.0, 2.0))).heap_bytes(), 32);
    }

    fn list_of(store: &mut ValueStore, obj: ObjId, items: &[ValRef]) -> ValRef {
        let ty = store.intern("list");
        store
            .push(Node::Seq(Box::new(SeqNode {
                kind: SeqKind::List,
                ty,
                obj,
                len: items.len() as u64,
                items: items.into(),
            })))
            .unwrap()
    }

    /// Nodes below the eviction point leave memory: slots stay absolute, new nodes go on after
    /// them, their heap bytes are no longer counted, and a value naming one shows it as in the
    /// file (a reference's earlier state there: the reference as it is).
    #[test]
    fn evicted_nodes_leave_memory_and_show_as_in_the_file() {
        let mut s = ValueStore::new();
        let text = s.push(Node::Str("a string long enough to own heap".into())).unwrap();
        object(&mut s, 7, &[("n", ValRef::small_int(1).unwrap())]);
        let kept = list_of(&mut s, 2, &[text]);
        let bytes = s.bytes();
        s.evict_below(2);
        assert_eq!((s.len(), s.first_held(), s.nodes().len()), (3, 2, 1));
        assert!(s.bytes() < bytes, "the string's and the object's heap are no longer counted");
        assert!(s.is_evicted(1) && !s.is_evicted(2));
        assert_eq!(s.node(0), None);
        assert!(matches!(s.node(2), Some(Node::Seq(_))));
        let Snap::Seq { items, .. } = s.to_snap(kept, ExpandBudget::FULL) else { panic!() };
        assert!(matches!(&items[0], Snap::Opaque { type_name, .. } if type_name == IN_FILE), "{items:?}");
        // A reference whose object's newest earlier state left memory is the reference alone.
        let r = reference(&mut s, 7);
        assert_eq!(r.0, 3, "slots go on after the evicted ones");
        assert!(matches!(s.to_snap(r, ExpandBudget::FULL), Snap::Cut { id: 7, .. }));
        // Evicting again, or below what left already, keeps the rest.
        s.evict_below(1);
        assert_eq!(s.first_held(), 2);
        s.evict_below(10);
        assert_eq!((s.len(), s.first_held(), s.nodes().len()), (4, 4, 0));
        assert_eq!(s.push(Node::Int(1 << 40)).unwrap().0, 4);
        assert!(matches!(s.node(4), Some(Node::Int(_))));
    }

    /// A delta whose base left memory holds `ABSENT` where the base's items were: nothing is
    /// made up (the recorder's `delta_equals` asks whether the base is held first).
    #[test]
    fn a_delta_over_an_evicted_base_names_no_items_there() {
        let mut s = ValueStore::new();
        let one = ValRef::small_int(1).unwrap();
        let base = list_of(&mut s, 3, &[one, one, one, one]);
        let ty = s.intern("list");
        let d = SeqDeltaNode {
            kind: SeqKind::List,
            ty,
            obj: 3,
            len: 4,
            base: base.0,
            n_items: 4,
            changes: Box::new([(3, ValRef::small_int(2).unwrap())]),
        };
        assert_eq!(s.delta_items(&d).filter(|&v| v == one).count(), 3);
        let delta = s.push(Node::SeqDelta(Box::new(d.clone()))).unwrap();
        assert!(matches!(s.to_snap(delta, ExpandBudget::FULL), Snap::Seq { len: 4, .. }));
        s.evict_below(1);
        assert_eq!(s.delta_items(&d).filter(|&v| v == ValRef::ABSENT).count(), 3);
        // Shown, it is in the file, not a list with holes.
        assert!(matches!(s.to_snap(delta, ExpandBudget::FULL), Snap::Opaque { type_name, .. } if type_name == IN_FILE));
    }

    #[test]
    fn nested_values_expand_to_trees() {
        let mut s = ValueStore::new();
        let a = s.push(Node::Str("a".into())).unwrap();
        let inner = list_of(&mut s, 2, &[a, ValRef::small_int(3).unwrap()]);
        let outer = list_of(&mut s, 1, &[inner, inner]);
        let snap = s.to_snap(outer, ExpandBudget::FULL);
        let Snap::Seq { items, id, .. } = snap else { panic!("not a seq") };
        assert_eq!(id, 1);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], items[1]);
        assert_eq!(s.obj_of(inner), 2);
    }

    #[test]
    fn expansion_is_cut_by_its_budget() {
        let mut s = ValueStore::new();
        let mut v = list_of(&mut s, 1, &[]);
        for i in 0..10 {
            v = list_of(&mut s, i + 2, &[v]);
        }
        let snap = s.to_snap(v, ExpandBudget { max_depth: 3, max_nodes: 100 });
        let mut depth = 0;
        let mut cur = &snap;
        while let Snap::Seq { items, .. } = cur {
            depth += 1;
            cur = &items[0];
        }
        assert_eq!(depth, 3);
        assert!(matches!(cur, Snap::Cut { len: 1, .. }));
    }

    fn object(store: &mut ValueStore, obj: ObjId, attrs: &[(&str, ValRef)]) -> ValRef {
        let ty = store.intern("Node");
        let attrs: Vec<(NameId, ValRef)> = attrs.iter().map(|&(k, v)| (store.intern(k), v)).collect();
        store.push(Node::Object(Box::new(ObjectNode { ty, obj, attrs: attrs.into() }))).unwrap()
    }

    fn reference(store: &mut ValueStore, obj: ObjId) -> ValRef {
        let ty = store.intern("Node");
        store.push(CutNode { ty, obj, len: 0 }.into_node()).unwrap()
    }

    #[test]
    fn a_reference_shows_the_newest_state_before_the_value_marked_earlier() {
        let mut s = ValueStore::new();
        let one = ValRef::small_int(1).unwrap();
        let two = ValRef::small_int(2).unwrap();
        object(&mut s, 7, &[("n", one)]);
        let r = reference(&mut s, 7);
        let first = object(&mut s, 1, &[("child", r)]);
        object(&mut s, 7, &[("n", two)]);
        let later = object(&mut s, 1, &[("child", r), ("x", one)]);
        let child = |v: ValRef| match s.to_snap(v, ExpandBudget::FULL) {
            Snap::Object { attrs, .. } => attrs[0].1.clone(),
            other => panic!("{other:?}"),
        };
        // Never a state stored after the value: n=2 came later than `first`.
        let Snap::Earlier { value, slot: 0, .. } = child(first) else { panic!("{:?}", child(first)) };
        assert!(matches!(*value, Snap::Object { ref attrs, .. } if attrs[0].1 == Snap::Int(1)));
        let Snap::Earlier { value, slot: 3, .. } = child(later) else { panic!("{:?}", child(later)) };
        assert!(matches!(*value, Snap::Object { ref attrs, .. } if attrs[0].1 == Snap::Int(2)));
        assert_eq!(s.state_before(7, 0), None);
    }

    /// An unchanged value recorded again names its earlier node through a `Same`: its
    /// references resolve as of the `Same`, the earlier node's as of itself.
    #[test]
    fn a_value_recorded_again_resolves_its_references_as_of_then() {
        let mut s = ValueStore::new();
        let (one, two) = (ValRef::small_int(1).unwrap(), ValRef::small_int(2).unwrap());
        object(&mut s, 7, &[("n", one)]);
        let r = reference(&mut s, 7);
        let first = object(&mut s, 1, &[("child", r)]);
        object(&mut s, 7, &[("n", two)]);
        let again = s.push(Node::Same(first.0)).unwrap();
        let child_n = |v: ValRef| match s.to_snap(v, ExpandBudget::FULL) {
            Snap::Object { attrs, id: 1, .. } => match &attrs[0].1 {
                Snap::Earlier { value, .. } => match &**value {
                    Snap::Object { attrs, .. } => attrs[0].1.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(child_n(first), Snap::Int(1));
        assert_eq!(child_n(again), Snap::Int(2));
        // Queries of the node itself see the value it names; it is no state of its own.
        assert!(matches!(s.node(again.0), Some(Node::Object(o)) if o.obj == 1));
        assert_eq!(s.obj_of(again), 1);
        assert_eq!(s.states_of(1), vec![first.0]);
    }

    #[test]
    fn a_value_recorded_again_must_name_a_node_before_it_that_is_no_other_such() {
        let mut s = ValueStore::new();
        let err = s.extend_checked(0, Vec::new(), 0, vec![Node::Int(1 << 40), Node::Same(1)]).unwrap_err();
        assert!(err.0.contains("not before it"), "{}", err.0);
        let mut s = ValueStore::new();
        let err =
            s.extend_checked(0, Vec::new(), 0, vec![Node::Int(1 << 40), Node::Same(0), Node::Same(1)]).unwrap_err();
        assert!(err.0.contains("names another"), "{}", err.0);
    }

    #[test]
    fn a_container_in_an_earlier_state_is_its_own_newest_state_before_the_value() {
        let mut s = ValueStore::new();
        let (one, two) = (ValRef::small_int(1).unwrap(), ValRef::small_int(2).unwrap());
        let items = list_of(&mut s, 9, &[one]);
        object(&mut s, 7, &[("items", items)]);
        let early = reference(&mut s, 7);
        list_of(&mut s, 9, &[one, two]); // the list recorded again, its holder not
        let late = reference(&mut s, 7);
        list_of(&mut s, 9, &[]); // after both references: never shown for them
        let items_of = |v: ValRef| match s.to_snap(v, ExpandBudget::FULL) {
            Snap::Earlier { value, .. } => match *value {
                Snap::Object { attrs, .. } => attrs[0].1.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        let ints = |snap: Snap| match snap {
            Snap::Seq { items, .. } => items,
            other => panic!("{other:?}"),
        };
        assert_eq!(ints(items_of(early)), vec![Snap::Int(1)]);
        assert_eq!(ints(items_of(late)), vec![Snap::Int(1), Snap::Int(2)]);
    }

    #[test]
    fn a_cycle_expands_once() {
        let mut s = ValueStore::new();
        let back = reference(&mut s, 1);
        let b = object(&mut s, 2, &[("peer", back)]);
        let a = object(&mut s, 1, &[("peer", b)]);
        let Snap::Object { attrs, .. } = s.to_snap(a, ExpandBudget::FULL) else { panic!() };
        let Snap::Object { attrs, .. } = &attrs[0].1 else { panic!() };
        assert!(matches!(attrs[0].1, Snap::Cut { id: 1, .. }), "{:?}", attrs[0].1);
    }

    #[test]
    fn a_file_cannot_point_forwards() {
        let mut s = ValueStore::new();
        let bad = Node::Seq(Box::new(SeqNode {
            kind: SeqKind::List,
            ty: 0,
            obj: 1,
            len: 1,
            items: vec![ValRef::slot(0).unwrap()].into(),
        }));
        let err = s.extend_checked(0, vec!["list".into()], 0, vec![bad]).unwrap_err();
        assert!(err.0.contains("refers to node 0"), "{}", err.0);
    }

    #[test]
    fn old_trees_become_nodes() {
        let mut s = ValueStore::new();
        let tree = Snap::Map {
            type_name: "dict".into(),
            id: 0,
            entries: vec![(Snap::Str("k".into()), Snap::Float(1.5))],
            len: 1,
        };
        let r = s.push_snap(&tree);
        assert_eq!(s.to_snap(r, ExpandBudget::FULL), tree);
    }
}
