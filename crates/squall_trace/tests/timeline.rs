//! The recorder state machine and the queries, on timelines built event by event.

use std::sync::Arc;

use squall_trace::{
    Coord, Drift, Form, FormKind, Forms, Kind, LimitHit, Limits, Recorded, Site, SiteKind, Timeline, ValRef, Value,
};

fn forms(specs: &[(&str, FormKind)]) -> (Forms, Vec<u32>) {
    let mut forms = Forms::new();
    let mut ret_sites = Vec::new();
    for (name, kind) in specs {
        let id = forms
            .add_form(Form {
                ns: Arc::from("m"),
                name: Arc::from(*name),
                file: Arc::from("m.py"),
                line: 1,
                params: vec![Arc::from("x")],
                kind: *kind,
            })
            .unwrap();
        let coord = Coord { line: 2, col: 4, end_line: 2, end_col: 10 };
        ret_sites.push(forms.add_site(Site { form: id, kind: SiteKind::Return, coord, symbol: None }).unwrap());
    }
    (forms, ret_sites)
}

fn int(v: i64) -> ValRef {
    ValRef::small_int(v).unwrap()
}

/// One line per entry: idx, indentation by depth, what it is.
fn render(tl: &Timeline) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for (i, e) in tl.entries().iter().enumerate() {
        let line = match e.kind() {
            Kind::Call | Kind::Resume => {
                let s = format!(
                    "{}{} form={} parent={:?} ret={:?} arg={:?}",
                    "  ".repeat(depth),
                    if e.kind() == Kind::Call { "call" } else { "resume" },
                    e.id(),
                    e.parent_idx(),
                    e.ret_idx(),
                    ValRef(e.c).decode()
                );
                depth += 1;
                s
            }
            Kind::Expr | Kind::Bind | Kind::Write => format!(
                "{}{} site={} in={} value={:?}",
                "  ".repeat(depth),
                e.kind().type_name(),
                e.id(),
                e.fn_call_idx(),
                e.value().decode()
            ),
            Kind::Return | Kind::Unwind => {
                depth = depth.saturating_sub(1);
                format!(
                    "{}{} id={} of={} value={:?}",
                    "  ".repeat(depth),
                    if e.kind() == Kind::Return { "return" } else { "unwind" },
                    e.id(),
                    e.fn_call_idx(),
                    e.value().decode()
                )
            }
        };
        out.push_str(&format!("{i:>3} {line}\n"));
    }
    out
}

const NO_LIMITS: Limits = Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: None };

