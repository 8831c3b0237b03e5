//! Times the encoding of value-store nodes into NODES chunks (`Writer::values`, no compression),
//! on a store shaped like a recorded object-heavy program: instances of six attributes, lists of
//! three floats, floats, strings and ints: `cargo run --release -p squall_store --example
//! nodes_bench [nodes]`. The flusher encodes nodes while it holds the GIL.

use std::time::Instant;

use squall_store::{Codec, Header, ThreadMeta, Writer};
use squall_trace::{ObjectNode, SeqKind, SeqNode, ValRef, ValueStore};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5_000_000);
    let mut store = ValueStore::new();
    let ty = store.intern("pkg.Point");
    let list = store.intern("list");
    let names: Vec<u32> = ["x", "y", "z", "vx", "vy", "name"].iter().map(|a| store.intern(a)).collect();
    let mut i = 0u64;
    while store.len() < n {
        i += 1;
        let f = store.push(squall_trace::Node::Float(i as f64 * 0.5)).unwrap();
        let s = store.push(squall_trace::Node::Str(format!("point {i}").into())).unwrap();
        let items = [f, f, ValRef::small_int(i as i64 % 100).unwrap()].as_slice().into();
        let l = store
            .push(squall_trace::Node::Seq(Box::new(SeqNode {
                kind: SeqKind::List,
                ty: list,
                obj: i * 2,
                len: 3,
                items,
            })))
            .unwrap();
        let attrs = vec![
            (names[0], f),
            (names[1], f),
            (names[2], l),
            (names[3], ValRef::NONE),
            (names[4], ValRef::TRUE),
            (names[5], s),
        ]
        .into();
        store.push(squall_trace::Node::Object(Box::new(ObjectNode { ty, obj: i * 2 + 1, attrs }))).unwrap();
    }
    let mut best = f64::MAX;
    let mut bytes = 0;
    for _ in 0..5 {
        let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
        w.set_codec(Codec::None);
        w.thread(&ThreadMeta::default()).unwrap();
        let t = Instant::now();
        w.values(0, &store).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        bytes = w.finish(0, &[]).unwrap().len();
    }
    println!(
        "{} nodes: {:.1} ns a node, {:.2} bytes a node (best of 5)",
        store.len(),
        best * 1e9 / store.len() as f64,
        bytes as f64 / store.len() as f64
    );
}
