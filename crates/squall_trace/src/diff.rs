//! The diff query: two calls of a function (or two timelines: two flows, two recordings of the
//! same program) side by side, and where they first diverge (FlowStorm #27, pyttd's `diff`).
//!
//! Values are compared by content, identities ignored (two runs make different objects), within
//! a budget: two values equal up to the budget compare equal. Calls are matched by function name
//! (`module.qualname`) and sites by kind, source range and symbol, never by id: each side may be
//! a different recording with its own forms.
//!
//! Where two calls first diverge: descending from them, the first pair of child calls (in call
//! order) whose function is the same but whose arguments or outcome differ is followed, down to
//! the deepest such pair; there, the two frames' own events (expressions, bindings, writes,
//! returns, calls made) are walked side by side: the first event at a different place is where
//! the paths split (a branch taken differently), the first at the same place with a different
//! value is where the data split.

use crate::entry::Kind;
use crate::forms::Forms;
use crate::snapshot::Snap;
use crate::store::{ExpandBudget, ValueStore};
use crate::timeline::Timeline;
use crate::value::{ValRef, Value};

/// How much of a value is compared.
const COMPARE: ExpandBudget = ExpandBudget { max_depth: 4, max_nodes: 400 };
/// How deep the descent into differing child calls goes.
const MAX_DESCENT: usize = 64;

/// One recording's timeline.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub tl: &'a Timeline,
    pub store: &'a ValueStore,
    pub forms: &'a Forms,
}

/// Whether `a` (in `sa`) and `b` (in `sb`) hold the same content, identities ignored.
pub fn same_content(sa: &ValueStore, a: impl Into<Value>, sb: &ValueStore, b: impl Into<Value>) -> bool {
    let (a, b) = (a.into(), b.into());
    if std::ptr::eq(sa, sb) && a == b {
        return true;
    }
    snap_eq(&sa.to_snap(a, COMPARE), &sb.to_snap(b, COMPARE))
}

/// `==` on snapshots with every identity ignored, and an earlier state compared as its value.
pub fn snap_eq(a: &Snap, b: &Snap) -> bool {
    match (a, b) {
        (Snap::Earlier { value: x, .. }, y) | (y, Snap::Earlier { value: x, .. }) => snap_eq(x, y),
        (
            Snap::Seq { kind: k1, type_name: t1, items: i1, len: l1, .. },
            Snap::Seq { kind: k2, type_name: t2, items: i2, len: l2, .. },
        ) => k1 == k2 && t1 == t2 && l1 == l2 && i1.len() == i2.len() && i1.iter().zip(i2).all(|(x, y)| snap_eq(x, y)),
        (
            Snap::Map { type_name: t1, entries: e1, len: l1, .. },
            Snap::Map { type_name: t2, entries: e2, len: l2, .. },
        ) => {
            t1 == t2
                && l1 == l2
                && e1.len() == e2.len()
                && e1.iter().zip(e2).all(|((k1, v1), (k2, v2))| snap_eq(k1, k2) && snap_eq(v1, v2))
        }
        (Snap::Object { type_name: t1, attrs: a1, .. }, Snap::Object { type_name: t2, attrs: a2, .. }) => {
            t1 == t2
                && a1.len() == a2.len()
                && a1.iter().zip(a2).all(|((n1, v1), (n2, v2))| n1 == n2 && snap_eq(v1, v2))
        }
        (Snap::Opaque { type_name: t1, repr: r1, .. }, Snap::Opaque { type_name: t2, repr: r2, .. }) => {
            t1 == t2 && strip_ids(r1) == strip_ids(r2)
        }
        (Snap::Cut { type_name: t1, len: l1, .. }, Snap::Cut { type_name: t2, len: l2, .. }) => t1 == t2 && l1 == l2,
        (Snap::Float(x), Snap::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// `repr` text with `#N` identities removed.
fn strip_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// One event of a frame as the walk compares it: where it happened. Sites are compared by kind,
/// source range and symbol, calls by function name: both sides run the same source, and each
/// may be another recording with its own ids.
#[derive(Clone, Copy, Debug)]
enum Place<'a> {
    Site(Kind, &'a crate::forms::Site),
    /// A call the frame made.
    Call(Option<&'a crate::forms::Form>),
    /// An exception left the frame.
    Unwind,
}

impl PartialEq for Place<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Place::Site(k1, s1), Place::Site(k2, s2)) => k1 == k2 && s1.coord == s2.coord && s1.symbol == s2.symbol,
            (Place::Call(f1), Place::Call(f2)) => match (f1, f2) {
                (Some(a), Some(b)) => a.ns == b.ns && a.name == b.name,
                _ => false,
            },
            (Place::Unwind, Place::Unwind) => true,
            _ => false,
        }
    }
}

