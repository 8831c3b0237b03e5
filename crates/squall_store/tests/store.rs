//! Round trips, crash truncation, corruption, foreign and newer files, writer misuse.

mod common;

use proptest::prelude::*;
use squall_store::{read, Header, Recording, StoreError, ThreadMeta, Writer, FORMAT_VERSION, MAGIC};
use squall_trace::{Kind, Limits, SeqKind, Snap, Timeline, ValRef};

fn check_same(rec: &Recording, complete: bool) {
    assert_eq!(rec.header, common::header());
    let forms = common::forms();
    assert_eq!(rec.forms.forms(), forms.forms());
    assert_eq!(rec.forms.sites(), forms.sites());
    assert_eq!(rec.timelines.len(), 3);
    for (i, (lt, m)) in rec.timelines.iter().zip(common::metas()).enumerate() {
        assert_eq!(lt.meta, m);
        let orig = common::timeline(i as u32);
        let expect = Timeline::from_parts(orig.entries().to_vec(), orig.args().to_vec());
        assert_eq!(lt.timeline.entries(), orig.entries(), "ret idxs recomputed equal the live ones");
        assert_eq!(lt.timeline.entries(), expect.entries());
        assert_eq!(lt.timeline.args(), orig.args());
        assert_eq!(lt.timeline.calls(), orig.calls());
        let vals = common::values();
        for (&r, b) in common::refs().iter().zip(&vals) {
            let a = lt.values.to_snap(r, squall_trace::ExpandBudget::FULL);
            // NaN != NaN: compare encodings through Debug.
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }
    assert_eq!(rec.completed, complete);
    if complete {
        assert_eq!(rec.cut_short, None);
        assert_eq!(rec.ended_unix_ms, Some(1_790_000_001_234));
        assert_eq!(rec.stats, vec![("entries".to_string(), 42), ("threads".to_string(), 3)]);
    }
}

#[test]
fn round_trip() {
    let bytes = common::write(true);
    let rec = read(&bytes).unwrap();
    check_same(&rec, true);
    assert_eq!(rec.file_bytes, bytes.len() as u64);
    assert!(rec.timeline(3, 1001).is_some());
}

#[test]
fn round_trip_through_a_file_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sqrec");
    std::fs::write(&path, common::write(true)).unwrap();
    let mut calls = Vec::new();
    let rec = squall_store::open_with_progress(&path, Some(&mut |d, t| calls.push((d, t)))).unwrap();
    check_same(&rec, true);
    let total = std::fs::metadata(&path).unwrap().len();
    assert_eq!(calls.last(), Some(&(total, total)));
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn writer_create_streams_to_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.sqrec");
    let mut w = Writer::create(&path, &common::header()).unwrap();
    w.forms(&common::forms()).unwrap();
    let meta = &common::metas()[0];
    w.thread(meta).unwrap();
    let t = common::timeline(0);
    w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
    w.flush().unwrap();
    // The recorder is still running (or gets SIGKILLed now): what was flushed is on disk.
    let rec = squall_store::open(&path).unwrap();
    assert_eq!(rec.timelines[0].timeline.entries(), t.entries());
    assert!(!rec.completed);
    assert_eq!(rec.cut_short.as_deref(), Some("no end marker: the program was killed or crashed after the last flush"));
    w.finish(5, &[]).unwrap();
    let rec = squall_store::open(&path).unwrap();
    assert!(rec.completed && rec.cut_short.is_none());
}

#[test]
fn a_writer_in_the_background_writes_the_same_file() {
    let write = |background: bool| {
        let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
        if background {
            w = w.in_background().unwrap();
        }
        w.forms(&common::forms()).unwrap();
        for (i, meta) in common::metas().iter().enumerate() {
            w.thread(meta).unwrap();
            // The first spans several ENTRIES chunks (and splits its args across them).
            let t = common::timeline(if i == 0 { 60_000 } else { i as u32 });
            w.entries(meta.timeline, 0, t.entries(), 0, t.args()).unwrap();
            let ticket = w.flush().unwrap();
            if let Some(written) = w.written() {
                written.wait(ticket); // returns: the thread got there
            }
            if background && i == 0 {
                // As for a fork: the thread stops after what it was handed, then starts again.
                w.pause().unwrap();
                assert!(w.written().is_none());
                w.resume().unwrap();
            }
        }
        w.finish(7, &[("entries".into(), 3)]).unwrap()
    };
    let (here, there) = (write(false), write(true));
    assert_eq!(here, there);
    assert!(read(&there).unwrap().completed);
}

#[test]
fn a_caller_helping_the_background_writer_writes_the_same_file() {
    let write = |help: bool| {
        let mut w = Writer::new(Vec::new(), &common::header()).unwrap().in_background().unwrap();
        w.set_helping(help);
        w.forms(&common::forms()).unwrap();
        for (i, meta) in common::metas().iter().enumerate() {
            w.thread(meta).unwrap();
            // The first spans several ENTRIES chunks: the helper frames every other one.
            let t = common::timeline(if i == 0 { 60_000 } else { i as u32 });
            let half = t.entries().len() / 2;
            let half_args = t.args().len() / 2;
            w.entries(meta.timeline, 0, &t.entries()[..half], 0, &t.args()[..half_args]).unwrap();
            w.entries(meta.timeline, half as u64, &t.entries()[half..], half_args as u64, &t.args()[half_args..])
                .unwrap();
            w.flush().unwrap();
        }
        w.finish(7, &[("entries".into(), 3)]).unwrap()
    };
    let (alone, helped) = (write(false), write(true));
    assert_eq!(alone, helped);
    let rec = read(&helped).unwrap();
    assert!(rec.completed);
    assert_eq!(rec.timelines[0].timeline.entries(), common::timeline(60_000).entries());
}

