//! Chrome trace and SQLite exports.

mod common;

use squall_store::export::{export_chrome, export_sqlite};

#[test]
fn chrome_trace_has_a_track_per_thread_and_nested_calls() {
    let rec = squall_store::read(&common::write(true)).unwrap();
    let mut out = Vec::new();
    let mut seen = 0;
    export_chrome(
        &rec,
        &mut out,
        Some(&mut |d, t| {
            assert!(d <= t);
            seen += 1;
        }),
    )
    .unwrap();
    assert!(seen > 0);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(v["otherData"]["time"].as_str().unwrap().starts_with("logical"));
    let evs = v["traceEvents"].as_array().unwrap();
    let names: Vec<_> = evs
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["pid"].clone(), e["tid"].clone(), e["args"]["name"].clone()))
        .collect();
    assert_eq!(names.len(), 3);
    assert!(
        names.contains(&(3.into(), 1001.into(), "worker-1".into()))
            || names.contains(&(3.into(), 1001.into(), "MainThread".into()))
    );
    let calls: usize =
        rec.timelines.iter().map(|t| t.timeline.entries().iter().filter(|e| e.kind().is_call()).count()).sum();
    let xs: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(xs.len(), calls);
    let add = xs.iter().find(|e| e["name"] == "demo.add").unwrap();
    assert_eq!(add["args"]["a"], "-1");
    // Quoted as Python's repr quotes it.
    assert_eq!(add["args"]["b"], "\"hello 'world'\\n\"");
    assert_eq!(add["args"]["return"], "Point(x=1, y=2)");
    assert_eq!(add["dur"], 2, "call, bind, return");
    let fib_raised = xs.iter().find(|e| e["name"] == "demo.fib" && e["args"].get("raised").is_some()).unwrap();
    assert_eq!(fib_raised["args"]["raised"], "<function f at 0x1>");
    // main never returned: it spans the whole timeline.
    let main = xs.iter().find(|e| e["name"] == "demo.main" && e["pid"] == 0 && e["tid"] == 1001).unwrap();
    assert_eq!(main["ts"], 0);
    assert_eq!(main["dur"], rec.timelines[0].timeline.len());
    // Children nest inside parents.
    for x in &xs {
        let (ts, dur) = (x["ts"].as_u64().unwrap(), x["dur"].as_u64().unwrap());
        assert!(ts + dur <= main["dur"].as_u64().unwrap() + 1000);
    }
}

#[test]
fn sqlite_tables_answer_queries() {
    let rec = squall_store::read(&common::write(true)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.sqlite");
    std::fs::write(&path, b"stale").unwrap();
    export_sqlite(&rec, &path, None).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    let one = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one("SELECT count(*) FROM forms"), 4);
    let calls: usize =
        rec.timelines.iter().map(|t| t.timeline.entries().iter().filter(|e| e.kind().is_call()).count()).sum();
    assert_eq!(one("SELECT count(*) FROM calls") as usize, calls);
    assert_eq!(one("SELECT count(*) FROM entries") as u64, rec.entry_count());
    // One row per value-store node (nested values are nodes too).
    let nodes: usize = rec.timelines.iter().map(|t| t.values.len()).sum();
    assert_eq!(one("SELECT count(*) FROM \"values\"") as usize, nodes);
    assert_eq!(one("SELECT count(*) FROM calls WHERE fn_name = 'fib' AND exit_type = 'fn-unwind' AND flow_id = 0 AND thread_id = 1001"), 1);
    let (args, result): (String, String) = db
        .query_row("SELECT args, result FROM calls WHERE fn_name = 'add' LIMIT 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(args, "a=-1, b=\"hello 'world'\\n\"");
    assert_eq!(result, "Point(x=1, y=2)");
    assert_eq!(one("SELECT count(*) FROM calls WHERE ret_idx IS NULL"), 3, "each main is still open");
    assert_eq!(one("SELECT count(*) FROM calls c JOIN calls p ON c.parent_idx = p.idx AND c.thread_id = p.thread_id AND c.flow_id = p.flow_id WHERE p.fn_name = 'main' AND p.flow_id = 3"), 15, "fib, gen and its resumption, 5 times");
    assert_eq!(one("SELECT count(*) FROM entries WHERE type = 'bind' AND value = '536870912'"), 3 + 4 + 5);
    assert_eq!(
        one(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('calls_fn_name', 'calls_parent_idx')"
        ),
        2
    );
    let plan: String =
        db.query_row("EXPLAIN QUERY PLAN SELECT * FROM calls WHERE fn_name = 'x'", [], |r| r.get(3)).unwrap();
    assert!(plan.contains("calls_fn_name"), "{plan}");
}
