//! The API over a small synthetic recording, through the router (no sockets).

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use squall_server::{router, FileSource};
use squall_store::{Header, LoadedTimeline, Recording, ThreadMeta};
use squall_trace::{Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef};
use tower::ServiceExt;

const TOKEN: &str = "t0k3n";

fn coord(line: u32, col: u32, end_col: u32) -> Coord {
    Coord { line, col, end_line: line, end_col }
}

/// main() calls f(1) three times in a loop (binding `i`, expression `f(i)`), then g(2, [..]) which
/// raises ValueError.
fn recording(src_file: &str) -> Recording {
    let mut forms = Forms::new();
    let form = |name: &str, line: u32, params: &[&str]| Form {
        ns: "demo".into(),
        name: name.into(),
        file: src_file.into(),
        line,
        params: params.iter().map(|p| Arc::from(*p)).collect(),
        kind: FormKind::Function,
    };
    let main = forms.add_form(form("main", 1, &[])).unwrap();
    let f = forms.add_form(form("f", 7, &["x"])).unwrap();
    let g = forms.add_form(form("g", 10, &["a", "b"])).unwrap();
    let bind_i = forms
        .add_site(Site { form: main, kind: SiteKind::Bind, coord: coord(2, 8, 9), symbol: Some("i".into()) })
        .unwrap();
    let expr_fi =
        forms.add_site(Site { form: main, kind: SiteKind::Expr, coord: coord(3, 8, 12), symbol: None }).unwrap();
    let ret_main =
        forms.add_site(Site { form: main, kind: SiteKind::Return, coord: coord(5, 4, 12), symbol: None }).unwrap();
    let ret_f = forms.add_site(Site { form: f, kind: SiteKind::Return, coord: coord(8, 4, 16), symbol: None }).unwrap();
    let expr_g =
        forms.add_site(Site { form: g, kind: SiteKind::Expr, coord: coord(11, 10, 30), symbol: None }).unwrap();
    let l = Limits::default();
    let mut values = vec![
        Snap::Seq {
            kind: SeqKind::List,
            type_name: "list".into(),
            id: 0,
            items: (0..30).map(Snap::Int).collect(),
            len: 30,
        },
        Snap::Object {
            type_name: "ValueError".into(),
            id: 0,
            repr: "ValueError('bad b')".into(),
            attrs: vec![(
                "args".into(),
                Snap::Seq {
                    kind: SeqKind::Tuple,
                    type_name: "tuple".into(),
                    id: 0,
                    items: vec![Snap::Str("bad b".into())],
                    len: 1,
                },
            )],
        },
        Snap::Str("hello world".into()),
    ];
    let mut t = Timeline::new();
    t.call(main, &[], &l);
    for i in 0..3 {
        t.event(Kind::Bind, bind_i, main, false, ValRef::small_int(i).unwrap(), &l);
        t.call(f, &[ValRef::small_int(i).unwrap()], &l);
        t.exit(Kind::Return, ret_f, f, false, ValRef::small_int(i * 10).unwrap(), &l);
        t.event(Kind::Expr, expr_fi, main, false, ValRef::small_int(i * 10).unwrap(), &l);
    }
    t.call(g, &[ValRef::small_int(2).unwrap(), ValRef::slot(0).unwrap()], &l);
    t.event(Kind::Expr, expr_g, g, false, ValRef::slot(2).unwrap(), &l);
    t.exit(Kind::Unwind, g, g, false, ValRef::slot(1).unwrap(), &l);
    t.exit(Kind::Return, ret_main, main, false, ValRef::NONE, &l);
    values.truncate(3);
    let (entries, args) = (t.entries().to_vec(), t.args().to_vec());
    Recording {
        header: Header { program: "demo.py".into(), ..Header::default() },
        forms,
        timelines: vec![LoadedTimeline {
            meta: ThreadMeta { timeline: 0, flow: 0, thread_id: 7, name: "MainThread".into() },
            timeline: Timeline::from_parts(entries, args),
            values: {
                // Entry slots 0..3 name these values (as a version 1 file numbers them).
                let mut store = squall_trace::ValueStore::new();
                values.iter().for_each(|v| store.push_legacy(v));
                store
            },
        }],
        completed: true,
        ended_unix_ms: None,
        stats: vec![],
        file_bytes: 0,
        cut_short: None,
        outputs: Default::default(),
    }
}

