//! The writes query over every thread of a flow, in the order the writes happened across threads
//! (`total_order`): a race on a shared object reads top to bottom.
//!
//! "From what" follows that order too: a write's old value is the write just before it to the
//! same object and name in any thread (`old_timeline` says whose value it is), else what the
//! write's own timeline knew (`writes`: its recorded state, or unknown).

use std::collections::HashMap;

use crate::queries::{total_order, Segment};
use crate::store::{ObjId, ValueStore};
use crate::writes::{writes, OldValue, WriteFact, WriteFilter};
use crate::{Forms, Timeline};

/// One write of a merged list: which of the given timelines wrote it, and which holds the value
/// its `old` refers to (another thread's when that thread wrote the field last).
#[derive(Clone, Debug, PartialEq)]
pub struct MergedWrite {
    pub timeline: usize,
    pub write: WriteFact,
    pub old_timeline: usize,
}

/// Where each idx of each timeline falls in the merged order: per timeline, its segments' (from,
/// to, position) sorted by `from`, searched by halving.
struct Positions(Vec<Vec<(u32, u32, usize)>>);

impl Positions {
    fn new(n: usize, segments: &[Segment]) -> Positions {
        let mut per = vec![Vec::new(); n];
        for (p, s) in segments.iter().enumerate() {
            per[s.timeline].push((s.from, s.to, p));
        }
        for v in &mut per {
            v.sort_unstable();
        }
        Positions(per)
    }

    /// The position of `idx`'s segment; `None` when no segment holds it.
    fn of(&self, timeline: usize, idx: u32) -> Option<usize> {
        let segs = &self.0[timeline];
        let i = segs.partition_point(|s| s.0 <= idx).checked_sub(1)?;
        let (from, to, p) = segs[i];
        (from <= idx && idx < to).then_some(p)
    }
}

/// Every write `filter` admits in `timelines` (one flow's), in recorded order across them.
/// Writes whose entry no segment holds come first, in the given timeline order.
pub fn writes_merged(timelines: &[(&Timeline, &ValueStore)], forms: &Forms, filter: &WriteFilter) -> Vec<MergedWrite> {
    let tls: Vec<&Timeline> = timelines.iter().map(|t| t.0).collect();
    let positions = Positions::new(tls.len(), &total_order(&tls));
    let mut all: Vec<((usize, usize, u32), usize, WriteFact)> = Vec::new();
    for (t, (tl, store)) in timelines.iter().enumerate() {
        for w in writes(tl, forms, store, filter) {
            let key = match positions.of(t, w.idx) {
                Some(p) => (p + 1, 0, w.idx),
                None => (0, t, w.idx),
            };
            all.push((key, t, w));
        }
    }
    all.sort_by_key(|x| x.0);
    // (obj, name as text) -> (timeline, idx, new value) of the last write in merged order; names
    // compare by debug text as `writes` does.
    let mut last: HashMap<(ObjId, String), (usize, u32, Option<crate::ValRef>)> = HashMap::new();
    let mut out = Vec::with_capacity(all.len());
    for (_, t, mut w) in all {
        let slot = (w.obj, format!("{:?}", w.name));
        let mut old_timeline = t;
        if let Some(&(pt, idx, value)) = last.get(&slot) {
            w.old = OldValue::PreviousWrite { idx, value };
            old_timeline = pt;
        }
        last.insert(slot, (t, w.idx, w.new));
        out.push(MergedWrite { timeline: t, write: w, old_timeline });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Entry;
    use crate::forms::{Coord, Form, FormKind, Site, SiteKind};
    use crate::{Kind, ValRef};

    fn forms() -> (Forms, u32) {
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
        let site = forms.add_site(Site { form, kind: SiteKind::Write, coord, symbol: Some("n".into()) }).unwrap();
        (forms, site)
    }

    /// A timeline of writes `.n = v` to object 7, one per value.
    fn writer(site: u32, values: &[i64]) -> (Timeline, ValueStore) {
        let s = ValueStore::new();
        let mut es = Vec::new();
        let mut args = Vec::new();
        for &v in values {
            es.push(Entry::new(Kind::Write, site, 0, ValRef::small_int(v).unwrap().0, args.len() as u32));
            args.extend_from_slice(&[7, 0, ValRef::ABSENT.0, 0]);
        }
        (Timeline::from_parts(es, args), s)
    }

    #[test]
    fn writes_of_two_threads_interleave_as_recorded_and_take_their_old_value_across_threads() {
        let (forms, site) = forms();
        let (mut t0, s0) = writer(site, &[1, 2]);
        let (mut t1, s1) = writer(site, &[10, 20]);
        // Thread 1's first write ran first, then thread 0's two, then thread 1's second.
        t1.set_switches(vec![(0, 1), (1, 4)]);
        t0.set_switches(vec![(0, 2)]);
        let got = writes_merged(&[(&t0, &s0), (&t1, &s1)], &forms, &WriteFilter::default());
        let order: Vec<(usize, u32)> = got.iter().map(|m| (m.timeline, m.write.idx)).collect();
        assert_eq!(order, vec![(1, 0), (0, 0), (0, 1), (1, 1)]);
        let olds: Vec<(usize, OldValue)> = got.iter().map(|m| (m.old_timeline, m.write.old.clone())).collect();
        let int = |v| Some(ValRef::small_int(v).unwrap());
        assert_eq!(
            olds,
            vec![
                (1, OldValue::Unknown),
                (1, OldValue::PreviousWrite { idx: 0, value: int(10) }),
                (0, OldValue::PreviousWrite { idx: 0, value: int(1) }),
                (0, OldValue::PreviousWrite { idx: 1, value: int(2) }),
            ]
        );
    }

    #[test]
    fn timelines_without_switch_marks_come_whole_in_the_given_order() {
        let (forms, site) = forms();
        let (t0, s0) = writer(site, &[1]);
        let (t1, s1) = writer(site, &[10]);
        let got = writes_merged(&[(&t0, &s0), (&t1, &s1)], &forms, &WriteFilter::default());
        let order: Vec<usize> = got.iter().map(|m| m.timeline).collect();
        assert_eq!(order, vec![0, 1]);
    }
}
