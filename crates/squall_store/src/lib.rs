//! The squall recording file: a versioned, crash-safe stream of self-delimiting chunks, with a
//! streaming [`Writer`] (the live recorder's background flusher feeds it) and a reader ([`open`],
//! [`read`]) that rebuilds the same [`Timeline`]s the live queries run over. The byte layout is
//! specified in `docs/format.md`; [`export`] turns a loaded recording into a Chrome trace (Perfetto)
//! or an SQLite database.
//!
//! Nothing here panics on any input: a damaged or truncated file loads up to its last intact chunk
//! and says why it stopped ([`Recording::cut_short`]); a file that is not a recording, or that a
//! newer squall wrote, is a [`StoreError`] that says what to do.

mod codec;
mod error;
pub mod export;
mod nodecodec;
mod outputs;
mod reader;
mod snapcodec;
pub mod sourcefile;
mod wire;
mod writer;

pub use error::StoreError;
pub use reader::{open, open_with_progress, read, read_with_progress};
pub use squall_trace::printer::{pprint, preview, preview_ref};
pub use wire::{Codec, FORMAT_VERSION, MAGIC};
pub use writer::{Held, Writer, Written};

use squall_trace::{Forms, Outputs, Timeline, ValueStore};

/// What a recording says about the run it came from. Written once, first, in the header chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The recorded program (script path or `-m module`).
    pub program: String,
    /// The program's arguments (`sys.argv`).
    pub argv: Vec<String>,
    /// The Python that ran it (`sys.version`).
    pub python: String,
    /// The squall version that recorded it.
    pub squall: String,
    /// When recording started, milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// The working directory of the run.
    pub cwd: String,
}

/// One recorded (flow, thread) timeline's identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadMeta {
    /// The recorder's number for this (flow, thread): entries and values chunks name it.
    pub timeline: u32,
    /// The flow id (`squall.flow(n)`, each pytest test its own).
    pub flow: u32,
    /// The thread's id as Python reported it.
    pub thread_id: u64,
    /// The thread's name (`threading.current_thread().name`).
    pub name: String,
}

/// One timeline read back from a file.
#[derive(Debug)]
pub struct LoadedTimeline {
    /// Which flow and thread it is.
    pub meta: ThreadMeta,
    /// The entries and args arena; every call's ret idx recomputed from its exit.
    pub timeline: Timeline,
    /// The value store the entries' `ValRef` slots point into (in a version 1 file, entry slot
    /// `i` is the `i`th value saved; slots it never saved read as [`MISSING_VALUE`] placeholders).
    pub values: ValueStore,
}

/// The type name of the placeholder `Snap::Opaque` that stands for a value slot a file skipped.
pub const MISSING_VALUE: &str = "<not saved>";

/// A recording file, loaded.
#[derive(Debug)]
pub struct Recording {
    /// The run's header.
    pub header: Header,
    /// Every form and site the recording registered (ids as when recording).
    pub forms: Forms,
    /// The timelines, in the order their thread chunks appear in the file.
    pub timelines: Vec<LoadedTimeline>,
    /// True when the end marker was read: the recording finished normally.
    pub completed: bool,
    /// When the recording ended (from the end marker).
    pub ended_unix_ms: Option<u64>,
    /// The recorder's closing statistics (from the end marker), in its order.
    pub stats: Vec<(String, u64)>,
    /// The size of the file (or byte slice) read.
    pub file_bytes: u64,
    /// Why the data ends early, if it does: no end marker (the program was killed or crashed after
    /// the last flush), or a truncated or corrupt chunk at a byte offset. Everything before it
    /// loaded.
    pub cut_short: Option<String>,
    /// What the program wrote to stdout and stderr (timelines as indexes into `timelines`).
    pub outputs: Outputs,
}

impl Recording {
    /// The loaded timeline for a (flow, thread id), if recorded.
    pub fn timeline(&self, flow: u32, thread_id: u64) -> Option<&LoadedTimeline> {
        self.timelines.iter().find(|t| t.meta.flow == flow && t.meta.thread_id == thread_id)
    }

    /// Total entries over all timelines.
    pub fn entry_count(&self) -> u64 {
        self.timelines.iter().map(|t| t.timeline.len() as u64).sum()
    }
}

/// A progress callback: `(done, total)` in units the caller reports (bytes for [`open`], entries
/// for the exports). Called a few hundred times at most over a whole job.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);
