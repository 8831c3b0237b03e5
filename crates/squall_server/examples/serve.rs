//! Serves a recording file without Python: `cargo run -p squall_server --example serve -- REC [PORT]`.

use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: serve REC [PORT]");
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let src = squall_server::FileSource::open(path.as_ref()).unwrap_or_else(|e| panic!("{e}"));
    let opts = squall_server::ServeOptions { port, ..Default::default() };
    let s = squall_server::spawn(Arc::new(src), &opts).unwrap_or_else(|e| panic!("{e}"));
    println!("{}", s.url);
    loop {
        std::thread::park();
    }
}
