//! The origin query: where a recorded value came from, back through the data flow step by step
//! to its sources (CodeTracer's `get_value_origin`, and further: through calls, arguments and
//! the writes that put a field's value there, across threads).
//!
//! What it rests on:
//! - a site's `SiteReads` (the rewriter's note: the value expression's range, the local names
//!   it reads and the functions it calls by name, the attribute it reads). Sites without one
//!   (recordings made before it) are leaves, said so;
//! - entries of a frame are in evaluation order, so the sub-expressions of an expression are the
//!   frame's entries just before it whose site lies inside its range, and the calls it made are
//!   the child frames that ended in between;
//! - loads of locals are never recorded (their bindings are): a name is followed to its latest
//!   binding in the frame before the entry, or to the parameter of that name, whose argument is
//!   followed into the caller by value (the arguments of a call are evaluated just before it);
//! - writes are entries with the target's identity, so the value of `obj.attr` read at some
//!   moment comes from the last recorded write to that attribute of that object before it, in any
//!   thread of the flow (ordered by `total_order`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use crate::diff::same_content;
use crate::entry::Kind;
use crate::forms::{Coord, Forms, SiteReads};
use crate::queries::total_order;
use crate::snapshot::Snap;
use crate::store::{ObjId, ValueStore};
use crate::timeline::Timeline;
use crate::value::{ValRef, Value};
use crate::TraceError;

/// One timeline of the flow the question is about, with its value store.
#[derive(Clone, Copy)]
pub struct Part<'a> {
    pub tl: &'a Timeline,
    pub store: &'a ValueStore,
}

/// What a step is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The value of entry `idx` of timeline `t` (an expression, binding, return, write; for a
    /// call, the call itself: its sources are its arguments).
    Entry { t: usize, idx: u32 },
    /// Argument `param` (a parameter position) of the call entry `call` of timeline `t`.
    Arg { t: usize, call: u32, param: u32 },
}

/// How a step feeds the step it comes from (`Step::from`).
#[derive(Clone, Debug, PartialEq)]
pub enum Via {
    /// The step asked about.
    Start,
    /// A recorded sub-expression of it.
    SubExpr,
    /// The latest binding of this name before it, in the same frame (or the parameter).
    Name(Arc<str>),
    /// The value a call it made returned (its return entry).
    CallResult,
    /// Argument of a call: the call's parameter of this name.
    Argument(Arc<str>),
    /// The caller's value passed as this argument (matched by identity, else by value).
    PassedFrom,
    /// The last recorded write to this attribute or item of the object read (`obj`).
    FieldWrite { obj: ObjId, name: Snap },
}

/// Why a step has no sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// Its expression reads no names and calls nothing: computed from literals.
    Literal,
    /// The names it reads have no recorded binding: globals, closures, builtins, or code not
    /// recorded.
    Unbound,
    /// The recording does not say what this site reads (made before `SiteReads` existed).
    NoReads,
    /// A function that ended without a `return` of a value: its result is `None`.
    ImplicitNone,
    /// An argument passed by code that was not recorded.
    UnrecordedCaller,
    /// An argument no recorded value of the caller matches.
    NoMatchInCaller,
    /// A field read with no recorded write before it: set by unrecorded code or at creation.
    NoWrite,
    /// A value of a kind origin does not follow (an exception, an entry out of memory).
    NotFollowed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub source: Source,
    /// The step this one feeds (`None`: the start).
    pub from: Option<usize>,
    pub via: Via,
    pub depth: u32,
    /// Set when the step has no sources (and was expanded).
    pub leaf: Option<Leaf>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    /// Breadth first: the start, then its sources, then theirs.
    pub steps: Vec<Step>,
    /// Sources found but not listed (the step budget).
    pub left_out: usize,
}

/// How far back an expression's window is scanned (entries).
const MAX_SCAN: usize = 20_000;

