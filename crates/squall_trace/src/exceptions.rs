//! Exceptions, once each: an exception that unwinds several recorded frames leaves one
//! `fn-unwind` per frame, each in the caller of the one before, all carrying the same exception.
//! [`exceptions`] groups them into one [`ExceptionFact`] with where it was raised, the frames it
//! unwound (innermost first) and the recorded caller that caught it, if one did.

use std::collections::HashMap;

use crate::entry::{Entry, Kind};
use crate::printer;
use crate::snapshot::{SeqKind, Snap};
use crate::store::{ExpandBudget, ObjId, ValueStore, IN_FILE};
use crate::threads::ThreadRef;
use crate::timeline::Timeline;
use crate::value::{Decoded, ValRef};

/// The type name a value that a recording cut short never saved reads as (as
/// `squall_store::MISSING_VALUE`).
pub const NOT_SAVED: &str = "<not saved>";

/// How many exceptions carried from evicted entries keep their texts once their values leave
/// memory (`Carried::keep_texts`): the first ones, which the run's summary lists. Past them a
/// live query names an exception whose value left as `<in the file>`, which has it (pyparsing's
/// suite raises millions, each with its own message: their texts grew without bound).
pub const KEPT_TEXTS: usize = 10_000;

/// The longest message front ends show (longer ones end in `…`).
pub const MESSAGE_MAX: usize = 1000;

/// One frame an exception left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwound {
    /// The frame's call (or resume) entry.
    pub call_idx: u32,
    /// Its `fn-unwind` entry.
    pub unwind_idx: u32,
    /// Its form.
    pub form: u32,
    /// The frame's last expression, binding or write before it unwound (the statement that
    /// raised, or the one just before it: the raising expression itself records no value), if
    /// it recorded any.
    pub last_event_idx: Option<u32>,
}

/// One exception, as it left recorded frames of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExceptionFact {
    /// Position of its thread in the list the query was given.
    pub thread: usize,
    /// The frames it unwound, innermost first (never empty).
    pub chain: Vec<Unwound>,
    /// The exception as the innermost unwind recorded it (`ABSENT`: a frame closed by repair,
    /// left without an exit event of its own).
    pub value: ValRef,
    /// The call entry of the recorded frame that handled it: the caller of the outermost frame
    /// it unwound (that caller did not unwind with it). `None`: no recorded caller (uncaught, or
    /// caught by code that was not recorded).
    pub caught_in: Option<u32>,
    /// That caller's form (known even when its call entry left memory).
    pub caught_in_form: Option<u32>,
    /// The exception's identity, read when its unwind was (0: none known), so that a chain is
    /// followed and named after its value's node left memory.
    pub obj: ObjId,
    /// Its text, kept before its value's node left memory (`Carried::keep_texts`); `None`:
    /// read from the value ([`exception_text`]).
    pub text: Option<Box<ExceptionText>>,
}

impl ExceptionFact {
    /// The innermost `fn-unwind`.
    pub fn unwind_idx(&self) -> u32 {
        self.chain[0].unwind_idx
    }

    /// Where to show it was raised: the innermost frame's last event before it unwound, or that
    /// unwind when the frame recorded none.
    pub fn raised_idx(&self) -> u32 {
        self.chain[0].last_event_idx.unwrap_or(self.chain[0].unwind_idx)
    }
}

