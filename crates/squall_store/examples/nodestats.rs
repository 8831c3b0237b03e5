//! Counts a recording's value nodes by kind and type, with the heap bytes each kind owns: where
//! a recording's memory goes.  `cargo run --release -p squall_store --example nodestats FILE`
use std::collections::HashMap;

use squall_trace::Node;

fn main() {
    let path = std::env::args().nth(1).expect("usage: nodestats FILE.sqrec");
    let rec = squall_store::open(std::path::Path::new(&path)).expect("a recording");
    let mut by: HashMap<String, (u64, u64)> = HashMap::new();
    for t in &rec.timelines {
        let s = &t.values;
        for n in s.nodes() {
            let (kind, ty) = match n {
                Node::Seq(x) => ("Seq", s.name(x.ty)),
                Node::SeqDelta(x) => ("SeqDelta", s.name(x.ty)),
                Node::Map(x) => ("Map", s.name(x.ty)),
                Node::Object(x) => ("Object", s.name(x.ty)),
                Node::Opaque(x) => ("Opaque", s.name(x.ty)),
                Node::Cut(x) => ("Cut", s.name(x.ty)),
                Node::Ref(x) => ("Ref", s.name(x.ty())),
                Node::Float(_) => ("Float", ""),
                Node::Int(_) => ("Int", ""),
                Node::Str(_) | Node::StrCut(_) => ("Str", ""),
                _ => ("other", ""),
            };
            let e = by.entry(format!("{kind} {ty}")).or_default();
            e.0 += 1;
            e.1 += n.heap_bytes() + 16;
        }
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1 .1));
    let entries: usize = rec.timelines.iter().map(|t| t.timeline.len()).sum();
    println!("entries {entries}");
    for (k, (n, b)) in v.iter().take(25) {
        println!("{b:>14} B {n:>12} nodes  {k}");
    }
}
