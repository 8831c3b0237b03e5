//! One thread's timeline in one flow, and the recorder state machine that appends to it.
//!
//! Invariants:
//! - entries are appended only; an entry changes after it is written only to set a call's ret idx
//!   when its frame exits;
//! - every call's parent idx is a call recorded earlier in the same timeline, or `NONE`;
//! - the open-frame stack holds frames in call order, so call idxs on it increase upward
//!   (frames skipped by a function call limit sit on it with idx `NONE`).

use crate::entry::{Entry, Kind, NONE};
use crate::exceptions::Carried;
use crate::grow;
use crate::limits::{LimitHit, Limits};
use crate::value::{ValRef, Value};

#[derive(Clone, Copy, Debug)]
struct Open {
    /// `NONE` when the call was not recorded (function call limit).
    call_idx: u32,
    form: u32,
    /// The nearest recorded ancestor's call idx: the parent of calls made from this frame.
    parent_for_children: u32,
}

/// What happened to one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    Written,
    /// Not written, as it should be (the thread stopped at a limit, a frame skipped by a limit).
    Skipped,
    /// Not written because no open frame matched it (the frame started before recording did).
    Unmatched,
    /// Not written: a limit was reached by this very event; report it once.
    LimitReached(LimitHit),
}

#[derive(Debug, Default)]
pub struct Timeline {
    entries: Vec<Entry>,
    args: Vec<u32>,
    stack: Vec<Open>,
    last_closed: Option<Open>,
    calls: u64,
    fn_calls: Vec<u32>,
    stopped: Option<LimitHit>,
    /// Frames closed by repair: left without an exit event (a lambda that raised, a frame whose
    /// exit happened while recording was off).
    pub repaired: u64,
    /// Where this thread took over recording from another: (first idx written after the switch,
    /// the recorder's global step number then). Steps increase across all threads, so the
    /// timelines' segments can be merged into the order events really happened in.
    switches: Vec<(u32, u64)>,
    /// The idx of `entries[0]`: entries before it were evicted from memory (they are in the
    /// recording file). Idxs stay absolute.
    base: u32,
    /// The args-arena offset of `args[0]`.
    args_base: u32,
    /// fn-call counts per form of the evicted entries (so call stats stay whole), by form id
    /// (a live recording's ids are dense from 0: a hash per evicted call was most of an
    /// eviction's time).
    evicted_calls: Vec<u64>,
    /// The exceptions of the evicted entries (so the exceptions query stays whole).
    carried: Carried,
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// A finished timeline rebuilt from stored entries and args (a recording file). Each call's
    /// ret idx is recomputed from the exits that name it (the last one wins, as when recording).
    pub fn from_parts(mut entries: Vec<Entry>, args: Vec<u32>) -> Timeline {
        let mut calls = 0;
        for i in 0..entries.len() {
            let e = entries[i];
            match e.kind() {
                Kind::Call => {
                    calls += 1;
                    entries[i].b = NONE;
                }
                Kind::Resume => entries[i].b = NONE,
                Kind::Return | Kind::Unwind => {
                    if let Some(c) = entries.get_mut(e.fn_call_idx() as usize) {
                        if c.kind().is_call() {
                            c.b = i as u32;
                        }
                    }
                }
                Kind::Expr | Kind::Bind | Kind::Write => {}
            }
        }
        Timeline { entries, args, calls, ..Timeline::default() }
    }

    /// Marks that entries from now on follow global step `step` (another thread wrote before).
    pub fn mark_switch(&mut self, step: u64) {
        let at = self.len() as u32;
        match self.switches.last_mut() {
            Some(last) if last.0 == at => last.1 = step,
            _ => self.switches.push((at, step)),
        }
    }

    /// The switch marks (see `mark_switch`).
    pub fn switches(&self) -> &[(u32, u64)] {
        &self.switches
    }

    /// Sets the switch marks of a timeline read from a file.
    pub fn set_switches(&mut self, switches: Vec<(u32, u64)>) {
        self.switches = switches;
    }

    /// The args arena (values of calls with 2+ parameters, see `Entry`).
    pub fn args(&self) -> &[u32] {
        &self.args
    }

