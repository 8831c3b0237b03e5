//! What the server reads: a [`RecordingSource`] lends a [`View`] of a recording for the time of
//! one query. A recording file is a source that never changes; a live recording in a running
//! program is one that takes its lock (the GIL) for each query and releases it between them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use squall_store::Recording;
use squall_trace::{ExpandBudget, Forms, Outputs, Snap, Timeline, ValRef, ValueStore};

/// One (flow, thread) timeline as a view shows it. `number` is its position in
/// [`View::timelines`] and what API routes call `tl`.
pub struct TlInfo<'a> {
    pub flow: u32,
    pub thread_id: u64,
    pub name: &'a str,
    pub timeline: &'a Timeline,
}

/// A recording, readable for the time of one query.
pub trait View {
    fn forms(&self) -> &Forms;
    /// Every timeline, in a stable order (new ones only appended while live).
    fn timelines(&self) -> Vec<TlInfo<'_>>;
    /// The value store of timeline `tl`: live or from a file, the same representation.
    fn values(&self, tl: usize) -> Option<&ValueStore>;
    /// The recorded tree of value-store slot `v` of timeline `tl` (inline values are decoded by
    /// the caller).
    fn snap(&self, tl: usize, v: ValRef) -> Result<Cow<'_, Snap>, String> {
        let store = self.values(tl).ok_or_else(|| format!("no timeline {tl}"))?;
        if store.entry_ref(v).0 as usize >= store.len() {
            return Err(format!("value slot {} is not recorded (a recording cut short before it was saved?)", v.0));
        }
        let timelines = self.timelines();
        let t = timelines.get(tl);
        if let Some(t) = t {
            // A live timeline grows: its new writes apply to earlier states shown for references.
            squall_trace::sync_writes(t.timeline, self.forms(), store);
        }
        let mut snap = store.to_snap(v, ExpandBudget::FULL);
        if let Some(t) = t {
            squall_trace::earlier_idx::mark_earlier_idx(&mut snap, t.timeline, self.forms(), store);
        }
        Ok(Cow::Owned(snap))
    }
    /// How many value slots timeline `tl` holds (value-text search walks them).
    fn slot_count(&self, tl: usize) -> usize {
        self.values(tl).map_or(0, ValueStore::len)
    }
    /// What the recording says about itself (program, argv, completed...).
    fn info(&self) -> Value;
    /// What the program wrote to stdout and stderr (`outputs.rs`), if the recording has it.
    fn outputs(&self) -> Option<&Outputs> {
        None
    }
    /// The position in [`View::timelines`] of the timeline an output chunk names (the
    /// recorder's number for it).
    fn output_tl(&self, number: u32) -> Option<usize> {
        Some(number as usize)
    }
}

/// Where recordings come from. `with_view` calls `f` exactly once with a view that is valid for
/// the duration of the call.
pub trait RecordingSource: Send + Sync + 'static {
    fn with_view(&self, f: &mut dyn FnMut(&dyn View));
    /// True for a recording that grows while the program runs.
    fn live(&self) -> bool {
        false
    }
    /// Acts on the running program (`POST /api/control/{action}` with a JSON body `arg`): start,
    /// stop or clear recording, list modules and functions, instrument or uninstrument code. Only
    /// a live source does; an `Err` is a message for the user (answered as a 400).
    fn control(&self, action: &str, arg: &Value) -> Result<Value, String> {
        let _ = arg;
        Err(format!(
            "`{action}` needs a running program: this is a recording file (live controls work with squall.api.local_connect())"
        ))
    }
}

/// Runs `f` over the source's view and returns what it returns.
pub fn with_view<R>(src: &dyn RecordingSource, f: impl FnOnce(&dyn View) -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    src.with_view(&mut |v| {
        if let Some(f) = f.take() {
            out = Some(f(v));
        }
    });
    out.expect("RecordingSource::with_view must call its function once")
}

/// A recording file, loaded.
pub struct FileSource {
    pub rec: Recording,
    pub path: PathBuf,
}

impl FileSource {
    pub fn open(path: &Path) -> Result<FileSource, String> {
        let rec = squall_store::open(path).map_err(|e| e.to_string())?;
        Ok(FileSource { rec, path: path.to_path_buf() })
    }
}

impl View for FileSource {
    fn forms(&self) -> &Forms {
        &self.rec.forms
    }

    fn timelines(&self) -> Vec<TlInfo<'_>> {
        self.rec
            .timelines
            .iter()
            .map(|t| TlInfo {
                flow: t.meta.flow,
                thread_id: t.meta.thread_id,
                name: &t.meta.name,
                timeline: &t.timeline,
            })
            .collect()
    }

    fn values(&self, tl: usize) -> Option<&ValueStore> {
        self.rec.timelines.get(tl).map(|t| &t.values)
    }

    fn info(&self) -> Value {
        let h = &self.rec.header;
        json!({
            "path": self.path.display().to_string(),
            "program": h.program,
            "argv": h.argv,
            "python": h.python,
            "squall": h.squall,
            "cwd": h.cwd,
            "completed": self.rec.completed,
            "cut_short": self.rec.cut_short,
            "entries": self.rec.entry_count(),
            "forms": self.rec.forms.forms().len(),
        })
    }

    fn outputs(&self) -> Option<&Outputs> {
        Some(&self.rec.outputs)
    }
}

impl RecordingSource for FileSource {
    fn with_view(&self, f: &mut dyn FnMut(&dyn View)) {
        f(self)
    }
}
