//! The queries a user sees across threads, through the UI's API: exceptions once each with their
//! unwind chain and where they were caught, next-over within a frame, goto file:line, functions
//! and search over every thread.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use squall_server::{router, FileSource};
use squall_store::{Header, LoadedTimeline, Recording, ThreadMeta};
use squall_trace::{
    Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef, ValueStore,
};
use tower::ServiceExt;

const TOKEN: &str = "t0k3n";

fn exc(id: u64, msg: &str) -> Snap {
    Snap::Object {
        type_name: "ValueError".into(),
        id,
        repr: format!("ValueError#{id}('{msg}')"),
        attrs: vec![(
            "args".into(),
            Snap::Seq {
                kind: SeqKind::Tuple,
                type_name: "tuple".into(),
                id: 0,
                items: vec![Snap::Str(msg.into())],
                len: 1,
            },
        )],
    }
}

/// Thread 7 (MainThread): main() binds x, calls work() -> inner(), which raises ValueError#42
/// `bad 7` through both; main catches it, calls helper() and returns. Thread 9 (worker): work()
/// -> inner() raises ValueError#43 `bad 9` through both, uncaught. Each unwind records its
/// exception again (its own value slot), as the recorder does.
fn recording(file: &str) -> Recording {
    let mut forms = Forms::new();
    let form = |name: &str, line: u32| Form {
        ns: "demo".into(),
        name: name.into(),
        file: file.into(),
        line,
        params: vec![],
        kind: FormKind::Function,
    };
    let main = forms.add_form(form("main", 1)).unwrap();
    let work = forms.add_form(form("work", 5)).unwrap();
    let inner = forms.add_form(form("inner", 8)).unwrap();
    let helper = forms.add_form(form("helper", 12)).unwrap();
    let site = |forms: &mut Forms, f, kind, line, symbol: Option<&str>| {
        forms
            .add_site(Site {
                form: f,
                kind,
                coord: Coord { line, col: 4, end_line: line, end_col: 9 },
                symbol: symbol.map(Into::into),
            })
            .unwrap()
    };
    let bind_x = site(&mut forms, main, SiteKind::Bind, 2, Some("x"));
    let expr_main = site(&mut forms, main, SiteKind::Expr, 3, None);
    let ret_main = site(&mut forms, main, SiteKind::Return, 4, None);
    let expr_work = site(&mut forms, work, SiteKind::Expr, 6, None);
    let expr_inner = site(&mut forms, inner, SiteKind::Expr, 9, None);
    let ret_helper = site(&mut forms, helper, SiteKind::Return, 13, None);
    let l = Limits::default();
    let int = |i| ValRef::small_int(i).unwrap();

    let mut main_values = ValueStore::new();
    let e1 = main_values.push_snap(&exc(42, "bad 7"));
    let e1_again = main_values.push_snap(&exc(42, "bad 7"));
    let mut t = Timeline::new();
    t.call(main, &[], &l); // 0
    t.event(Kind::Bind, bind_x, main, false, int(1), &l); // 1
    t.call(work, &[], &l); // 2
    t.event(Kind::Expr, expr_work, work, false, int(2), &l); // 3
    t.call(inner, &[], &l); // 4
    t.event(Kind::Expr, expr_inner, inner, false, int(3), &l); // 5
    t.exit(Kind::Unwind, inner, inner, false, e1, &l); // 6
    t.exit(Kind::Unwind, work, work, false, e1_again, &l); // 7
    t.event(Kind::Expr, expr_main, main, false, int(4), &l); // 8
    t.call(helper, &[], &l); // 9
    t.exit(Kind::Return, ret_helper, helper, false, int(5), &l); // 10
    t.event(Kind::Expr, expr_main, main, false, int(6), &l); // 11
    t.exit(Kind::Return, ret_main, main, false, ValRef::NONE, &l); // 12

    let mut worker_values = ValueStore::new();
    let e2 = worker_values.push_snap(&exc(43, "bad 9"));
    let e2_again = worker_values.push_snap(&exc(43, "bad 9"));
    let mut w = Timeline::new();
    w.call(work, &[], &l); // 0
    w.event(Kind::Expr, expr_work, work, false, int(2), &l); // 1
    w.call(inner, &[], &l); // 2
    w.event(Kind::Expr, expr_inner, inner, false, int(3), &l); // 3
    w.exit(Kind::Unwind, inner, inner, false, e2, &l); // 4
    w.exit(Kind::Unwind, work, work, false, e2_again, &l); // 5

    let loaded = |n, tid, name: &str, t: &Timeline, values| LoadedTimeline {
        meta: ThreadMeta { timeline: n, flow: 0, thread_id: tid, name: name.into() },
        timeline: Timeline::from_parts(t.entries().to_vec(), t.args().to_vec()),
        values,
    };
    Recording {
        header: Header { program: "demo.py".into(), ..Header::default() },
        forms,
        timelines: vec![loaded(0, 7, "MainThread", &t, main_values), loaded(1, 9, "worker", &w, worker_values)],
        completed: true,
        ended_unix_ms: None,
        stats: vec![],
        file_bytes: 0,
        cut_short: None,
        outputs: Default::default(),
    }
}