#[test]
fn a_background_writers_error_comes_back_to_the_caller() {
    /// Takes the header, then fails every write.
    struct Full(usize);
    impl std::io::Write for Full {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("no space left on device"));
            }
            self.0 -= 1;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Writer::new(Full(1), &common::header()).unwrap().in_background().unwrap();
    let meta = &common::metas()[0];
    let t = common::timeline(0);
    // The thread fails on the first write after the header; any call after that may be the one
    // that reports it (the forms are handed over before it writes them, so even the first flush
    // can), and the rest must not hang.
    let mut steps = || {
        w.forms(&common::forms())?;
        let ticket = w.flush()?;
        w.written().expect("a background writer").wait(ticket); // the thread stopped at the error: no hang
        w.thread(meta)?;
        w.entries(0, 0, t.entries(), 0, t.args())?;
        w.flush()
    };
    let e = match steps() {
        Err(e) => e,
        Ok(_) => w.finish(0, &[]).err().expect("the failed write is reported"),
    };
    assert!(e.to_string().contains("no space left on device"), "{e}");
}

#[test]
fn a_background_writer_that_panics_lets_its_waiters_go() {
    /// Takes the header, then panics (a bug in the writer's thread, not an I/O error).
    struct Panics(usize);
    impl std::io::Write for Panics {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            assert!(self.0 > 0, "a bug in the writer's thread");
            self.0 -= 1;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Writer::new(Panics(1), &common::header()).unwrap().in_background().unwrap();
    let written = w.written().expect("a background writer");
    // The flusher waits for a ticket with the GIL held while it catches up with a program that
    // records faster than the file is written: a thread that died without saying so hung it.
    let ticket = w.forms(&common::forms()).and_then(|()| w.flush());
    if let Ok(ticket) = ticket {
        written.wait(ticket);
    }
    assert!(written.failed().is_some_and(|e| e.contains("internal error")), "{:?}", written.failed());
}

#[test]
fn missing_end_marker_is_cut_short() {
    let rec = read(&common::write(false)).unwrap();
    check_same(&rec, false);
    assert_eq!(rec.cut_short.as_deref(), Some("no end marker: the program was killed or crashed after the last flush"));
}

#[test]
fn forms_written_incrementally() {
    let all = common::forms();
    let mut part = squall_trace::Forms::new();
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    for f in &all.forms()[..2] {
        part.add_form(f.clone()).unwrap();
    }
    part.add_site(all.site(0).unwrap().clone()).unwrap();
    w.forms(&part).unwrap();
    w.forms(&part).unwrap(); // nothing new: no chunk
    for f in &all.forms()[2..] {
        part.add_form(f.clone()).unwrap();
    }
    for s in &all.sites()[1..] {
        part.add_site(s.clone()).unwrap();
    }
    w.forms(&part).unwrap();
    let rec = read(&w.finish(0, &[]).unwrap()).unwrap();
    assert_eq!(rec.forms.forms(), all.forms());
    assert_eq!(rec.forms.sites(), all.sites());
}

#[test]
fn cut_at_every_byte_loads_a_prefix() {
    let bytes = common::write(true);
    let full = read(&bytes).unwrap();
    let header_end = {
        let len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
        12 + 12 + len
    };
    let mut last_loaded = 0;
    for cut in 0..bytes.len() {
        match read(&bytes[..cut]) {
            Err(e) => {
                assert!(cut < header_end, "cut at {cut}: {e}");
                assert!(
                    matches!(e, StoreError::Empty { .. } | StoreError::TruncatedHeader { .. }),
                    "cut at {cut}: {e}"
                );
            }
            Ok(rec) => {
                assert!(cut >= header_end);
                assert!(!rec.completed);
                let why = rec.cut_short.as_deref().unwrap();
                assert!(why.starts_with("truncated chunk at byte ") || why.starts_with("no end marker"), "{why}");
                let loaded: usize = rec.timelines.iter().map(|t| t.timeline.len() + t.values.len()).sum();
                assert!(loaded >= last_loaded, "more bytes never load less");
                last_loaded = loaded;
                for (lt, ft) in rec.timelines.iter().zip(&full.timelines) {
                    assert_eq!(lt.meta, ft.meta);
                    let n = lt.timeline.len();
                    let orig = &ft.timeline.entries()[..n];
                    // Exits past the cut are gone: compare without the recomputed ret idxs.
                    let strip = |e: &squall_trace::Entry| {
                        if e.kind().is_call() {
                            (e.raw()[0], e.a, e.c)
                        } else {
                            (e.raw()[0], e.a, e.b)
                        }
                    };
                    assert!(lt.timeline.entries().iter().map(strip).eq(orig.iter().map(strip)));
                    let n = lt.values.len();
                    assert_eq!(format!("{:?}", lt.values.nodes()), format!("{:?}", &ft.values.nodes()[..n]));
                }
            }
        }
    }
}

#[test]
fn truncation_message_names_the_byte() {
    let bytes = common::write(true);
    let rec = read(&bytes[..bytes.len() - 3]).unwrap();
    let why = rec.cut_short.unwrap();
    assert!(why.starts_with("truncated chunk at byte "), "{why}");
    assert!(why.contains("the file ends inside it"), "{why}");
}

#[test]
fn every_flipped_byte_is_survived() {
    let bytes = common::write(true);
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            if let Ok(rec) = read(&b) {
                // A flip after the header is caught by the chunk checksum.
                if i >= 12 {
                    assert!(rec.cut_short.is_some() || rec.completed, "flip at {i}");
                }
                for t in &rec.timelines {
                    let _ = t.timeline.fn_call_stats();
                }
            }
        }
    }
}

