//! Exports of a loaded recording: a Chrome trace (Perfetto, `chrome://tracing`) and an SQLite
//! database for ad hoc SQL.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};
use squall_trace::{display_name, Decoded, Entry, Kind, ValRef, NONE};

use crate::{LoadedTimeline, Progress, Recording, StoreError};
use squall_trace::printer::preview_ref;

/// Characters kept of each value preview in exports.
const PREVIEW: usize = 120;

fn report(progress: &mut Option<Progress>, done: u64, total: u64, last: &mut u64) {
    if let Some(p) = progress.as_mut() {
        if done == total || done - *last >= (total / 200).max(1) {
            p(done, total);
            *last = done;
        }
    }
}

/// The form of an entry: calls, resumes and unwinds name it; returns, expressions, bindings and writes
/// name a site of it.
fn form_of(rec: &Recording, e: &Entry) -> u32 {
    match e.kind() {
        Kind::Return | Kind::Expr | Kind::Bind | Kind::Write => rec.forms.site_owner(e.id()).map_or(NONE, |(f, _)| f),
        Kind::Call | Kind::Resume | Kind::Unwind => e.id(),
    }
}

fn nparams(rec: &Recording, form: u32) -> usize {
    rec.forms.form(form).map_or(0, |f| f.params.len())
}

/// Parameter name / value preview pairs of the call at `idx`.
fn call_args(rec: &Recording, t: &LoadedTimeline, idx: usize) -> Vec<(String, String)> {
    let e = t.timeline.entries()[idx];
    let form = rec.forms.form(e.id());
    if e.kind() == Kind::Resume {
        return vec![("sent".into(), preview_ref(ValRef(e.c), &t.values, PREVIEW))];
    }
    let vals = t.timeline.call_args(idx, nparams(rec, e.id()));
    vals.iter()
        .enumerate()
        .map(|(i, v)| {
            let name = form.and_then(|f| f.params.get(i)).map_or_else(|| format!("arg{i}"), |p| p.to_string());
            (name, preview_ref(*v, &t.values, PREVIEW))
        })
        .collect()
}

/// Writes a Chrome trace event JSON file: one track per (flow, thread) (`pid` = flow, `tid` =
/// thread id, named by `thread_name` metadata), every fn-call / fn-resume a complete (`"X"`)
/// event named `module.qualname`. Entries carry no timestamps, so time is logical: `ts` is the
/// call's entry idx and `dur` its ret idx minus its idx (open frames run to the timeline's end);
/// `otherData` says so. `args` holds argument and result previews. Progress counts entries.
pub fn export_chrome(rec: &Recording, out: impl Write, mut progress: Option<Progress>) -> Result<(), StoreError> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let other = json!({
        "generator": "squall",
        "time": "logical: ts is an entry's index in its thread's timeline and dur the number of entries until its return; squall records no wall-clock time per entry",
        "program": rec.header.program,
        "argv": rec.header.argv,
        "python": rec.header.python,
        "squall": rec.header.squall,
        "started_unix_ms": rec.header.started_unix_ms,
        "completed": rec.completed,
        "cut_short": rec.cut_short,
    });
    write!(w, "{{\"displayTimeUnit\":\"ns\",\"otherData\":{other},\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |w: &mut std::io::BufWriter<_>| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            w.write_all(b",\n")?;
        }
        Ok(())
    };
    let mut flows: Vec<u32> = rec.timelines.iter().map(|t| t.meta.flow).collect();
    flows.sort_unstable();
    flows.dedup();
    for f in flows {
        sep(&mut w)?;
        let ev = json!({"ph": "M", "name": "process_name", "pid": f, "tid": 0, "args": {"name": format!("flow {f}")}});
        write!(w, "{ev}")?;
    }
    let total = rec.entry_count();
    let (mut done, mut last) = (0u64, 0u64);
    for t in &rec.timelines {
        let (pid, tid) = (t.meta.flow, t.meta.thread_id);
        sep(&mut w)?;
        let ev = json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": t.meta.name}});
        write!(w, "{ev}")?;
        let entries = t.timeline.entries();
        let len = entries.len() as u64;
        for (i, e) in entries.iter().enumerate() {
            done += 1;
            if !e.kind().is_call() {
                continue;
            }
            let ret = e.ret_idx();
            let end = ret.map_or(len, u64::from);
            let mut args = Map::new();
            for (k, v) in call_args(rec, t, i) {
                args.insert(k, Value::String(v));
            }
            match ret.and_then(|r| entries.get(r as usize)) {
                Some(x) => {
                    let key = if x.kind() == Kind::Unwind { "raised" } else { "return" };
                    args.insert(key.into(), Value::String(preview_ref(x.value(), &t.values, PREVIEW)));
                }
                None => {
                    args.insert(
                        "open".into(),
                        Value::String("the frame had not exited when the recording ended".into()),
                    );
                }
            }
            args.insert("idx".into(), json!(i));
            sep(&mut w)?;
            let ev = json!({
                "ph": "X",
                "name": display_name(&rec.forms, e.id()),
                "cat": e.kind().type_name(),
                "pid": pid,
                "tid": tid,
                "ts": i,
                "dur": end.saturating_sub(i as u64).max(1),
                "args": args,
            });
            write!(w, "{ev}")?;
            report(&mut progress, done, total, &mut last);
        }
    }
    w.write_all(b"]}\n")?;
    w.flush()?;
    report(&mut progress, total, total, &mut last);
    Ok(())
}

