//! Queries over one timeline, in FlowStorm's vocabulary. Backends resolve the values.

use std::collections::HashMap;

use crate::entry::{Entry, Kind};
use crate::error::TraceError;
use crate::forms::Forms;
use crate::timeline::Timeline;

/// How `timeline_entry` moves from an idx.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drift {
    At,
    Next,
    Prev,
    /// FlowStorm's next-over: the next entry of the same frame, stepping over the calls made
    /// from it (their whole frames); from the frame's exit, the next entry; from a call entry,
    /// that call's exit (over the whole call).
    NextOver,
    /// The previous entry of the same frame, stepping back over the calls made from it; from an
    /// exit, its call entry; from a call entry, the previous entry (the previous call's call
    /// entry when that entry is its exit).
    PrevOver,
    /// The first entry after the current frame exited (back in its caller).
    NextOut,
    /// The call entry of the current frame's caller.
    PrevOut,
}

impl Drift {
    pub fn parse(s: &str) -> Result<Drift, TraceError> {
        Ok(match s.trim_start_matches(':') {
            "at" => Drift::At,
            "next" => Drift::Next,
            "prev" => Drift::Prev,
            "next-over" | "next_over" => Drift::NextOver,
            "prev-over" | "prev_over" => Drift::PrevOver,
            "next-out" | "next_out" => Drift::NextOut,
            "prev-out" | "prev_out" => Drift::PrevOut,
            other => return Err(TraceError::BadDrift(other.to_string())),
        })
    }
}

/// One frame of a stack, innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    pub fn_call_idx: u32,
    pub form: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallStat {
    pub form: u32,
    pub count: u64,
}

impl Timeline {
    fn check(&self, idx: u64) -> Result<usize, TraceError> {
        if (idx as usize) >= self.len() || idx > usize::MAX as u64 {
            Err(TraceError::IdxOutOfRange { idx, len: self.len() })
        } else if (idx as usize) < self.first_idx() {
            Err(TraceError::Evicted { idx, first: self.first_idx(), len: self.len() })
        } else {
            Ok(idx as usize)
        }
    }

    /// The entry at a checked idx (`first_idx() <= idx < len()`).
    fn at(&self, idx: usize) -> &Entry {
        &self.entries()[idx - self.first_idx()]
    }

    /// The call idx of the frame `idx` belongs to: a call is its own frame; an exit belongs to
    /// the frame it closes.
    pub fn frame_of(&self, idx: u64) -> Result<u32, TraceError> {
        let i = self.check(idx)?;
        let e = self.at(i);
        Ok(if e.kind().is_call() { i as u32 } else { e.fn_call_idx() })
    }

    /// One past the last entry inside the frame opened at `call` (its exit, or the end).
    fn frame_end(&self, call: usize) -> usize {
        self.at(call).ret_idx().map_or(self.len(), |r| r as usize)
    }

    pub fn timeline_entry(&self, idx: u64, drift: Drift) -> Result<u32, TraceError> {
        let i = self.check(idx)?;
        let last = self.len() - 1;
        let to = match drift {
            Drift::At => i,
            Drift::Next => (i + 1).min(last),
            Drift::Prev => i.saturating_sub(1),
            Drift::NextOver => match self.at(i) {
                e if e.kind().is_call() => e.ret_idx().map_or(last, |r| r as usize),
                _ => self.next_in_frame(i).unwrap_or((i + 1).min(last)),
            },
            Drift::PrevOver => match self.at(i) {
                e if e.kind().is_exit() => e.fn_call_idx() as usize,
                e if e.kind().is_call() => {
                    // A call entry is where its caller called: back over the previous call made
                    // from there, if the entry before is one's exit.
                    let p = i.saturating_sub(1).max(self.first_idx());
                    match self.at(p) {
                        pe if p < i && pe.kind().is_exit() => pe.fn_call_idx() as usize,
                        _ => p,
                    }
                }
                _ => self.prev_in_frame(i).unwrap_or(i.saturating_sub(1)),
            },
            Drift::NextOut => {
                let f = self.check(u64::from(self.frame_of(idx)?))?;
                match self.at(f).ret_idx() {
                    Some(r) => (r as usize + 1).min(last),
                    None => last,
                }
            }
            Drift::PrevOut => {
                let f = self.check(u64::from(self.frame_of(idx)?))?;
                self.at(f).parent_idx().map_or(f, |p| p as usize)
            }
        };
        Ok(to as u32)
    }

    /// The frame a checked idx belongs to (see `frame_of`).
    fn frame_at(&self, i: usize) -> usize {
        let e = self.at(i);
        if e.kind().is_call() {
            i
        } else {
            e.fn_call_idx() as usize
        }
    }

