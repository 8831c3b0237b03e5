//! The UI's API on a synthetic 10M-entry recording (the generator of squall_store's store_bench,
//! plus expression and binding events): time to open the file, the requests of the first paint,
//! each kind of step, and the other tools' first requests.
//! `cargo run --release -p squall_server --example ui_bench [entries]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use squall_server::{router, FileSource};
use squall_store::{Codec, Header, ThreadMeta, Writer};
use squall_trace::{Coord, Form, FormKind, Forms, Kind, Limits, SeqKind, Site, SiteKind, Snap, Timeline, ValRef};
use tower::ServiceExt;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NFORMS: u32 = 200;

/// Per form: a return site, an expression site and a binding site.
fn forms() -> Forms {
    let mut f = Forms::new();
    for i in 0..NFORMS {
        let params = (0..(i % 4)).map(|p| Arc::from(format!("p{p}"))).collect();
        let id = f
            .add_form(Form {
                ns: format!("pkg.mod{}", i / 20).into(),
                name: format!("Class{}.method{i}", i % 7).into(),
                file: format!("/src/pkg/mod{}.py", i / 20).into(),
                line: 10 + i,
                params,
                kind: FormKind::Function,
            })
            .unwrap();
        let c = |l: u32| Coord { line: l, col: 4, end_line: l, end_col: 20 };
        f.add_site(Site { form: id, kind: SiteKind::Return, coord: c(12 + i), symbol: None }).unwrap();
        f.add_site(Site { form: id, kind: SiteKind::Expr, coord: c(11 + i), symbol: None }).unwrap();
        f.add_site(Site { form: id, kind: SiteKind::Bind, coord: c(11 + i), symbol: Some("x".into()) }).unwrap();
    }
    f
}

fn make(n: usize, path: &std::path::Path) {
    let forms = forms();
    let limits = Limits::default();
    let mut tl = Timeline::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut stack: Vec<u32> = Vec::new();
    let mut values = squall_trace::ValueStore::new();
    let val = |rng: &mut Rng, values: &mut squall_trace::ValueStore| -> ValRef {
        match rng.below(20) {
            0 => {
                let k = rng.below(6);
                values.push_snap(&Snap::Seq {
                    kind: SeqKind::List,
                    type_name: "list".into(),
                    id: 0,
                    items: (0..k).map(|i| Snap::Int(i as i64)).collect(),
                    len: k,
                })
            }
            1 => ValRef::NONE,
            2 => ValRef::TRUE,
            _ => ValRef::small_int(rng.below(1000) as i64).unwrap(),
        }
    };
    while tl.len() < n {
        let r = rng.below(100);
        if stack.len() >= 2 && r < 40 {
            let form = *stack.last().unwrap();
            let v = val(&mut rng, &mut values);
            let (kind, site) = if r < 25 { (Kind::Expr, form * 3 + 1) } else { (Kind::Bind, form * 3 + 2) };
            tl.event(kind, site, form, false, v, &limits);
            continue;
        }
        let go_down = stack.len() < 2 || (stack.len() < 40 && rng.below(100) < 52);
        if go_down {
            let form = rng.below(u64::from(NFORMS)) as u32;
            let args: Vec<ValRef> = (0..(form % 4)).map(|_| val(&mut rng, &mut values)).collect();
            tl.call(form, &args, &limits);
            stack.push(form);
        } else {
            let form = stack.pop().unwrap();
            let v = val(&mut rng, &mut values);
            tl.exit(Kind::Return, form * 3, form, false, v, &limits);
        }
    }
    let header = Header { program: "ui_bench.py".into(), squall: "bench".into(), ..Header::default() };
    let meta = ThreadMeta { timeline: 0, flow: 0, thread_id: 1, name: "MainThread".into() };
    let mut w = Writer::create(path, &header).unwrap();
    w.set_codec(Codec::Lz4);
    w.forms(&forms).unwrap();
    w.thread(&meta).unwrap();
    w.entries(0, 0, tl.entries(), 0, tl.args()).unwrap();
    w.values(0, &values).unwrap();
    w.finish(0, &[]).unwrap();
}

async fn get(app: &axum::Router, uri: &str) -> (Duration, serde_json::Value) {
    let t = Instant::now();
    let req = Request::builder().uri(uri).header("x-squall-token", "bench").body(Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    assert!(res.status().is_success(), "{uri}: {}", res.status());
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    (t.elapsed(), v)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let path = std::env::temp_dir().join("squall_ui_bench.sqrec");
    let t = Instant::now();
    make(n, &path);
    eprintln!("made {n} entries in {:.2?}", t.elapsed());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let t0 = Instant::now();
        let src = FileSource::open(&path).unwrap();
        let open = t0.elapsed();
        let app = router(Arc::new(src), "bench".into());
        let (d_flows, flows) = get(&app, "/api/flows").await;
        let (d_frame, frame) = get(&app, "/api/frame?tl=0&idx=0").await;
        let first_paint = t0.elapsed();
        println!("entries: {}", flows["flows"][0]["threads"][0]["len"]);
        println!("open file: {open:.2?}; /api/flows {d_flows:.2?}; /api/frame {d_frame:.2?}");
        println!("FIRST PAINT (open + flows + first frame): {first_paint:.2?}  (target <= 1 s)");
        assert_eq!(frame["idx"], 0);
        let mut worst = Duration::ZERO;
        for at in [0usize, n / 3, n / 2, n - 10] {
            for drift in ["next", "prev", "next-over", "prev-over", "next-out", "prev-out"] {
                let (d, _) = get(&app, &format!("/api/frame?tl=0&idx={at}&drift={drift}")).await;
                worst = worst.max(d);
            }
        }
        println!("STEP (frame with drift, 24 steps at 4 places): worst {worst:.2?}  (target <= 50 ms)");
        let (_, page) = get(&app, &format!("/api/entries?tl=0&offset={}&limit=100", n / 2)).await;
        let expr = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "expr")
            .map_or(0, |e| e["idx"].as_u64().unwrap());
        for (what, uri) in [
            ("call tree root page", "/api/children?tl=0&limit=100".to_string()),
            (
                "call tree children of a mid call",
                format!("/api/children?tl=0&call={}&limit=100", frame["frame"]["fn_call_idx"]),
            ),
            ("loop iterations at a mid expr", format!("/api/loop?tl=0&idx={expr}")),
            ("fn stats", "/api/fn_stats?tl=0".into()),
            ("fn calls page", "/api/fn_calls?tl=0&form=7&limit=50".into()),
            ("exceptions", "/api/exceptions".into()),
            ("same coord next (power step)", format!("/api/find?tl=0&idx={expr}&how=coord&dir=next")),
            ("entries page of 1,000", format!("/api/entries?tl=0&offset={}&limit=1000", n / 2)),
        ] {
            let (d, _) = get(&app, &uri).await;
            println!("{what}: {d:.2?}");
        }
        // A value search to its end.
        let t = Instant::now();
        let req = Request::builder()
            .method("POST")
            .uri("/api/search")
            .header("x-squall-token", "bench")
            .body(Body::from(r#"{"tl":0,"kind":"value","text":"[0, 1, 2, 3, 4]","limit":100000}"#))
            .unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        let id: serde_json::Value =
            serde_json::from_slice(&res.into_body().collect().await.unwrap().to_bytes()).unwrap();
        loop {
            let (_, p) = get(&app, &format!("/api/search/{}", id["id"])).await;
            if p["done"] == true {
                println!(
                    "value search over all entries: {:.2?} ({} matches)",
                    t.elapsed(),
                    p["matches"].as_array().unwrap().len()
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let _ = std::fs::remove_file(path);
}
