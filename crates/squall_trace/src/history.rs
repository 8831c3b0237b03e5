//! An object's recorded states, and which entry recorded each (issue 11: "a value's history").
//!
//! Invariant this rests on (the recorder keeps it, `encode.rs`): an entry's values are encoded
//! into the store *before* the entry is pushed, children before their parent, so every node an
//! entry creates has a slot at most the highest slot that entry's values name, and above every
//! slot named by earlier entries. Hence, with `reach(i)` = one past the highest slot named by
//! entries up to `i` (a running maximum, so it never decreases), node `n` was created by the
//! first entry `i` with `reach(i) > n`. Nothing beyond the entries and the store is needed, so
//! files answer as the live recording does. Version 1 files (values numbered per entry, see
//! `ValueStore::entry_ref`) have no node a value ref can name: they answer no states.

use crate::entry::Kind;
use crate::forms::Forms;
use crate::queries::total_order;
use crate::store::{ObjId, ValueStore};
use crate::timeline::Timeline;
use crate::value::{Decoded, ValRef};
use crate::writes::{writes, WriteFact, WriteFilter};

/// One past the highest store slot entry `idx` of `tl` names (0: none): its value's node, or
/// its arguments' for a call.
pub(crate) fn entry_top(tl: &Timeline, forms: &Forms, store: &ValueStore, idx: usize) -> u32 {
    let Some(e) = tl.get(idx) else { return 0 };
    let mut top = 0u32;
    let mut see = |v: ValRef| {
        if let Decoded::Slot(s) = store.entry_ref(v).decode() {
            top = top.max(s.saturating_add(1));
        }
    };
    match e.kind() {
        Kind::Call => {
            let n = forms.form(e.id()).map_or(0, |f| f.params.len());
            tl.call_args(idx, n).into_iter().for_each(&mut see);
        }
        Kind::Resume => see(ValRef(e.c)),
        // A float an entry holds is no node.
        _ => e.value_ref().into_iter().for_each(&mut see),
    }
    top
}

/// One recorded state of an object: node `slot` of its timeline's store, first recorded by
/// entry `idx` (`None`: by an entry no longer in memory, or by none: see `NodeEntries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    pub slot: u32,
    pub idx: Option<u32>,
}

/// `reach` for each entry held in memory (see the module doc): maps a node to the entry that
/// created it by binary search. Built in one pass over the entries.
#[derive(Debug, Default)]
pub struct NodeEntries {
    first_idx: u32,
    /// `reach[k]` for entry `first_idx + k`.
    reach: Vec<u32>,
}

impl NodeEntries {
    pub fn new(tl: &Timeline, forms: &Forms, store: &ValueStore) -> NodeEntries {
        NodeEntries::upto(tl, forms, store, tl.len())
    }

    /// The index of entries before `end` only: enough for `latest_state` at any idx below `end`
    /// (what `bindings` needs, at a cost proportional to the idx, not to the timeline).
    pub fn upto(tl: &Timeline, forms: &Forms, store: &ValueStore, end: usize) -> NodeEntries {
        let first = tl.first_idx();
        let end = end.clamp(first, tl.len());
        let mut reach = Vec::with_capacity(end - first);
        let mut top = 0u32;
        for k in first..end {
            top = top.max(entry_top(tl, forms, store, k));
            reach.push(top);
        }
        NodeEntries { first_idx: first as u32, reach }
    }

    /// The entry that created node `slot`: the first with `reach > slot`. `None` for a node made
    /// before the first entry held in memory (evicted) or after the last (its entry was not
    /// written: a limit stopped it).
    pub fn entry_of(&self, slot: u32) -> Option<u32> {
        let k = self.reach.partition_point(|&r| r <= slot);
        if k == self.reach.len() || (k == 0 && self.first_idx > 0) {
            return None;
        }
        Some(self.first_idx + k as u32)
    }

    /// One past the last node recorded by entries up to `idx` (inclusive).
    pub fn reach_at(&self, idx: u32) -> u32 {
        match idx.checked_sub(self.first_idx) {
            None => 0,
            Some(k) => self.reach.get(k as usize).or(self.reach.last()).copied().unwrap_or(0),
        }
    }
}

/// Every distinct recorded state of object `obj` in this timeline, oldest first (the store's
/// states: a `Cut` node is not one, the budget stopped before the object's contents, so an
/// earlier full state stays the latest).
pub fn history(store: &ValueStore, entries: &NodeEntries, obj: ObjId) -> Vec<State> {
    if store.legacy_len() > 0 {
        return Vec::new();
    }
    store.states_of(obj).into_iter().map(|slot| State { slot, idx: entries.entry_of(slot) }).collect()
}

