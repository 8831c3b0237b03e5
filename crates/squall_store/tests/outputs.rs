//! The OUTPUTS chunk: what the program wrote to stdout/stderr round-trips, its timelines become
//! loaded indexes, readers that do not know it skip it, and a chunk linked to an entry the file
//! does not hold before it is corrupt.

mod common;

use squall_store::{read, Writer};
use squall_trace::{OutStream, Outputs, CHUNK_KEPT_BYTES, KEPT_BYTES};

const OUTPUTS: u8 = 10;

fn chunks(b: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 12;
    while pos + 12 <= b.len() {
        let len = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().unwrap()) as usize;
        out.push((b[pos], b[pos + 1], b[pos + 12..pos + 12 + len].to_vec()));
        pos += 12 + len;
    }
    out
}

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

/// Timelines 0 and 7 (recorder numbers) declared, in that order; outputs written over two flushes.
fn written(outputs: &mut Outputs, between: impl FnOnce(&mut Outputs)) -> (Vec<u8>, usize) {
    let metas = common::metas();
    let t = common::timeline(0);
    let mut w = Writer::new(Vec::new(), &common::header()).unwrap();
    w.forms(&common::forms()).unwrap();
    w.thread(&metas[0]).unwrap();
    w.thread(&metas[2]).unwrap();
    w.entries(0, 0, t.entries(), 0, t.args()).unwrap();
    w.entries(7, 0, t.entries(), 0, t.args()).unwrap();
    w.outputs(outputs).unwrap();
    between(outputs);
    w.outputs(outputs).unwrap();
    w.outputs(outputs).unwrap(); // nothing new: no chunk
    (w.finish(1, &[]).unwrap(), t.len())
}

#[test]
fn outputs_round_trip_with_timelines_as_loaded_indexes() {
    let mut o = Outputs::new();
    o.write(OutStream::Stdout, 1001, Some((0, 2)), "hello ");
    o.write(OutStream::Stdout, 1001, Some((0, 2)), "world\n");
    o.write(OutStream::Stderr, 1001, Some((7, 0)), "warning ✓\n");
    let (b, n) = written(&mut o, |o| {
        o.write(OutStream::Stdout, 1001, Some((0, 2)), "later, not merged into a saved chunk\n");
        o.write(OutStream::Stdout, 55, None, "from a thread that recorded nothing\n");
        o.write(OutStream::Stdout, 1001, Some((7, 3)), &"y".repeat(CHUNK_KEPT_BYTES + 10));
    });
    let rec = read(&b).unwrap();
    assert!(rec.completed, "{:?}", rec.cut_short);
    assert!(n > 3);
    let got = rec.outputs.chunks();
    let texts: Vec<&str> = got.iter().map(|c| c.text.as_str()).take(4).collect();
    assert_eq!(
        texts,
        [
            "hello world\n",
            "warning ✓\n",
            "later, not merged into a saved chunk\n",
            "from a thread that recorded nothing\n"
        ]
    );
    // Timeline 7 is the second declared: index 1.
    assert_eq!(
        got.iter().map(|c| c.at).collect::<Vec<_>>(),
        [Some((0, 2)), Some((1, 0)), Some((0, 2)), None, Some((1, 3))]
    );
    assert_eq!(got[1].stream, OutStream::Stderr);
    assert_eq!(got[3].thread_id, 55);
    assert!(got[4].is_cut() && got[4].chars == CHUNK_KEPT_BYTES as u64 + 10);
    assert_eq!(got[4].text.len(), CHUNK_KEPT_BYTES);
    let all = chunks(&b);
    let outs: Vec<_> = all.iter().filter(|c| c.0 == OUTPUTS).collect();
    assert_eq!(outs.len(), 2, "one chunk per flush with new outputs");
    assert!(outs.iter().all(|c| c.1 == 1), "OUTPUTS chunks carry the OPTIONAL flag");

    // A reader that does not know the type (played by renumbering it) skips it: nothing else changes.
    let mut old = b[..12].to_vec();
    for (ty, flags, payload) in &all {
        push_chunk(&mut old, if *ty == OUTPUTS { 202 } else { *ty }, *flags, payload);
    }
    let rec_old = read(&old).unwrap();
    assert!(rec_old.completed, "{:?}", rec_old.cut_short);
    assert!(rec_old.outputs.chunks().is_empty());
    assert_eq!(rec_old.entry_count(), rec.entry_count());
}

#[test]
fn what_was_not_kept_is_saved_with_the_chunks() {
    let mut o = Outputs::new();
    let piece = "z".repeat(CHUNK_KEPT_BYTES);
    for _ in 0..KEPT_BYTES / CHUNK_KEPT_BYTES + 2 {
        o.write(OutStream::Stdout, 1001, Some((0, 1)), &piece);
    }
    assert_eq!(o.not_kept(), (2, 2 * CHUNK_KEPT_BYTES as u64));
    let (b, _) = written(&mut o, |_| {});
    let rec = read(&b).unwrap();
    assert_eq!(rec.outputs.not_kept(), (2, 2 * CHUNK_KEPT_BYTES as u64));
    assert_eq!(rec.outputs.chunks().len(), KEPT_BYTES / CHUNK_KEPT_BYTES);
}

#[test]
fn an_output_linked_to_an_entry_not_written_before_it_is_corrupt() {
    let mut o = Outputs::new();
    o.write(OutStream::Stdout, 1001, Some((0, 1_000_000)), "from the future\n");
    let (b, _) = written(&mut o, |_| {});
    let rec = read(&b).unwrap();
    let cut = rec.cut_short.unwrap();
    assert!(cut.contains("output linked to an entry not written before it"), "{cut}");
    assert!(rec.outputs.chunks().is_empty());

    let mut o = Outputs::new();
    o.write(OutStream::Stdout, 1001, Some((3, 0)), "of no timeline\n");
    let (b, _) = written(&mut o, |_| {});
    assert!(read(&b).unwrap().cut_short.unwrap().contains("output of an undeclared timeline"));
}

#[test]
fn a_file_with_outputs_cut_at_any_byte_loads_a_prefix() {
    let mut o = Outputs::new();
    o.write(OutStream::Stdout, 1001, Some((0, 1)), "first\n");
    let (b, _) = written(&mut o, |o| o.write(OutStream::Stderr, 1001, Some((7, 2)), "second\n"));
    let whole = read(&b).unwrap().outputs.chunks().len();
    assert_eq!(whole, 2);
    let mut seen = std::collections::BTreeSet::new();
    for cut in 12..b.len() {
        if let Ok(rec) = read(&b[..cut]) {
            assert!(rec.cut_short.is_some());
            seen.insert(rec.outputs.chunks().len());
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1, 2], "each flush's outputs load once whole");
}