#[test]
fn calls_and_returns_pair_up_with_parents() {
    let (_, sites) = forms(&[("f", FormKind::Function), ("g", FormKind::Function)]);
    let mut tl = Timeline::new();
    tl.call(0, &[int(1)], &NO_LIMITS);
    tl.call(1, &[int(2)], &NO_LIMITS);
    tl.exit(Kind::Return, sites[1], 1, false, int(20), &NO_LIMITS);
    tl.call(1, &[int(3)], &NO_LIMITS);
    tl.exit(Kind::Unwind, 1, 1, false, ValRef::slot(0).unwrap(), &NO_LIMITS);
    tl.exit(Kind::Return, sites[0], 0, false, int(10), &NO_LIMITS);
    insta::assert_snapshot!(render(&tl), @r"
      0 call form=0 parent=None ret=Some(5) arg=Int(1)
      1   call form=1 parent=Some(0) ret=Some(2) arg=Int(2)
      2   return id=1 of=1 value=Int(20)
      3   call form=1 parent=Some(0) ret=Some(4) arg=Int(3)
      4   unwind id=1 of=3 value=Slot(0)
      5 return id=0 of=0 value=Int(10)
    ");
    assert_eq!(tl.calls(), 3);
}

#[test]
fn an_exit_after_the_return_is_recorded_against_the_same_call() {
    // `try: return 1 finally: raise E` — the return is recorded, then the unwind.
    let (_, sites) = forms(&[("f", FormKind::Function)]);
    let mut tl = Timeline::new();
    tl.call(0, &[], &NO_LIMITS);
    tl.exit(Kind::Return, sites[0], 0, false, int(1), &NO_LIMITS);
    assert_eq!(tl.exit(Kind::Unwind, 0, 0, false, ValRef::slot(3).unwrap(), &NO_LIMITS), Recorded::Written);
    assert_eq!(tl.get(0).unwrap().ret_idx(), Some(2));
}

#[test]
fn frames_left_without_an_exit_are_closed_when_their_caller_exits() {
    // A lambda (form 1) raises inside f (form 0): lambdas record no unwind of their own.
    let (_, sites) = forms(&[("f", FormKind::Function), ("<lambda>", FormKind::Lambda)]);
    let mut tl = Timeline::new();
    tl.call(0, &[], &NO_LIMITS);
    tl.call(1, &[], &NO_LIMITS);
    let exc = ValRef::slot(7).unwrap();
    tl.exit(Kind::Unwind, 0, 0, false, exc, &NO_LIMITS);
    insta::assert_snapshot!(render(&tl), @r"
      0 call form=0 parent=None ret=Some(3) arg=Absent
      1   call form=1 parent=Some(0) ret=Some(2) arg=Absent
      2   unwind id=1 of=1 value=Slot(7)
      3 unwind id=0 of=0 value=Slot(7)
    ");
    assert_eq!(tl.repaired, 1);
    let _ = sites;
}

#[test]
fn a_generator_resumed_by_throw_gets_an_implicit_resumption() {
    let (_, sites) = forms(&[("main", FormKind::Function), ("gen", FormKind::Generator)]);
    let mut tl = Timeline::new();
    tl.call(0, &[], &NO_LIMITS);
    tl.call(1, &[int(5)], &NO_LIMITS);
    tl.exit(Kind::Return, sites[1], 1, true, int(0), &NO_LIMITS); // yield 0
    tl.resume(1, ValRef::NONE, &NO_LIMITS); // next()
    tl.exit(Kind::Return, sites[1], 1, true, int(1), &NO_LIMITS); // yield 1
                                                                  // gen.throw(E): the frame unwinds without a resume call.
    tl.exit(Kind::Unwind, 1, 1, true, ValRef::slot(0).unwrap(), &NO_LIMITS);
    tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &NO_LIMITS);
    insta::assert_snapshot!(render(&tl), @r"
      0 call form=0 parent=None ret=Some(7) arg=Absent
      1   call form=1 parent=Some(0) ret=Some(2) arg=Int(5)
      2   return id=1 of=1 value=Int(0)
      3   resume form=1 parent=Some(0) ret=Some(4) arg=None
      4   return id=1 of=3 value=Int(1)
      5   resume form=1 parent=Some(0) ret=Some(6) arg=Absent
      6   unwind id=1 of=5 value=Slot(0)
      7 return id=0 of=0 value=None
    ");
}

#[test]
fn exits_of_frames_never_entered_are_unmatched() {
    let (_, sites) = forms(&[("f", FormKind::Function)]);
    let mut tl = Timeline::new();
    assert_eq!(tl.exit(Kind::Return, sites[0], 0, false, int(1), &NO_LIMITS), Recorded::Unmatched);
    assert!(tl.is_empty());
}

#[test]
fn fn_call_limit_skips_later_calls_and_reparents_their_callees() {
    let (forms, sites) = forms(&[("f", FormKind::Function), ("g", FormKind::Function)]);
    let limits = Limits { fn_call_limit: Some(1), ..NO_LIMITS };
    let mut tl = Timeline::new();
    assert_eq!(tl.call(0, &[int(1)], &limits), Recorded::Written);
    tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &limits);
    assert_eq!(tl.call(0, &[int(2)], &limits), Recorded::LimitReached(LimitHit::FnCalls { form: 0, limit: 1 }));
    assert_eq!(tl.call(1, &[int(3)], &limits), Recorded::Written);
    tl.exit(Kind::Return, sites[1], 1, false, ValRef::NONE, &limits);
    assert_eq!(tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &limits), Recorded::Skipped);
    assert_eq!(tl.call(0, &[int(4)], &limits), Recorded::Skipped);
    insta::assert_snapshot!(render(&tl), @r"
      0 call form=0 parent=None ret=Some(1) arg=Int(1)
      1 return id=0 of=0 value=None
      2 call form=1 parent=None ret=Some(3) arg=Int(3)
      3 return id=1 of=2 value=None
    ");
    assert_eq!(forms.forms().len(), 2);
}

#[test]
fn thread_trace_limit_stops_the_timeline_once() {
    let (_, sites) = forms(&[("f", FormKind::Function)]);
    let limits = Limits { thread_trace_limit: Some(3), ..NO_LIMITS };
    let mut tl = Timeline::new();
    for _ in 0..2 {
        tl.call(0, &[], &limits);
    }
    tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &limits);
    assert_eq!(tl.call(0, &[], &limits), Recorded::LimitReached(LimitHit::ThreadTrace { limit: 3 }));
    assert_eq!(tl.call(0, &[], &limits), Recorded::Skipped);
    assert_eq!(tl.len(), 3);
    assert_eq!(tl.stopped(), Some(LimitHit::ThreadTrace { limit: 3 }));
}