/// Writes the recording into a new SQLite database at `path` (replacing a file there): tables
/// `forms`, `calls`, `entries`, `values`, `threads` and `header`, indexed on `calls(fn_name)` and
/// `calls(parent_idx)`. Value columns are short text previews. Progress counts entries.
pub fn export_sqlite(rec: &Recording, path: &Path, mut progress: Option<Progress>) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(StoreError::Io { action: "replace", path: path.display().to_string(), source }),
    }
    let mut db = rusqlite::Connection::open(path)?;
    db.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
         CREATE TABLE header(key TEXT PRIMARY KEY, value TEXT);
         CREATE TABLE threads(flow_id INTEGER, thread_id INTEGER, name TEXT, entries INTEGER);
         CREATE TABLE forms(form_id INTEGER PRIMARY KEY, fn_ns TEXT, fn_name TEXT, file TEXT, line INTEGER, kind TEXT);
         CREATE TABLE calls(flow_id INTEGER, thread_id INTEGER, idx INTEGER, form_id INTEGER, fn_ns TEXT, fn_name TEXT,
                            parent_idx INTEGER, ret_idx INTEGER, exit_type TEXT, args TEXT, result TEXT);
         CREATE TABLE entries(flow_id INTEGER, thread_id INTEGER, idx INTEGER, type TEXT, form_id INTEGER,
                              fn_call_idx INTEGER, value_slot INTEGER, value TEXT);
         CREATE TABLE \"values\"(flow_id INTEGER, thread_id INTEGER, slot INTEGER, type_name TEXT, preview TEXT);",
    )?;
    let tx = db.transaction()?;
    {
        let mut h = tx.prepare("INSERT INTO header VALUES (?1, ?2)")?;
        let hd = &rec.header;
        for (k, v) in [
            ("program", hd.program.clone()),
            ("argv", serde_json::to_string(&hd.argv).unwrap_or_default()),
            ("python", hd.python.clone()),
            ("squall", hd.squall.clone()),
            ("started_unix_ms", hd.started_unix_ms.to_string()),
            ("cwd", hd.cwd.clone()),
            ("completed", rec.completed.to_string()),
            ("cut_short", rec.cut_short.clone().unwrap_or_default()),
        ] {
            h.execute(rusqlite::params![k, v])?;
        }
        let mut f = tx.prepare("INSERT INTO forms VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        for (i, form) in rec.forms.forms().iter().enumerate() {
            f.execute(rusqlite::params![i as i64, &*form.ns, &*form.name, &*form.file, form.line, form.kind.name()])?;
        }
        let mut th = tx.prepare("INSERT INTO threads VALUES (?1, ?2, ?3, ?4)")?;
        let mut c = tx.prepare("INSERT INTO calls VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")?;
        let mut en = tx.prepare("INSERT INTO entries VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        let mut va = tx.prepare("INSERT INTO \"values\" VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let total = rec.entry_count();
        let (mut done, mut last) = (0u64, 0u64);
        for t in &rec.timelines {
            let (fl, tid) = (t.meta.flow, t.meta.thread_id as i64);
            th.execute(rusqlite::params![fl, tid, t.meta.name, t.timeline.len() as i64])?;
            let entries = t.timeline.entries();
            for (i, e) in entries.iter().enumerate() {
                done += 1;
                let form = form_of(rec, e);
                let form_col = (form != NONE).then_some(form);
                if e.kind().is_call() {
                    let fm = rec.forms.form(e.id());
                    let ret = e.ret_idx();
                    let exit = ret.and_then(|r| entries.get(r as usize));
                    let args: Vec<String> = call_args(rec, t, i).into_iter().map(|(k, v)| format!("{k}={v}")).collect();
                    c.execute(rusqlite::params![
                        fl,
                        tid,
                        i as i64,
                        e.id(),
                        fm.map(|f| f.ns.to_string()),
                        fm.map(|f| f.name.to_string()),
                        e.parent_idx(),
                        ret,
                        exit.map(|x| x.kind().type_name()),
                        args.join(", "),
                        exit.map(|x| preview_ref(x.value(), &t.values, PREVIEW)),
                    ])?;
                    en.execute(rusqlite::params![
                        fl,
                        tid,
                        i as i64,
                        e.kind().type_name(),
                        form_col,
                        None::<u32>,
                        None::<u32>,
                        None::<String>
                    ])?;
                } else {
                    let slot = match e.value().decode() {
                        Decoded::Slot(s) => Some(s),
                        _ => None,
                    };
                    en.execute(rusqlite::params![
                        fl,
                        tid,
                        i as i64,
                        e.kind().type_name(),
                        form_col,
                        e.fn_call_idx(),
                        slot,
                        preview_ref(e.value(), &t.values, PREVIEW),
                    ])?;
                }
                report(&mut progress, done, total, &mut last);
            }
            for slot in 0..t.values.len() as u32 {
                let v = t.values.node_to_snap(slot, squall_trace::ExpandBudget { max_depth: 6, max_nodes: 64 });
                va.execute(rusqlite::params![fl, tid, i64::from(slot), v.type_name(), crate::preview(&v, PREVIEW)])?;
            }
        }
        report(&mut progress, total, total, &mut last);
    }
    tx.execute_batch(
        "CREATE INDEX calls_fn_name ON calls(fn_name);
         CREATE INDEX calls_parent_idx ON calls(parent_idx);
         CREATE INDEX entries_idx ON entries(flow_id, thread_id, idx);",
    )?;
    tx.commit()?;
    Ok(())
}
