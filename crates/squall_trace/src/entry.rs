//! Timeline entries: 16 bytes each, four `u32` words.
//!
//! | kind       | `head` low 28 bits | `a`            | `b`                      | `c`                 |
//! |------------|--------------------|----------------|--------------------------|---------------------|
//! | `Call`     | form id            | parent idx     | ret idx (`NONE` if open) | args (see below)    |
//! | `Resume`   | form id            | parent idx     | ret idx (`NONE` if open) | sent value          |
//! | `Return`   | site id            | fn-call idx    | result value             | unused              |
//! | `Unwind`   | form id            | fn-call idx    | throwable value          | unused              |
//! | `Expr`     | site id            | fn-call idx    | the expression's value   | unused              |
//! | `Bind`     | site id            | fn-call idx    | the bound value          | unused              |
//! | `Write`    | site id            | fn-call idx    | the new value (`ABSENT`: del) | write record (below) |
//!
//! A `Return`, `Expr` or `Bind` whose value is an exact `float` holds the float itself instead:
//! `b` its bits' low word, `c` their high word, and no store node backs it (a float node plus
//! its entry was 32 bytes and a new node per event; DESIGN.md "Where recorded time goes"). It is
//! stored with kind bits of its own (`FLOAT_RETURN`, `FLOAT_EXPR`, `FLOAT_BIND`: format version
//! 5), but is the same [`Kind`] to every reader: [`Entry::value`] hands out a [`Value`], a ref or
//! the float.
//!
//! A call's `c` holds its arguments according to the form's parameter count: nothing for 0, the
//! value itself for 1, an offset into the timeline's args arena for 2 or more (the arena then holds
//! exactly that many values). A `Resume` (`fn-resume`) opens a frame like a call: it starts a new
//! segment of a generator or coroutine frame after a suspension. Keeping it a separate type keeps
//! "how often was f called" the same whether counted from entries or from `fn_call_stats`.
//!
//! A `Write` (`obj.a = v`, `obj[k] = v`, `del`, augmented forms, in instrumented code) keeps in
//! `c` an offset into the args arena, which holds `WRITE_WORDS` words there: the target's
//! identity (`ObjId`, low then high word), the key (`ABSENT` for an attribute: the site's symbol
//! names it), and the value store's length when the write happened (the target's states recorded
//! before the write are the nodes below it: "from what" is a query, never read at write time).

use crate::value::{ValRef, Value};

/// "No index": an open call's ret idx, a root call's parent idx.
pub const NONE: u32 = u32::MAX;

const KIND_SHIFT: u32 = 28;
const ID_MASK: u32 = (1 << KIND_SHIFT) - 1;
/// Largest form or site id an entry can hold.
pub const MAX_ID: u32 = ID_MASK;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Call = 0,
    Resume = 1,
    Return = 2,
    Unwind = 3,
    /// A sub-expression's value (full mode), at a site with its source range.
    Expr = 4,
    /// A local binding (full mode), at a site naming the symbol.
    Bind = 5,
    /// An attribute or item write or delete (full mode), at a site with its source range.
    Write = 6,
}

/// The head's kind bits of a `Return`, `Expr` and `Bind` holding a float (see the module doc).
const FLOAT_RETURN: u32 = 7;
const FLOAT_EXPR: u32 = 8;
const FLOAT_BIND: u32 = 9;

/// Args-arena words a `Write` entry's record takes (see the module doc).
pub const WRITE_WORDS: usize = 4;

impl Kind {
    fn from_bits(bits: u32) -> Option<Kind> {
        Some(match bits {
            0 => Kind::Call,
            1 => Kind::Resume,
            2 => Kind::Return,
            3 => Kind::Unwind,
            4 => Kind::Expr,
            5 => Kind::Bind,
            6 => Kind::Write,
            FLOAT_RETURN => Kind::Return,
            FLOAT_EXPR => Kind::Expr,
            FLOAT_BIND => Kind::Bind,
            _ => return None,
        })
    }

    /// True for the entries that open a frame (`fn-call` in the query vocabulary).
    pub fn is_call(self) -> bool {
        matches!(self, Kind::Call | Kind::Resume)
    }

