//! The threads a cross-thread query reads: each front end (the Python API over the live
//! recording or a file, the UI server) lists its timelines as [`ThreadRef`]s, and the queries
//! answer with positions in that list, so every answer names its thread.

use crate::store::ValueStore;
use crate::timeline::Timeline;

/// One (flow, thread) timeline and its value store, as cross-thread queries read it.
#[derive(Clone, Copy)]
pub struct ThreadRef<'a> {
    pub flow: u32,
    pub thread_id: u64,
    pub timeline: &'a Timeline,
    /// `None` for a front end that holds no values for this timeline (its values are then
    /// neither searched nor compared).
    pub values: Option<&'a ValueStore>,
}