/// The newest state of object `obj` recorded at or before entry `idx` (or its record again as
/// a `Node::Same`: `ValueStore::latest_before`), above `floor` (a slot
/// known to be a state of `obj`, e.g. the bound value). `None`: no newer state than `floor`.
pub fn latest_state(store: &ValueStore, entries: &NodeEntries, obj: ObjId, idx: u32, floor: u32) -> Option<State> {
    if store.legacy_len() > 0 {
        return None;
    }
    let top = entries.reach_at(idx).min(store.len() as u32);
    store.latest_before(obj, top).filter(|&s| s > floor).map(|slot| State { slot, idx: entries.entry_of(slot) })
}

/// One state in a history merged over several timelines: which of them (as given) and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergedState {
    pub timeline: usize,
    pub state: State,
}

/// `history` over the timelines of one flow, merged in the order the entries were recorded
/// (`total_order`). States whose entry is not known come first, in timeline order.
pub fn history_merged(timelines: &[(&Timeline, &ValueStore, &NodeEntries)], obj: ObjId) -> Vec<MergedState> {
    let tls: Vec<&Timeline> = timelines.iter().map(|t| t.0).collect();
    let segments = total_order(&tls);
    let mut out: Vec<(usize, u32, MergedState)> = Vec::new();
    for (t, (_, store, entries)) in timelines.iter().enumerate() {
        for state in history(store, entries, obj) {
            let pos = state
                .idx
                .and_then(|i| segments.iter().position(|s| s.timeline == t && s.from <= i && i < s.to).map(|p| p + 1));
            out.push((pos.unwrap_or(0), state.idx.unwrap_or(0), MergedState { timeline: t, state }));
        }
    }
    out.sort_by_key(|&(pos, idx, m)| (pos, m.timeline * usize::from(pos == 0), idx, m.state.slot));
    out.into_iter().map(|x| x.2).collect()
}

/// One change in an object's history: a recorded state, or a write to it (between states:
/// instrumented code's `obj.a = v`, `obj[k] = v`, `del`).
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    State(State),
    Write(WriteFact),
}

/// One change in a history merged over several timelines: which of them (as given) and what.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedChange {
    pub timeline: usize,
    pub change: Change,
}