/// main(0) -> [a(1) -> [b(2) ret(3)] ret(4)], c(5) ret(6) ; ret(7)
fn sample() -> Timeline {
    let (_, sites) = forms(&[
        ("main", FormKind::Function),
        ("a", FormKind::Function),
        ("b", FormKind::Function),
        ("c", FormKind::Function),
    ]);
    let mut tl = Timeline::new();
    tl.call(0, &[], &NO_LIMITS);
    tl.call(1, &[int(1)], &NO_LIMITS);
    tl.call(2, &[int(2)], &NO_LIMITS);
    tl.exit(Kind::Return, sites[2], 2, false, int(4), &NO_LIMITS);
    tl.exit(Kind::Return, sites[1], 1, false, int(5), &NO_LIMITS);
    tl.call(3, &[int(3)], &NO_LIMITS);
    tl.exit(Kind::Return, sites[3], 3, false, int(6), &NO_LIMITS);
    tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &NO_LIMITS);
    tl
}

#[test]
fn drifts_move_like_a_stepper() {
    let tl = sample();
    let go = |idx, d| tl.timeline_entry(idx, d).unwrap();
    assert_eq!(go(1, Drift::Next), 2);
    assert_eq!(go(0, Drift::Prev), 0);
    assert_eq!(go(7, Drift::Next), 7);
    assert_eq!(go(1, Drift::NextOver), 4);
    assert_eq!(go(4, Drift::Next), 5);
    assert_eq!(go(5, Drift::PrevOver), 1);
    assert_eq!(go(4, Drift::PrevOver), 1);
    assert_eq!(go(2, Drift::NextOut), 4);
    assert_eq!(go(2, Drift::PrevOut), 1);
    assert_eq!(go(0, Drift::PrevOut), 0);
    assert!(tl.timeline_entry(8, Drift::At).is_err());
    assert_eq!(Drift::parse("next-over").unwrap(), Drift::NextOver);
    assert_eq!(
        Drift::parse("sideways").unwrap_err().to_string(),
        "unknown drift `sideways`; use one of: at, next, prev, next-over, prev-over, next-out, prev-out"
    );
}