fn err(bytes: &[u8]) -> String {
    read(bytes).unwrap_err().to_string()
}

#[test]
fn foreign_files_say_what_they_are() {
    insta::assert_snapshot!("empty", err(b""));
    insta::assert_snapshot!("text", err(b"hello, this is a text file\n"));
    insta::assert_snapshot!("sqlite", err(b"SQLite format 3\0rest of the db"));
    insta::assert_snapshot!("json", err(b"  {\"traceEvents\": []}"));
    insta::assert_snapshot!("gzip", err(&[0x1f, 0x8b, 8, 0, 0, 0]));
    let mut crlf = common::write(true);
    crlf.remove(6); // "\r\n" became "\n"
    insta::assert_snapshot!("line_endings", err(&crlf));
}

#[test]
fn newer_version_says_upgrade() {
    let mut b = common::write(true);
    b[8..12].copy_from_slice(&(FORMAT_VERSION + 2).to_le_bytes());
    let e = read(&b).unwrap_err();
    assert!(
        matches!(e, StoreError::NewerVersion { found, supported, .. } if found == FORMAT_VERSION + 2 && supported == FORMAT_VERSION)
    );
    insta::assert_snapshot!("newer", e.to_string());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sqrec");
    std::fs::write(&path, &b).unwrap();
    let msg = squall_store::open(&path).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("`{}` was written by format version {}", path.display(), FORMAT_VERSION + 2)),
        "{msg}"
    );
}

#[test]
fn corrupt_and_truncated_headers() {
    let b = common::write(true);
    let mut bad = b.clone();
    bad[30] ^= 0x40; // inside the header chunk's payload
    insta::assert_snapshot!("corrupt_header", err(&bad));
    let mut v0 = b.clone();
    v0[8..12].copy_from_slice(&0u32.to_le_bytes());
    insta::assert_snapshot!("version_zero", err(&v0));
    insta::assert_snapshot!("truncated_header", err(&b[..20]));
    insta::assert_snapshot!("truncated_magic", err(&MAGIC[..5]));
    let missing = squall_store::open(std::path::Path::new("/nonexistent/x.sqrec")).unwrap_err().to_string();
    assert!(missing.starts_with("no recording at `/nonexistent/x.sqrec`: check the path"), "{missing}");
}

/// Appends a raw chunk (type, flags, payload) to a file's bytes.
fn push_chunk(b: &mut Vec<u8>, ty: u8, flags: u8, payload: &[u8]) {
    let mut f = [0u8; 8];
    f[0] = ty;
    f[1] = flags;
    f[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&f), payload);
    b.extend_from_slice(&f);
    b.extend_from_slice(&crc.to_le_bytes());
    b.extend_from_slice(payload);
}

#[test]
fn unknown_chunks_optional_skipped_required_stop() {
    let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
    w.forms(&common::forms()).unwrap();
    let mut b = w.into_inner().unwrap();
    push_chunk(&mut b, 200, 1, b"future optional data");
    let mut w2 = Writer::new(Vec::new(), &common::header()).unwrap();
    w2.thread(&common::metas()[0]).unwrap();
    let t2 = w2.finish(9, &[]).unwrap();
    let header_len = 12 + 12 + u32::from_le_bytes(t2[16..20].try_into().unwrap()) as usize;
    b.extend_from_slice(&t2[header_len..]);
    let rec = read(&b).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    assert_eq!(rec.timelines.len(), 1);

    let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
    w.forms(&common::forms()).unwrap();
    let mut b = w.into_inner().unwrap();
    let at = b.len();
    push_chunk(&mut b, 200, 0, b"future required data");
    let rec = read(&b).unwrap();
    assert_eq!(rec.forms.forms().len(), 4);
    assert_eq!(
        rec.cut_short,
        Some(format!("corrupt chunk at byte {at} (type 200: unknown required chunk type); the rest was not read"))
    );
}

#[test]
fn writer_misuse_is_an_error() {
    let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
    let t = common::timeline(0);
    let e = w.entries(0, 0, t.entries(), 0, t.args()).unwrap_err();
    assert_eq!(e.to_string(), "recording writer misuse: timeline 0 was not declared with `thread` first");
    w.thread(&common::metas()[0]).unwrap();
    assert!(w.thread(&common::metas()[0]).is_err());
    w.entries(0, 0, &t.entries()[..3], 0, &[]).unwrap();
    let e = w.entries(0, 5, &t.entries()[5..], 0, t.args()).unwrap_err();
    assert!(e.to_string().contains("contiguously: expected entry 3 and arg 0, got 5 and 0"), "{e}");
    let (big, _) = common::store_of(&common::values());
    let (small, _) = common::store_of(&common::values()[..2]);
    w.values(0, &big).unwrap();
    let e = w.values(0, &small).unwrap_err();
    assert!(e.to_string().contains("value nodes were written, but the store has"), "{e}");
}

/// A version 1 file (recorded by squall before the value store: values as trees, one per entry
/// slot) still opens, with each value where its entries point.
#[test]
fn version_1_files_open() {
    let bytes = include_bytes!("fixtures/v1_tally.sqrec");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1);
    let rec = read(bytes).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    let t = &rec.timelines[0];
    let call = t.timeline.get(0).unwrap();
    assert!(call.kind().is_call());
    let arg = squall_store::preview_ref(ValRef(call.c), &t.values, 80);
    assert_eq!(arg, "['a', 'b', 'a']");
    let ret = t.timeline.entries().iter().rev().find(|e| e.kind() == Kind::Return).unwrap();
    assert_eq!(squall_store::preview_ref(ret.value(), &t.values, 80), "{'a': 2, 'b': 1}");
}