/// `history_merged` with the writes to `obj` in between its states, in recorded order (a write
/// after a state recorded by the same entry).
pub fn history_with_writes(
    timelines: &[(&Timeline, &ValueStore, &NodeEntries)],
    forms: &Forms,
    obj: ObjId,
) -> Vec<MergedChange> {
    let tls: Vec<&Timeline> = timelines.iter().map(|t| t.0).collect();
    let segments = total_order(&tls);
    let pos_of = |t: usize, idx: Option<u32>| {
        idx.and_then(|i| segments.iter().position(|s| s.timeline == t && s.from <= i && i < s.to).map(|p| p + 1))
            .unwrap_or(0)
    };
    // Sorted by (segment, timeline when not placed, idx, state before write, slot).
    type Order = (usize, usize, u32, u8, u32);
    let mut out: Vec<(Order, MergedChange)> = Vec::new();
    for (t, (tl, store, entries)) in timelines.iter().enumerate() {
        for state in history(store, entries, obj) {
            let pos = pos_of(t, state.idx);
            let key = (pos, t * usize::from(pos == 0), state.idx.unwrap_or(0), 0, state.slot);
            out.push((key, MergedChange { timeline: t, change: Change::State(state) }));
        }
        if store.legacy_len() > 0 {
            continue;
        }
        let filter = WriteFilter { obj: Some(obj), ..WriteFilter::default() };
        for w in writes(tl, forms, store, &filter) {
            let pos = pos_of(t, Some(w.idx));
            let key = (pos, t * usize::from(pos == 0), w.idx, 1, 0);
            out.push((key, MergedChange { timeline: t, change: Change::Write(w) }));
        }
    }
    out.sort_by_key(|x| x.0);
    out.into_iter().map(|x| x.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Entry;
    use crate::snapshot::SeqKind;
    use crate::store::{Node, SeqNode};

    fn list(store: &mut ValueStore, obj: ObjId, items: &[ValRef]) -> ValRef {
        let ty = store.intern("list");
        store
            .push(Node::Seq(Box::new(SeqNode {
                kind: SeqKind::List,
                ty,
                obj,
                len: items.len() as u64,
                items: items.into(),
            })))
            .unwrap()
    }

    /// Entries 0..: expr([1]) of obj 7; expr(str); expr([1]) again (shared); expr([1, 2]).
    fn recorded() -> (Timeline, ValueStore) {
        let mut s = ValueStore::new();
        let one = ValRef::small_int(1).unwrap();
        let mut es = Vec::new();
        let a = list(&mut s, 7, &[one]);
        es.push(Entry::new(Kind::Expr, 0, 0, a.0, 0));
        let st = s.push(Node::Str("x".into())).unwrap();
        es.push(Entry::new(Kind::Expr, 0, 0, st.0, 0));
        es.push(Entry::new(Kind::Expr, 0, 0, a.0, 0));
        let b = list(&mut s, 7, &[one, ValRef::small_int(2).unwrap()]);
        es.push(Entry::new(Kind::Expr, 0, 0, b.0, 0));
        (Timeline::from_parts(es, Vec::new()), s)
    }

    #[test]
    fn states_come_with_the_entry_that_recorded_them() {
        let (tl, s) = recorded();
        let ne = NodeEntries::new(&tl, &Forms::default(), &s);
        assert_eq!(history(&s, &ne, 7), vec![State { slot: 0, idx: Some(0) }, State { slot: 2, idx: Some(3) }]);
        assert_eq!(history(&s, &ne, 0), vec![]);
        assert_eq!(latest_state(&s, &ne, 7, 2, 0), None);
        assert_eq!(latest_state(&s, &ne, 7, 3, 0), Some(State { slot: 2, idx: Some(3) }));
    }

    /// Entries: expr(Cart#7(total=0)); write .total = 9; write .n = 1; expr(Cart#7(total=9, n=1)).
    fn written() -> (Timeline, ValueStore, Forms) {
        use crate::forms::{Coord, Form, FormKind, Site, SiteKind};
        use crate::store::ObjectNode;
        let mut forms = Forms::default();
        let form = Form {
            ns: "m".into(),
            name: "f".into(),
            file: "m.py".into(),
            line: 1,
            params: Vec::new(),
            kind: FormKind::Function,
        };
        let form = forms.add_form(form).unwrap();
        let coord = Coord { line: 2, col: 0, end_line: 2, end_col: 1 };
        let total = forms.add_site(Site { form, kind: SiteKind::Write, coord, symbol: Some("total".into()) }).unwrap();
        let n = forms.add_site(Site { form, kind: SiteKind::Write, coord, symbol: Some("n".into()) }).unwrap();
        let mut s = ValueStore::new();
        let (ty, t, nn) = (s.intern("Cart"), s.intern("total"), s.intern("n"));
        let int = |i| ValRef::small_int(i).unwrap();
        let a = s.push(Node::Object(Box::new(ObjectNode { ty, obj: 7, attrs: vec![(t, int(0))].into() }))).unwrap();
        let mut args = Vec::new();
        let mut es = vec![Entry::new(Kind::Expr, 0, 0, a.0, 0)];
        for (site, v) in [(total, 9), (n, 1)] {
            es.push(Entry::new(Kind::Write, site, 0, int(v).0, args.len() as u32));
            args.extend_from_slice(&[7, 0, ValRef::ABSENT.0, s.len() as u32]);
        }
        let b = s
            .push(Node::Object(Box::new(ObjectNode { ty, obj: 7, attrs: vec![(t, int(9)), (nn, int(1))].into() })))
            .unwrap();
        es.push(Entry::new(Kind::Expr, 0, 0, b.0, 0));
        (Timeline::from_parts(es, args), s, forms)
    }

    #[test]
    fn writes_come_between_states_and_apply_to_the_state_before_them() {
        let (tl, s, forms) = written();
        crate::writes::sync_writes(&tl, &forms, &s);
        let ne = NodeEntries::new(&tl, &forms, &s);
        let got: Vec<(bool, u32)> = history_with_writes(&[(&tl, &s, &ne)], &forms, 7)
            .into_iter()
            .map(|m| match m.change {
                Change::State(st) => (true, st.idx.unwrap()),
                Change::Write(w) => (false, w.idx),
            })
            .collect();
        assert_eq!(got, vec![(true, 0), (false, 1), (false, 2), (true, 3)]);
        // As of each write: the state before it with the writes up to it applied.
        let preview = |upto| crate::printer::preview(&s.node_as_of(0, upto, crate::ExpandBudget::FULL), 80);
        assert_eq!(preview(0), "Cart#7(total=0)");
        assert_eq!(preview(1), "Cart#7(total=9)");
        assert_eq!(preview(2), "Cart#7(total=9, n=1)");
        assert_eq!(s.writes_since(0, 0), None);
        assert_eq!(s.writes_since(0, 2), Some((2, 2)));
        assert_eq!(s.writes_since(1, 3), None); // the later state holds them already
    }

    #[test]
    fn threads_merge_in_recorded_order() {
        let (mut t0, s0) = recorded();
        let (mut t1, s1) = recorded();
        // Thread 1 ran entries 0..2 first, then thread 0 all, then thread 1 the rest.
        t1.set_switches(vec![(0, 1), (2, 3)]);
        t0.set_switches(vec![(0, 2)]);
        let (n0, n1) = (NodeEntries::new(&t0, &Forms::default(), &s0), NodeEntries::new(&t1, &Forms::default(), &s1));
        let m = history_merged(&[(&t0, &s0, &n0), (&t1, &s1, &n1)], 7);
        let got: Vec<(usize, Option<u32>)> = m.iter().map(|m| (m.timeline, m.state.idx)).collect();
        assert_eq!(got, vec![(1, Some(0)), (0, Some(0)), (0, Some(3)), (1, Some(3))]);
    }
}