    /// One past the last idx (evicted entries included).
    #[inline]
    pub fn len(&self) -> usize {
        self.base as usize + self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries held in memory: idxs `first_idx()..len()`.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The first idx held in memory (0 unless entries were evicted).
    pub fn first_idx(&self) -> usize {
        self.base as usize
    }

    pub fn get(&self, idx: usize) -> Option<&Entry> {
        self.entries.get(idx.checked_sub(self.base as usize)?)
    }

    #[inline]
    fn get_mut(&mut self, idx: u32) -> Option<&mut Entry> {
        self.entries.get_mut(idx.checked_sub(self.base)? as usize)
    }

    /// Drops the entries before `idx` and the args before `args_idx` (both already saved to the
    /// recording file). Idxs stay absolute; queries answer for the rest and say what was evicted,
    /// but call counts and exceptions stay whole (what the evicted entries held of them is kept:
    /// `evicted_calls`, `carried_exceptions`; `values` is this timeline's value store, for
    /// telling whether two unwinds carry the same exception). The tables keep their capacity: the
    /// entries recorded next reuse the pages the evicted ones were in, instead of pages the
    /// kernel must zero (on the VMs measured, a fresh page cost ~4x a reused one:
    /// docs/DESIGN.md, "Where recorded time goes").
    pub fn evict_before(&mut self, idx: usize, args_idx: usize, values: Option<&crate::store::ValueStore>) {
        let n = idx.saturating_sub(self.base as usize).min(self.entries.len());
        let (mut carried, mut calls) = (std::mem::take(&mut self.carried), std::mem::take(&mut self.evicted_calls));
        carried.evict(values, self, n, &mut calls);
        (self.carried, self.evicted_calls) = (carried, calls);
        self.entries.drain(..n);
        self.base += n as u32;
        let m = args_idx.saturating_sub(self.args_base as usize).min(self.args.len());
        self.args.drain(..m);
        self.args_base += m as u32;
    }

    /// Keeps the texts of the exceptions carried from evicted entries whose values are in nodes
    /// below `below`, before those leave memory (`exceptions::Carried::keep_texts`).
    pub fn keep_exception_texts(&mut self, values: &crate::store::ValueStore, below: u32) {
        self.carried.keep_texts(values, below);
    }

    /// What the evicted entries left of the exceptions query (`exceptions::exceptions` goes on
    /// from it over the entries in memory).
    pub fn carried_exceptions(&self) -> &Carried {
        &self.carried
    }

    /// Entries the entries table holds room for (evicted ones' room included: it is reused).
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// One past the last args-arena offset (evicted args included).
    pub fn args_len(&self) -> usize {
        self.args_base as usize + self.args.len()
    }

    /// fn-call counts among evicted entries, by form id.
    pub fn evicted_calls(&self) -> &[u64] {
        &self.evicted_calls
    }

    /// Number of fn-call entries (resumptions excluded).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    pub fn stopped(&self) -> Option<LimitHit> {
        self.stopped
    }

    /// Bytes the timeline's tables hold: their capacity, not their length (a table grows by
    /// steps of up to 16 MiB, `grow.rs`, and the room ahead is faulted in before it is used, so
    /// it is resident: counting the length left up to a step per table out of the memory limit).
    pub fn bytes(&self) -> u64 {
        (self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.args.capacity() * 4
            + self.stack.capacity() * std::mem::size_of::<Open>()
            + self.switches.capacity() * std::mem::size_of::<(u32, u64)>()
            + self.fn_calls.capacity() * 4) as u64
            + self.evicted_calls.capacity() as u64 * 8
            + self.carried.bytes()
    }

    /// Forgets the open frames (recording restarts; frames open before are not continued).
    pub fn forget_open_frames(&mut self) {
        self.stack.clear();
        self.last_closed = None;
    }

