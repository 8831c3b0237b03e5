//! Strings and bytes behind one thin pointer, for the payloads of [`crate::Node`].
//!
//! A `Box<str>` is two words (pointer and length), which made every node 24 bytes although
//! every other variant holds one word; a value store holds tens of millions of nodes, and each
//! byte of them is a page to fault in (docs/DESIGN.md, "Where recorded time goes"). `ThinVec`
//! keeps the length in its allocation, so a node is 16 bytes (the tag and one word).

use std::fmt;
use std::ops::Deref;

use thin_vec::ThinVec;

/// Bytes the allocation of a non-empty [`ThinStr`] or [`ThinBytes`] holds besides its contents
/// (`ThinVec`'s length and capacity).
pub const THIN_HEADER: u64 = 16;

/// A UTF-8 string in one thin pointer; derefs to `str`.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ThinStr(ThinVec<u8>);

impl ThinStr {
    /// Heap bytes it owns (what the memory limit counts).
    pub fn heap_bytes(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            THIN_HEADER + self.0.len() as u64
        }
    }
}

impl Deref for ThinStr {
    type Target = str;

    fn deref(&self) -> &str {
        // SAFETY: a `ThinStr` is only made from a `str` (the `From` impls below), so its bytes
        // are valid UTF-8, and they are never changed.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

impl From<&str> for ThinStr {
    fn from(s: &str) -> Self {
        ThinStr(ThinVec::from(s.as_bytes()))
    }
}

impl From<String> for ThinStr {
    fn from(s: String) -> Self {
        ThinStr::from(s.as_str())
    }
}

impl From<Box<str>> for ThinStr {
    fn from(s: Box<str>) -> Self {
        ThinStr::from(&*s)
    }
}

impl fmt::Debug for ThinStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for ThinStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// Bytes in one thin pointer; derefs to `[u8]`.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ThinBytes(ThinVec<u8>);

impl ThinBytes {
    /// Heap bytes it owns (what the memory limit counts).
    pub fn heap_bytes(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            THIN_HEADER + self.0.len() as u64
        }
    }
}

impl Deref for ThinBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<&[u8]> for ThinBytes {
    fn from(b: &[u8]) -> Self {
        ThinBytes(ThinVec::from(b))
    }
}

impl From<Vec<u8>> for ThinBytes {
    fn from(b: Vec<u8>) -> Self {
        ThinBytes::from(b.as_slice())
    }
}

impl From<Box<[u8]>> for ThinBytes {
    fn from(b: Box<[u8]>) -> Self {
        ThinBytes::from(&*b)
    }
}

impl fmt::Debug for ThinBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_bytes_round_trip_behind_one_word() {
        assert_eq!(std::mem::size_of::<ThinStr>(), 8);
        assert_eq!(std::mem::size_of::<ThinBytes>(), 8);
        for s in ["", "a", "héllo ✓", &"x".repeat(5000)] {
            let t = ThinStr::from(s);
            assert_eq!(&*t, s);
            assert_eq!(t.to_string(), s);
            assert_eq!(format!("{t:?}"), format!("{s:?}"));
            assert_eq!(t.heap_bytes(), if s.is_empty() { 0 } else { THIN_HEADER + s.len() as u64 });
        }
        let b = ThinBytes::from(vec![0u8, 255, 7]);
        assert_eq!(&*b, &[0u8, 255, 7][..]);
        assert_eq!(ThinBytes::from(&[][..]).heap_bytes(), 0);
    }
}
