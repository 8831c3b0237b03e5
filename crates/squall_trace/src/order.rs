//! One page of the multi-thread timeline: the entries of one flow's timelines merged in the
//! order they were recorded ([`total_order`]), numbered by position in that order, optionally
//! calls/resumes/returns/unwinds only. Front ends (the UI's `/api/order`, the Python API's
//! `total_order_timeline`) shape the page; the order and the numbering are this file's.

use crate::entry::{Entry, Kind};
use crate::queries::{total_order, Segment};
use crate::timeline::Timeline;

/// What page of the merged order to give.
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderQuery {
    /// Only calls, resumes, returns and unwinds (positions count these only).
    pub only_fns: bool,
    /// The first position of the page; `None`: centred on `at` if given, else 0.
    pub start: Option<usize>,
    /// Entries in the page at most.
    pub limit: usize,
    /// An entry (timeline index into the given slice, idx) whose position is wanted.
    pub at: Option<(usize, u32)>,
}

/// One entry of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderItem {
    /// Position in the merged (filtered) order.
    pub pos: usize,
    /// Which of the given timelines.
    pub timeline: usize,
    pub idx: u32,
    /// The entry before it in the page is of another timeline.
    pub switch: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderPage {
    /// Entries in the merged (filtered) order in all.
    pub total: usize,
    pub start: usize,
    /// The position of `at`, or, when the filter leaves it out, of the first entry kept after
    /// it; `None`: no `at` asked, or it is not in these timelines.
    pub at: Option<usize>,
    pub items: Vec<OrderItem>,
}

pub fn is_fn_entry(e: &Entry) -> bool {
    matches!(e.kind(), Kind::Call | Kind::Resume | Kind::Return | Kind::Unwind)
}

/// Entries of `s` from `s.from` up to (not including) `end` that the filter keeps.
fn kept(t: &Timeline, s: &Segment, end: u32, only_fns: bool) -> usize {
    if only_fns {
        (s.from..end).filter(|&i| t.get(i as usize).is_some_and(is_fn_entry)).count()
    } else {
        (end - s.from) as usize
    }
}

/// The page `q` asks of the merged order of `timelines` (one flow's).
pub fn order_page(timelines: &[&Timeline], q: &OrderQuery) -> OrderPage {
    let segs = total_order(timelines);
    // Pass 1: the total, and where `at` is.
    let mut total = 0usize;
    let mut at = None;
    for s in &segs {
        let t = timelines[s.timeline];
        if let Some((tl, idx)) = q.at {
            if at.is_none() && s.timeline == tl && (s.from..s.to).contains(&idx) {
                at = Some(total + kept(t, s, idx, q.only_fns));
            }
        }
        total += kept(t, s, s.to, q.only_fns);
    }
    let start = q.start.unwrap_or_else(|| at.map_or(0, |p| p.saturating_sub(q.limit / 2)));
    // Pass 2: the page.
    let mut items = Vec::new();
    let mut pos = 0usize;
    let mut prev = None;
    'segments: for s in &segs {
        let t = timelines[s.timeline];
        let n = kept(t, s, s.to, q.only_fns);
        if pos + n <= start {
            pos += n;
            continue;
        }
        for i in s.from..s.to {
            if q.only_fns && !t.get(i as usize).is_some_and(is_fn_entry) {
                continue;
            }
            if pos >= start {
                if items.len() >= q.limit {
                    break 'segments;
                }
                items.push(OrderItem {
                    pos,
                    timeline: s.timeline,
                    idx: i,
                    switch: prev.is_some_and(|p| p != s.timeline),
                });
                prev = Some(s.timeline);
            }
            pos += 1;
        }
    }
    OrderPage { total, start, at, items }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ValRef;

    /// Timeline A: call, expr | (step 2) expr; timeline B: (step 1) call, expr.
    /// Merged: A0 A1 B0 B1 A2.
    fn two() -> (Timeline, Timeline) {
        let mut a = Timeline::new();
        a.push_call(0, ValRef::NONE);
        a.push_event(Kind::Expr, 0, 0, ValRef::NONE);
        a.push_event(Kind::Expr, 0, 0, ValRef::NONE);
        a.set_switches(vec![(0, 0), (2, 2)]);
        let mut b = Timeline::new();
        b.push_call(0, ValRef::NONE);
        b.push_event(Kind::Expr, 0, 0, ValRef::NONE);
        b.set_switches(vec![(0, 1)]);
        (a, b)
    }

    fn got(p: &OrderPage) -> Vec<(usize, usize, u32, bool)> {
        p.items.iter().map(|i| (i.pos, i.timeline, i.idx, i.switch)).collect()
    }

    #[test]
    fn a_page_of_the_merged_order() {
        let (a, b) = two();
        let tls = [&a, &b];
        let all = order_page(&tls, &OrderQuery { limit: 10, ..OrderQuery::default() });
        assert_eq!((all.total, all.start, all.at), (5, 0, None));
        assert_eq!(got(&all), [(0, 0, 0, false), (1, 0, 1, false), (2, 1, 0, true), (3, 1, 1, false), (4, 0, 2, true)]);
        let page = order_page(&tls, &OrderQuery { start: Some(1), limit: 2, ..OrderQuery::default() });
        assert_eq!(got(&page), [(1, 0, 1, false), (2, 1, 0, true)]);
    }

    #[test]
    fn calls_only_and_centred_on_an_entry() {
        let (a, b) = two();
        let tls = [&a, &b];
        let fns =
            order_page(&tls, &OrderQuery { only_fns: true, limit: 10, at: Some((0, 1)), ..OrderQuery::default() });
        // A1 is an expr: `at` is the position of the first call kept after it, B0.
        assert_eq!((fns.total, fns.at), (2, Some(1)));
        assert_eq!(got(&fns), [(0, 0, 0, false), (1, 1, 0, true)]);
        let centred = order_page(&tls, &OrderQuery { limit: 2, at: Some((0, 2)), ..OrderQuery::default() });
        assert_eq!((centred.at, centred.start), (Some(4), 3));
        assert_eq!(got(&centred), [(3, 1, 1, false), (4, 0, 2, true)]);
    }
}