    /// True for the entries that close a frame (`fn-return` / `fn-unwind`).
    pub fn is_exit(self) -> bool {
        matches!(self, Kind::Return | Kind::Unwind)
    }

    /// True for expression values, bindings and writes: events inside a frame.
    pub fn is_event(self) -> bool {
        matches!(self, Kind::Expr | Kind::Bind | Kind::Write)
    }

    /// The FlowStorm entry type name.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Call => "fn-call",
            Kind::Resume => "fn-resume",
            Kind::Return => "fn-return",
            Kind::Unwind => "fn-unwind",
            Kind::Expr => "expr",
            Kind::Bind => "bind",
            Kind::Write => "write",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    head: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 16);

impl Entry {
    #[inline]
    pub fn new(kind: Kind, id: u32, a: u32, b: u32, c: u32) -> Entry {
        debug_assert!(id <= ID_MASK);
        Entry { head: ((kind as u32) << KIND_SHIFT) | (id & ID_MASK), a, b, c }
    }

    /// An entry of `kind` (a `Return`, `Expr` or `Bind` when `value` is a float) holding `value`.
    #[inline(always)]
    pub fn valued(kind: Kind, id: u32, a: u32, value: Value) -> Entry {
        match value {
            Value::Ref(r) => Entry::new(kind, id, a, r.0, 0),
            Value::Float(f) => {
                let bits = match kind {
                    Kind::Return => FLOAT_RETURN,
                    Kind::Bind => FLOAT_BIND,
                    _ => {
                        debug_assert_eq!(kind, Kind::Expr, "only returns, expressions and bindings hold floats");
                        FLOAT_EXPR
                    }
                };
                debug_assert!(id <= ID_MASK);
                let w = f.to_bits();
                Entry { head: (bits << KIND_SHIFT) | (id & ID_MASK), a, b: w as u32, c: (w >> 32) as u32 }
            }
        }
    }

    /// True when the entry holds its value as a float (`b` and `c`), not as a ref.
    #[inline]
    pub fn holds_float(&self) -> bool {
        matches!(self.head >> KIND_SHIFT, FLOAT_RETURN | FLOAT_EXPR | FLOAT_BIND)
    }

    /// An entry from its four stored words, if its kind is one this version knows.
    pub fn from_raw(head: u32, a: u32, b: u32, c: u32) -> Option<Entry> {
        Kind::from_bits(head >> KIND_SHIFT)?;
        Some(Entry { head, a, b, c })
    }

    /// The four stored words.
    pub fn raw(&self) -> [u32; 4] {
        [self.head, self.a, self.b, self.c]
    }

    pub fn kind(&self) -> Kind {
        // Entries are only made by `new` and `from_raw`, which admit known kinds only.
        Kind::from_bits(self.head >> KIND_SHIFT).unwrap_or(Kind::Expr)
    }

    /// Form id for calls, resumes and unwinds; site id for returns.
    pub fn id(&self) -> u32 {
        self.head & ID_MASK
    }

    pub fn parent_idx(&self) -> Option<u32> {
        debug_assert!(self.kind().is_call());
        opt(self.a)
    }

    pub fn ret_idx(&self) -> Option<u32> {
        debug_assert!(self.kind().is_call());
        opt(self.b)
    }

    /// The frame an exit closes, or an expression or binding happens in.
    pub fn fn_call_idx(&self) -> u32 {
        debug_assert!(!self.kind().is_call());
        self.a
    }

    /// The result of a return, the throwable of an unwind, an expression's or binding's value,
    /// a write's new value.
    #[inline]
    pub fn value(&self) -> Value {
        debug_assert!(!self.kind().is_call());
        if self.holds_float() {
            Value::Float(f64::from_bits(u64::from(self.b) | (u64::from(self.c) << 32)))
        } else {
            Value::Ref(ValRef(self.b))
        }
    }

    /// The value as a ref: `None` for a float the entry holds (no node backs it).
    #[inline]
    pub fn value_ref(&self) -> Option<ValRef> {
        self.value().as_ref()
    }
}

pub(crate) fn opt(word: u32) -> Option<u32> {
    (word != NONE).then_some(word)
}
