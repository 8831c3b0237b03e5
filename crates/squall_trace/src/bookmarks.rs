//! Bookmarks placed from code (`squall.bookmark("note")`): recorded as calls of the
//! pseudo-function `squall.bookmark` whose one argument is the note.

use crate::entry::Kind;
use crate::forms::Forms;
use crate::threads::ThreadRef;
use crate::value::ValRef;

/// One bookmark: its thread (position in the list the query was given), its call entry and
/// its note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bookmark {
    pub thread: usize,
    pub idx: u32,
    pub note: ValRef,
}

/// Every bookmark of the given threads, thread by thread, in order.
pub fn bookmarks(forms: &Forms, threads: &[ThreadRef<'_>]) -> Vec<Bookmark> {
    let is_bookmark: Vec<bool> = forms.matching(Some("squall"), Some("bookmark"));
    if !is_bookmark.contains(&true) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, t) in threads.iter().enumerate() {
        let tl = t.timeline;
        for (i, e) in tl.entries().iter().enumerate() {
            if e.kind() == Kind::Call && is_bookmark.get(e.id() as usize).copied().unwrap_or(false) {
                let idx = tl.first_idx() + i;
                let note = tl.call_args(idx, 1).first().copied().unwrap_or(ValRef::ABSENT);
                out.push(Bookmark { thread: n, idx: idx as u32, note });
            }
        }
    }
    out
}