#[test]
fn call_tree_stacks_and_stats() {
    let tl = sample();
    assert_eq!(tl.callstack_node_childs(None, 0, None).unwrap(), vec![0]);
    assert_eq!(tl.callstack_node_childs(Some(0), 0, None).unwrap(), vec![1, 5]);
    assert_eq!(tl.callstack_node_childs(Some(0), 1, Some(5)).unwrap(), vec![5]);
    assert_eq!(tl.callstack_node_childs(Some(1), 0, None).unwrap(), vec![2]);
    let stack: Vec<u32> = tl.stack_for_frame(3).unwrap().iter().map(|f| f.fn_call_idx).collect();
    assert_eq!(stack, vec![2, 1, 0]);
    let stats: Vec<(u32, u64)> = tl.fn_call_stats().iter().map(|s| (s.form, s.count)).collect();
    assert_eq!(stats, vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
}

#[test]
fn find_fn_call_searches_both_ways() {
    let tl = sample();
    let only = |f: u32| (0..4).map(|i| i == f).collect::<Vec<bool>>();
    let none = |_| Ok::<bool, ()>(true);
    assert_eq!(tl.find_fn_call(&only(3), None, false, none).unwrap(), Some(5));
    assert_eq!(tl.find_fn_call(&only(1), Some(2), false, none).unwrap(), None);
    assert_eq!(tl.find_fn_call(&only(1), Some(6), true, none).unwrap(), Some(1));
    let all = vec![true; 4];
    assert_eq!(tl.find_fn_call(&all, None, false, |i| Ok::<bool, ()>(i >= 2)).unwrap(), Some(2));
}

#[test]
fn exprs_and_bindings_land_in_their_frame_and_bindings_take_the_latest_value() {
    let (mut forms, sites) = forms(&[("f", FormKind::Function), ("g", FormKind::Function)]);
    let coord = Coord { line: 3, col: 4, end_line: 3, end_col: 5 };
    let bind_x = forms.add_site(Site { form: 0, kind: SiteKind::Bind, coord, symbol: Some(Arc::from("x")) }).unwrap();
    let bind_y = forms.add_site(Site { form: 0, kind: SiteKind::Bind, coord, symbol: Some(Arc::from("y")) }).unwrap();
    let expr = forms.add_site(Site { form: 0, kind: SiteKind::Expr, coord, symbol: None }).unwrap();
    let mut tl = Timeline::new();
    tl.call(0, &[int(1)], &NO_LIMITS);
    for i in 0..3 {
        tl.event(Kind::Expr, expr, 0, false, int(i * 10), &NO_LIMITS);
        tl.event(Kind::Bind, bind_x, 0, false, int(i), &NO_LIMITS);
    }
    tl.call(1, &[int(2)], &NO_LIMITS);
    tl.exit(Kind::Return, sites[1], 1, false, int(3), &NO_LIMITS);
    tl.event(Kind::Bind, bind_y, 0, false, int(7), &NO_LIMITS);
    tl.exit(Kind::Return, sites[0], 0, false, ValRef::NONE, &NO_LIMITS);
    insta::assert_snapshot!(render(&tl), @r"
      0 call form=0 parent=None ret=Some(10) arg=Int(1)
      1   expr site=4 in=0 value=Int(0)
      2   bind site=2 in=0 value=Int(0)
      3   expr site=4 in=0 value=Int(10)
      4   bind site=2 in=0 value=Int(1)
      5   expr site=4 in=0 value=Int(20)
      6   bind site=2 in=0 value=Int(2)
      7   call form=1 parent=Some(0) ret=Some(8) arg=Int(2)
      8   return id=1 of=7 value=Int(3)
      9   bind site=3 in=0 value=Int(7)
     10 return id=0 of=0 value=None
    ");
    // frame events skip the nested call's subtree
    assert_eq!(tl.frame_events(0, None).unwrap(), vec![1, 2, 3, 4, 5, 6, 9]);
    assert_eq!(tl.bindings_at(&forms, 4).unwrap(), vec![4]);
    assert_eq!(tl.bindings_at(&forms, 10).unwrap(), vec![6, 9]);
    let found = tl.find_entry(&[Kind::Expr], Some(2), false, |_, e| Ok::<bool, ()>(e.value() == int(20))).unwrap();
    assert_eq!(found, Some(5));
    // an event of a form with no open frame is not recorded
    assert_eq!(tl.event(Kind::Expr, expr, 0, false, int(1), &NO_LIMITS), Recorded::Unmatched);
}

#[test]
fn evicted_entries_keep_idxs_absolute_and_stats_whole() {
    let tl0 = sample();
    let (_, sites) = forms(&[
        ("main", FormKind::Function),
        ("a", FormKind::Function),
        ("b", FormKind::Function),
        ("c", FormKind::Function),
    ]);
    let mut tl = Timeline::from_parts(tl0.entries().to_vec(), tl0.args().to_vec());
    // a new call opened before the eviction and closed after it
    tl.call(1, &[int(7), int(8)], &NO_LIMITS);
    tl.evict_before(8, 0, None);
    assert_eq!((tl.first_idx(), tl.len(), tl.entries().len()), (8, 9, 1));
    tl.exit(Kind::Return, sites[1], 1, false, int(1), &NO_LIMITS);
    assert_eq!(tl.get(8).unwrap().ret_idx(), Some(9));
    assert_eq!(tl.call_args(8, 2), vec![int(7), int(8)]);
    assert!(tl.get(3).is_none());
    let err = tl.timeline_entry(3, Drift::At).unwrap_err().to_string();
    assert!(err.starts_with("entry 3 was moved out of memory into the recording file (memory holds 8..10)"), "{err}");
    let stats: Vec<(u32, u64)> = tl.fn_call_stats().iter().map(|s| (s.form, s.count)).collect();
    assert_eq!(stats, vec![(1, 2), (0, 1), (2, 1), (3, 1)]);
    assert_eq!(tl.callstack_node_childs(None, 0, None).unwrap(), vec![8]);
    assert_eq!(tl.find_fn_call(&[false, true, false, false], None, true, |_| Ok::<bool, ()>(true)).unwrap(), Some(8));
}

#[test]
fn entries_recorded_after_an_eviction_reuse_the_evicted_room() {
    // Fresh pages cost the kernel's zeroing (most of a long saved run's time, measured): the
    // room of evicted entries is kept and filled again, the table does not grow.
    let mut tl = Timeline::new();
    tl.call(0, &[int(1), int(2)], &NO_LIMITS);
    while tl.len() < 10_000 {
        tl.call(0, &[int(1), int(2)], &NO_LIMITS);
    }
    let (room, args_room) = (tl.capacity(), tl.args().len());
    tl.evict_before(tl.len(), tl.args_len(), None);
    assert_eq!((tl.first_idx(), tl.entries().len(), tl.capacity()), (10_000, 0, room));
    while tl.len() < 20_000 {
        tl.call(0, &[int(3), int(4)], &NO_LIMITS);
    }
    assert_eq!(tl.capacity(), room, "the table grew instead of reusing the evicted room");
    assert_eq!(tl.args().len(), args_room);
    assert_eq!(tl.call_args(19_999, 2), vec![int(3), int(4)]);
}

/// A float value is held by its entry (no store node), which stays a `Return`, `Expr` or `Bind`
/// to every reader, and hands the float back bit for bit.
#[test]
fn floats_are_held_by_their_entries_as_the_same_kinds() {
    let (_, sites) = forms(&[("f", FormKind::Function)]);
    let l = Limits::default();
    let mut tl = Timeline::new();
    tl.call(0, &[int(1)], &l);
    let floats = [1.5, -0.0, f64::NAN, f64::from_bits(0xFFF0_0000_0000_0001), f64::INFINITY];
    for &f in &floats {
        tl.event(Kind::Expr, 7, 0, false, Value::Float(f), &l);
        tl.event(Kind::Bind, 8, 0, false, Value::Float(f), &l);
    }
    tl.event(Kind::Bind, 8, 0, false, int(3), &l);
    tl.exit(Kind::Return, sites[0], 0, false, Value::Float(0.25), &l);
    let got: Vec<(Kind, Value)> = tl.entries()[1..].iter().map(|e| (e.kind(), e.value())).collect();
    let mut want: Vec<(Kind, Value)> =
        floats.iter().flat_map(|&f| [(Kind::Expr, Value::Float(f)), (Kind::Bind, Value::Float(f))]).collect();
    want.push((Kind::Bind, Value::Ref(int(3))));
    want.push((Kind::Return, Value::Float(0.25)));
    assert_eq!(got, want);
    assert!(tl.entries()[1..].iter().all(|e| e.holds_float() == e.value().as_ref().is_none()));
    assert_eq!(tl.get(0).and_then(|c| c.ret_idx()), Some(tl.len() as u32 - 1));
    // Floats compare by bits: NaN is itself, -0.0 is not 0.0.
    assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
    assert_ne!(Value::Float(-0.0), Value::Float(0.0));
}

#[test]
fn call_stats_count_sparse_form_ids_too() {
    // Ids are dense in squall's own recordings; a foreign file's huge id is counted apart.
    let mut tl = Timeline::from_parts(Vec::new(), Vec::new());
    for form in [3, 1 << 21, 3, 1 << 21, 1 << 21, 0] {
        tl.call(form, &[], &NO_LIMITS);
    }
    let stats: Vec<(u32, u64)> = tl.fn_call_stats().iter().map(|s| (s.form, s.count)).collect();
    assert_eq!(stats, vec![(1 << 21, 3), (3, 2), (0, 1)]);
}
