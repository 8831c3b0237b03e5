//! A small, deterministic recording used by the tests: two flows, three threads, every entry kind,
//! every value shape, written over several flushes.
#![allow(dead_code)]

use std::sync::Arc;

use squall_store::{Header, ThreadMeta, Writer};
use squall_trace::{
    Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef, ValueStore,
};

pub fn header() -> Header {
    Header {
        program: "examples/demo.py".into(),
        argv: vec!["demo.py".into(), "--n".into(), "3".into()],
        python: "3.11.7 (main)".into(),
        squall: "0.1.0".into(),
        started_unix_ms: 1_790_000_000_000,
        cwd: "/home/me/proj".into(),
    }
}

fn coord(line: u32) -> Coord {
    Coord { line, col: 4, end_line: line, end_col: 30 }
}

/// Forms: 0 main(), 1 fib(n), 2 add(a, b), 3 gen(xs) generator. Sites: a return per form, a
/// yield, an expr and a bind.
pub fn forms() -> Forms {
    let mut f = Forms::new();
    let mk = |name: &str, params: &[&str], kind| Form {
        ns: "demo".into(),
        name: name.into(),
        file: "/home/me/proj/demo.py".into(),
        line: 3,
        params: params.iter().map(|p| Arc::from(*p)).collect(),
        kind,
    };
    f.add_form(mk("main", &[], FormKind::Function)).unwrap();
    f.add_form(mk("fib", &["n"], FormKind::Function)).unwrap();
    f.add_form(mk("add", &["a", "b"], FormKind::Function)).unwrap();
    f.add_form(mk("gen", &["xs"], FormKind::Generator)).unwrap();
    for form in 0..4 {
        f.add_site(Site { form, kind: SiteKind::Return, coord: coord(10 + form), symbol: None }).unwrap();
    }
    f.add_site(Site { form: 3, kind: SiteKind::Yield, coord: coord(20), symbol: None }).unwrap(); // 4
    f.add_site(Site { form: 1, kind: SiteKind::Expr, coord: coord(21), symbol: None }).unwrap(); // 5
    f.add_site(Site { form: 2, kind: SiteKind::Bind, coord: coord(22), symbol: Some("total".into()) }).unwrap(); // 6
    f
}

pub fn values() -> Vec<Snap> {
    vec![
        Snap::Str("hello 'world'\n".into()),
        Snap::Seq {
            kind: SeqKind::List,
            type_name: "list".into(),
            id: 9,
            items: vec![Snap::Int(1), Snap::Float(2.5), Snap::None, Snap::Bool(true)],
            len: 10,
        },
        Snap::Map {
            type_name: "dict".into(),
            id: 10,
            entries: vec![(Snap::Str("k".into()), Snap::BigInt("123456789012345678901234567890".into()))],
            len: 1,
        },
        Snap::Object {
            type_name: "Point".into(),
            id: 11,
            repr: "Point(x=1, y=2)".into(),
            attrs: vec![("x".into(), Snap::Int(1)), ("y".into(), Snap::Complex { re: 1.0, im: -2.0 })],
        },
        Snap::Opaque { type_name: "function".into(), id: 12, repr: "<function f at 0x1>".into() },
        Snap::Cut { type_name: "list".into(), id: 13, len: 7 },
        Snap::Bytes(vec![0, 1, 2, b'a', 255]),
        Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), id: 0, items: vec![Snap::Int(-5)], len: 1 },
        Snap::Int(i64::MIN),
        Snap::Float(f64::NAN),
    ]
}

/// A store holding `vals` (nested values first), and the ref of each.
pub fn store_of(vals: &[Snap]) -> (ValueStore, Vec<ValRef>) {
    let mut store = ValueStore::new();
    let refs = vals.iter().map(|v| store.push_snap(v)).collect();
    (store, refs)
}

/// The refs of `values()` in their store.
pub fn refs() -> Vec<ValRef> {
    store_of(&values()).1
}

/// One thread's timeline, varied by `seed`; its values are `values()`, in their store.
pub fn timeline(seed: u32) -> Timeline {
    let l = Limits::default();
    let mut t = Timeline::new();
    let small = |v: i64| ValRef::small_int(v).unwrap();
    let refs = refs();
    let slot = |i: usize| refs[i];
    t.call(0, &[], &l);
    for i in 0..(3 + seed) {
        t.call(1, &[small(i as i64)], &l);
        t.event(Kind::Expr, 5, 1, false, slot(1), &l);
        t.call(2, &[small(-1), slot(0)], &l);
        t.event(Kind::Bind, 6, 2, false, small(1 << 29), &l);
        t.exit(Kind::Return, 2, 2, false, slot(3), &l);
        if i % 2 == 0 {
            t.exit(Kind::Return, 1, 1, false, ValRef::NONE, &l);
        } else {
            t.exit(Kind::Unwind, 1, 1, false, slot(4), &l);
        }
        t.call(3, &[slot(2)], &l);
        t.exit(Kind::Return, 4, 3, true, small(i as i64), &l);
        t.resume(3, ValRef::TRUE, &l);
        t.exit(Kind::Return, 3, 3, true, ValRef::FALSE, &l);
    }
    // main stays open: the program was still running.
    t
}

pub fn metas() -> Vec<ThreadMeta> {
    vec![
        ThreadMeta { timeline: 0, flow: 0, thread_id: 1001, name: "MainThread".into() },
        ThreadMeta { timeline: 1, flow: 0, thread_id: 1002, name: "worker-1".into() },
        ThreadMeta { timeline: 7, flow: 3, thread_id: 1001, name: "MainThread".into() },
    ]
}

/// Writes the whole recording: forms, threads, entries and values in two flushes each.
pub fn write(finish: bool) -> Vec<u8> {
    let forms = forms();
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.forms(&forms).unwrap();
    let tls: Vec<Timeline> = (0..3).map(timeline).collect();
    let vals = values();
    let (first, _) = store_of(&vals[..4]);
    let (all, _) = store_of(&vals);
    for m in metas() {
        w.thread(&m).unwrap();
    }
    for (m, t) in metas().iter().zip(&tls) {
        let (e, a) = (t.entries(), t.args());
        let (h, ha) = (e.len() / 2, a.len() / 2);
        w.entries(m.timeline, 0, &e[..h], 0, &a[..ha]).unwrap();
        w.values(m.timeline, &first).unwrap();
        w.flush().unwrap();
        w.entries(m.timeline, h as u64, &e[h..], ha as u64, &a[ha..]).unwrap();
        w.values(m.timeline, &all).unwrap();
        w.flush().unwrap();
    }
    if finish {
        w.finish(1_790_000_001_234, &[("entries".into(), 42), ("threads".into(), 3)]).unwrap()
    } else {
        w.into_inner().unwrap()
    }
}