/// Where the value of `idx` (timeline `t` of `parts`) came from, breadth first, at most
/// `max_steps` steps.
pub fn origin(parts: &[Part<'_>], forms: &Forms, t: usize, idx: u32, max_steps: usize) -> Result<Origin, TraceError> {
    let part = parts.get(t).ok_or(TraceError::IdxOutOfRange { idx: u64::from(idx), len: 0 })?;
    let i = idx as usize;
    if i < part.tl.first_idx() && i < part.tl.len() {
        return Err(TraceError::Evicted { idx: u64::from(idx), first: part.tl.first_idx(), len: part.tl.len() });
    }
    if part.tl.get(i).is_none() {
        return Err(TraceError::IdxOutOfRange { idx: u64::from(idx), len: part.tl.len() });
    }
    let cx = Cx { parts, forms, order: Order::new(parts) };
    let start = Source::Entry { t, idx };
    let mut steps = vec![Step { source: start, from: None, via: Via::Start, depth: 0, leaf: None }];
    let mut seen: HashSet<Source> = HashSet::from([start]);
    let mut left_out = 0;
    // Best first: the step with the least cost from the start is expanded next (see `cost`).
    let mut queue = BinaryHeap::from([Reverse((0u32, 0usize))]);
    while let Some(Reverse((cost, k))) = queue.pop() {
        match cx.sources(steps[k].source) {
            Err(leaf) => steps[k].leaf = Some(leaf),
            Ok(found) => {
                for (source, via) in found {
                    if !seen.insert(source) {
                        continue;
                    }
                    if steps.len() >= max_steps {
                        left_out += 1;
                        continue;
                    }
                    let w = cx.cost(steps[k].source, &via);
                    let depth = steps[k].depth + 1;
                    steps.push(Step { source, from: Some(k), via, depth, leaf: None });
                    queue.push(Reverse((cost + w, steps.len() - 1)));
                }
            }
        }
    }
    Ok(Origin { steps, left_out })
}

/// Positions of entries in the flow's recorded order (thread switches), to tell which of two
/// entries of different timelines came first.
struct Order {
    /// Per timeline: its segments' (first idx, position in the merged order), by first idx.
    by_timeline: Vec<Vec<(u32, usize)>>,
}

impl Order {
    fn new(parts: &[Part<'_>]) -> Order {
        let tls: Vec<&Timeline> = parts.iter().map(|p| p.tl).collect();
        let mut by_timeline = vec![Vec::new(); parts.len()];
        for (k, s) in total_order(&tls).into_iter().enumerate() {
            by_timeline[s.timeline].push((s.from, k));
        }
        for v in &mut by_timeline {
            v.sort_unstable();
        }
        Order { by_timeline }
    }

    fn pos(&self, t: usize, idx: u32) -> (usize, u32) {
        let segs = &self.by_timeline[t];
        let k = segs.partition_point(|&(from, _)| from <= idx);
        (k.checked_sub(1).map_or(usize::MAX, |k| segs[k].1), idx)
    }

    fn before(&self, a: (usize, u32), b: (usize, u32)) -> bool {
        if a.0 == b.0 {
            return a.1 < b.1;
        }
        self.pos(a.0, a.1) < self.pos(b.0, b.1)
    }
}

struct Cx<'a> {
    parts: &'a [Part<'a>],
    forms: &'a Forms,
    order: Order,
}

type Found = Result<Vec<(Source, Via)>, Leaf>;

fn inside(inner: Coord, outer: Coord) -> bool {
    (inner.line, inner.col) >= (outer.line, outer.col)
        && (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)
        && inner != outer
}