/// The first difference of two frames' own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// The frames went different ways: the first events at a different place (`None`: that
    /// frame had no more events).
    Path { a: Option<u32>, b: Option<u32> },
    /// Same place, different value (a call made: different arguments or outcome).
    Value { a: u32, b: u32 },
}

/// Two calls compared.
#[derive(Clone, Debug, PartialEq)]
pub struct CallDiff {
    /// The calls compared, `a`'s and `b`'s.
    pub a: u32,
    pub b: u32,
    /// Per parameter (of `a`'s function): whether the arguments hold the same content.
    pub args_equal: Vec<bool>,
    /// Whether both returned (or both raised) the same content.
    pub outcome_equal: bool,
    /// The descent from (a, b) into the first differing child calls, outermost first, ending at
    /// the deepest pair that differs.
    pub path: Vec<(u32, u32)>,
    /// Where the deepest pair's own events first differ (`None`: they do not, up to the walk's
    /// budget: the difference is in their arguments only).
    pub first: Option<Divergence>,
    /// The first place (in the deepest pair) where the paths split, when the first divergence is
    /// a value one: a value difference often leads to a different branch.
    pub first_path: Option<Divergence>,
}

fn fn_name(s: &Side<'_>, call: u32) -> Option<String> {
    let e = s.tl.get(call as usize)?;
    if !e.kind().is_call() {
        return None;
    }
    s.forms.form(e.id()).map(|f| format!("{}.{}", f.ns, f.name))
}

fn args(s: &Side<'_>, call: u32) -> Vec<ValRef> {
    let Some(e) = s.tl.get(call as usize) else { return Vec::new() };
    let n = if e.kind() == Kind::Resume { 1 } else { s.forms.form(e.id()).map_or(0, |f| f.params.len()) };
    s.tl.call_args(call as usize, n)
}

/// The exit of a call: (raised, value), `None` while running.
fn outcome(s: &Side<'_>, call: u32) -> Option<(bool, Value)> {
    let r = s.tl.get(call as usize)?.ret_idx()?;
    let x = s.tl.get(r as usize)?;
    Some((x.kind() == Kind::Unwind, x.value()))
}

fn outcome_equal(a: &Side<'_>, ca: u32, b: &Side<'_>, cb: u32) -> bool {
    match (outcome(a, ca), outcome(b, cb)) {
        (Some((ra, va)), Some((rb, vb))) => ra == rb && same_content(a.store, va, b.store, vb),
        (None, None) => true,
        _ => false,
    }
}

fn calls_equal(a: &Side<'_>, ca: u32, b: &Side<'_>, cb: u32) -> bool {
    let (xa, xb) = (args(a, ca), args(b, cb));
    xa.len() == xb.len()
        && xa.iter().zip(&xb).all(|(&x, &y)| same_content(a.store, x, b.store, y))
        && outcome_equal(a, ca, b, cb)
}

/// The direct children of a call, in order.
fn children(s: &Side<'_>, call: u32) -> Vec<u32> {
    s.tl.callstack_node_childs(Some(u64::from(call)), 0, None).unwrap_or_default()
}