/// Every exception that left a recorded frame of the given threads, once each: thread by
/// thread in the given order, each thread's in the order they were raised.
pub fn exceptions(threads: &[ThreadRef<'_>]) -> Vec<ExceptionFact> {
    let mut out = Vec::new();
    for (n, t) in threads.iter().enumerate() {
        thread_exceptions(n, t, &mut out);
    }
    out
}

fn thread_exceptions(n: usize, t: &ThreadRef<'_>, out: &mut Vec<ExceptionFact>) {
    let tl = t.timeline;
    let mut state = tl.carried_exceptions().clone();
    state.advance(t.values, tl);
    out.extend(state.facts.into_iter().map(|x| ExceptionFact { thread: n, ..x }));
}

/// The exceptions of a timeline's entries read so far, in the order they were raised, and what
/// a later unwind needs to continue one of them. A timeline keeps the state its evicted entries
/// left (`Timeline::carried_exceptions`): [`exceptions`] goes on from it over the entries still
/// in memory, so that a run whose saved entries left memory early still lists every exception,
/// a chain that crosses the eviction point included.
#[derive(Clone, Debug, Default)]
pub struct Carried {
    /// Each with `thread` 0 and `caught_in` as of its outermost frame so far.
    facts: Vec<ExceptionFact>,
    /// The exception that left a frame called from the frame opened at the key: if that frame
    /// unwinds with the same exception, it continues the chain.
    open_by_frame: HashMap<u32, usize>,
    /// Evicted calls whose frames had not exited when they were evicted, with their parents and
    /// forms: an unwind of such a frame, read later, continues a chain into (or is caught by) its
    /// parent.
    parents: HashMap<u32, (Option<u32>, u32)>,
    /// The facts before this one have their text kept or a value still in memory for good
    /// (`keep_texts`).
    texted: usize,
    /// What the kept texts hold.
    text_bytes: usize,
    /// What the facts' chains hold (their capacities), kept as they grow: the memory limit
    /// asks for it every 20 ms past half the limit, and summing a run's facts each time was
    /// the flusher's main cost on an exception-heavy suite (pyparsing's).
    chain_bytes: usize,
}

impl Carried {
    /// Reads the unwinds of the entries `tl` holds in memory, as the next entries after those
    /// this state has read.
    pub fn advance(&mut self, values: Option<&ValueStore>, tl: &Timeline) {
        let first = tl.first_idx();
        for (i, e) in tl.entries().iter().enumerate() {
            if e.kind() == Kind::Unwind {
                self.unwind(values, tl, (first + i) as u32, e);
            }
        }
    }

    /// Reads `tl`'s first `n` entries in memory, about to be evicted (the next entries after
    /// those this state has read), in one pass: their unwinds, what they leave for later unwinds
    /// (the parents of their calls still open; which frames evicted before exited), and their
    /// calls counted into `calls` by form id.
    pub fn evict(&mut self, values: Option<&ValueStore>, tl: &Timeline, n: usize, calls: &mut Vec<u64>) {
        let from = tl.first_idx();
        for (i, e) in tl.entries()[..n.min(tl.entries().len())].iter().enumerate() {
            let kind = e.kind();
            if kind.is_call() {
                if kind == Kind::Call {
                    let form = e.id() as usize;
                    if form >= calls.len() {
                        calls.resize(form + 1, 0);
                    }
                    calls[form] += 1;
                }
                if e.ret_idx().is_none() {
                    self.parents.insert((from + i) as u32, (e.parent_idx(), e.id()));
                }
                continue;
            }
            if kind == Kind::Unwind {
                self.unwind(values, tl, (from + i) as u32, e);
            }
            // Only a frame whose call an earlier eviction took can be kept: one called in this
            // range and exited in it too had its ret idx set.
            if kind.is_exit() && e.fn_call_idx() < from as u32 && !self.parents.is_empty() {
                self.parents.remove(&e.fn_call_idx());
            }
        }
    }

    /// The unwind `e` at `idx` of `tl`: a new exception, or the next frame of one it continues.
    fn unwind(&mut self, values: Option<&ValueStore>, tl: &Timeline, idx: u32, e: &Entry) {
        let call = e.fn_call_idx();
        let frame =
            Unwound { call_idx: call, unwind_idx: idx, form: e.id(), last_event_idx: last_event(tl, call, idx) };
        // An unwind's throwable is always a ref (only returns, expressions and bindings hold floats).
        let thrown = e.value_ref().unwrap_or(ValRef::ABSENT);
        let obj = match values {
            Some(store) if thrown != ValRef::ABSENT => store.obj_of(thrown),
            _ => 0,
        };
        let group = match self.open_by_frame.remove(&call) {
            // By identity when both are known (the fact's value may have left memory since).
            Some(g) if continues(values, &self.facts[g], thrown, obj) => {
                let chain = &mut self.facts[g].chain;
                let before = chain.capacity();
                chain.push(frame);
                self.chain_bytes += (chain.capacity() - before) * std::mem::size_of::<Unwound>();
                g
            }
            _ => {
                self.chain_bytes += std::mem::size_of::<Unwound>();
                self.facts.push(ExceptionFact {
                    thread: 0,
                    chain: vec![frame],
                    value: thrown,
                    caught_in: None,
                    caught_in_form: None,
                    obj,
                    text: None,
                });
                self.facts.len() - 1
            }
        };
        let parent = match tl.get(call as usize) {
            Some(c) => c.parent_idx(),
            None => self.parents.get(&call).and_then(|&(p, _)| p),
        };
        let form = parent.and_then(|p| match tl.get(p as usize) {
            Some(c) => Some(c.id()),
            None => self.parents.get(&p).map(|&(_, f)| f),
        });
        self.facts[group].caught_in = parent;
        self.facts[group].caught_in_form = form;
        if let Some(parent) = parent {
            self.open_by_frame.insert(parent, group);
        }
    }

    /// Keeps the text of each exception (of the first [`KEPT_TEXTS`]) whose value is in a node
    /// below slot `below`, before those nodes leave memory (`ValueStore::evict_below`): the exceptions query goes on naming
    /// them. Facts are read in the order their unwinds were, so their values' slots mostly grow:
    /// each call starts after the facts whose values are below every bound so far.
    pub fn keep_texts(&mut self, values: &ValueStore, below: u32) {
        let mut all_done = true;
        for k in self.texted..self.facts.len().min(KEPT_TEXTS) {
            let f = &mut self.facts[k];
            if let (None, Decoded::Slot(slot)) = (&f.text, values.entry_ref(f.value).decode()) {
                if slot < below {
                    let text = exception_text(Some(values), f.value, MESSAGE_MAX);
                    self.text_bytes += std::mem::size_of::<ExceptionText>()
                        + text.type_name.as_ref().map_or(0, String::capacity)
                        + text.message.capacity();
                    f.text = Some(Box::new(text));
                } else {
                    all_done = false;
                }
            }
            if all_done {
                self.texted = k + 1;
            }
        }
    }

    /// Heap bytes held (counted by the memory limit).
    pub fn bytes(&self) -> u64 {
        debug_assert_eq!(
            self.chain_bytes,
            self.facts.iter().map(|x| x.chain.capacity() * std::mem::size_of::<Unwound>()).sum::<usize>()
        );
        (self.facts.capacity() * std::mem::size_of::<ExceptionFact>()
            + self.chain_bytes
            + self.open_by_frame.capacity() * 16
            + self.parents.capacity() * 24
            + self.text_bytes) as u64
    }
}

/// Whether an unwind carrying `thrown` (identity `obj`, 0: unknown) continues `fact`: by
/// identity when both are known, else as [`same_exception`] tells.
fn continues(values: Option<&ValueStore>, fact: &ExceptionFact, thrown: ValRef, obj: ObjId) -> bool {
    if fact.obj != 0 && obj != 0 {
        fact.obj == obj
    } else {
        same_exception(values, fact.value, thrown)
    }
}

/// The frames the exception at fn-unwind `unwind_idx` left from there outward, that unwind's
/// frame first: each caller that unwound with the same exception ([`same_exception`]) continues
/// it, as [`exceptions`] groups them. `None`: `unwind_idx` is not an fn-unwind.
pub fn unwind_chain(values: Option<&ValueStore>, tl: &Timeline, unwind_idx: u32) -> Option<Vec<Unwound>> {
    let first = tl.get(unwind_idx as usize).filter(|e| e.kind() == Kind::Unwind)?;
    // An unwind's throwable is always a ref (only returns, expressions and bindings hold floats).
    let exc = first.value_ref().unwrap_or(ValRef::ABSENT);
    let mut chain = Vec::new();
    let (mut idx, mut e) = (unwind_idx, first);
    loop {
        let call = e.fn_call_idx();
        chain.push(Unwound {
            call_idx: call,
            unwind_idx: idx,
            form: e.id(),
            last_event_idx: last_event(tl, call, idx),
        });
        let Some(exit) = tl.get(call as usize).and_then(|c| c.parent_idx()).and_then(|p| tl.get(p as usize)?.ret_idx())
        else {
            return Some(chain);
        };
        match tl.get(exit as usize) {
            Some(x)
                if x.kind() == Kind::Unwind && same_exception(values, exc, x.value_ref().unwrap_or(ValRef::ABSENT)) =>
            {
                (idx, e) = (exit, x)
            }
            _ => return Some(chain),
        }
    }
}

/// The last expression, binding or write of the frame opened at `call` before `before`,
/// stepping back over the frames it called.
fn last_event(tl: &Timeline, call: u32, before: u32) -> Option<u32> {
    let mut i = before;
    while i > call {
        i -= 1;
        let e = tl.get(i as usize)?;
        if e.kind().is_exit() && e.fn_call_idx() != call {
            i = e.fn_call_idx(); // a callee's exit: skip its whole frame
        } else if e.kind().is_event() && e.fn_call_idx() == call {
            return Some(i);
        }
    }
    None
}

/// Two unwinds carry the same exception object: by recorded identity; values without one are
/// the same when equal (type and fields). A value a cut-short file never saved is never the same
/// as another.
pub fn same_exception(values: Option<&ValueStore>, a: ValRef, b: ValRef) -> bool {
    if a == ValRef::ABSENT || b == ValRef::ABSENT {
        return false;
    }
    if a == b {
        return true;
    }
    let Some(store) = values else { return false };
    let saved = |v: ValRef| match store.entry_ref(v).decode() {
        Decoded::Slot(s) => (s as usize) < store.len(),
        _ => true,
    };
    if !saved(a) || !saved(b) {
        return false;
    }
    let (ia, ib) = (store.obj_of(a), store.obj_of(b));
    if ia != 0 || ib != 0 {
        return ia == ib;
    }
    store.to_snap(a, ExpandBudget::FULL) == store.to_snap(b, ExpandBudget::FULL)
}

/// An exception as Python's traceback names it (`traceback.format_exception_only`): its type
/// `module.Qualname`, the module left out for `__main__` and `builtins`, and its message as
/// `str(exc)` says it for the usual constructors (`KeyError` quotes its key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExceptionText {
    /// `None`: no exception was recorded (a frame closed by repair); [`NOT_SAVED`] for one a
    /// recording cut short never saved.
    pub type_name: Option<String>,
    pub message: String,
}

