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
    #[error("idx {idx} is out of range: the timeline has {len} entries (valid: 0..{len})")]
    IdxOutOfRange { idx: u64, len: usize },
    #[error("entry {idx} was moved out of memory into the recording file (memory holds {first}..{len}); open the file with squall.load(path) for the whole timeline")]
    Evicted { idx: u64, first: usize, len: usize },
    #[error("unknown drift `{0}`; use one of: at, next, prev, next-over, prev-over, next-out, prev-out")]
    BadDrift(String),
}