/// Compares call `ca` of side `a` with call `cb` of side `b` (see the module doc).
pub fn diff_calls(a: &Side<'_>, ca: u32, b: &Side<'_>, cb: u32) -> CallDiff {
    let (xa, xb) = (args(a, ca), args(b, cb));
    let args_equal = (0..xa.len().max(xb.len()))
        .map(|i| match (xa.get(i), xb.get(i)) {
            (Some(&x), Some(&y)) => same_content(a.store, x, b.store, y),
            _ => false,
        })
        .collect();
    let mut path = vec![(ca, cb)];
    while path.len() < MAX_DESCENT {
        let &(pa, pb) = path.last().unwrap_or(&(ca, cb));
        let (ka, kb) = (children(a, pa), children(b, pb));
        let next = ka.iter().zip(&kb).find(|(&x, &y)| !calls_equal(a, x, b, y));
        match next {
            Some((&x, &y)) if fn_name(a, x) == fn_name(b, y) => path.push((x, y)),
            _ => break,
        }
    }
    let &(da, db) = path.last().unwrap_or(&(ca, cb));
    let (first, first_path) = frame_divergence(a, da, b, db);
    CallDiff { a: ca, b: cb, args_equal, outcome_equal: outcome_equal(a, ca, b, cb), path, first, first_path }
}

/// A frame's own events in order, with the place each happened at (calls it made count as one
/// event each; their insides are theirs).
struct Events<'a, 's> {
    side: &'s Side<'a>,
    call: u32,
    at: usize,
    end: usize,
}

impl<'a, 's> Events<'a, 's> {
    fn new(side: &'s Side<'a>, call: u32) -> Events<'a, 's> {
        let end = side.tl.get(call as usize).map_or(0, |c| c.ret_idx().map_or(side.tl.len(), |r| r as usize + 1));
        Events { side, call, at: call as usize + 1, end }
    }
}

impl<'a> Iterator for Events<'a, '_> {
    type Item = (u32, Place<'a>);

    fn next(&mut self) -> Option<(u32, Place<'a>)> {
        let s = self.side;
        while self.at < self.end {
            let i = self.at;
            let e = s.tl.get(i)?;
            self.at += 1;
            match e.kind() {
                Kind::Call | Kind::Resume => {
                    self.at = e.ret_idx().map_or(self.end, |r| r as usize + 1);
                    return Some((i as u32, Place::Call(s.forms.form(e.id()))));
                }
                Kind::Unwind if e.fn_call_idx() == self.call => return Some((i as u32, Place::Unwind)),
                Kind::Expr | Kind::Bind | Kind::Write | Kind::Return if e.fn_call_idx() == self.call => {
                    if let Some(site) = s.forms.site(e.id()) {
                        return Some((i as u32, Place::Site(e.kind(), site)));
                    }
                }
                _ => {}
            }
        }
        None
    }
}

fn event_value_equal(a: &Side<'_>, ia: u32, b: &Side<'_>, ib: u32, place: &Place<'_>) -> bool {
    match place {
        Place::Call(_) => calls_equal(a, ia, b, ib),
        _ => match (a.tl.get(ia as usize), b.tl.get(ib as usize)) {
            (Some(x), Some(y)) => same_content(a.store, x.value(), b.store, y.value()),
            _ => false,
        },
    }
}

/// The first value and the first path divergence of two frames' own events, walked side by side.
fn frame_divergence(a: &Side<'_>, ca: u32, b: &Side<'_>, cb: u32) -> (Option<Divergence>, Option<Divergence>) {
    let (mut ea, mut eb) = (Events::new(a, ca), Events::new(b, cb));
    let mut first = None;
    loop {
        match (ea.next(), eb.next()) {
            (None, None) => return (first, None),
            (Some((ia, pa)), Some((ib, pb))) if pa == pb => {
                if first.is_none() && !event_value_equal(a, ia, b, ib, &pa) {
                    first = Some(Divergence::Value { a: ia, b: ib });
                }
            }
            (x, y) => {
                let split = Divergence::Path { a: x.map(|e| e.0), b: y.map(|e| e.0) };
                return (Some(first.unwrap_or(split)), Some(split));
            }
        }
    }
}