    /// The argument values of the call at `idx`, given its form's parameter count.
    pub fn call_args(&self, idx: usize, nparams: usize) -> Vec<ValRef> {
        let Some(e) = self.get(idx) else { return Vec::new() };
        match (e.kind(), nparams) {
            (Kind::Resume, _) => vec![ValRef(e.c)],
            (Kind::Call, 0) => Vec::new(),
            (Kind::Call, 1) => vec![ValRef(e.c)],
            (Kind::Call, n) => {
                let Some(start) = (e.c as usize).checked_sub(self.args_base as usize) else { return Vec::new() };
                self.args.get(start..start + n).map(|s| s.iter().map(|&w| ValRef(w)).collect()).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    fn next_idx(&mut self, limits: &Limits) -> Result<u32, Recorded> {
        if self.stopped.is_some() {
            return Err(Recorded::Skipped);
        }
        let idx = self.len() as u64;
        let cap = trace_cap(limits);
        if idx >= cap {
            let hit = LimitHit::ThreadTrace { limit: cap };
            self.stopped = Some(hit);
            return Err(Recorded::LimitReached(hit));
        }
        Ok(idx as u32)
    }

    /// The usual case of an event in a frame of `form` (an expression, a binding, an exit):
    /// recording goes on, the trace limit is not reached, and the innermost open frame is a
    /// recorded one of `form`. Then its call idx; the event is written with `push_event` or
    /// `push_innermost_exit`, exactly as `event` and `exit` would write it. `None`: nothing was
    /// done, take `event`/`exit`, which handle every case.
    #[inline(always)]
    pub fn innermost_frame_of(&self, form: u32, limits: &Limits) -> Option<u32> {
        let top = self.stack.last()?;
        if top.form != form || top.call_idx == NONE || self.stopped.is_some() || self.len() as u64 >= trace_cap(limits)
        {
            return None;
        }
        Some(top.call_idx)
    }

    /// Whether `n` more entries fit under the trace limit (`innermost_frame_of` checks one).
    #[inline(always)]
    pub fn has_room_for(&self, n: usize, limits: &Limits) -> bool {
        self.len() as u64 + n as u64 <= trace_cap(limits)
    }

    /// Writes an `Expr` or `Bind` in `frame`, which `innermost_frame_of` just gave.
    #[inline(always)]
    pub fn push_event(&mut self, kind: Kind, site: u32, frame: u32, value: impl Into<Value>) {
        debug_assert!(kind.is_event());
        grow::push(&mut self.entries, Entry::valued(kind, site, frame, value.into()));
    }

    /// Writes a `Write` in `frame`, which `innermost_frame_of` just gave: what `write` writes
    /// when the event lands in the innermost open frame.
    #[inline(always)]
    pub fn push_write(&mut self, site: u32, frame: u32, obj: crate::ObjId, key: ValRef, value: ValRef, store_len: u32) {
        let at = self.args_base + self.args.len() as u32;
        grow::push(&mut self.entries, Entry::new(Kind::Write, site, frame, value.0, at));
        grow::extend(&mut self.args, &[obj as u32, (obj >> 32) as u32, key.0, store_len]);
    }

    /// Writes the exit of the innermost open frame, after `innermost_frame_of` found it.
    #[inline(always)]
    pub fn push_innermost_exit(&mut self, kind: Kind, id: u32, value: impl Into<Value>) {
        debug_assert!(kind.is_exit());
        let Some(top) = self.stack.pop() else { return };
        let idx = self.len() as u32;
        grow::push(&mut self.entries, Entry::valued(kind, id, top.call_idx, value.into()));
        if let Some(call) = self.get_mut(top.call_idx) {
            call.b = idx;
        }
        self.last_closed = Some(top);
    }

    /// How many frames are open (the open-frame stack's height).
    pub fn open_depth(&self) -> usize {
        self.stack.len()
    }

    /// The call idx of the open frame at stack position `pos` (`NONE`: a frame skipped by a
    /// limit), or `None` past the top.
    pub fn open_call_at(&self, pos: usize) -> Option<u32> {
        self.stack.get(pos).map(|o| o.call_idx)
    }

    /// The usual case of a call: recording goes on, no function call limit is set, the trace
    /// limit is not reached. Then `push_call` writes it exactly as `call` would. `false`:
    /// nothing was done, take `call`.
    #[inline(always)]
    pub fn call_is_plain(&self, limits: &Limits) -> bool {
        self.stopped.is_none() && limits.fn_call_limit.is_none() && (self.len() as u64) < trace_cap(limits)
    }

    /// Writes a call of `form` with 0 or 1 argument (`arg` `ABSENT` for none), after
    /// `call_is_plain`.
    #[inline(always)]
    pub fn push_call(&mut self, form: u32, arg: ValRef) {
        let idx = self.len() as u32;
        self.push_open(Kind::Call, form, idx, arg.0);
        self.calls += 1;
    }

    #[inline(always)]
    fn parent(&self) -> u32 {
        self.stack.last().map_or(NONE, |o| o.parent_for_children)
    }

    pub fn call(&mut self, form: u32, args: &[ValRef], limits: &Limits) -> Recorded {
        if self.stopped.is_some() {
            return Recorded::Skipped;
        }
        if let Some(limit) = limits.fn_call_limit {
            let f = form as usize;
            if self.fn_calls.len() <= f {
                self.fn_calls.resize(f + 1, 0);
            }
            self.fn_calls[f] = self.fn_calls[f].saturating_add(1);
            if self.fn_calls[f] > limit {
                let parent = self.parent();
                self.stack.push(Open { call_idx: NONE, form, parent_for_children: parent });
                return if self.fn_calls[f] == limit + 1 {
                    Recorded::LimitReached(LimitHit::FnCalls { form, limit })
                } else {
                    Recorded::Skipped
                };
            }
        }
        let idx = match self.next_idx(limits) {
            Ok(idx) => idx,
            Err(r) => return r,
        };
        let c = match args {
            [] => ValRef::ABSENT.0,
            [one] => one.0,
            many => {
                let at = self.args_base + self.args.len() as u32;
                if self.args.capacity() - self.args.len() < many.len() {
                    grow::grow(&mut self.args, many.len());
                }
                self.args.extend(many.iter().map(|v| v.0));
                at
            }
        };
        self.push_open(Kind::Call, form, idx, c);
        self.calls += 1;
        Recorded::Written
    }

    /// The usual case of a resumption: recording goes on, the trace limit is not reached. Then
    /// `push_resume` writes it exactly as `resume` would. `false`: take `resume`.
    #[inline(always)]
    pub fn resume_is_plain(&self, limits: &Limits) -> bool {
        self.stopped.is_none() && (self.len() as u64) < trace_cap(limits)
    }

    /// Writes a resumption of `form` receiving `sent`, after `resume_is_plain`.
    #[inline(always)]
    pub fn push_resume(&mut self, form: u32, sent: ValRef) {
        let idx = self.len() as u32;
        self.push_open(Kind::Resume, form, idx, sent.0);
    }

    pub fn resume(&mut self, form: u32, sent: ValRef, limits: &Limits) -> Recorded {
        match self.next_idx(limits) {
            Ok(idx) => {
                self.push_open(Kind::Resume, form, idx, sent.0);
                Recorded::Written
            }
            Err(r) => r,
        }
    }

    #[inline(always)]
    fn push_open(&mut self, kind: Kind, form: u32, idx: u32, c: u32) {
        let parent = self.parent();
        grow::push(&mut self.entries, Entry::new(kind, form, parent, NONE, c));
        self.stack.push(Open { call_idx: idx, form, parent_for_children: idx });
    }

    /// A frame of `form` exits: `kind` is `Return` (with `id` a site id; suspensions too) or
    /// `Unwind` (with `id` the form id). Resumable frames not open are resumed implicitly (a
    /// generator resumed by `throw()` or `close()`).
    pub fn exit(
        &mut self,
        kind: Kind,
        id: u32,
        form: u32,
        resumable: bool,
        value: impl Into<Value>,
        limits: &Limits,
    ) -> Recorded {
        debug_assert!(kind.is_exit());
        let value = value.into();
        if self.stopped.is_some() {
            return Recorded::Skipped;
        }
        // The usual case: the exiting frame is the innermost open one.
        if let Some(&top) = self.stack.last() {
            if top.form == form && top.call_idx != NONE {
                let cap = trace_cap(limits);
                let idx = self.len();
                if (idx as u64) < cap {
                    self.stack.pop();
                    grow::push(&mut self.entries, Entry::valued(kind, id, top.call_idx, value));
                    if let Some(call) = self.get_mut(top.call_idx) {
                        call.b = idx as u32;
                    }
                    self.last_closed = Some(top);
                    return Recorded::Written;
                }
            }
        }
        let open = match self.stack.iter().rposition(|o| o.form == form) {
            Some(pos) => {
                let thrown = value.as_ref().filter(|_| kind == Kind::Unwind).unwrap_or(ValRef::ABSENT);
                self.close_above(pos, thrown, limits);
                match self.stack.pop() {
                    Some(o) => o,
                    None => return Recorded::Unmatched,
                }
            }
            None if resumable => {
                if let r @ (Recorded::Skipped | Recorded::LimitReached(_) | Recorded::Unmatched) =
                    self.resume(form, ValRef::ABSENT, limits)
                {
                    return r;
                }
                match self.stack.pop() {
                    Some(o) => o,
                    None => return Recorded::Unmatched,
                }
            }
            None => match self.last_closed {
                // The frame already exited and now exits again: a `finally` or a context
                // manager's `__exit__` raised or returned after the frame's return was recorded.
                Some(o) if o.form == form && o.call_idx != NONE => o,
                _ => return Recorded::Unmatched,
            },
        };
        if open.call_idx == NONE {
            return Recorded::Skipped;
        }
        let idx = match self.next_idx(limits) {
            Ok(idx) => idx,
            Err(r) => return r,
        };
        grow::push(&mut self.entries, Entry::valued(kind, id, open.call_idx, value));
        if let Some(call) = self.get_mut(open.call_idx) {
            call.b = idx;
        }
        self.last_closed = Some(open);
        Recorded::Written
    }

    /// A write at `site` inside the innermost open frame of `form` (see `Entry`: the target's
    /// identity `obj`, the `key` (`ABSENT` for an attribute), the new `value` (`ABSENT` for a
    /// delete), the value store's length `store_len` when it happened).
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        site: u32,
        form: u32,
        resumable: bool,
        obj: crate::ObjId,
        key: ValRef,
        value: ValRef,
        store_len: u32,
        limits: &Limits,
    ) -> Recorded {
        let at = self.args_base + self.args.len() as u32;
        let r = self.event(Kind::Write, site, form, resumable, value, limits);
        if r == Recorded::Written {
            grow::extend(&mut self.args, &[obj as u32, (obj >> 32) as u32, key.0, store_len]);
            if let Some(e) = self.entries.last_mut() {
                e.c = at;
            }
        }
        r
    }

    /// The write record of the `Write` entry at `idx`: (target identity, key, store length).
    pub fn write_record(&self, idx: usize) -> Option<(crate::ObjId, ValRef, u32)> {
        let e = self.get(idx)?;
        if e.kind() != Kind::Write {
            return None;
        }
        let start = (e.c as usize).checked_sub(self.args_base as usize)?;
        let w = self.args.get(start..start + crate::entry::WRITE_WORDS)?;
        Some((u64::from(w[0]) | (u64::from(w[1]) << 32), ValRef(w[2]), w[3]))
    }

    /// An expression value, a binding or a write (`kind` `Expr`, `Bind` or `Write`, `site` its
    /// site) inside the innermost open frame of `form`.
    pub fn event(
        &mut self,
        kind: Kind,
        site: u32,
        form: u32,
        resumable: bool,
        value: impl Into<Value>,
        limits: &Limits,
    ) -> Recorded {
        debug_assert!(kind.is_event());
        if self.stopped.is_some() {
            return Recorded::Skipped;
        }
        let frame = match self.stack.last() {
            Some(top) if top.form == form => top.call_idx,
            _ => match self.stack.iter().rposition(|o| o.form == form) {
                Some(pos) => {
                    self.close_above(pos, ValRef::ABSENT, limits);
                    match self.stack.last() {
                        Some(top) => top.call_idx,
                        None => return Recorded::Unmatched,
                    }
                }
                None if resumable => {
                    if let r @ (Recorded::Skipped | Recorded::LimitReached(_) | Recorded::Unmatched) =
                        self.resume(form, ValRef::ABSENT, limits)
                    {
                        return r;
                    }
                    match self.stack.last() {
                        Some(top) => top.call_idx,
                        None => return Recorded::Unmatched,
                    }
                }
                None => return Recorded::Unmatched,
            },
        };
        if frame == NONE {
            return Recorded::Skipped;
        }
        match self.next_idx(limits) {
            Ok(_) => {
                grow::push(&mut self.entries, Entry::valued(kind, site, frame, value.into()));
                Recorded::Written
            }
            Err(r) => r,
        }
    }

    /// Closes the frames above stack position `pos` with synthetic unwinds: they were left without
    /// an exit event of their own.
    fn close_above(&mut self, pos: usize, value: ValRef, limits: &Limits) {
        while self.stack.len() > pos + 1 {
            let Some(o) = self.stack.pop() else { break };
            self.repaired += 1;
            if o.call_idx == NONE {
                continue;
            }
            let Ok(idx) = self.next_idx(limits) else { return };
            grow::push(&mut self.entries, Entry::new(Kind::Unwind, o.form, o.call_idx, value.0, 0));
            if let Some(call) = self.get_mut(o.call_idx) {
                call.b = idx;
            }
        }
    }
}

/// Entries a timeline may hold: the thread trace limit, and below the `NONE` idx.
#[inline(always)]
fn trace_cap(limits: &Limits) -> u64 {
    limits.thread_trace_limit.unwrap_or(u64::MAX).min(u64::from(NONE - 1))
}