    /// The next entry after checked idx `i` in `i`'s frame, skipping the frames called from it;
    /// `None` past the frame's last entry.
    fn next_in_frame(&self, i: usize) -> Option<usize> {
        let frame = self.frame_at(i);
        if i != frame && self.at(i).kind().is_exit() {
            return None; // the frame's exit is its last entry
        }
        let mut k = i + 1;
        while k < self.len() {
            let e = self.at(k);
            if e.kind().is_call() {
                k = e.ret_idx()? as usize + 1; // a callee: over its whole frame (open: none left)
            } else if e.fn_call_idx() as usize == frame {
                return Some(k);
            } else {
                return None; // an entry of another frame: this one ended without an exit
            }
        }
        None
    }

    /// The previous entry before checked idx `i` in `i`'s frame, skipping the frames called
    /// from it; `None` before the frame's call entry.
    fn prev_in_frame(&self, i: usize) -> Option<usize> {
        let frame = self.frame_at(i);
        if i == frame {
            return None;
        }
        let mut k = i.checked_sub(1)?;
        while k >= self.first_idx() {
            let e = self.at(k);
            if k == frame {
                return Some(k);
            }
            if e.kind().is_exit() && e.fn_call_idx() as usize != frame {
                k = (e.fn_call_idx() as usize).checked_sub(1)?; // a callee's exit: over its frame
            } else if !e.kind().is_call() && e.fn_call_idx() as usize == frame {
                return Some(k);
            } else {
                return None;
            }
        }
        None
    }

    /// Frames from the one holding `idx` out to the root.
    pub fn stack_for_frame(&self, idx: u64) -> Result<Vec<FrameRef>, TraceError> {
        let mut frame = Some(self.frame_of(idx)?);
        let mut out = Vec::new();
        while let Some(f) = frame {
            if (f as usize) < self.first_idx() {
                break; // the outer frames were evicted (they are in the recording file)
            }
            let e = self.at(f as usize);
            out.push(FrameRef { fn_call_idx: f, form: e.id() });
            frame = e.parent_idx();
        }
        Ok(out)
    }

    /// The calls made directly from the frame opened at `call` (or the top-level calls for
    /// `None`), in order, from the `offset`-th, at most `limit` of them.
    pub fn callstack_node_childs(
        &self,
        call: Option<u64>,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<Vec<u32>, TraceError> {
        let (mut i, end) = match call {
            Some(c) => {
                let c = self.check(c)?;
                if !self.at(c).kind().is_call() {
                    return Ok(Vec::new());
                }
                (c + 1, self.frame_end(c))
            }
            None => (self.first_idx(), self.len()),
        };
        let mut out = Vec::new();
        let mut seen = 0usize;
        let limit = limit.unwrap_or(usize::MAX);
        while i < end && out.len() < limit {
            let e = self.at(i);
            if e.kind().is_call() {
                if seen >= offset {
                    out.push(i as u32);
                }
                seen += 1;
                i = self.frame_end(i) + 1;
            } else {
                i += 1;
            }
        }
        Ok(out)
    }

    /// Calls per form, most called first (resumptions are not calls).
    pub fn fn_call_stats(&self) -> Vec<CallStat> {
        // Form ids are dense from 0: counted in a table by id (a hash per call entry was most
        // of the end-of-run summary's time), past `DENSE_FORMS` (a foreign file's) in a map.
        const DENSE_FORMS: usize = 1 << 20;
        let mut dense: Vec<u64> = self.evicted_calls().to_vec();
        let mut sparse: HashMap<u32, u64> = HashMap::new();
        for e in self.entries() {
            if e.kind() == Kind::Call {
                let form = e.id() as usize;
                if form < DENSE_FORMS {
                    if form >= dense.len() {
                        dense.resize(form + 1, 0);
                    }
                    dense[form] += 1;
                } else {
                    *sparse.entry(e.id()).or_default() += 1;
                }
            }
        }
        for (form, &n) in dense.iter().enumerate() {
            if n > 0 {
                *sparse.entry(form as u32).or_default() += n;
            }
        }
        let mut out: Vec<CallStat> = sparse.into_iter().map(|(form, count)| CallStat { form, count }).collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then(a.form.cmp(&b.form)));
        out
    }

    /// The first fn-call from `from_idx` (inclusive) in the given direction whose form is
    /// selected by `forms_ok` and that `pred` accepts.
    pub fn find_fn_call<E>(
        &self,
        forms_ok: &[bool],
        from_idx: Option<u64>,
        backward: bool,
        mut pred: impl FnMut(u32) -> Result<bool, E>,
    ) -> Result<Option<u32>, E> {
        let n = self.len();
        if n == 0 {
            return Ok(None);
        }
        let first = self.first_idx();
        let matches = |e: &Entry| e.kind() == Kind::Call && forms_ok.get(e.id() as usize).copied().unwrap_or(false);
        if backward {
            let start = from_idx.map_or(n - 1, |f| (f as usize).min(n - 1));
            for i in (first..=start).rev() {
                if matches(self.at(i)) && pred(i as u32)? {
                    return Ok(Some(i as u32));
                }
            }
        } else {
            for i in from_idx.map_or(first, |f| (f as usize).max(first))..n {
                if matches(self.at(i)) && pred(i as u32)? {
                    return Ok(Some(i as u32));
                }
            }
        }
        Ok(None)
    }
}

