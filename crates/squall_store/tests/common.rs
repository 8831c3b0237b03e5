//! A small, deterministic recording used by the tests: two flows, three threads, every entry kind,
//! every value shape, written over several flushes.
#![allow(dead_code)]

use std::sync::Arc;

use squall_store::{Header, ThreadMeta, Writer};
use squall_trace::{Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef};

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
            items: vec![Snap::Int(1), Snap::Float(2.5), Snap::None, Snap::Bool(true)],
            len: 10,
        },
        Snap::Map {
            type_name: "dict".into(),
            entries: vec![(Snap::Str("k".into()), Snap::BigInt("123456789012345678901234567890".into()))],
            len: 1,
        },
        Snap::Object {
            type_name: "Point".into(),
            repr: "Point(x=1, y=2)".into(),
            attrs: vec![("x".into(), Snap::Int(1)), ("y".into(), Snap::Complex { re: 1.0, im: -2.0 })],
        },
        Snap::Opaque { type_name: "function".into(), repr: "<function f at 0x1>".into() },
        Snap::Cut { type_name: "list".into(), len: 7 },
        Snap::Bytes(vec![0, 1, 2, b'a', 255]),
        Snap::Seq { kind: SeqKind::Tuple, type_name: "tuple".into(), items: vec![Snap::Int(-5)], len: 1 },
        Snap::Int(i64::MIN),
        Snap::Float(f64::NAN),
    ]
}

/// One thread's timeline, varied by `seed`.
pub fn timeline(seed: u32) -> Timeline {
    let l = Limits::default();
    let mut t = Timeline::new();
    let small = |v: i64| ValRef::small_int(v).unwrap();
    t.call(0, &[], &l);
    for i in 0..(3 + seed) {
        t.call(1, &[small(i as i64)], &l);
        t.event(Kind::Expr, 5, 1, false, ValRef::slot(1).unwrap(), &l);
        t.call(2, &[small(-1), ValRef::slot(0).unwrap()], &l);
        t.event(Kind::Bind, 6, 2, false, small(1 << 29), &l);
        t.exit(Kind::Return, 2, 2, false, ValRef::slot(3).unwrap(), &l);
        if i % 2 == 0 {
            t.exit(Kind::Return, 1, 1, false, ValRef::NONE, &l);
        } else {
            t.exit(Kind::Unwind, 1, 1, false, ValRef::slot(4).unwrap(), &l);
        }
        t.call(3, &[ValRef::slot(2).unwrap()], &l);
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
    for m in metas() {
        w.thread(&m).unwrap();
    }
    for (m, t) in metas().iter().zip(&tls) {
        let (e, a) = (t.entries(), t.args());
        let (h, ha) = (e.len() / 2, a.len() / 2);
        w.entries(m.timeline, 0, &e[..h], 0, &a[..ha]).unwrap();
        w.values(m.timeline, 0, &vals[..4]).unwrap();
        w.flush().unwrap();
        w.entries(m.timeline, h as u64, &e[h..], ha as u64, &a[ha..]).unwrap();
        w.values(m.timeline, 4, &vals[4..]).unwrap();
        w.flush().unwrap();
    }
    if finish {
        w.finish(1_790_000_001_234, &[("entries".into(), 42), ("threads".into(), 3)]).unwrap()
    } else {
        w.into_inner().unwrap()
    }
}
