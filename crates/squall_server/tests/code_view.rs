//! The code pane's routes (line hit counts, lines run in a frame, a site's entries, Printers'
//! entries) and power stepping by frame and by text, over a small synthetic recording.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use squall_server::{router, FileSource};
use squall_store::{Header, LoadedTimeline, Recording, ThreadMeta};
use squall_trace::{Coord, Form, FormKind, Forms, Kind, Limits, Site, SiteKind, Snap, Timeline, ValRef};
use tower::ServiceExt;

const TOKEN: &str = "t0k3n";
const SOURCE: &str = "def main():\n    for i in range(3):\n        f(i)\n    g(2)\n    return None\n\ndef f(x):\n    return x * 10\n\ndef g(a):\n    print('hello world')\n";

fn coord(line: u32, col: u32, end_col: u32) -> Coord {
    Coord { line, col, end_line: line, end_col }
}

/// main() binds i and calls f(i) three times (0..2: bind 1/5/9, call 2/6/10, f's return 3/7/11,
/// expression `f(i)` 4/8/12), then g(2) (call 13, its expression 14 = 'hello world', return
/// 15), then returns (16).
fn app() -> (axum::Router, tempfile::TempDir) {
    let (src, dir) = source();
    (router(Arc::new(src), TOKEN.into()), dir)
}

fn source() -> (FileSource, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.py");
    std::fs::write(&file, SOURCE).unwrap();
    let mut forms = Forms::new();
    let form = |name: &str, line: u32, params: &[&str]| Form {
        ns: "demo".into(),
        name: name.into(),
        file: file.to_str().unwrap().into(),
        line,
        params: params.iter().map(|p| Arc::from(*p)).collect(),
        kind: FormKind::Function,
    };
    let main = forms.add_form(form("main", 1, &[])).unwrap();
    let f = forms.add_form(form("f", 7, &["x"])).unwrap();
    let g = forms.add_form(form("g", 10, &["a"])).unwrap();
    let site = |forms: &mut Forms, form, kind, c, symbol: Option<&str>| {
        forms.add_site(Site { form, kind, coord: c, symbol: symbol.map(Into::into) }).unwrap()
    };
    let bind_i = site(&mut forms, main, SiteKind::Bind, coord(2, 8, 9), Some("i"));
    let expr_fi = site(&mut forms, main, SiteKind::Expr, coord(3, 8, 12), None);
    let ret_main = site(&mut forms, main, SiteKind::Return, coord(5, 4, 15), None);
    let ret_f = site(&mut forms, f, SiteKind::Return, coord(8, 4, 16), None);
    let expr_g = site(&mut forms, g, SiteKind::Expr, coord(11, 10, 23), None);
    let ret_g = site(&mut forms, g, SiteKind::Return, coord(11, 4, 24), None);
    let l = Limits::default();
    let int = |i| ValRef::small_int(i).unwrap();
    let mut t = Timeline::new();
    t.call(main, &[], &l);
    for i in 0..3 {
        t.event(Kind::Bind, bind_i, main, false, int(i), &l);
        t.call(f, &[int(i)], &l);
        t.exit(Kind::Return, ret_f, f, false, int(i * 10), &l);
        t.event(Kind::Expr, expr_fi, main, false, int(i * 10), &l);
    }
    t.call(g, &[int(2)], &l);
    t.event(Kind::Expr, expr_g, g, false, ValRef::slot(0).unwrap(), &l);
    t.exit(Kind::Return, ret_g, g, false, ValRef::NONE, &l);
    t.exit(Kind::Return, ret_main, main, false, ValRef::NONE, &l);
    let mut store = squall_trace::ValueStore::new();
    store.push_legacy(&Snap::Str("hello world".into()));
    let rec = Recording {
        header: Header { program: "demo.py".into(), ..Header::default() },
        forms,
        timelines: vec![LoadedTimeline {
            meta: ThreadMeta { timeline: 0, flow: 0, thread_id: 7, name: "MainThread".into() },
            timeline: Timeline::from_parts(t.entries().to_vec(), t.args().to_vec()),
            values: store,
        }],
        completed: true,
        ended_unix_ms: None,
        stats: vec![],
        file_bytes: 0,
        cut_short: None,
        outputs: Default::default(),
    };
    (FileSource { rec, path: "demo.sqrec".into() }, dir)
}