/// Two timelines compared by their root calls (calls made from unrecorded code), in order:
/// the first pair that differs, with its diff; `None` when every pair is equal. `extra` counts
/// root calls one side has beyond the other's.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineDiff {
    pub roots_a: usize,
    pub roots_b: usize,
    /// The first differing pair of root calls (by position) and their diff.
    pub first: Option<CallDiff>,
    /// The position of that pair among the root calls; when the functions differ there, `first`
    /// is `None` and this says where.
    pub at: Option<usize>,
}

fn roots(s: &Side<'_>) -> Vec<u32> {
    s.tl.callstack_node_childs(None, 0, None).unwrap_or_default()
}

/// Compares two timelines (two flows or two recordings of the same program).
pub fn diff_timelines(a: &Side<'_>, b: &Side<'_>) -> TimelineDiff {
    let (ra, rb) = (roots(a), roots(b));
    for (k, (&x, &y)) in ra.iter().zip(&rb).enumerate() {
        if fn_name(a, x) != fn_name(b, y) {
            return TimelineDiff { roots_a: ra.len(), roots_b: rb.len(), first: None, at: Some(k) };
        }
        let d = diff_calls(a, x, b, y);
        if d.first.is_some() || !d.outcome_equal || d.args_equal.iter().any(|e| !e) || d.path.len() > 1 {
            return TimelineDiff { roots_a: ra.len(), roots_b: rb.len(), first: Some(d), at: Some(k) };
        }
    }
    let at = (ra.len() != rb.len()).then_some(ra.len().min(rb.len()));
    TimelineDiff { roots_a: ra.len(), roots_b: rb.len(), first: None, at }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::forms::{Coord, Form, FormKind, Site, SiteKind};
    use crate::limits::Limits;
    use crate::store::{Node, ObjectNode};

    fn int(i: i64) -> ValRef {
        ValRef::small_int(i).unwrap()
    }

    /// `def cost(w): if w > 10: c = 50 + w * 2 (line 3) else: c = 5 + w (line 5); return c`,
    /// called with 3, 12 and 4.
    fn recorded() -> (Timeline, ValueStore, Forms) {
        let lim = Limits::default();
        let mut forms = Forms::default();
        let f = Form {
            ns: "m".into(),
            name: "cost".into(),
            file: "m.py".into(),
            line: 1,
            params: vec![Arc::from("w")],
            kind: FormKind::Function,
        };
        let cost = forms.add_form(f).unwrap();
        let at = |line| Coord { line, col: 4, end_line: line, end_col: 5 };
        let test = forms.add_site(Site { form: cost, kind: SiteKind::Expr, coord: at(2), symbol: None }).unwrap();
        let big =
            forms.add_site(Site { form: cost, kind: SiteKind::Bind, coord: at(3), symbol: Some("c".into()) }).unwrap();
        let small =
            forms.add_site(Site { form: cost, kind: SiteKind::Bind, coord: at(5), symbol: Some("c".into()) }).unwrap();
        let ret = forms.add_site(Site { form: cost, kind: SiteKind::Return, coord: at(6), symbol: None }).unwrap();
        let mut tl = Timeline::new();
        for w in [3, 12, 4] {
            tl.call(cost, &[int(w)], &lim);
            tl.event(Kind::Expr, test, cost, false, ValRef::small_int(i64::from(w > 10)).unwrap(), &lim);
            let (site, c) = if w > 10 { (big, 50 + w * 2) } else { (small, 5 + w) };
            tl.event(Kind::Bind, site, cost, false, int(c), &lim);
            tl.exit(Kind::Return, ret, cost, false, int(c), &lim);
        }
        (tl, ValueStore::new(), forms)
    }

    #[test]
    fn two_calls_that_take_different_branches_diverge_on_a_path() {
        let (tl, store, forms) = recorded();
        let s = Side { tl: &tl, store: &store, forms: &forms };
        // Calls at 0 (w=3), 4 (w=12), 8 (w=4).
        let d = diff_calls(&s, 0, &s, 4);
        assert_eq!(d.args_equal, vec![false]);
        assert!(!d.outcome_equal);
        assert_eq!(d.path, vec![(0, 4)]);
        // The test expression's value differs first; then the branch.
        assert_eq!(d.first, Some(Divergence::Value { a: 1, b: 5 }));
        assert_eq!(d.first_path, Some(Divergence::Path { a: Some(2), b: Some(6) }));
        // Same branch, other values: no path divergence.
        let d = diff_calls(&s, 0, &s, 8);
        assert_eq!(d.first, Some(Divergence::Value { a: 2, b: 10 }));
        assert_eq!(d.first_path, None);
        // A call compared with itself is the same.
        let d = diff_calls(&s, 4, &s, 4);
        assert_eq!((d.first, d.outcome_equal, d.args_equal), (None, true, vec![true]));
    }

    /// `def count(n): for k in range(n): ...` with n = 2 and 3: equal up to the third iteration,
    /// where one frame returns and the other goes on.
    #[test]
    fn a_frame_that_goes_on_longer_diverges_where_the_other_ended() {
        let lim = Limits::default();
        let mut forms = Forms::default();
        let f = Form {
            ns: "m".into(),
            name: "count".into(),
            file: "m.py".into(),
            line: 1,
            params: vec![Arc::from("n")],
            kind: FormKind::Function,
        };
        let count = forms.add_form(f).unwrap();
        let at = |line| Coord { line, col: 4, end_line: line, end_col: 5 };
        let k =
            forms.add_site(Site { form: count, kind: SiteKind::Bind, coord: at(2), symbol: Some("k".into()) }).unwrap();
        let ret = forms.add_site(Site { form: count, kind: SiteKind::Return, coord: at(4), symbol: None }).unwrap();
        let mut tl = Timeline::new();
        for n in [2, 3] {
            tl.call(count, &[int(n)], &lim);
            for i in 0..n {
                tl.event(Kind::Bind, k, count, false, int(i), &lim);
            }
            tl.exit(Kind::Return, ret, count, false, ValRef::NONE, &lim);
        }
        let store = ValueStore::new();
        let s = Side { tl: &tl, store: &store, forms: &forms };
        // Calls at 0 (binds 1, 2, return 3) and 4 (binds 5, 6, 7, return 8).
        let d = diff_calls(&s, 0, &s, 4);
        assert_eq!(d.first, Some(Divergence::Path { a: Some(3), b: Some(7) }));
        assert_eq!(d.first_path, d.first);
        assert_eq!((d.args_equal, d.outcome_equal), (vec![false], true));
    }

    #[test]
    fn content_is_compared_with_identities_ignored() {
        let mut a = ValueStore::new();
        let mut b = ValueStore::new();
        let obj = |s: &mut ValueStore, id, price| {
            let (ty, p) = (s.intern("Item"), s.intern("price"));
            s.push(Node::Object(Box::new(ObjectNode { ty, obj: id, attrs: vec![(p, int(price))].into() }))).unwrap()
        };
        let (x, y, z) = (obj(&mut a, 3, 2), obj(&mut b, 9, 2), obj(&mut b, 9, 1));
        assert!(same_content(&a, x, &b, y));
        assert!(!same_content(&a, x, &b, z));
        assert_eq!(strip_ids("<Lock#12 at x#y>"), "<Lock at x#y>");
    }

    #[test]
    fn two_timelines_first_differ_at_their_first_different_root_call() {
        let (tl, store, forms) = recorded();
        let a = Side { tl: &tl, store: &store, forms: &forms };
        let same = diff_timelines(&a, &a);
        assert_eq!((same.first, same.at, same.roots_a), (None, None, 3));
        // A timeline holding the first two calls only: equal so far, one root call short.
        let short = Timeline::from_parts(tl.entries()[..8].to_vec(), tl.args().to_vec());
        let b = Side { tl: &short, store: &store, forms: &forms };
        let d = diff_timelines(&a, &b);
        assert_eq!((d.first, d.at, d.roots_b), (None, Some(2), 2));
    }
}
