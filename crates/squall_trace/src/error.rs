//! Errors of the timeline model and its queries.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TraceError {
    #[error("unknown {what} kind {code}; this squall understands only the kinds its instrumenter emits")]
    BadKind { what: &'static str, code: i64 },
    #[error("too many {what} registered (the limit is 268,435,455)")]
    TooManyIds { what: &'static str },
    #[error("form id {0} was never registered")]
    UnknownForm(u32),
    #[error("site id {0} was never registered")]
    UnknownSite(u32),
    #[error("idx {idx} is out of range: {}", valid_idxs(*len))]
    IdxOutOfRange { idx: u64, len: usize },
    #[error("entry {idx} was moved out of memory into the recording file (memory holds {first}..{len}); open the file with squall.load(path) for the whole timeline")]
    Evicted { idx: u64, first: usize, len: usize },
    #[error("unknown drift `{0}`; use one of: at, next, prev, next-over, prev-over, next-out, prev-out")]
    BadDrift(String),
    #[error("entry {0} is a call: it has no single value (step into it first)")]
    NoSingleValue(u64),
    #[error("entry {0} is not an expression, binding or write: step onto one")]
    NotAnEvent(u64),
}

/// The idxs a timeline of `len` entries has, said so that the last one named is valid.
fn valid_idxs(len: usize) -> String {
    match len {
        0 => "the timeline has no entries".to_string(),
        1 => "the timeline has 1 entry, idx 0".to_string(),
        n => format!("the timeline has {n} entries, idx 0 to {}", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_names_the_last_valid_idx() {
        let e = |idx, len| TraceError::IdxOutOfRange { idx, len }.to_string();
        assert_eq!(e(17, 17), "idx 17 is out of range: the timeline has 17 entries, idx 0 to 16");
        assert_eq!(e(3, 1), "idx 3 is out of range: the timeline has 1 entry, idx 0");
        assert_eq!(e(0, 0), "idx 0 is out of range: the timeline has no entries");
    }
}
