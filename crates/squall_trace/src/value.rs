//! Value references inside entries.
//!
//! A [`ValRef`] is one `u32`. Small integers, `None`, `True` and `False` live inline (no object is
//! kept alive for them); everything else is an index into the owning timeline's value table,
//! which the backend (the live recorder or a file) keeps.
//!
//! An entry's value is a [`Value`]: a `ValRef`, or a float the entry holds itself (its `b` and `c`
//! words; see `entry.rs`), which no store node backs.

/// Inline integers carry this bit; the other 31 bits are the value, two's complement.
const INLINE_INT: u32 = 1 << 31;
const INLINE_MIN: i64 = -(1 << 30);
const INLINE_MAX: i64 = (1 << 30) - 1;

const CONST_NONE: u32 = 0x7FFF_FFFF;
const CONST_TRUE: u32 = 0x7FFF_FFFE;
const CONST_FALSE: u32 = 0x7FFF_FFFD;
const CONST_ABSENT: u32 = 0x7FFF_FFFC;
/// Value table indexes stay below this.
pub const MAX_SLOT: u32 = 0x7FFF_FFF0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValRef(pub u32);

/// What a [`ValRef`] or an entry's [`Value`] stands for, before the backend resolves table slots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decoded {
    Int(i64),
    /// A float held in its entry (only a [`Value`] decodes to it: a float a node holds is a slot).
    Float(f64),
    None,
    Bool(bool),
    /// No value was recorded (a resumption opened by `throw()`, a frame closed by repair).
    Absent,
    Slot(u32),
}

impl ValRef {
    pub const NONE: ValRef = ValRef(CONST_NONE);
    pub const TRUE: ValRef = ValRef(CONST_TRUE);
    pub const FALSE: ValRef = ValRef(CONST_FALSE);
    pub const ABSENT: ValRef = ValRef(CONST_ABSENT);

    /// The inline form of `v`, if it fits in 31 bits.
    #[inline]
    pub fn small_int(v: i64) -> Option<ValRef> {
        (INLINE_MIN..=INLINE_MAX).contains(&v).then_some(ValRef(INLINE_INT | (v as u32 & !INLINE_INT)))
    }

    #[inline]
    pub fn slot(index: u32) -> Option<ValRef> {
        (index < MAX_SLOT).then_some(ValRef(index))
    }

    pub fn decode(self) -> Decoded {
        let w = self.0;
        if w & INLINE_INT != 0 {
            // Shift the 31-bit payload to the top and back to sign-extend it.
            return Decoded::Int((((w << 1) as i32) >> 1) as i64);
        }
        match w {
            CONST_NONE => Decoded::None,
            CONST_TRUE => Decoded::Bool(true),
            CONST_FALSE => Decoded::Bool(false),
            CONST_ABSENT => Decoded::Absent,
            _ => Decoded::Slot(w),
        }
    }
}

/// An entry's value: a ref, or a float held in the entry itself (no store node backs it).
/// Floats compare by their bits, so a NaN equals itself and `-0.0` differs from `0.0`: "the same
/// value recorded" is what equality means here.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Ref(ValRef),
    Float(f64),
}

impl Value {
    pub const ABSENT: Value = Value::Ref(ValRef::ABSENT);

    /// The ref, if the value is one (an inline float has none: no node, no identity).
    #[inline]
    pub fn as_ref(self) -> Option<ValRef> {
        match self {
            Value::Ref(r) => Some(r),
            Value::Float(_) => None,
        }
    }

    pub fn decode(self) -> Decoded {
        match self {
            Value::Ref(r) => r.decode(),
            Value::Float(f) => Decoded::Float(f),
        }
    }
}

impl From<ValRef> for Value {
    #[inline]
    fn from(r: ValRef) -> Value {
        Value::Ref(r)
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Ref(a), Value::Ref(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for Value {}

impl PartialEq<ValRef> for Value {
    fn eq(&self, other: &ValRef) -> bool {
        *self == Value::Ref(*other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn small_ints_round_trip(v in INLINE_MIN..=INLINE_MAX) {
            prop_assert_eq!(ValRef::small_int(v).unwrap().decode(), Decoded::Int(v));
        }

        #[test]
        fn slots_round_trip(i in 0u32..MAX_SLOT) {
            prop_assert_eq!(ValRef::slot(i).unwrap().decode(), Decoded::Slot(i));
        }
    }

    #[test]
    fn out_of_range_ints_are_not_inline() {
        assert_eq!(ValRef::small_int(INLINE_MAX + 1), None);
        assert_eq!(ValRef::small_int(INLINE_MIN - 1), None);
        assert_eq!(ValRef::slot(MAX_SLOT), None);
    }

    #[test]
    fn constants_decode() {
        assert_eq!(ValRef::NONE.decode(), Decoded::None);
        assert_eq!(ValRef::TRUE.decode(), Decoded::Bool(true));
        assert_eq!(ValRef::FALSE.decode(), Decoded::Bool(false));
        assert_eq!(ValRef::ABSENT.decode(), Decoded::Absent);
    }
}