impl Timeline {
    /// The expression and binding entries directly inside the frame opened at `call` (not inside
    /// frames it called), in order, up to `upto` inclusive.
    pub fn frame_events(&self, call: u64, upto: Option<u64>) -> Result<Vec<u32>, TraceError> {
        let c = self.check(call)?;
        let mut out = Vec::new();
        if !self.at(c).kind().is_call() {
            return Ok(out);
        }
        let end = self.frame_end(c).min(upto.map_or(usize::MAX, |u| u as usize + 1));
        let mut i = c + 1;
        while i < end {
            let e = self.at(i);
            match e.kind() {
                k if k.is_call() => i = self.frame_end(i) + 1,
                k if k.is_event() && e.fn_call_idx() as usize == c => {
                    out.push(i as u32);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        Ok(out)
    }

    /// The bindings visible at `idx`: for each symbol bound in the frame holding `idx` up to
    /// `idx`, its latest binding entry; ordered by first binding.
    pub fn bindings_at(&self, forms: &Forms, idx: u64) -> Result<Vec<u32>, TraceError> {
        let frame = self.frame_of(idx)?;
        let mut order: Vec<&str> = Vec::new();
        let mut latest: HashMap<&str, u32> = HashMap::new();
        for i in self.frame_events(u64::from(frame), Some(idx))? {
            let e = self.at(i as usize);
            if e.kind() != Kind::Bind {
                continue;
            }
            let Some(sym) = forms.site(e.id()).and_then(|s| s.symbol.as_deref()) else { continue };
            if latest.insert(sym, i).is_none() {
                order.push(sym);
            }
        }
        Ok(order.into_iter().filter_map(|s| latest.get(s).copied()).collect())
    }

    /// The first entry of one of `kinds` from `from_idx` (inclusive) in the given direction that
    /// `pred` accepts.
    pub fn find_entry<E>(
        &self,
        kinds: &[Kind],
        from_idx: Option<u64>,
        backward: bool,
        mut pred: impl FnMut(u32, &Entry) -> Result<bool, E>,
    ) -> Result<Option<u32>, E> {
        let n = self.len();
        if n == 0 {
            return Ok(None);
        }
        let first = self.first_idx();
        let wanted = |e: &Entry| kinds.contains(&e.kind());
        if backward {
            let start = from_idx.map_or(n - 1, |f| (f as usize).min(n - 1));
            for i in (first..=start).rev() {
                let e = self.at(i);
                if wanted(e) && pred(i as u32, e)? {
                    return Ok(Some(i as u32));
                }
            }
        } else {
            for i in from_idx.map_or(first, |f| (f as usize).max(first))..n {
                let e = self.at(i);
                if wanted(e) && pred(i as u32, e)? {
                    return Ok(Some(i as u32));
                }
            }
        }
        Ok(None)
    }
}

/// Calls per form summed over several timelines, most called first.
pub fn merge_call_stats<'a>(timelines: impl IntoIterator<Item = &'a Timeline>) -> Vec<CallStat> {
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for tl in timelines {
        for s in tl.fn_call_stats() {
            *counts.entry(s.form).or_default() += s.count;
        }
    }
    let mut out: Vec<CallStat> = counts.into_iter().map(|(form, count)| CallStat { form, count }).collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.form.cmp(&b.form)));
    out
}

/// Resolves the name of `form` for display, `module.qualname`.
pub fn display_name(forms: &Forms, form: u32) -> String {
    forms.form(form).map_or_else(|| format!("<form {form}>"), |f| format!("{}.{}", f.ns, f.name))
}

/// One run of consecutive entries of one timeline in the merged order of several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Which of the given timelines.
    pub timeline: usize,
    pub from: u32,
    /// One past the last idx.
    pub to: u32,
}

/// The entries of several timelines (of one flow) in the order they were recorded, as segments:
/// each timeline is cut at its switch marks and the pieces sorted by global step. Timelines
/// without marks (recorded before marks existed) come whole, in the given order.
pub fn total_order(timelines: &[&Timeline]) -> Vec<Segment> {
    let mut pieces: Vec<(u64, usize, u32, u32)> = Vec::new();
    for (t, tl) in timelines.iter().enumerate() {
        let marks = tl.switches();
        let len = tl.len() as u32;
        let first = tl.first_idx() as u32;
        if marks.is_empty() {
            if len > first {
                pieces.push((u64::MAX - (timelines.len() - t) as u64, t, first, len));
            }
            continue;
        }
        if marks[0].0 > first {
            pieces.push((0, t, first, marks[0].0.min(len)));
        }
        for (i, &(from, step)) in marks.iter().enumerate() {
            let to = marks.get(i + 1).map_or(len, |m| m.0).min(len);
            let from = from.max(first);
            if from < to {
                pieces.push((step, t, from, to));
            }
        }
    }
    pieces.sort_by_key(|p| p.0);
    pieces.into_iter().map(|(_, timeline, from, to)| Segment { timeline, from, to }).collect()
}