impl Cx<'_> {
    fn sources(&self, source: Source) -> Found {
        match source {
            Source::Entry { t, idx } => self.entry_sources(t, idx),
            Source::Arg { t, call, param } => self.arg_sources(t, call, param),
        }
    }

    /// What following `via` from `from` costs, in half steps: writes that set a field read are
    /// the data flow an agent looks for (free); a name's previous value bound at the same name
    /// (an accumulator in a loop) is cheap, so every iteration's contribution is reached; the
    /// object an attribute is read from is dear (how it was found is rarely the question).
    fn cost(&self, from: Source, via: &Via) -> u32 {
        let Source::Entry { t, idx } = from else { return 2 };
        let Some(e) = self.parts[t].tl.get(idx as usize) else { return 2 };
        match via {
            Via::FieldWrite { .. } => 0,
            Via::Name(n) if !e.kind().is_call() => {
                let site = self.forms.site(e.id());
                let reads = self.forms.site_reads(e.id());
                if e.kind() == Kind::Bind && site.and_then(|s| s.symbol.as_deref()) == Some(&**n) {
                    1
                } else if reads.is_some_and(|r| r.attr.is_some() && r.names.first() == Some(n)) {
                    6
                } else {
                    2
                }
            }
            _ => 2,
        }
    }

    fn value_of(&self, source: Source) -> Option<Value> {
        match source {
            Source::Entry { t, idx } => {
                let e = self.parts[t].tl.get(idx as usize)?;
                (!e.kind().is_call()).then(|| e.value())
            }
            Source::Arg { t, call, param } => self.arg_value(t, call, param).map(Value::from),
        }
    }

    fn arg_value(&self, t: usize, call: u32, param: u32) -> Option<ValRef> {
        let tl = self.parts[t].tl;
        let e = tl.get(call as usize)?;
        let n = if e.kind() == Kind::Resume { 1 } else { self.forms.form(e.id())?.params.len() };
        tl.call_args(call as usize, n).get(param as usize).copied()
    }

    fn entry_sources(&self, t: usize, idx: u32) -> Found {
        let tl = self.parts[t].tl;
        let e = tl.get(idx as usize).ok_or(Leaf::NotFollowed)?;
        match e.kind() {
            Kind::Call => {
                let form = self.forms.form(e.id()).ok_or(Leaf::NotFollowed)?;
                let out: Vec<(Source, Via)> = form
                    .params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (Source::Arg { t, call: idx, param: i as u32 }, Via::Argument(p.clone())))
                    .collect();
                if out.is_empty() {
                    Err(Leaf::Literal)
                } else {
                    Ok(out)
                }
            }
            Kind::Resume | Kind::Unwind => Err(Leaf::NotFollowed),
            Kind::Expr | Kind::Bind | Kind::Return | Kind::Write => {
                let site = self.forms.site(e.id()).ok_or(Leaf::NotFollowed)?;
                let reads = self.forms.site_reads(e.id());
                if reads.is_none() && e.kind() == Kind::Return && e.value() == ValRef::NONE {
                    // The return site of falling off the end (or a bare `return`) spans the def.
                    let def_line = self.forms.form(site.form).map(|f| f.line);
                    if def_line == Some(site.coord.line) {
                        return Err(Leaf::ImplicitNone);
                    }
                }
                if reads.is_none() && e.kind() != Kind::Expr {
                    return Err(Leaf::NoReads);
                }
                let span = reads.map_or(site.coord, |r| r.span);
                self.expression_sources(t, idx, e.fn_call_idx(), span, reads)
            }
        }
    }

    /// The sources of the value of entry `idx`, computed by the expression at `span` in the
    /// frame opened at `frame`.
    fn expression_sources(&self, t: usize, idx: u32, frame: u32, span: Coord, reads: Option<&SiteReads>) -> Found {
        let tl = self.parts[t].tl;
        let mut subs: Vec<(u32, Coord)> = Vec::new(); // sub-expressions, newest first
        let mut calls: Vec<u32> = Vec::new(); // return entries of calls it made
        let stop = (idx as usize).saturating_sub(MAX_SCAN).max(tl.first_idx()).max(frame as usize + 1);
        let mut j = idx as usize;
        while j > stop {
            j -= 1;
            let Some(x) = tl.get(j) else { break };
            match x.kind() {
                Kind::Return | Kind::Unwind if x.fn_call_idx() != frame => {
                    // A child frame that ended here: skip its body.
                    let call = x.fn_call_idx() as usize;
                    let direct = tl.get(call).is_some_and(|c| c.kind() == Kind::Call && c.parent_idx() == Some(frame));
                    if direct && x.kind() == Kind::Return && self.calls_by_name(tl, reads, call) {
                        calls.push(j as u32);
                    }
                    if call >= j || call <= stop {
                        break;
                    }
                    j = call;
                }
                Kind::Expr | Kind::Bind | Kind::Write if x.fn_call_idx() == frame => {
                    let Some(s) = self.forms.site(x.id()) else { break };
                    if !inside(s.coord, span) {
                        break;
                    }
                    if x.kind() != Kind::Write && !subs.iter().any(|&(_, c)| inside(s.coord, c) || s.coord == c) {
                        subs.push((j as u32, s.coord));
                    }
                }
                _ => {}
            }
        }
        subs.reverse();
        calls.reverse();
        let mut out: Vec<(Source, Via)> = Vec::new();
        // Names the sub-expressions read are theirs to follow.
        let mut covered: HashSet<&str> = HashSet::new();
        for &(s, _) in &subs {
            let site = tl.get(s as usize).map(|x| x.id());
            if let Some(r) = site.and_then(|id| self.forms.site_reads(id)) {
                covered.extend(r.names.iter().map(|n| &**n));
            }
        }
        for &r in &calls {
            let call = tl.get(r as usize).map_or(0, |x| x.fn_call_idx());
            if let Some(name) = tl.get(call as usize).and_then(|c| self.forms.form(c.id())) {
                covered.insert(short_name(&name.name));
            }
        }
        let receiver = subs.iter().find(|(_, c)| (c.line, c.col) == (span.line, span.col)).map(|&(s, _)| s);
        out.extend(subs.iter().map(|&(s, _)| (Source::Entry { t, idx: s }, Via::SubExpr)));
        out.extend(calls.iter().map(|&r| (Source::Entry { t, idx: r }, Via::CallResult)));
        let mut receiver_src = receiver.map(|s| Source::Entry { t, idx: s });
        if let Some(reads) = reads {
            for name in &reads.names {
                if covered.contains(&**name) {
                    continue;
                }
                if let Some(src) = self.name_source(t, frame, idx, name) {
                    if receiver_src.is_none() && Some(name) == reads.names.first() {
                        receiver_src = Some(src);
                    }
                    out.push((src, Via::Name(name.clone())));
                }
            }
            if let (Some(attr), Some(recv)) = (reads.attr.as_deref(), receiver_src) {
                match self.field_write(t, idx, recv, attr) {
                    Some(w) => out.push(w),
                    None if out.is_empty() => return Err(Leaf::NoWrite),
                    None => {}
                }
            }
        }
        if out.is_empty() {
            return Err(match reads {
                None => Leaf::NoReads,
                Some(r) if r.names.is_empty() && r.attr.is_none() => Leaf::Literal,
                Some(_) => Leaf::Unbound,
            });
        }
        Ok(out)
    }

    /// Whether the call at `call` is one the expression makes by name (any call when the site
    /// says nothing).
    fn calls_by_name(&self, tl: &Timeline, reads: Option<&SiteReads>, call: usize) -> bool {
        let Some(reads) = reads else { return true };
        let Some(form) = tl.get(call).and_then(|c| self.forms.form(c.id())) else { return false };
        let short = short_name(&form.name);
        reads.names.iter().any(|n| &**n == short)
    }

    /// The latest binding of `name` in `frame` before `idx`, else the parameter of that name.
    fn name_source(&self, t: usize, frame: u32, idx: u32, name: &str) -> Option<Source> {
        let tl = self.parts[t].tl;
        let events = tl.frame_events(u64::from(frame), Some(u64::from(idx.saturating_sub(1)))).ok()?;
        for &i in events.iter().rev() {
            if i >= idx {
                continue;
            }
            let Some(x) = tl.get(i as usize) else { continue };
            if x.kind() == Kind::Bind && self.forms.site(x.id()).and_then(|s| s.symbol.as_deref()) == Some(name) {
                return Some(Source::Entry { t, idx: i });
            }
        }
        let call = tl.get(frame as usize)?;
        if call.kind() != Kind::Call {
            return None;
        }
        let form = self.forms.form(call.id())?;
        let param = form.params.iter().position(|p| &**p == name)?;
        Some(Source::Arg { t, call: frame, param: param as u32 })
    }

    /// The last recorded write, in any thread, before entry `idx` of timeline `t`, to attribute
    /// `attr` (or, for `[]`, to an item holding the value read) of the object `receiver` holds.
    /// Each timeline is scanned backward from the read (or its end) to its last such write.
    fn field_write(&self, t: usize, idx: u32, receiver: Source, attr: &str) -> Option<(Source, Via)> {
        let recv = self.value_of(receiver)?;
        let obj = self.parts[t].store.obj_of(recv);
        if obj == 0 {
            return None;
        }
        let read = self.parts[t].tl.get(idx as usize)?.value();
        let item = attr == "[]";
        let mut best: Option<(usize, u32, ValRef)> = None;
        for (u, p) in self.parts.iter().enumerate() {
            let from = if u == t { idx as usize } else { p.tl.len() };
            for w in (p.tl.first_idx()..from).rev() {
                let Some(e) = p.tl.get(w) else { break };
                if e.kind() != Kind::Write {
                    continue;
                }
                let Some((o, key, _)) = p.tl.write_record(w) else { continue };
                if o != obj || (key == ValRef::ABSENT) == item || !self.order.before((u, w as u32), (t, idx)) {
                    continue;
                }
                let matches = if item {
                    e.value() != ValRef::ABSENT && same_content(p.store, e.value(), self.parts[t].store, read)
                } else {
                    self.forms.site(e.id()).and_then(|s| s.symbol.as_deref()) == Some(attr)
                };
                if matches {
                    if best.is_none_or(|b| self.order.before((b.0, b.1), (u, w as u32))) {
                        best = Some((u, w as u32, key));
                    }
                    break;
                }
            }
        }
        best.map(|(u, w, key)| {
            let name = if item {
                self.parts[u].store.to_snap(key, crate::store::ExpandBudget { max_depth: 2, max_nodes: 16 })
            } else {
                Snap::Str(attr.to_string())
            };
            (Source::Entry { t: u, idx: w }, Via::FieldWrite { obj, name })
        })
    }

    fn arg_sources(&self, t: usize, call: u32, param: u32) -> Found {
        let tl = self.parts[t].tl;
        let store = self.parts[t].store;
        let c = tl.get(call as usize).ok_or(Leaf::NotFollowed)?;
        let Some(caller) = c.parent_idx() else { return Err(Leaf::UnrecordedCaller) };
        let v = self.arg_value(t, call, param).ok_or(Leaf::NotFollowed)?;
        let same = |w: Value| {
            let (a, b) = (store.obj_of(v), store.obj_of(w));
            if a != 0 || b != 0 {
                a == b
            } else {
                w == v || same_content(store, w, store, v)
            }
        };
        // The caller's entries evaluated for this call: just before it, in the caller's frame
        // (sub-expressions and calls of the same statement), newest first.
        let mut j = call as usize;
        let stop = j.saturating_sub(MAX_SCAN).max(tl.first_idx()).max(caller as usize + 1);
        let mut seen_line: Option<u32> = None;
        while j > stop {
            j -= 1;
            let Some(x) = tl.get(j) else { break };
            match x.kind() {
                Kind::Return if x.fn_call_idx() != caller => {
                    let inner = x.fn_call_idx();
                    if tl.get(inner as usize).is_some_and(|ic| ic.parent_idx() == Some(caller)) && same(x.value()) {
                        return Ok(vec![(Source::Entry { t, idx: j as u32 }, Via::PassedFrom)]);
                    }
                    if (inner as usize) < j {
                        j = inner as usize;
                    }
                }
                Kind::Expr if x.fn_call_idx() == caller => {
                    let line = self.forms.site(x.id()).map(|s| s.coord.line);
                    if seen_line.is_some_and(|l| line.is_some_and(|m| m < l)) {
                        break; // an earlier statement
                    }
                    seen_line = seen_line.or(line);
                    if same(x.value()) {
                        return Ok(vec![(Source::Entry { t, idx: j as u32 }, Via::PassedFrom)]);
                    }
                }
                Kind::Bind | Kind::Write if x.fn_call_idx() == caller => break,
                _ => {}
            }
        }
        // A local of the caller holding it (loads of locals are not recorded).
        if let Ok(binds) = tl.bindings_at(self.forms, u64::from(call.saturating_sub(1)).max(u64::from(caller))) {
            for &b in binds.iter().rev() {
                if b < call && b > caller && tl.get(b as usize).is_some_and(|x| same(x.value())) {
                    let sym = self.forms.site(tl.get(b as usize).map_or(0, |x| x.id())).and_then(|s| s.symbol.clone());
                    return Ok(vec![(Source::Entry { t, idx: b }, sym.map_or(Via::PassedFrom, Via::Name))]);
                }
            }
        }
        // A parameter of the caller passed on.
        if let Some(form) =
            tl.get(caller as usize).filter(|x| x.kind() == Kind::Call).and_then(|x| self.forms.form(x.id()))
        {
            for (k, p) in form.params.iter().enumerate() {
                if self.arg_value(t, caller, k as u32).is_some_and(|w| same(w.into())) {
                    return Ok(vec![(Source::Arg { t, call: caller, param: k as u32 }, Via::Name(p.clone()))]);
                }
            }
        }
        Err(Leaf::NoMatchInCaller)
    }
}

