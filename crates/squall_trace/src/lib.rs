//! The language-neutral core of squall: per-thread timelines of 16-byte entries, the forms and
//! sites they point at, the recorder state machine that keeps calls and returns paired, and every
//! query over a timeline, and the value store that entries' [`ValRef`]s point into. Nothing here
//! knows about Python.

pub mod bookmarks;
pub mod diff;
pub mod earlier_idx;
mod entry;
mod error;
pub mod exceptions;
mod forms;
pub mod grow;
pub mod history;
mod limits;
pub mod locate;
pub mod order;
pub mod origin;
mod outputs;
pub mod predicate;
pub mod printer;
mod queries;
pub mod quiet_thread;
pub mod search;
mod snapshot;
pub mod stepping;
mod store;
mod thin;
mod threads;
mod timeline;
mod value;
pub mod value_tree;
mod writes;
mod writes_merged;

pub use entry::{Entry, Kind, MAX_ID, NONE, WRITE_WORDS};
pub use error::TraceError;
pub use forms::{Coord, Form, FormKind, Forms, Site, SiteKind, SiteReads, SourceFile};
pub use history::{
    history, history_merged, history_with_writes, latest_state, Change, MergedChange, MergedState, NodeEntries, State,
};
pub use limits::{LimitHit, Limits};
pub use outputs::{OutStream, OutputChunk, Outputs, CHUNK_KEPT_BYTES, KEPT_BYTES};
pub use queries::{display_name, merge_call_stats, total_order, CallStat, Drift, FrameRef, Segment};
pub use snapshot::{SeqKind, Snap};
pub use store::{
    BadStore, CutNode, ExpandBudget, LoggedWrite, MapNode, NameId, Node, ObjId, ObjectNode, OpaqueNode, RefNode,
    SeqDeltaNode, SeqNode, ValueStore, WriteKey, IN_FILE,
};
pub use thin::{ThinBytes, ThinStr};
pub use threads::ThreadRef;
pub use timeline::{Recorded, Timeline};
pub use value::{Decoded, ValRef, Value, MAX_SLOT};
pub use writes::{sync_writes, writes, OldValue, WriteFact, WriteFilter};
pub use writes_merged::{writes_merged, MergedWrite};