/// A version 4 file (floats as value nodes, before entries held them) still opens, each float
/// where its entry points: recorded by the version 4 squall from this program:
///
/// ```python
/// def scale(x):
///     y = x * 2.0
///     z = -y * 0.0
///     n = y * math.nan
///     i = y * math.inf
///     return y + 0.5
/// scale(1.25)
/// ```
#[test]
fn version_4_files_open_with_their_floats() {
    let bytes = include_bytes!("fixtures/v4_floats.sqrec");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 4);
    let rec = read(bytes).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    let t = &rec.timelines[0];
    let shown = |kind: Kind| -> Vec<String> {
        t.timeline
            .entries()
            .iter()
            .filter(|e| e.kind() == kind)
            .map(|e| {
                assert!(!e.holds_float(), "a version 4 entry holds a value code");
                squall_store::preview_ref(e.value(), &t.values, 80)
            })
            .collect()
    };
    assert_eq!(shown(Kind::Bind), ["2.5", "-0.0", "nan", "inf"]);
    assert_eq!(shown(Kind::Return).first().map(String::as_str), Some("3.0"));
}

/// A version 5 file (written by 547149f from `tests/reference_programs/recorded_again.py`):
/// its writer made a new node where a value recorded again refers to a newer state, so it has
/// no `Node::Same` and reads as it was written.
#[test]
fn version_5_files_open_with_their_values_recorded_again() {
    let bytes = include_bytes!("fixtures/v5_recorded_again.sqrec");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 5);
    let rec = read(bytes).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    let t = &rec.timelines[0];
    assert!(!t.values.nodes().iter().any(|n| matches!(n, squall_trace::Node::Same(_))));
    let binds: Vec<String> = t
        .timeline
        .entries()
        .iter()
        .filter(|e| e.kind() == Kind::Bind)
        .map(|e| squall_store::preview_ref(e.value(), &t.values, 80))
        .collect();
    // `again = box`, after the leaf was renamed and the box passed to `show` again.
    assert!(binds.iter().any(|b| b == "Box#2(leaf=(earlier) Leaf#1(n=2), size=1)"), "{binds:?}");
}

/// A version 6 file (written by dc8c311 from `tests/reference_programs/frames.py`: a loop
/// calling out, nested calls, a generator, an exception unwinding, a recursion), whose `A`
/// stream holds every idx as a distance: each entry keeps its parent or frame, and written again
/// in version 7 (recent idxs named by place) it reads back the same.
#[test]
fn version_6_files_open_with_their_frames() {
    let bytes = include_bytes!("fixtures/v6_frames.sqrec");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 6);
    let rec = read(bytes).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    let t = &rec.timelines[0].timeline;
    let e = t.entries();
    let name = |idx: u32| -> String {
        let call = &e[idx as usize];
        assert!(call.kind().is_call(), "entry {idx} is not a call");
        rec.forms.form(call.id()).map_or(String::new(), |f| f.name.to_string())
    };
    let calls_of = |callee: &str| -> Vec<String> {
        e.iter()
            .filter(|x| x.kind() == Kind::Call && rec.forms.form(x.id()).is_some_and(|f| &*f.name == callee))
            .map(|x| x.parent_idx().map_or(String::from("root"), name))
            .collect()
    };
    assert_eq!(calls_of("leaf"), vec!["middle"; 80]);
    assert_eq!(calls_of("middle"), vec!["main"; 40]);
    assert_eq!(calls_of("fails"), ["main", "fails", "fails"]);
    assert_eq!(calls_of("fact").len(), 12);
    // Every event names the call of its own frame: `main`'s 40 `total` bindings.
    let total = e.iter().filter(|x| x.kind() == Kind::Bind && name(x.fn_call_idx()) == "main").count();
    assert!(total >= 41, "{total}");

    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&rec.forms).unwrap();
    w.thread(&ThreadMeta::default()).unwrap();
    w.entries(0, 0, e, 0, t.args()).unwrap();
    let again = read(&w.finish(0, &[]).unwrap()).unwrap();
    assert_eq!(again.timelines[0].timeline.entries(), e);
    assert_eq!(again.timelines[0].timeline.args(), t.args());
}

/// In version 7 an entry in the frame of the entry before costs one byte of `A` whatever the
/// frame's length: a loop of a million bindings in one frame writes an ENTRIES body of about
/// four bytes an entry (head, `A`, value, `C`), not six or seven.
#[test]
fn a_long_frame_costs_a_byte_of_a_per_entry() {
    let l = Limits::default();
    let mut t = Timeline::new();
    t.call(0, &[], &l);
    let n = 1_000_000;
    for i in 0..n {
        t.event(Kind::Bind, 6, 0, false, ValRef::small_int(i % 16).unwrap(), &l);
    }
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.set_codec(squall_store::Codec::None);
    w.forms(&common::forms()).unwrap();
    w.thread(&ThreadMeta::default()).unwrap();
    w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
    let bytes = w.finish(0, &[]).unwrap();
    let body: usize = chunks(&bytes).iter().filter(|c| c.1 == 4).map(|c| c.3.len()).sum();
    assert!(body < 4 * n as usize + 4096, "{body} bytes of ENTRIES for {n} entries");
    let rec = read(&bytes).unwrap();
    assert_eq!(rec.timelines[0].timeline.entries(), t.entries());
}

