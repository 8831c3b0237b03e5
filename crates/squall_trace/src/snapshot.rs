//! Language-neutral trees of recorded values: what the queries hand out of a [`ValueStore`]
//! (`crate::store`), for display and for the Python API.
//!
//! A container whose `items.len()` is below its `len` was cut by the recording's budget. `id`
//! is the object's recording-wide identity (0: a value without one).

#[derive(Clone, Debug, PartialEq)]
pub enum Snap {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64`, in decimal.
    BigInt(String),
    Float(f64),
    Complex {
        re: f64,
        im: f64,
    },
    Str(String),
    /// A string cut by the recording's budget: its first characters, its length in characters.
    StrCut {
        prefix: String,
        len: u64,
    },
    Bytes(Vec<u8>),
    BytesCut {
        prefix: Vec<u8>,
        len: u64,
    },
    /// Lists, tuples, sets, frozensets, deques and other sequences.
    Seq {
        kind: SeqKind,
        type_name: String,
        id: u64,
        items: Vec<Snap>,
        len: u64,
    },
    Map {
        type_name: String,
        id: u64,
        entries: Vec<(Snap, Snap)>,
        len: u64,
    },
    /// An object with attributes (instance `__dict__`, slots, an exception's args); `repr` is
    /// squall's own (see `crate::printer`).
    Object {
        type_name: String,
        id: u64,
        repr: String,
        attrs: Vec<(String, Snap)>,
    },
    /// An object known by its type, identity and name only (functions, modules, C objects...).
    Opaque {
        type_name: String,
        id: u64,
        repr: String,
    },
    /// A value beyond the depth budget: only its type, identity and size are known. Also an
    /// object met again inside its own expansion (a cycle), shown once.
    Cut {
        type_name: String,
        id: u64,
        len: u64,
    },
    /// An object that was not encoded at this moment (beyond the recording's `object_depth`,
    /// or its depth), shown with the newest state of it recorded before: node `slot` of the same
    /// store. It may have changed since; front ends mark it as earlier, never as this moment's.
    Earlier {
        slot: u32,
        /// The entry the shown state is as of: the last recorded write applied to it (the store
        /// sets that), else the entry that recorded node `slot` (`history::mark_earlier_idx`
        /// sets that, as it needs the timeline). `None`: not known (yet).
        idx: Option<u32>,
        value: Box<Snap>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SeqKind {
    List = 0,
    Tuple = 1,
    Set = 2,
    FrozenSet = 3,
    Other = 4,
}

impl SeqKind {
    pub fn from_code(code: u8) -> Option<SeqKind> {
        Some(match code {
            0 => SeqKind::List,
            1 => SeqKind::Tuple,
            2 => SeqKind::Set,
            3 => SeqKind::FrozenSet,
            4 => SeqKind::Other,
            _ => return None,
        })
    }
}

impl Snap {
    /// The value's type name as the program saw it.
    pub fn type_name(&self) -> &str {
        match self {
            Snap::None => "NoneType",
            Snap::Bool(_) => "bool",
            Snap::Int(_) | Snap::BigInt(_) => "int",
            Snap::Float(_) => "float",
            Snap::Complex { .. } => "complex",
            Snap::Str(_) | Snap::StrCut { .. } => "str",
            Snap::Bytes(_) | Snap::BytesCut { .. } => "bytes",
            Snap::Seq { type_name, .. }
            | Snap::Map { type_name, .. }
            | Snap::Object { type_name, .. }
            | Snap::Opaque { type_name, .. }
            | Snap::Cut { type_name, .. } => type_name,
            Snap::Earlier { value, .. } => value.type_name(),
        }
    }

    /// The recorded object's identity (0: none).
    pub fn id(&self) -> u64 {
        match self {
            Snap::Seq { id, .. }
            | Snap::Map { id, .. }
            | Snap::Object { id, .. }
            | Snap::Opaque { id, .. }
            | Snap::Cut { id, .. } => *id,
            Snap::Earlier { value, .. } => value.id(),
            _ => 0,
        }
    }
}