fn app() -> axum::Router {
    let rec = recording("/src/demo.py");
    router(Arc::new(FileSource { rec, path: "demo.sqrec".into() }), TOKEN.into())
}

async fn call(app: &axum::Router, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let req = Request::builder().method(method).uri(uri).header("x-squall-token", TOKEN);
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let res = app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

async fn get(app: &axum::Router, uri: &str) -> Value {
    let (s, v) = call(app, "GET", uri, None).await;
    assert_eq!(s, StatusCode::OK, "{uri}: {v}");
    v
}

#[tokio::test]
async fn exceptions_are_listed_once_each_with_their_chain_and_catcher() {
    let app = app();
    let v = get(&app, "/api/exceptions").await;
    assert_eq!(v["total"], 2, "one per exception, not one per frame it unwound: {v}");
    let caught = &v["items"][0];
    assert_eq!(
        (caught["tl"].clone(), caught["idx"].clone(), caught["raised_idx"].clone()),
        (json!(0), json!(6), json!(5))
    );
    assert_eq!((caught["type"].clone(), caught["message"].clone()), (json!("ValueError"), json!("bad 7")));
    let chain: Vec<(u64, u64)> = caught["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["idx"].as_u64().unwrap(), f["unwind_idx"].as_u64().unwrap()))
        .collect();
    assert_eq!(chain, vec![(4, 6), (2, 7)], "inner, then work");
    assert_eq!(caught["chain"][1]["fn"], "demo.work");
    assert_eq!(caught["caught_in"], json!({"idx": 0, "fn": "demo.main"}));
    let uncaught = &v["items"][1];
    assert_eq!(
        (uncaught["tl"].clone(), uncaught["thread"].clone(), uncaught["idx"].clone()),
        (json!(1), json!("worker"), json!(4))
    );
    assert_eq!(uncaught["chain"].as_array().unwrap().len(), 2);
    assert_eq!(uncaught["caught_in"], Value::Null);
    // One thread only, and the cap.
    assert_eq!(get(&app, "/api/exceptions?tl=1").await["total"], 1);
    let capped = get(&app, "/api/exceptions?limit=1").await;
    assert_eq!((capped["capped"].clone(), capped["items"].as_array().unwrap().len()), (json!(true), 1));
}

#[tokio::test]
async fn next_over_stays_in_the_frame() {
    let app = app();
    let at = |idx: u32, drift: &'static str| {
        let app = app.clone();
        async move { get(&app, &format!("/api/entry?tl=0&idx={idx}&drift={drift}")).await["idx"].as_u64().unwrap() }
    };
    // From main's expression at 8, over helper()'s call (9..10) to main's next expression.
    assert_eq!(at(8, "next-over").await, 11);
    // From the binding at 1, over work(), which raised (2..7).
    assert_eq!(at(1, "next-over").await, 8);
    assert_eq!(at(11, "prev-over").await, 8);
    assert_eq!(at(8, "prev-over").await, 1);
    assert_eq!(at(1, "prev-over").await, 0, "the frame's call entry");
    // From a call entry: over the whole call, to its exit (as before).
    assert_eq!(at(9, "next-over").await, 10);
    // From the frame's exit: the next entry, back in the caller.
    assert_eq!(at(7, "next-over").await, 8);
}

#[tokio::test]
async fn goto_finds_the_line_in_every_thread() {
    let app = app();
    let v = get(&app, "/api/goto?file=demo.py&line=6").await;
    let hits: Vec<(u64, u64, u64)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["tl"].as_u64().unwrap(), h["idx"].as_u64().unwrap(), h["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(hits, vec![(0, 3, 1), (1, 1, 1)]);
    assert_eq!(v["hits"][1]["thread"], "worker");
    assert_eq!((v["tl"].clone(), v["idx"].clone()), (json!(0), json!(3)));
    let in_worker = get(&app, "/api/goto?file=demo.py&line=6&tl=1").await;
    assert_eq!((in_worker["tl"].clone(), in_worker["idx"].clone()), (json!(1), json!(1)));
    // The next / previous time a line ran in a thread.
    assert_eq!(get(&app, "/api/goto?file=demo.py&line=3&tl=0&from=9").await["idx"], 11);
    assert_eq!(get(&app, "/api/goto?file=demo.py&line=3&tl=0&from=10&dir=prev").await["idx"], 8);
    assert_eq!(get(&app, "/api/goto?file=demo.py&line=3&tl=0&from=12").await["idx"], Value::Null);
    // A call sits at its def line.
    assert_eq!(get(&app, "/api/goto?file=demo.py&line=12").await["idx"], 9);
    let (s, e) = call(&app, "GET", "/api/goto?file=other.py&line=1", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(e["error"], "no recorded function is in `other.py`");
}

#[tokio::test]
async fn functions_cover_every_thread() {
    let app = app();
    let stats = get(&app, "/api/fn_stats").await;
    let work = stats.as_array().unwrap().iter().find(|s| s["display"] == "demo.work").unwrap();
    assert_eq!(work["count"], 2);
    assert_eq!(get(&app, "/api/fn_stats?tl=1").await.as_array().unwrap().len(), 2);
    let calls = get(&app, "/api/fn_calls?form=1").await;
    assert_eq!(calls["total"], 2);
    let at: Vec<(Value, Value)> =
        calls["items"].as_array().unwrap().iter().map(|c| (c["thread"].clone(), c["idx"].clone())).collect();
    assert_eq!(at, vec![(json!("MainThread"), json!(2)), (json!("worker"), json!(0))]);
}

async fn search(app: &axum::Router, body: Value) -> Value {
    let (s, v) = call(app, "POST", "/api/search", Some(body)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = v["id"].as_u64().unwrap();
    for _ in 0..500 {
        let r = get(app, &format!("/api/search/{id}")).await;
        if r["done"] == true {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("search {id} did not finish");
}

#[tokio::test]
async fn search_covers_every_thread_and_says_when_it_stopped_at_its_cap() {
    let app = app();
    let r = search(&app, json!({"kind": "value", "text": "BAD"})).await;
    let at: Vec<(u64, u64)> = r["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["tl"].as_u64().unwrap(), m["idx"].as_u64().unwrap()))
        .collect();
    assert_eq!(at, vec![(0, 6), (0, 7), (1, 4), (1, 5)]);
    assert_eq!(r["matches"][2]["thread"], "worker");
    assert_eq!(r["capped"], false);
    assert_eq!(r["scanned"], r["total"]);
    let r = search(&app, json!({"kind": "value", "text": "bad", "limit": 3})).await;
    assert_eq!((r["matches"].as_array().unwrap().len(), r["capped"].clone()), (3, json!(true)));
    // As many as the cap, the last in the last entry: everything was searched, not capped.
    let r = search(&app, json!({"kind": "value", "text": "bad", "limit": 4})).await;
    assert_eq!((r["matches"].as_array().unwrap().len(), r["capped"].clone()), (4, json!(false)));
    // The cap reached with entries left to search: capped, though none of them would match.
    let r = search(&app, json!({"kind": "fn", "text": "inner", "limit": 2})).await;
    assert_eq!((r["matches"].as_array().unwrap().len(), r["capped"].clone()), (2, json!(true)));
    let r = search(&app, json!({"tl": 1, "kind": "fn", "text": "demo.work"})).await;
    assert_eq!(r["matches"][0]["tl"], 1);
    assert_eq!(r["matches"].as_array().unwrap().len(), 1);
    let (s, e) = call(&app, "POST", "/api/search", Some(json!({"tl": 5, "kind": "fn", "text": "x"}))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(e["error"].as_str().unwrap().contains("no timeline 5"), "{e}");
}
