//! `GET /api/outputs` over a recording file holding outputs of two threads.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use squall_server::{router, FileSource};
use squall_store::{Header, ThreadMeta, Writer};
use squall_trace::{Coord, Form, FormKind, Forms, Kind, Limits, OutStream, Outputs, Site, SiteKind, Timeline, ValRef};
use tower::ServiceExt;

const TOKEN: &str = "t0k3n";

/// Two threads (recorder numbers 3 and 5), each one call of `main`; outputs of both, and one of
/// a thread that recorded nothing.
fn app() -> axum::Router {
    let mut forms = Forms::new();
    let main = forms
        .add_form(Form {
            ns: "demo".into(),
            name: "main".into(),
            file: "demo.py".into(),
            line: 1,
            params: vec![],
            kind: FormKind::Function,
        })
        .unwrap();
    let ret = forms
        .add_site(Site {
            form: main,
            kind: SiteKind::Return,
            coord: Coord { line: 2, col: 4, end_line: 2, end_col: 10 },
            symbol: None,
        })
        .unwrap();
    let l = Limits::default();
    let mut t = Timeline::new();
    t.call(main, &[], &l);
    t.exit(Kind::Return, ret, main, false, ValRef::NONE, &l);
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&forms).unwrap();
    for (number, tid, name) in [(3, 100, "MainThread"), (5, 200, "worker")] {
        w.thread(&ThreadMeta { timeline: number, flow: 0, thread_id: tid, name: name.into() }).unwrap();
        w.entries(number, 0, t.entries(), 0, t.args()).unwrap();
    }
    let mut o = Outputs::new();
    o.write(OutStream::Stdout, 100, Some((3, 0)), "main says hi\n");
    o.write(OutStream::Stderr, 200, Some((5, 1)), "worker warns\n");
    o.write(OutStream::Stdout, 300, None, "a thread with no entries\n");
    o.write(OutStream::Stdout, 100, Some((3, 1)), "main again\n");
    w.outputs(&mut o).unwrap();
    let rec = squall_store::read(&w.finish(1, &[]).unwrap()).unwrap();
    router(Arc::new(FileSource { rec, path: "demo.sqrec".into() }), TOKEN.into())
}

async fn get(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    let req = Request::builder().uri(uri).header("x-squall-token", TOKEN).body(Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn outputs_are_listed_in_order_with_their_timeline_and_idx() {
    let app = app();
    let (s, v) = get(&app, "/api/outputs").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    insta::assert_json_snapshot!("outputs_all", v);
    let (_, v) = get(&app, "/api/outputs?stream=stderr").await;
    assert_eq!(v["total"], 1);
    assert_eq!(v["items"][0]["tl"], 1, "recorder number 5 is the second timeline");
    assert_eq!(v["items"][0]["idx"], 1);
    let (_, v) = get(&app, "/api/outputs?tl=0&offset=1&limit=1").await;
    assert_eq!((v["total"].as_u64(), v["items"].as_array().unwrap().len()), (Some(2), 1));
    assert_eq!(v["items"][0]["text"], "main again\n");
    let (_, v) = get(&app, "/api/outputs?contains=no%20entries").await;
    assert_eq!(v["items"][0]["tl"], Value::Null);
}

#[tokio::test]
async fn bad_outputs_queries_say_what_to_pass() {
    let app = app();
    let (s, v) = get(&app, "/api/outputs?stream=stdin").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "query parameter `stream`: `stdin` is not `stdout` or `stderr`");
    let (s, v) = get(&app, "/api/outputs?tl=9").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("no timeline 9"), "{v}");
}