/// Returns, expressions and bindings holding floats (version 5) read back bit for bit: NaN
/// payloads, -0.0, the infinities, next to value codes in the same streams.
#[test]
fn floats_held_in_entries_round_trip() {
    let l = Limits::default();
    let floats = [2.5, -0.0, f64::NAN, f64::from_bits(0x7FF8_0000_DEAD_BEEF), f64::INFINITY, f64::NEG_INFINITY, 1e-310];
    let mut t = Timeline::new();
    t.call(0, &[], &l);
    for (i, &f) in floats.iter().enumerate() {
        t.event(Kind::Expr, 5, 0, false, squall_trace::Value::Float(f), &l);
        t.event(Kind::Bind, 6, 0, false, ValRef::small_int(i as i64).unwrap(), &l);
        t.event(Kind::Bind, 6, 0, false, squall_trace::Value::Float(-f), &l);
    }
    t.exit(Kind::Return, 0, 0, false, squall_trace::Value::Float(0.1), &l);
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&common::forms()).unwrap();
    w.thread(&ThreadMeta::default()).unwrap();
    w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
    let rec = read(&w.finish(0, &[]).unwrap()).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    let back = rec.timelines[0].timeline.entries();
    assert_eq!(back, t.entries());
    let held: Vec<u64> = back
        .iter()
        .filter(|e| e.kind() == Kind::Expr)
        .filter_map(|e| match e.value() {
            squall_trace::Value::Float(f) => Some(f.to_bits()),
            squall_trace::Value::Ref(_) => None,
        })
        .collect();
    assert_eq!(held, floats.map(f64::to_bits));
    let last = back.last().unwrap();
    assert_eq!((last.kind(), last.value()), (Kind::Return, squall_trace::Value::Float(0.1)));
    assert_eq!(squall_store::preview_ref(back[3].value(), &rec.timelines[0].values, 80), "-2.5");
}

#[test]
fn every_codec_reads_back() {
    for codec in [squall_store::Codec::None, squall_store::Codec::Lz4, squall_store::Codec::Zstd(3)] {
        let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
        w.set_codec(codec);
        w.forms(&common::forms()).unwrap();
        w.thread(&common::metas()[0]).unwrap();
        let t = common::timeline(5);
        w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
        w.values(0, &common::store_of(&common::values()[..5]).0).unwrap();
        let rec = read(&w.finish(0, &[]).unwrap()).unwrap();
        assert!(rec.completed);
        assert_eq!(rec.timelines[0].timeline.entries(), t.entries());
    }
}

// ---- properties ----

fn arb_snap() -> impl Strategy<Value = Snap> {
    let leaf = prop_oneof![
        Just(Snap::None),
        any::<bool>().prop_map(Snap::Bool),
        any::<i64>().prop_map(Snap::Int),
        "[0-9]{20,30}".prop_map(Snap::BigInt),
        any::<f64>().prop_filter("NaN != NaN", |f| !f.is_nan()).prop_map(Snap::Float),
        (-1e9f64..1e9, -1e9f64..1e9).prop_map(|(re, im)| Snap::Complex { re, im }),
        ".{0,12}".prop_map(Snap::Str),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(Snap::Bytes),
        (".{0,6}", ".{0,10}", any::<u64>()).prop_map(|(type_name, repr, id)| Snap::Opaque { type_name, id, repr }),
        (".{0,6}", any::<u64>(), any::<u64>()).prop_map(|(type_name, id, len)| Snap::Cut { type_name, id, len }),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            (0u8..5, "[a-z]{1,6}", prop::collection::vec(inner.clone(), 0..5), 0u64..8).prop_map(
                |(k, type_name, items, extra)| {
                    let len = items.len() as u64 + extra;
                    Snap::Seq { kind: SeqKind::from_code(k).unwrap(), type_name, id: extra, items, len }
                }
            ),
            ("[a-z]{1,6}", prop::collection::vec((inner.clone(), inner.clone()), 0..4), 0u64..3).prop_map(
                |(type_name, entries, extra)| {
                    let len = entries.len() as u64 + extra;
                    Snap::Map { type_name, id: extra + 7, entries, len }
                }
            ),
            ("[A-Z][a-z]{0,5}", ".{0,10}", prop::collection::vec(("[a-z_]{1,5}", inner), 1..4), any::<u64>())
                .prop_map(|(type_name, repr, attrs, id)| Snap::Object { type_name, id, repr, attrs }),
        ]
    })
}

/// The codecs a writer can be set to.
const CODECS: [squall_store::Codec; 3] =
    [squall_store::Codec::None, squall_store::Codec::Lz4, squall_store::Codec::Zstd(1)];

/// `t`'s entries and args written with `codec` in two chunks (split at entry `s` and arg `sa`),
/// and read back.
fn written_in_two(codec: squall_store::Codec, t: &Timeline, s: usize, sa: usize) -> Recording {
    let (e, a) = (t.entries(), t.args());
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.set_codec(codec);
    w.forms(&common::forms()).unwrap();
    w.thread(&ThreadMeta::default()).unwrap();
    w.entries(0, 0, &e[..s], 0, &a[..sa]).unwrap();
    w.entries(0, s as u64, &e[s..], sa as u64, &a[sa..]).unwrap();
    read(&w.finish(0, &[]).unwrap()).unwrap()
}

/// Chunks of many thousand entries and args round-trip: the writer makes room for its streams a
/// block of entries at a time (`codec::BLOCK`), so a body spans several blocks.
#[test]
fn entries_of_many_blocks_round_trip() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let ops: Vec<(u8, u8, u32)> = (0..40_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x % 8) as u8, ((x >> 8) % 4) as u8, (x >> 32) as u32)
        })
        .collect();
    let t = run_ops(&ops);
    let (e, a) = (t.entries(), t.args());
    assert!(e.len() > 3 * 4096 && a.len() > 4096, "{} entries, {} args", e.len(), a.len());
    for codec in CODECS {
        let rec = written_in_two(codec, &t, e.len() / 3, a.len() / 3);
        assert!(rec.completed, "{:?}", rec.cut_short);
        assert_eq!(rec.timelines[0].timeline.entries(), e);
        assert_eq!(rec.timelines[0].timeline.args(), a);
    }
}

