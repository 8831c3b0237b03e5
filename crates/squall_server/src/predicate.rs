//! Custom power-step predicates (`/api/power_step?how=predicate&pred=...`): a condition over one
//! entry's recorded value, in the language of the agent's `calls --where`
//! (`python/squall/agent_predicate.py`, read with `ast`, never `eval`'d). This server holds no
//! Python: the front end that serves a recording from Python (the live program's, or `squall
//! open`'s, `crates/squall_python/src/bindings/ui.rs`) hands in a [`Predicates`] that compiles and runs
//! them there, the same code for live and file. A server without one says so.

use squall_trace::{Decoded, Entry, Kind, Snap};

use crate::source::View;

/// What a predicate sees of one entry: its value (`v`) as recorded at that entry, the entry's
/// kind (`kind`: `expr`, `bind`, `fn-return`, `fn-unwind`, `write`), the name it binds or the
/// attribute it writes (`name`, else None) and its function's qualified name (`fn`).
pub struct Candidate<'a> {
    pub value: &'a Snap,
    pub kind: &'static str,
    pub name: Option<&'a str>,
    pub function: Option<&'a str>,
}

/// One compiled predicate: true when the entry matches; `Err` is a message for the user (the
/// predicate names something the entry does not have).
pub type Test<'t> = dyn Fn(&Candidate<'_>) -> Result<bool, String> + 't;

/// Compiles and runs predicates. Implemented where Python is (`crates/squall_python/src/bindings/ui.rs`).
pub trait Predicates: Send + Sync {
    /// Compiles `text` and calls `scan` once with it; `Err`: why `text` is not a predicate
    /// (quoting it and saying what to write).
    fn with_predicate(&self, text: &str, scan: &mut dyn FnMut(&Test<'_>)) -> Result<(), String>;
}

/// The predicate's view of entry `e` of timeline `tl` (whose value is `snap`).
pub fn candidate<'a>(view: &'a dyn View, e: &Entry, snap: &'a Snap) -> Candidate<'a> {
    let forms = view.forms();
    let (name, function) = match e.kind() {
        Kind::Unwind => (None, forms.form(e.id()).map(|f| &*f.name)),
        _ => match forms.site(e.id()) {
            Some(s) => (s.symbol.as_deref(), forms.form(s.form).map(|f| &*f.name)),
            None => (None, None),
        },
    };
    Candidate { value: snap, kind: e.kind().type_name(), name, function }
}

/// The recorded value of entry `e` as a tree (inline scalars too); `Err`: why it cannot be read.
pub fn entry_snap(view: &dyn View, tl: usize, e: &Entry) -> Result<Snap, String> {
    let v = e.value();
    Ok(match (v.as_ref(), v.decode()) {
        (_, Decoded::Int(i)) => Snap::Int(i),
        (_, Decoded::Float(f)) => Snap::Float(f),
        (_, Decoded::None | Decoded::Absent) => Snap::None,
        (_, Decoded::Bool(b)) => Snap::Bool(b),
        (Some(r), Decoded::Slot(_)) => view.snap(tl, r)?.into_owned(),
        (None, Decoded::Slot(_)) => Snap::None,
    })
}
