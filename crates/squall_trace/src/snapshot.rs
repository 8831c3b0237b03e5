//! Language-neutral structural snapshots of values: what a recording file keeps of a value.
//!
//! A live recording keeps the program's objects; a file keeps a [`Snap`] of each: its type name,
//! its repr, and a navigable tree of containers and object attributes, cut by the recording's
//! depth/length budget. A container whose `items.len()` is below its `len` was truncated.

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
    Bytes(Vec<u8>),
    /// Lists, tuples, sets, frozensets, deques and other sequences.
    Seq {
        kind: SeqKind,
        type_name: String,
        items: Vec<Snap>,
        len: u64,
    },
    Map {
        type_name: String,
        entries: Vec<(Snap, Snap)>,
        len: u64,
    },
    /// An object with attributes (instance `__dict__`, slots, an exception's args).
    Object {
        type_name: String,
        repr: String,
        attrs: Vec<(String, Snap)>,
    },
    /// An object kept only as its repr (functions, modules, C objects...).
    Opaque {
        type_name: String,
        repr: String,
    },
    /// A value beyond the depth budget: only its type and size are known.
    Cut {
        type_name: String,
        len: u64,
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
            Snap::Str(_) => "str",
            Snap::Bytes(_) => "bytes",
            Snap::Seq { type_name, .. }
            | Snap::Map { type_name, .. }
            | Snap::Object { type_name, .. }
            | Snap::Opaque { type_name, .. }
            | Snap::Cut { type_name, .. } => type_name,
        }
    }
}