/// One recorder event: (op, form, value word).
fn arb_ops() -> impl Strategy<Value = Vec<(u8, u8, u32)>> {
    prop::collection::vec((0u8..8, 0u8..4, any::<u32>()), 0..200)
}

fn run_ops(ops: &[(u8, u8, u32)]) -> Timeline {
    let l = Limits::default();
    let mut t = Timeline::new();
    for &(op, form, w) in ops {
        let (form, v) = (u32::from(form), ValRef(w));
        match op {
            0 | 1 => {
                let n = [0, 1, 2, 1][form as usize];
                let args: Vec<ValRef> = (0..n).map(|i| ValRef(w.wrapping_add(i))).collect();
                t.call(form, &args, &l);
            }
            2 => {
                t.exit(Kind::Return, form, form, form == 3, v, &l);
            }
            3 => {
                t.exit(Kind::Unwind, form, form, form == 3, v, &l);
            }
            4 => {
                t.resume(3, v, &l);
            }
            // A float held in the entry (both words from `w`: NaN payloads included).
            6 => {
                let f = squall_trace::Value::Float(f64::from_bits(u64::from(w) << 32 | u64::from(w.rotate_left(7))));
                t.exit(Kind::Return, form, form, form == 3, f, &l);
            }
            7 => {
                let f = squall_trace::Value::Float(f64::from_bits(u64::from(w) << 32 | u64::from(!w)));
                let site = [5, 5, 6, 4][form as usize];
                let kind = if site == 6 { Kind::Bind } else { Kind::Expr };
                t.event(kind, site, [1, 1, 2, 3][form as usize], form == 3, f, &l);
            }
            _ => {
                let site = [5, 5, 6, 4][form as usize];
                let kind = if site == 6 { Kind::Bind } else { Kind::Expr };
                t.event(kind, site, [1, 1, 2, 3][form as usize], form == 3, v, &l);
            }
        }
    }
    t
}

/// `s` as an expansion shows it: an object nested in itself (the same identity as an enclosing
/// one: a cycle) is a `Cut`.
fn cycles_cut(s: &Snap, path: &mut Vec<u64>) -> Snap {
    let id = s.id();
    if id != 0 && path.contains(&id) && matches!(s, Snap::Seq { .. } | Snap::Map { .. } | Snap::Object { .. }) {
        let len = match s {
            Snap::Seq { len, .. } | Snap::Map { len, .. } => *len,
            _ => 0,
        };
        return Snap::Cut { type_name: s.type_name().into(), id, len };
    }
    if id != 0 {
        path.push(id);
    }
    let out = match s {
        Snap::Seq { kind, type_name, id, items, len } => Snap::Seq {
            kind: *kind,
            type_name: type_name.clone(),
            id: *id,
            items: items.iter().map(|i| cycles_cut(i, path)).collect(),
            len: *len,
        },
        Snap::Map { type_name, id, entries, len } => Snap::Map {
            type_name: type_name.clone(),
            id: *id,
            entries: entries.iter().map(|(k, v)| (cycles_cut(k, path), cycles_cut(v, path))).collect(),
            len: *len,
        },
        Snap::Object { type_name, id, repr, attrs } => Snap::Object {
            type_name: type_name.clone(),
            id: *id,
            repr: repr.clone(),
            attrs: attrs.iter().map(|(k, v)| (k.clone(), cycles_cut(v, path))).collect(),
        },
        other => other.clone(),
    };
    if id != 0 {
        path.pop();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn entries_round_trip(ops in arb_ops(), split in 0usize..200, codec in 0u8..3) {
        let t = run_ops(&ops);
        let (e, a) = (t.entries(), t.args());
        let rec = written_in_two(CODECS[codec as usize], &t, split.min(e.len()), a.len() / 2);
        prop_assert!(rec.completed, "{:?}", rec.cut_short);
        prop_assert_eq!(rec.timelines[0].timeline.entries(), e);
        prop_assert_eq!(rec.timelines[0].timeline.args(), a);
    }

    #[test]
    fn values_round_trip(vals in prop::collection::vec(arb_snap(), 0..20)) {
        let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
        w.thread(&ThreadMeta::default()).unwrap();
        let (store, refs) = common::store_of(&vals);
        w.values(0, &store).unwrap();
        let rec = read(&w.finish(0, &[]).unwrap()).unwrap();
        let back: Vec<Snap> =
            refs.iter().map(|&r| rec.timelines[0].values.to_snap(r, squall_trace::ExpandBudget::FULL)).collect();
        let expected: Vec<Snap> = vals.iter().map(|v| cycles_cut(v, &mut Vec::new())).collect();
        prop_assert_eq!(&back, &expected);
    }

    #[test]
    fn header_round_trip(program in ".{0,20}", argv in prop::collection::vec(".{0,8}", 0..4), ms in any::<u64>()) {
        let h = Header { program, argv, python: "3.12".into(), squall: "x".into(), started_unix_ms: ms, cwd: "/".into() };
        let rec = read(&Writer::new(Vec::new(), &h).unwrap().finish(0, &[]).unwrap()).unwrap();
        prop_assert_eq!(rec.header, h);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = read(&b);
        let mut with_magic = MAGIC.to_vec();
        with_magic.extend_from_slice(&1u32.to_le_bytes());
        with_magic.extend_from_slice(&b);
        let _ = read(&with_magic);
    }
}

/// The chunks of a file: (offset, type, flags, payload).
fn chunks(b: &[u8]) -> Vec<(usize, u8, u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 12;
    while pos + 12 <= b.len() {
        let len = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().unwrap()) as usize;
        out.push((pos, b[pos], b[pos + 1], b[pos + 12..pos + 12 + len].to_vec()));
        pos += 12 + len;
    }
    out
}

