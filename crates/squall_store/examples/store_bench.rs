//! Benchmarks the recording file on a synthetic 10M-entry recording (nested calls and returns,
//! small-int values, some value slots, 200 forms):
//! `cargo run --release -p squall_store --example store_bench [entries]`.

use std::sync::Arc;
use std::time::Instant;

use squall_store::{Codec, Header, ThreadMeta, Writer};
use squall_trace::{display_name, Coord, Form, FormKind, Forms, Kind, Limits, Site, SiteKind, Snap, Timeline, ValRef};

/// xorshift64*: deterministic and fast.
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

fn forms() -> Forms {
    let mut f = Forms::new();
    for i in 0..200u32 {
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
        f.add_site(Site {
            form: id,
            kind: SiteKind::Return,
            coord: Coord { line: 12 + i, col: 4, end_line: 12 + i, end_col: 20 },
            symbol: None,
        })
        .unwrap();
    }
    f
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let forms = forms();
    let limits = Limits::default();
    let mut tl = Timeline::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut stack: Vec<u32> = Vec::new();
    let mut values = squall_trace::ValueStore::new();
    let val = |rng: &mut Rng, values: &mut squall_trace::ValueStore| -> ValRef {
        match rng.below(20) {
            0 => values.push_snap(&Snap::Seq {
                kind: squall_trace::SeqKind::List,
                type_name: "list".into(),
                id: 0,
                items: (0..rng.below(4)).map(|i| Snap::Int(i as i64)).collect(),
                len: 3,
            }),
            1 => ValRef::NONE,
            2 => ValRef::TRUE,
            _ => ValRef::small_int(rng.below(1000) as i64).unwrap(),
        }
    };
    let t0 = Instant::now();
    while tl.len() < n {
        let go_down = stack.len() < 2 || (stack.len() < 40 && rng.below(100) < 52);
        if go_down {
            let form = rng.below(200) as u32;
            let np = (form % 4) as usize;
            let args: Vec<ValRef> = (0..np).map(|_| val(&mut rng, &mut values)).collect();
            tl.call(form, &args, &limits);
            stack.push(form);
        } else {
            let form = stack.pop().unwrap();
            let v = val(&mut rng, &mut values);
            tl.exit(Kind::Return, form, form, false, v, &limits);
        }
    }
    let entries = tl.entries();
    let args = tl.args();
    eprintln!(
        "generated {} entries, {} args, {} values in {:.2?}",
        entries.len(),
        args.len(),
        values.len(),
        t0.elapsed()
    );
    let header = Header { program: "bench.py".into(), squall: "bench".into(), ..Header::default() };
    let meta = ThreadMeta { timeline: 0, flow: 0, thread_id: 1, name: "MainThread".into() };
    let flush = 1_000_000;
    let mut last_path = None;
    for codec in [Codec::None, Codec::Lz4, Codec::Zstd(1), Codec::Zstd(3)] {
        let path = std::env::temp_dir().join(format!("squall_store_bench_{codec:?}.sqrec"));
        let mut w = Writer::create(&path, &header).unwrap();
        w.set_codec(codec);
        w.forms(&forms).unwrap();
        w.thread(&meta).unwrap();
        let before = w.bytes_written();
        let t = Instant::now();
        let mut i = 0;
        let mut a = 0;
        while i < entries.len() {
            let end = (i + flush).min(entries.len());
            // Args of these entries: up to the args cursor at `end` (all args, split evenly is fine).
            let a_end = if end == entries.len() { args.len() } else { (args.len() * end / entries.len()).max(a) };
            w.entries(0, i as u64, &entries[i..end], a as u64, &args[a..a_end]).unwrap();
            w.flush().unwrap();
            i = end;
            a = a_end;
        }
        let save = t.elapsed();
        let entry_bytes = w.bytes_written() - before;
        let tv = Instant::now();
        w.values(0, &values).unwrap();
        let vsave = tv.elapsed();
        w.finish(0, &[("entries".into(), entries.len() as u64)]).unwrap();
        let file_bytes = std::fs::metadata(&path).unwrap().len();
        let t = Instant::now();
        let rec = squall_store::open(&path).unwrap();
        let open = t.elapsed();
        assert!(rec.completed && rec.cut_short.is_none());
        assert_eq!(rec.timelines[0].timeline.len(), entries.len());
        println!(
            "{codec:?}: save {:.1}M entries/s ({save:.2?}), {:.2} bytes/entry before values, values {:.2?}, file {:.1} MB, open {open:.2?}",
            entries.len() as f64 / save.as_secs_f64() / 1e6,
            entry_bytes as f64 / entries.len() as f64,
            vsave,
            file_bytes as f64 / 1e6,
        );
        if let Some(p) = last_path.replace(path) {
            let _ = std::fs::remove_file(p);
        }
    }
    let path = last_path.unwrap();
    let rec = squall_store::open(&path).unwrap();
    let lt = &rec.timelines[0];
    let t = Instant::now();
    let stats = lt.timeline.fn_call_stats();
    println!("fn_call_stats: {:.2?} ({} forms)", t.elapsed(), stats.len());
    let t = Instant::now();
    let mid = lt.timeline.len() / 2;
    let page: Vec<String> = lt.timeline.entries()[mid..mid + 1000]
        .iter()
        .map(|e| {
            if e.kind().is_call() {
                format!("{} {}", e.kind().type_name(), display_name(&rec.forms, e.id()))
            } else {
                format!("{} {}", e.kind().type_name(), squall_store::preview_ref(e.value(), &lt.values, 80))
            }
        })
        .collect();
    println!(
        "page of 1,000 entries: {:.2?} ({} bytes of text)",
        t.elapsed(),
        page.iter().map(String::len).sum::<usize>()
    );
    let _ = std::fs::remove_file(path);
}