impl ExceptionText {
    /// The traceback's last line, `Type: message` (`Type` alone for an empty message); `None`
    /// when no exception was recorded.
    pub fn line(&self) -> Option<String> {
        let ty = self.type_name.as_deref()?;
        Some(if self.message.is_empty() { ty.to_string() } else { format!("{ty}: {}", self.message) })
    }
}

/// The name the traceback gives a type the encoder recorded as `module.Qualname` (`builtins`
/// already left out, `qualified_name` in the Python recorder): `__main__`'s left out too.
pub fn traceback_type_name(recorded: &str) -> &str {
    recorded.strip_prefix("__main__.").or_else(|| recorded.strip_prefix("builtins.")).unwrap_or(recorded)
}

/// What [`ExceptionText`] says about the exception `v` of a timeline whose values are `values`.
pub fn exception_text(values: Option<&ValueStore>, v: ValRef, max: usize) -> ExceptionText {
    if v == ValRef::ABSENT {
        return ExceptionText { type_name: None, message: String::new() };
    }
    let Some(store) = values else {
        return ExceptionText { type_name: None, message: String::new() };
    };
    if let Decoded::Slot(s) = store.entry_ref(v).decode() {
        if s as usize >= store.len() {
            return ExceptionText { type_name: Some(NOT_SAVED.into()), message: String::new() };
        }
        if store.is_evicted(s) {
            return ExceptionText { type_name: Some(IN_FILE.into()), message: String::new() };
        }
    }
    // The references inside it are not resolved (its args' objects are named, not expanded):
    // resolving them builds each object's states over the whole store, which the flusher's
    // `Carried::keep_texts` must not. The exception itself recorded as a reference is.
    let budget = ExpandBudget { max_depth: 4, max_nodes: 256 };
    let snap = match store.to_snap_unresolved(v, budget) {
        Snap::Cut { .. } => store.to_snap(v, budget),
        s => s,
    };
    let snap = match snap {
        Snap::Earlier { value, .. } => *value,
        s => s,
    };
    let type_name = traceback_type_name(snap.type_name()).to_string();
    let message = match &snap {
        Snap::Object { attrs, .. } => {
            let attr = |name: &str| attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
            match (attr("__str__"), attr("args")) {
                (Some(Snap::Str(s)), _) => cut(s, max),
                (_, Some(Snap::Seq { kind: SeqKind::Tuple, items, len, .. })) => match (items.as_slice(), len) {
                    (_, 0) => String::new(),
                    ([one], 1) if type_name == "KeyError" => printer::preview(one, max),
                    ([one], 1) => str_of(one, max),
                    _ => printer::preview(attr("args").unwrap_or(&Snap::None), max),
                },
                _ => printer::preview(&snap, max),
            }
        }
        s => printer::preview(s, max),
    };
    ExceptionText { type_name: Some(type_name), message }
}

/// `str(x)` of a recorded value: a string itself, anything else its preview.
fn str_of(s: &Snap, max: usize) -> String {
    match s {
        Snap::Str(s) => cut(s, max),
        Snap::StrCut { prefix, .. } => format!("{}…", cut(prefix, max)),
        other => printer::preview(other, max),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(1);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
