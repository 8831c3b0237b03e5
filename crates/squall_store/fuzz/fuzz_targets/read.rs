//! `cargo +nightly fuzz run read`: the reader must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = squall_store::read(data) {
        for t in &rec.timelines {
            let _ = t.timeline.fn_call_stats();
        }
    }
});