fn app() -> (axum::Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.py");
    std::fs::write(&file, "def main():\n    for i in range(3):\n        f(i)\n    g(2, list(range(30)))\n    return None\n\ndef f(x):\n    return x * 10\n\ndef g(a, b):\n    raise ValueError('bad b')\n").unwrap();
    let rec = recording(file.to_str().unwrap());
    let src = FileSource { rec, path: "demo.sqrec".into() };
    (router(Arc::new(src), TOKEN.into()), dir)
}

async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("x-squall-token", t);
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let res = app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, v)
}

async fn get(app: &axum::Router, uri: &str) -> Value {
    let (s, v) = call(app, "GET", uri, Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::OK, "{uri}: {v}");
    v
}

/// Source file paths differ per run: replace them for snapshots.
fn redact(mut v: Value, dir: &std::path::Path) -> Value {
    let d = dir.to_str().unwrap().to_string();
    fn walk(v: &mut Value, d: &str) {
        match v {
            Value::String(s) if s.contains(d) => *s = s.replace(d, "<dir>"),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, d)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, d)),
            _ => {}
        }
    }
    walk(&mut v, &d);
    v
}

#[tokio::test]
async fn token_is_checked_first() {
    let (app, _d) = app();
    for uri in ["/api/flows", "/api/frame?tl=99&idx=zzz", "/api/nope", "/api/search/1"] {
        let (s, v) = call(&app, "GET", uri, None, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{uri}");
        assert!(v["error"].as_str().unwrap().contains("token"));
        let (s, _) = call(&app, "GET", uri, Some("wrong"), None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{uri}");
    }
    let (s, _) = call(&app, "POST", "/api/search", None, Some(json!({"tl": 0, "kind": "fn", "text": "f"}))).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // The token in the query string works too.
    let (s, _) = call(&app, "GET", &format!("/api/flows?token={TOKEN}"), None, None).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn ui_files_are_served() {
    let (app, _d) = app();
    for uri in ["/", "/app.js", "/app.css", "/nav.js", "/code.js", "/tools.js", "/vendor/highlight.min.js"] {
        let res = app.clone().oneshot(Request::builder().uri(uri).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{uri}");
    }
}

#[tokio::test]
async fn bad_requests_are_4xx_with_a_message() {
    let (app, _d) = app();
    let cases = [
        ("/api/frame", StatusCode::BAD_REQUEST, "missing query parameter `tl`"),
        ("/api/frame?tl=x&idx=0", StatusCode::BAD_REQUEST, "`tl`"),
        ("/api/frame?tl=5&idx=0", StatusCode::NOT_FOUND, "no timeline 5"),
        ("/api/frame?tl=0&idx=999", StatusCode::NOT_FOUND, "out of range"),
        ("/api/frame?tl=0&idx=0&drift=sideways", StatusCode::BAD_REQUEST, "unknown drift"),
        ("/api/value?tl=0&v=0&path=a.b", StatusCode::BAD_REQUEST, "bad value path"),
        ("/api/value?tl=0&v=0&path=99", StatusCode::BAD_REQUEST, "names no child"),
        ("/api/source?file=/etc/passwd", StatusCode::NOT_FOUND, "not a source file"),
        ("/api/find?tl=0&idx=0&how=magic", StatusCode::BAD_REQUEST, "how must be"),
        ("/api/fn_calls?tl=0&form=77", StatusCode::NOT_FOUND, "no form 77"),
        ("/api/nope", StatusCode::NOT_FOUND, "no such API route"),
    ];
    for (uri, status, msg) in cases {
        let (s, v) = call(&app, "GET", uri, Some(TOKEN), None).await;
        assert_eq!(s, status, "{uri}: {v}");
        assert!(v["error"].as_str().unwrap().contains(msg), "{uri}: {v}");
    }
    let (s, v) =
        call(&app, "POST", "/api/search", Some(TOKEN), Some(json!({"tl": 0, "kind": "regex", "text": "x"}))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().contains("kind"));
}

#[tokio::test]
async fn flows_frame_and_stepping() {
    let (app, d) = app();
    insta::assert_json_snapshot!("flows", get(&app, "/api/flows").await);
    // idx 0: main's call. Step next-over from the call of f (idx 2) lands on its return.
    let fr = redact(get(&app, "/api/frame?tl=0&idx=4").await, d.path());
    insta::assert_json_snapshot!("frame_at_4", fr);
    assert_eq!(get(&app, "/api/entry?tl=0&idx=2&drift=next-over").await["idx"], 3);
    assert_eq!(get(&app, "/api/frame?tl=0&idx=3&drift=next-out").await["idx"], 4);
    assert_eq!(get(&app, "/api/frame?tl=0&idx=last").await["idx"], 16);
    // Inside g: the stack is g <- main, args previewed.
    let g = get(&app, "/api/frame?tl=0&idx=14").await;
    assert_eq!(g["stack"].as_array().unwrap().len(), 2);
    assert!(g["frame"]["args"][1]["value"]["preview"].as_str().unwrap().len() > 10);
    assert_eq!(g["frame"]["ret"]["type"], "fn-unwind");
}

#[tokio::test]
async fn call_tree_is_paged() {
    let (app, _d) = app();
    let root = get(&app, "/api/children?tl=0").await;
    assert_eq!(root["items"].as_array().unwrap().len(), 1);
    assert_eq!(root["items"][0]["has_children"], true);
    let p1 = get(&app, "/api/children?tl=0&call=0&limit=2").await;
    insta::assert_json_snapshot!("children_page1", p1);
    let p2 = get(&app, "/api/children?tl=0&call=0&offset=2&limit=2").await;
    assert_eq!(p2["items"].as_array().unwrap().len(), 2);
    assert_eq!(p2["more"], false);
    assert_eq!(p2["items"][1]["fn"], "demo.g");
}

#[tokio::test]
async fn functions_exceptions_values() {
    let (app, d) = app();
    insta::assert_json_snapshot!("fn_stats", redact(get(&app, "/api/fn_stats?tl=0").await, d.path()));
    let calls = get(&app, "/api/fn_calls?tl=0&form=1&offset=1&limit=1").await;
    assert_eq!(calls["total"], 3);
    assert_eq!(calls["items"][0]["args"][0]["value"]["preview"], "1");
    assert_eq!(calls["items"][0]["ret"]["value"]["preview"], "10");
    insta::assert_json_snapshot!("exceptions", get(&app, "/api/exceptions").await);
    let v = get(&app, "/api/value?tl=0&v=0&offset=25&limit=10&level=2&length=5").await;
    insta::assert_json_snapshot!("value_list_page", v);
    let e = get(&app, "/api/value?tl=0&v=1").await;
    assert_eq!(e["children"][0]["key"], "args");
    let inner = get(&app, "/api/value?tl=0&v=1&path=0.0").await;
    assert_eq!(inner["repr"], "'bad b'");
}

#[tokio::test]
async fn power_stepping_loops_goto_source() {
    let (app, d) = app();
    // Same coord: the bind of i at idx 1, next at 5.
    assert_eq!(get(&app, "/api/find?tl=0&idx=1&how=coord&dir=next").await["idx"], 5);
    assert_eq!(get(&app, "/api/find?tl=0&idx=5&how=coord&dir=prev").await["idx"], 1);
    // Same value 10: the return of f(1) at idx 7 and the expr at idx 8.
    assert_eq!(get(&app, "/api/find?tl=0&idx=7&how=identity&dir=next").await["idx"], 8);
    assert_eq!(get(&app, "/api/find?tl=0&idx=2&how=fn&dir=next").await["idx"], 6);
    let l = get(&app, "/api/loop?tl=0&idx=8").await;
    assert_eq!(l["count"], 3);
    assert_eq!(l["pos"], 1);
    assert_eq!(l["window"][2]["value"]["preview"], "20");
    let file = d.path().join("demo.py");
    let f = file.to_str().unwrap();
    assert_eq!(get(&app, &format!("/api/goto?tl=0&file={f}&line=3")).await["idx"], 4);
    let src = get(&app, &format!("/api/source?file={f}")).await;
    assert_eq!(src["lines"][7], "    return x * 10");
}

/// `/api/source` serves the recorded file only as recorded: a changed file is a 409 saying so, a
/// FIFO a 403 (and does not hang), a recording without hashes gets an unverified note.
#[tokio::test]
async fn source_is_served_only_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let f = file.to_str().unwrap().to_string();
    let rec = recording(&f);
    assert!(rec.forms.sources().is_empty());
    let with_hash = |rec: &mut Recording, data: &[u8]| {
        rec.forms.add_source(squall_trace::SourceFile {
            file: f.as_str().into(),
            size: data.len() as u64,
            sha256: squall_store::sourcefile::sha256(data),
        })
    };
    // no hash (an older recording): served, marked
    let app = router(Arc::new(FileSource { rec, path: "demo.sqrec".into() }), TOKEN.into());
    let v = get(&app, &format!("/api/source?file={f}")).await;
    assert_eq!(v["verified"], false);
    assert!(v["note"].as_str().unwrap().contains("cannot verify"), "{v}");
    // hashed and matching: verified
    let mut rec = recording(&f);
    with_hash(&mut rec, b"x = 1\n");
    let app = router(Arc::new(FileSource { rec, path: "demo.sqrec".into() }), TOKEN.into());
    let v = get(&app, &format!("/api/source?file={f}")).await;
    assert_eq!(
        (v["verified"].clone(), v["note"].clone(), v["lines"].clone()),
        (json!(true), Value::Null, json!(["x = 1"]))
    );
    // changed since
    std::fs::write(&file, "x = 2\n").unwrap();
    let (s, v) = call(&app, "GET", &format!("/api/source?file={f}"), Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(
        v["error"].as_str().unwrap().starts_with(&format!("source changed since recording: {f} (recorded sha256 ")),
        "{v}"
    );
    // a FIFO in its place
    std::fs::remove_file(&file).unwrap();
    let c = std::ffi::CString::new(f.as_str()).unwrap();
    // SAFETY: `c` is a NUL-terminated C string alive across the call; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (s, v) = call(&app, "GET", &format!("/api/source?file={f}"), Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(v["error"], format!("refusing to read {f}: it is a FIFO, not a regular file"));
}

/// The published OpenAPI description names exactly the router's routes (read from its source),
/// and each documented route is routed (not the fallback's "no such API route").
#[tokio::test]
async fn openapi_describes_every_route() {
    let (app, _d) = app();
    let doc = get(&app, "/api/openapi.json").await;
    let mut documented: Vec<(String, String)> = vec![];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    documented.sort();
    let src = include_str!("../src/lib.rs");
    let body = &src[src.find("let api = Router::new()").unwrap()..src.find(".fallback(").unwrap()];
    let mut routed: Vec<(String, String)> = vec![];
    for part in body.split(".route(").skip(1) {
        let path = part.split('"').nth(1).unwrap();
        let handler = part.split_once(',').unwrap().1;
        let methods: Vec<&str> = if handler.contains("post(") {
            vec!["POST"]
        } else if handler.contains(".delete(") {
            vec!["GET", "DELETE"]
        } else {
            vec!["GET"]
        };
        for m in methods {
            routed.push((m.to_string(), format!("/api{path}")));
        }
    }
    routed.sort();
    assert_eq!(documented, routed);
    for (method, path) in &documented {
        let uri = path.replace("{action}", "status").replace("{id}", "1");
        let (_, v) = call(&app, method, &uri, Some(TOKEN), None).await;
        assert_ne!(v["error"], "no such API route", "{method} {path}");
    }
}

#[tokio::test]
async fn search_with_progress() {
    let (app, _d) = app();
    for (kind, text, want) in
        [("fn", "DEMO.F", vec![2, 6, 10]), ("value", "hello", vec![14]), ("value", "bad b", vec![15])]
    {
        let (s, v) =
            call(&app, "POST", "/api/search", Some(TOKEN), Some(json!({"tl": 0, "kind": kind, "text": text}))).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let id = v["id"].as_u64().unwrap();
        let mut res = Value::Null;
        for _ in 0..200 {
            res = get(&app, &format!("/api/search/{id}")).await;
            if res["done"] == true {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(res["done"], true);
        let idxs: Vec<u64> = res["matches"].as_array().unwrap().iter().map(|m| m["idx"].as_u64().unwrap()).collect();
        assert_eq!(idxs, want, "{kind} {text}: {res}");
        assert!(res["scanned"].as_u64().unwrap() > 0);
        let (s, _) = call(&app, "DELETE", &format!("/api/search/{id}"), Some(TOKEN), None).await;
        assert_eq!(s, StatusCode::OK);
    }
}

/// The demo recording plus a worker thread of the same flow that ran f(5) twice, interleaved with
/// main by switch marks: main 0..4, worker 0..2, main 4..10, worker 2..4, main 10.. (`marks`
/// false: no marks, whole timelines in order).
fn two_threads(marks: bool) -> (axum::Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.py");
    std::fs::write(&file, "def main():\n    pass\n").unwrap();
    let mut rec = recording(file.to_str().unwrap());
    let l = Limits::default();
    let mut w = Timeline::new();
    for _ in 0..2 {
        w.call(1, &[ValRef::small_int(5).unwrap()], &l);
        w.exit(Kind::Return, 3, 1, false, ValRef::small_int(50).unwrap(), &l);
    }
    let mut w = Timeline::from_parts(w.entries().to_vec(), w.args().to_vec());
    if marks {
        rec.timelines[0].timeline.set_switches(vec![(0, 0), (4, 2), (10, 4)]);
        w.set_switches(vec![(0, 1), (2, 3)]);
    }
    rec.timelines.push(LoadedTimeline {
        meta: ThreadMeta { timeline: 1, flow: 0, thread_id: 9, name: "worker".into() },
        timeline: w,
        values: squall_trace::ValueStore::new(),
    });
    let src = FileSource { rec, path: "demo.sqrec".into() };
    (router(Arc::new(src), TOKEN.into()), dir)
}

fn order_of(v: &Value) -> Vec<(u64, u64)> {
    v["items"].as_array().unwrap().iter().map(|i| (i["tl"].as_u64().unwrap(), i["idx"].as_u64().unwrap())).collect()
}

#[tokio::test]
async fn multi_thread_timeline_follows_switch_marks() {
    let (app, _d) = two_threads(true);
    let main_len = get(&app, "/api/flows").await["flows"][0]["threads"][0]["len"].as_u64().unwrap();
    let v = get(&app, "/api/order?flow=0&limit=1000").await;
    assert_eq!(v["marks"], true);
    assert_eq!(v["total"].as_u64().unwrap(), main_len + 4);
    let mut want: Vec<(u64, u64)> = (0..4).map(|i| (0, i)).collect();
    want.extend([(1, 0), (1, 1)]);
    want.extend((4..10).map(|i| (0, i)));
    want.extend([(1, 2), (1, 3)]);
    want.extend((10..main_len).map(|i| (0, i)));
    assert_eq!(order_of(&v), want);
    let items = v["items"].as_array().unwrap();
    assert_eq!(items[4]["thread"], "worker");
    assert_eq!(items[4]["switch"], true);
    assert_eq!(items[5]["switch"], false);
    assert_eq!(items[5]["fn"], "demo.f", "returns name their function");
    assert_eq!(v["threads"].as_array().unwrap().len(), 2);

    // Paged.
    let p = get(&app, "/api/order?flow=0&start=3&limit=4").await;
    assert_eq!(order_of(&p), want[3..7].to_vec());
    assert_eq!(p["items"][0]["pos"], 3);
    // Only functions: calls, returns, unwinds.
    let f = get(&app, "/api/order?flow=0&fns=1&limit=1000").await;
    let types: HashSet<String> =
        f["items"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap().to_string()).collect();
    assert!(types.iter().all(|t| t.starts_with("fn-")), "{types:?}");
    assert_eq!(f["total"].as_u64().unwrap() as usize, f["items"].as_array().unwrap().len());
    let fo = order_of(&f);
    assert_eq!(fo[..2], [(0, 0), (0, 2)], "main's call, then f's call (the bind is filtered)");
    // Centred on an entry: the worker's second call.
    let c = get(&app, "/api/order?flow=0&tl=1&idx=2&limit=4").await;
    assert_eq!(c["at"], 12);
    assert_eq!(c["start"], 10);
    assert_eq!(order_of(&c)[2], (1, 2));

    // Without marks: whole timelines, in order.
    let (app, _d) = two_threads(false);
    let v = get(&app, "/api/order?limit=1000").await;
    assert_eq!(v["marks"], false);
    let mut want: Vec<(u64, u64)> = (0..main_len).map(|i| (0, i)).collect();
    want.extend((0..4).map(|i| (1, i)));
    assert_eq!(order_of(&v), want);

    // Bad input is a 4xx with a message.
    for (uri, code, needle) in [
        ("/api/order?flow=7", StatusCode::NOT_FOUND, "no flow 7"),
        ("/api/order?flow=x", StatusCode::BAD_REQUEST, "flow"),
        ("/api/order?fns=maybe", StatusCode::BAD_REQUEST, "fns"),
        ("/api/order?tl=5&idx=0", StatusCode::NOT_FOUND, "no timeline 5"),
        ("/api/order?tl=1", StatusCode::BAD_REQUEST, "idx"),
    ] {
        let (s, v) = call(&app, "GET", uri, Some(TOKEN), None).await;
        assert_eq!(s, code, "{uri}: {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{uri}: {v}");
    }
}

#[tokio::test]
async fn live_controls_need_a_live_source() {
    let (app, _d) = app();
    let (s, _) = call(&app, "POST", "/api/control/stop", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, v) = call(&app, "POST", "/api/control/stop", Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(v["error"].as_str().unwrap().contains("needs a running program"), "{v}");
    let (s, v) = call(&app, "POST", "/api/control/instrument", Some(TOKEN), Some(json!({"target": "app"}))).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let mut req = Request::builder().method("POST").uri("/api/control/stop").header("x-squall-token", TOKEN);
    req = req.header("content-type", "application/json");
    let res = app.clone().oneshot(req.body(Body::from("{not json")).unwrap()).await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let (s, _) = call(&app, "GET", "/api/control/stop", Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
}

/// A source that claims to be live and echoes control actions: the route hands them over.
struct Echo(FileSource);

impl squall_server::RecordingSource for Echo {
    fn with_view(&self, f: &mut dyn FnMut(&dyn squall_server::View)) {
        f(&self.0)
    }
    fn live(&self) -> bool {
        true
    }
    fn control(&self, action: &str, arg: &Value) -> Result<Value, String> {
        match action {
            "echo" => Ok(json!({"action": action, "arg": arg})),
            _ => Err(format!("unknown action `{action}`")),
        }
    }
}

#[tokio::test]
async fn control_route_calls_the_live_source() {
    let (_, dir) = app();
    let rec = recording(dir.path().join("demo.py").to_str().unwrap());
    let app = router(Arc::new(Echo(FileSource { rec, path: "x".into() })), TOKEN.into());
    let (s, v) = call(&app, "POST", "/api/control/echo", Some(TOKEN), Some(json!({"target": "m"}))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"action": "echo", "arg": {"target": "m"}}));
    let (s, v) = call(&app, "POST", "/api/control/echo", Some(TOKEN), None).await;
    assert_eq!((s, &v["arg"]), (StatusCode::OK, &Value::Null));
    let (s, v) = call(&app, "POST", "/api/control/explode", Some(TOKEN), None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "unknown action `explode`");
    assert_eq!(get(&app, "/api/flows").await["live"], true);
}

/// Bookmarks placed from code are calls of the pseudo-function `squall.bookmark(note)`.
#[tokio::test]
async fn code_bookmarks_listed() {
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
    let bm = forms
        .add_form(Form {
            ns: "squall".into(),
            name: "bookmark".into(),
            file: "<squall>".into(),
            line: 0,
            params: vec![Arc::from("note")],
            kind: FormKind::Function,
        })
        .unwrap();
    let ret_bm =
        forms.add_site(Site { form: bm, kind: SiteKind::Return, coord: coord(0, 0, 0), symbol: None }).unwrap();
    let ret_main =
        forms.add_site(Site { form: main, kind: SiteKind::Return, coord: coord(2, 4, 10), symbol: None }).unwrap();
    let l = Limits::default();
    let mut t = Timeline::new();
    t.call(main, &[], &l);
    t.call(bm, &[ValRef::slot(0).unwrap()], &l);
    t.exit(Kind::Return, ret_bm, bm, false, ValRef::NONE, &l);
    t.call(bm, &[ValRef::slot(1).unwrap()], &l);
    t.exit(Kind::Return, ret_bm, bm, false, ValRef::NONE, &l);
    t.exit(Kind::Return, ret_main, main, false, ValRef::NONE, &l);
    let (entries, args) = (t.entries().to_vec(), t.args().to_vec());
    let rec = Recording {
        header: Header { program: "demo.py".into(), ..Header::default() },
        forms,
        timelines: vec![LoadedTimeline {
            meta: ThreadMeta { timeline: 0, flow: 0, thread_id: 7, name: "MainThread".into() },
            timeline: Timeline::from_parts(entries, args),
            values: {
                let mut store = squall_trace::ValueStore::new();
                store.push_legacy(&Snap::Str("before the retry".into()));
                store.push_legacy(&Snap::Str("after".into()));
                store
            },
        }],
        completed: true,
        ended_unix_ms: None,
        stats: vec![],
        file_bytes: 0,
        cut_short: None,
        outputs: Default::default(),
    };
    let bm_app = router(Arc::new(FileSource { rec, path: "demo.sqrec".into() }), TOKEN.into());
    let b = get(&bm_app, "/api/bookmarks").await;
    assert_eq!(b["total"], 2, "{b}");
    assert_eq!(b["items"][0], json!({"tl": 0, "flow": 0, "thread": 7, "idx": 1, "note": "before the retry"}));
    assert_eq!(b["items"][1]["idx"], 3);
    assert_eq!(b["items"][1]["note"], "after");
    // A recording without code bookmarks: an empty list.
    let (app2, _d) = app();
    assert_eq!(get(&app2, "/api/bookmarks").await, json!({"total": 0, "items": []}));
}