#[test]
fn switch_marks_round_trip_in_an_optional_chunk() {
    let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
    w.forms(&common::forms()).unwrap();
    let metas = common::metas();
    let t = common::timeline(0);
    w.thread(&metas[0]).unwrap();
    w.thread(&metas[1]).unwrap();
    w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
    // Written over two flushes (each chunk decodes alone), and none for timeline 1.
    w.switches(0, &[(0, 0), (3, 5)]).unwrap();
    w.switches(0, &[]).unwrap();
    w.switches(0, &[(4, 9)]).unwrap();
    let e = w.switches(0, &[(4, 10)]).unwrap_err();
    assert!(e.to_string().contains("must increase"), "{e}");
    assert!(w.switches(7, &[(1, 1)]).is_err());
    let b = w.finish(1, &[]).unwrap();
    let rec = read(&b).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    assert_eq!(rec.timelines[0].timeline.switches(), &[(0, 0), (3, 5), (4, 9)]);
    assert!(rec.timelines[1].timeline.switches().is_empty());

    // The chunk is optional: a reader that does not know its type (played here by renumbering it
    // to an unknown type) skips it and loads the rest.
    let all = chunks(&b);
    let sw: Vec<_> = all.iter().filter(|c| c.1 == 7).collect();
    assert_eq!(sw.len(), 2);
    assert!(sw.iter().all(|c| c.2 == 1), "SWITCHES chunks carry the OPTIONAL flag");
    let mut old = b[..12].to_vec();
    for (_, ty, flags, payload) in &all {
        push_chunk(&mut old, if *ty == 7 { 201 } else { *ty }, *flags, payload);
    }
    let rec = read(&old).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    assert!(rec.timelines[0].timeline.switches().is_empty());
    assert_eq!(rec.timelines[0].timeline.len(), t.len());

    // Marks that go backwards across chunks make the chunk corrupt.
    let mut bad = b[..12].to_vec();
    let mut seen = 0;
    for (_, ty, flags, payload) in &all {
        push_chunk(&mut bad, *ty, *flags, payload);
        if *ty == 7 {
            seen += 1;
            if seen == 2 {
                push_chunk(&mut bad, *ty, *flags, payload);
            }
        }
    }
    let rec = read(&bad).unwrap();
    assert!(rec.cut_short.unwrap().contains("switch marks not increasing"));
}

fn seq(store: &mut squall_trace::ValueStore, items: &[i64]) -> ValRef {
    let ty = store.intern("list");
    let items: Vec<ValRef> = items.iter().map(|&i| ValRef::small_int(i).unwrap()).collect();
    let len = items.len() as u64;
    store
        .push(squall_trace::Node::Seq(Box::new(squall_trace::SeqNode {
            kind: SeqKind::List,
            ty,
            obj: 5,
            len,
            items: items.into(),
        })))
        .unwrap()
}

fn delta(store: &mut squall_trace::ValueStore, base: ValRef, n_items: u32, changes: &[(u32, i64)]) -> ValRef {
    let ty = store.intern("list");
    let changes: Vec<(u32, ValRef)> = changes.iter().map(|&(i, v)| (i, ValRef::small_int(v).unwrap())).collect();
    store
        .push(squall_trace::Node::SeqDelta(Box::new(squall_trace::SeqDeltaNode {
            kind: SeqKind::List,
            ty,
            obj: 5,
            len: u64::from(n_items),
            base: base.0,
            n_items,
            changes: changes.into(),
        })))
        .unwrap()
}

fn through_a_file(store: &squall_trace::ValueStore) -> Recording {
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.thread(&ThreadMeta::default()).unwrap();
    w.values(0, store).unwrap();
    read(&w.finish(0, &[]).unwrap()).unwrap()
}

/// Every kind of node reads back as written, through the encoding of each (a string and bytes
/// past 127 bytes: a two-byte length; varints of every width; a child slot far back).
#[test]
fn every_kind_of_node_round_trips() {
    use squall_trace::{CutNode, MapNode, Node, ObjectNode, OpaqueNode, ThinBytes, ThinStr};
    let mut s = squall_trace::ValueStore::new();
    let ty = s.intern("pkg.Thing");
    let long = "é".repeat(300);
    let first = s.push(Node::Float(-0.0)).unwrap();
    let base = seq(&mut s, &[1, 2, 3]);
    let nodes = vec![
        Node::Float(1e-310),
        Node::Int(i64::MIN),
        Node::BigInt(ThinStr::from("123456789012345678901234567890")),
        Node::Complex(Box::new((1.5, -2.5))),
        Node::Str(ThinStr::from(long.as_str())),
        Node::StrCut(Box::new((long.clone().into(), 1 << 40))),
        Node::Bytes(ThinBytes::from(&[0u8, 255, 7][..])),
        Node::BytesCut(Box::new((vec![9u8; 200].into(), u64::MAX))),
        Node::SeqDelta(Box::new(squall_trace::SeqDeltaNode {
            kind: SeqKind::List,
            ty,
            obj: 5,
            len: 3,
            base: base.0,
            n_items: 3,
            changes: vec![(2, first)].into(),
        })),
        Node::Map(Box::new(MapNode {
            ty,
            obj: u64::MAX >> 1,
            len: 2,
            entries: vec![(ValRef::NONE, first), (ValRef::TRUE, ValRef::small_int(-7).unwrap())].into(),
        })),
        Node::Object(Box::new(ObjectNode { ty, obj: 1 << 35, attrs: vec![(ty, first), (0, ValRef::FALSE)].into() })),
        Node::Opaque(Box::new(OpaqueNode { ty, obj: 3, text: long.clone().into() })),
        Node::Cut(Box::new(CutNode { ty, obj: 1 << 50, len: 12 })),
        Node::Same(base.0),
    ];
    for n in nodes {
        s.push(n).unwrap();
    }
    let rec = through_a_file(&s);
    assert_eq!(rec.cut_short, None);
    assert_eq!(rec.timelines[0].values.nodes(), s.nodes());
}