async fn call(app: &axum::Router, uri: &str) -> (StatusCode, Value) {
    let req = Request::builder().uri(uri).header("x-squall-token", TOKEN).body(Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

async fn get(app: &axum::Router, uri: &str) -> Value {
    let (s, v) = call(app, uri).await;
    assert_eq!(s, StatusCode::OK, "{uri}: {v}");
    v
}

fn idxs(v: &Value) -> Vec<u64> {
    v["items"].as_array().unwrap().iter().map(|i| i["idx"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn line_hits_count_runs_of_a_line_not_its_expressions() {
    let (app, _d) = app();
    let v = get(&app, "/api/lines?tl=0&file=demo.py").await;
    // def lines count calls; line 11 holds two sites that ran once each: 1, not 2.
    assert_eq!(v["lines"], json!({"1": 1, "2": 3, "3": 3, "5": 1, "7": 3, "8": 3, "10": 1, "11": 1}));
    let (s, v) = call(&app, "/api/lines?tl=0&file=other.py").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"], "no recorded function is in `other.py`");
}

#[tokio::test]
async fn frame_lines_split_at_the_current_entry() {
    let (app, _d) = app();
    // At idx 5 (the second binding of i) main has run its def line, line 2 twice and line 3 once;
    // its return on line 5 is still to come. Lines of the callee f are not main's.
    let v = get(&app, "/api/frame_lines?tl=0&idx=5").await;
    assert_eq!(v["call"], 0);
    assert_eq!(v["ran"], json!({"1": 1, "2": 2, "3": 1}));
    assert_eq!(v["later"], json!({"5": 1}));
    // In f's frame (its return at 7): the def line and line 8.
    let v = get(&app, "/api/frame_lines?tl=0&idx=7").await;
    assert_eq!(v["call"], 6);
    assert_eq!(v["ran"], json!({"7": 1, "8": 1}));
    assert_eq!(v["later"], json!({}));
}

#[tokio::test]
async fn site_hits_in_a_frame_and_in_the_timeline() {
    let (app, _d) = app();
    let v = get(&app, "/api/site_hits?tl=0&site=1&frame=0").await;
    assert_eq!((v["total"].as_u64(), idxs(&v)), (Some(3), vec![4, 8, 12]));
    assert_eq!(v["items"][1]["value"]["preview"], "10");
    // f's return site, within one call of f, and over the whole timeline.
    let v = get(&app, "/api/site_hits?tl=0&site=3&frame=6").await;
    assert_eq!(idxs(&v), vec![7]);
    let v = get(&app, "/api/site_hits?tl=0&site=3&limit=2").await;
    assert_eq!((v["total"].as_u64(), idxs(&v)), (Some(3), vec![3, 7]));
    let (s, v) = call(&app, "/api/site_hits?tl=0&site=99").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"], "no site 99: this recording has 6 (the frame's `sites` list them)");
    let (s, v) = call(&app, "/api/site_hits?tl=0&site=1&frame=4").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "frame 4 is not a call entry's idx");
}

#[tokio::test]
async fn printers_replay_sites_in_recorded_order() {
    let (app, _d) = app();
    let v = get(&app, "/api/site_entries?tl=0&sites=0,1").await;
    assert_eq!((v["total"].as_u64(), idxs(&v)), (Some(6), vec![1, 4, 5, 8, 9, 12]));
    let sites: Vec<u64> = v["items"].as_array().unwrap().iter().map(|i| i["site"].as_u64().unwrap()).collect();
    assert_eq!(sites, vec![0, 1, 0, 1, 0, 1]);
    let v = get(&app, "/api/site_entries?tl=0&sites=0,1&offset=4&limit=1").await;
    assert_eq!((v["total"].as_u64(), idxs(&v)), (Some(6), vec![9]));
    let (s, v) = call(&app, "/api/site_entries?tl=0&sites=0,x").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "sites: `x` is not a site number (write e.g. sites=3,7)");
}

#[tokio::test]
async fn power_steps_by_frame_and_by_text() {
    let (app, _d) = app();
    let step = |q: &str| format!("/api/power_step?tl=0&{q}");
    assert_eq!(get(&app, &step("idx=4&how=same-frame")).await["idx"], 8);
    assert_eq!(get(&app, &step("idx=8&how=same-frame&dir=prev")).await["idx"], 4);
    assert_eq!(get(&app, &step("idx=4&how=same-frame&dir=prev")).await["idx"], Value::Null);
    // A call: the next call of the same function from the same caller frame.
    assert_eq!(get(&app, &step("idx=2&how=same-frame")).await["idx"], 6);
    assert_eq!(get(&app, &step("idx=10&how=same-frame")).await["idx"], Value::Null);
    // By printed text: 'hello world' at 14; 20 is printed only by f's third return (11) and
    // the expression after it (12).
    assert_eq!(get(&app, &step("idx=0&how=text&text=hello")).await["idx"], 14);
    assert_eq!(get(&app, &step("idx=0&how=text&text=20")).await["idx"], 11);
    assert_eq!(get(&app, &step("idx=16&how=text&text=20&dir=prev")).await["idx"], 12);
    let (s, v) = call(&app, &step("idx=0&how=fast")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "how must be same-frame, text or predicate, not `fast`");
}

#[tokio::test]
async fn power_steps_by_a_predicate() {
    let (app, _d) = app();
    let step = |q: &str| format!("/api/power_step?tl=0&how=predicate&{q}");
    // f's returns are 0, 10, 20 (3, 7, 11), each followed by main's expression `f(i)` (4, 8, 12).
    assert_eq!(get(&app, &step("idx=0&pred=v%20%3E%205")).await, json!({"idx": 7, "stopped_at": null}));
    assert_eq!(get(&app, &step("idx=7&pred=v%20%3E%205")).await["idx"], 8);
    assert_eq!(get(&app, &step("idx=16&pred=v%20%3E%2015&dir=prev")).await["idx"], 12);
    assert_eq!(get(&app, &step("idx=0&pred=v%20%3E%2020")).await["idx"], Value::Null);
    assert_eq!(
        get(
            &app,
            &step("idx=0&pred=kind%20%3D%3D%20%27fn-return%27%20and%20fn%20%3D%3D%20%27f%27%20and%20v%20%3E%200")
        )
        .await["idx"],
        7
    );
    let (s, v) = call(&app, &step("idx=0&pred=bad")).await;
    assert_eq!(
        (s, v["error"].as_str().unwrap()),
        (StatusCode::BAD_REQUEST, "'bad' names 'bad', which this entry does not have; its names are fn, kind, name, v")
    );
    let (s, v) = call(&app, &step("idx=0&pred=v%20%3E")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().starts_with("'v >' is not an expression"), "{v}");
    let (s, v) = call(&app, &step("idx=0&pred=%20")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
}

#[test]
fn a_predicate_scan_out_of_time_says_where_it_stopped() {
    let (src, _d) = source();
    let q = |extra: &[(&str, &str)]| -> squall_server::api::Q {
        [("tl", "0"), ("how", "predicate"), ("pred", "v > 5")]
            .iter()
            .chain(extra)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let within = |q: &squall_server::api::Q, budget| squall_server::power::power_step_within(&src, q, budget).unwrap();
    // No time at all: stopped before looking at the first entry, which is where the next step
    // (the client sends stopped_at as idx) starts again.
    let none = std::time::Duration::ZERO;
    assert_eq!(within(&q(&[("idx", "0")]), none), json!({"idx": null, "stopped_at": 0}));
    assert_eq!(within(&q(&[("idx", "16"), ("dir", "prev")]), none), json!({"idx": null, "stopped_at": 16}));
    let ample = std::time::Duration::from_secs(60);
    assert_eq!(within(&q(&[("idx", "0")]), ample), json!({"idx": 7, "stopped_at": null}));
}
