//! One thread's delegation state (`delegation.rs` records with it): kept apart so that the
//! engine, which holds it per thread, does not depend on the recording code that uses it.

use squall_trace::Timeline;

/// One thread's delegation state. Invariant: `reopened` lists re-opened frames innermost last; a
/// record counts only while the open-frame stack still holds its call idx at its depth (frames
/// also close by paths that do not come here, so records are checked, not trusted).
#[derive(Default)]
pub struct Delegation {
    pub(crate) waiting: foldhash::HashMap<usize, Waiting>,
    pub(crate) reopened: Vec<Reopened>,
    /// Scratch for `before_enter`'s chain of waiting frames, kept so that a resume allocates
    /// nothing (recursive generators walk a chain at every value: 17 frames in pyperformance's
    /// generators).
    pub(crate) chain: Vec<(usize, Waiting)>,
}

#[derive(Clone, Copy)]
pub(crate) struct Waiting {
    pub(crate) code: usize,
    pub(crate) form: u32,
    /// The await site it suspended at: where its re-opened segments suspend.
    pub(crate) site: u32,
}

#[derive(Clone, Copy)]
pub(crate) struct Reopened {
    pub(crate) depth: usize,
    pub(crate) call_idx: u32,
    pub(crate) frame: usize,
    pub(crate) form: u32,
    pub(crate) site: u32,
}

impl Delegation {
    /// Nothing waits and nothing is re-opened: entries are recorded as they come.
    #[inline(always)]
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.reopened.is_empty()
    }

    /// Some frame is re-opened (it may have to suspend with the next suspension).
    #[inline(always)]
    pub fn has_reopened(&self) -> bool {
        !self.reopened.is_empty()
    }

    pub(crate) fn prune(&mut self, tl: &Timeline) {
        self.reopened.retain(|r| tl.open_call_at(r.depth) == Some(r.call_idx));
    }

    /// The innermost re-opened record, if it is the top of the open-frame stack.
    pub(crate) fn top(&self, tl: &Timeline) -> Option<Reopened> {
        self.reopened.last().copied().filter(|r| r.depth + 1 == tl.open_depth())
    }
}