#[test]
fn sequence_changes_round_trip() {
    let mut s = squall_trace::ValueStore::new();
    let base = seq(&mut s, &[1, 2, 3, 4]);
    let appended = delta(&mut s, base, 5, &[(4, 5)]);
    let changed = delta(&mut s, base, 4, &[(1, 20), (3, 40)]);
    let rec = through_a_file(&s);
    assert_eq!(rec.cut_short, None);
    let items = |v: ValRef| match rec.timelines[0].values.to_snap(v, squall_trace::ExpandBudget::FULL) {
        Snap::Seq { items, .. } => items,
        other => panic!("{other:?}"),
    };
    assert_eq!(items(appended), [1, 2, 3, 4, 5].map(Snap::Int));
    assert_eq!(items(changed), [1, 20, 3, 40].map(Snap::Int));
}

#[test]
fn a_sequence_change_without_a_sequence_base_is_refused() {
    let mut s = squall_trace::ValueStore::new();
    let base = seq(&mut s, &[1, 2]);
    // An item its base does not have, and a base that is itself a delta.
    delta(&mut s, base, 3, &[]);
    let rec = through_a_file(&s);
    let why = rec.cut_short.expect("the bad node stops the read");
    assert!(why.contains("corrupt chunk") && why.contains("value nodes"), "{why}");
    let mut s = squall_trace::ValueStore::new();
    let base = seq(&mut s, &[1, 2]);
    let d = delta(&mut s, base, 2, &[(0, 9)]);
    delta(&mut s, d, 2, &[]);
    let why = through_a_file(&s).cut_short.expect("the bad node stops the read");
    assert!(why.contains("corrupt chunk") && why.contains("value nodes"), "{why}");
}

#[test]
fn values_handed_over_in_pieces_make_the_same_file_and_the_writer_counts_its_buffers() {
    // Enough nodes for several NODES chunks.
    let mut store = squall_trace::ValueStore::new();
    for i in 0..200_000 {
        store.push_snap(&Snap::Str(format!("value number {i}")));
    }
    let meta = &common::metas()[0];
    let write = |budget: Option<usize>| {
        let mut w = Writer::new(Vec::new(), &common::header()).unwrap().in_background().unwrap();
        w.forms(&common::forms()).unwrap();
        w.thread(meta).unwrap();
        let (mut passes, mut most_held) = (0, 0);
        match budget {
            None => w.values(meta.timeline, &store).unwrap(),
            Some(b) => loop {
                let mut left = b;
                let done = w.values_within(meta.timeline, &store, &mut left).unwrap();
                most_held = most_held.max(w.held_bytes());
                let ticket = w.flush().unwrap();
                w.written().unwrap().wait(ticket);
                passes += 1;
                if done {
                    break;
                }
            },
        }
        // Once everything is written, the writer still holds its buffers (a chunk, pooled).
        assert!(w.held_bytes() > 0);
        (w.finish(1, &[]).unwrap(), passes, most_held)
    };
    let (whole, _, _) = write(None);
    let (pieces, passes, most_held) = write(Some(1));
    // One chunk per pass at least: progress whatever the budget.
    assert!(passes > 2, "{passes} passes");
    assert_eq!(whole, pieces);
    let rec = read(&pieces).unwrap();
    assert_eq!(rec.timelines[0].values.len(), store.len());
    // What it held in one pass is a few chunks (1 MiB each), not the whole store.
    assert!(most_held > 0 && most_held < 12 << 20, "{most_held}");
    assert!(store.bytes() > 4 * (1 << 20));
}

#[test]
fn a_store_whose_written_nodes_left_memory_writes_the_same_file() {
    // The recorder's store evicts nodes once written (`ValueStore::evict_below`): the nodes
    // written next are its held ones, at their absolute slots, and the file is the same as
    // that of a store that kept everything. Evicting past what was written is refused.
    let mut kept = squall_trace::ValueStore::new();
    let mut evicting = squall_trace::ValueStore::new();
    let meta = &common::metas()[0];
    let new_writer = || {
        let mut w = Writer::new(Vec::new(), &common::header()).unwrap().in_background().unwrap();
        w.forms(&common::forms()).unwrap();
        w.thread(meta).unwrap();
        w
    };
    let (mut a, mut b) = (new_writer(), new_writer());
    for round in 0..4 {
        for i in 0..50_000 {
            let s = Snap::Str(format!("round {round} value {i}"));
            kept.push_snap(&s);
            evicting.push_snap(&s);
        }
        a.values(meta.timeline, &kept).unwrap();
        b.values(meta.timeline, &evicting).unwrap();
        assert_eq!(b.nodes_written(meta.timeline), evicting.len());
        evicting.evict_below(b.nodes_written(meta.timeline) - 10);
    }
    assert_eq!(evicting.first_held(), 4 * 50_000 - 10);
    assert!(evicting.bytes() < kept.bytes() / 2);
    let (whole, evicted) = (a.finish(1, &[]).unwrap(), b.finish(1, &[]).unwrap());
    assert_eq!(whole, evicted);
    assert_eq!(read(&evicted).unwrap().timelines[0].values.len(), kept.len());

    let mut c = new_writer();
    let mut store = squall_trace::ValueStore::new();
    store.push_snap(&Snap::Str("not written yet".into()));
    store.evict_below(1);
    let err = c.values(meta.timeline, &store).unwrap_err().to_string();
    assert!(err.contains("evicted those below 1"), "{err}");
}