/// The last part of a qualified name (`Cart.add` -> `add`).
fn short_name(qualname: &str) -> &str {
    qualname.rsplit('.').next().unwrap_or(qualname)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::{Form, FormKind, Site, SiteKind};
    use crate::limits::Limits;
    use crate::store::{Node, ObjectNode};

    fn coord(line: u32, col: u32, end_col: u32) -> Coord {
        Coord { line, col, end_line: line, end_col }
    }

    fn form(forms: &mut Forms, name: &str, params: &[&str]) -> u32 {
        let f = Form {
            ns: "m".into(),
            name: name.into(),
            file: "m.py".into(),
            line: 1,
            params: params.iter().map(|p| Arc::from(*p)).collect(),
            kind: FormKind::Function,
        };
        forms.add_form(f).unwrap()
    }

    fn site(
        forms: &mut Forms,
        form: u32,
        kind: SiteKind,
        at: Coord,
        symbol: Option<&str>,
        reads: Option<SiteReads>,
    ) -> u32 {
        let id = forms.add_site(Site { form, kind, coord: at, symbol: symbol.map(Arc::from) }).unwrap();
        if let Some(r) = reads {
            forms.set_site_reads(id, r).unwrap();
        }
        id
    }

    fn reads(span: Coord, names: &[&str], attr: Option<&str>) -> SiteReads {
        SiteReads { span, names: names.iter().map(|n| Arc::from(*n)).collect(), attr: attr.map(Arc::from) }
    }

    fn int(i: i64) -> ValRef {
        ValRef::small_int(i).unwrap()
    }

    /// `def double(n): return n * 2` called as `y = double(x)` with `x = 3` inside `main()`:
    /// the return of main goes back through y, the call, its return, n, the argument, to x.
    #[test]
    fn a_value_is_followed_through_names_calls_and_arguments() {
        let lim = Limits::default();
        let mut forms = Forms::default();
        let main = form(&mut forms, "main", &[]);
        let double = form(&mut forms, "double", &["n"]);
        let bind_x =
            site(&mut forms, main, SiteKind::Bind, coord(2, 4, 5), Some("x"), Some(reads(coord(2, 8, 9), &[], None)));
        let bind_y = site(
            &mut forms,
            main,
            SiteKind::Bind,
            coord(3, 4, 5),
            Some("y"),
            Some(reads(coord(3, 8, 17), &["double", "x"], None)),
        );
        let ret_main = site(
            &mut forms,
            main,
            SiteKind::Return,
            coord(4, 4, 12),
            None,
            Some(reads(coord(4, 11, 12), &["y"], None)),
        );
        let ret_double = site(
            &mut forms,
            double,
            SiteKind::Return,
            coord(6, 4, 16),
            None,
            Some(reads(coord(6, 11, 16), &["n"], None)),
        );
        let store = ValueStore::new();
        let mut tl = Timeline::new();
        tl.call(main, &[], &lim); // 0
        tl.event(Kind::Bind, bind_x, main, false, int(3), &lim); // 1
        tl.call(double, &[int(3)], &lim); // 2
        tl.exit(Kind::Return, ret_double, double, false, int(6), &lim); // 3
        tl.event(Kind::Bind, bind_y, main, false, int(6), &lim); // 4
        tl.exit(Kind::Return, ret_main, main, false, int(6), &lim); // 5
        let parts = [Part { tl: &tl, store: &store }];
        let o = origin(&parts, &forms, 0, 5, 20).unwrap();
        let got: Vec<(Source, Via, Option<Leaf>)> = o.steps.iter().map(|s| (s.source, s.via.clone(), s.leaf)).collect();
        assert_eq!(
            got,
            vec![
                (Source::Entry { t: 0, idx: 5 }, Via::Start, None),
                (Source::Entry { t: 0, idx: 4 }, Via::Name("y".into()), None),
                (Source::Entry { t: 0, idx: 3 }, Via::CallResult, None),
                (Source::Entry { t: 0, idx: 1 }, Via::Name("x".into()), Some(Leaf::Literal)),
                (Source::Arg { t: 0, call: 2, param: 0 }, Via::Name("n".into()), None),
            ]
        );
        assert_eq!(o.steps[4].from, Some(2));
        assert_eq!(o.left_out, 0);
        // The argument n was x's value in the caller: the same step as x's binding, seen already.
        let o = origin(&parts, &forms, 0, 3, 20).unwrap();
        assert_eq!(o.steps[2].source, Source::Entry { t: 0, idx: 1 });
        assert_eq!(o.steps[2].via, Via::Name("x".into()));
        // A budget of 2 steps lists 2 and counts the rest.
        let o = origin(&parts, &forms, 0, 5, 2).unwrap();
        assert_eq!((o.steps.len(), o.left_out), (2, 2));
    }

    /// Thread 1 reads `item.price` of Item#7 after thread 0 wrote `item.price = 5`: the read's
    /// origin names that write, in the other thread.
    #[test]
    fn a_field_read_comes_from_the_last_write_to_it_in_any_thread() {
        let lim = Limits::default();
        let mut forms = Forms::default();
        let g = form(&mut forms, "g", &[]);
        let h = form(&mut forms, "h", &["item"]);
        let w = site(
            &mut forms,
            g,
            SiteKind::Write,
            coord(2, 4, 14),
            Some("price"),
            Some(reads(coord(2, 17, 18), &[], None)),
        );
        let read = site(
            &mut forms,
            h,
            SiteKind::Expr,
            coord(5, 11, 21),
            None,
            Some(reads(coord(5, 11, 21), &["item"], Some("price"))),
        );
        let mut s0 = ValueStore::new();
        let mut s1 = ValueStore::new();
        let (ty, price) = (s1.intern("Item"), s1.intern("price"));
        let item =
            s1.push(Node::Object(Box::new(ObjectNode { ty, obj: 7, attrs: vec![(price, int(5))].into() }))).unwrap();
        let _ = s0.intern("Item");
        let mut t0 = Timeline::new();
        t0.call(g, &[], &lim); // 0
        t0.write(w, g, false, 7, ValRef::ABSENT, int(5), 0, &lim); // 1
        let mut t1 = Timeline::new();
        t1.call(h, &[item], &lim); // 0
        t1.event(Kind::Expr, read, h, false, int(5), &lim); // 1
        t0.set_switches(vec![(0, 1)]);
        t1.set_switches(vec![(0, 2)]);
        let parts = [Part { tl: &t0, store: &s0 }, Part { tl: &t1, store: &s1 }];
        let o = origin(&parts, &forms, 1, 1, 20).unwrap();
        let write = o.steps.iter().find(|s| matches!(s.via, Via::FieldWrite { .. })).expect("the write is a source");
        assert_eq!(write.source, Source::Entry { t: 0, idx: 1 });
        assert_eq!(write.via, Via::FieldWrite { obj: 7, name: Snap::Str("price".into()) });
        // Had thread 1 read first, the write came after: not a source.
        let (mut t0b, mut t1b) = (Timeline::from_parts(t0.entries().to_vec(), t0.args().to_vec()), Timeline::new());
        t1b.call(h, &[item], &lim);
        t1b.event(Kind::Expr, read, h, false, int(5), &lim);
        t0b.set_switches(vec![(0, 2)]);
        t1b.set_switches(vec![(0, 1)]);
        let parts = [Part { tl: &t0b, store: &s0 }, Part { tl: &t1b, store: &s1 }];
        let o = origin(&parts, &forms, 1, 1, 20).unwrap();
        assert!(o.steps.iter().all(|s| !matches!(s.via, Via::FieldWrite { .. })), "{o:?}");
    }

    #[test]
    fn an_idx_out_of_range_is_an_error() {
        let store = ValueStore::new();
        let tl = Timeline::new();
        let parts = [Part { tl: &tl, store: &store }];
        assert_eq!(origin(&parts, &Forms::default(), 0, 3, 5), Err(TraceError::IdxOutOfRange { idx: 3, len: 0 }));
    }
}
