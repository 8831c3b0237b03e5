//! Damaged bytes and paths that are not recordings: the reader never panics, never blocks, and
//! either loads a prefix of the file or returns a [`StoreError`] that says what the path is.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use squall_store::{open, read, StoreError};
use squall_trace::{Decoded, ExpandBudget, ValRef};

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Delete(prop::sample::Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(i, m)| Mutation::Flip(i, m)),
        (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<prop::sample::Index>(), 1..64usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
    ]
}

fn apply(b: &mut Vec<u8>, m: &Mutation) {
    if b.is_empty() {
        return;
    }
    match m {
        Mutation::Truncate(i) => b.truncate(i.index(b.len())),
        Mutation::Flip(i, mask) => {
            let i = i.index(b.len());
            b[i] ^= mask;
        }
        Mutation::Insert(i, bytes) => {
            let i = i.index(b.len() + 1);
            b.splice(i..i, bytes.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let i = i.index(b.len());
            let end = (i + n).min(b.len());
            b.drain(i..end);
        }
    }
}

/// Runs the queries a front end runs over what loaded: every value an entry names, the call
/// statistics.
fn use_all(rec: &squall_store::Recording) {
    for t in &rec.timelines {
        let _ = t.timeline.fn_call_stats();
        for e in t.timeline.entries() {
            for v in [ValRef(e.a), ValRef(e.b), ValRef(e.c)] {
                // The check every front end makes before reading a slot (a cut file lacks some).
                if matches!(v.decode(), Decoded::Slot(_)) && (t.values.entry_ref(v).0 as usize) < t.values.len() {
                    let _ = t.values.to_snap(v, ExpandBudget::FULL);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Truncations, flips, insertions and deletions of a valid file, one to four at a time.
    #[test]
    fn mutated_files_load_a_prefix_or_say_why(finish: bool, muts in prop::collection::vec(mutation(), 1..5)) {
        let mut b = common::write(finish);
        for m in &muts {
            apply(&mut b, m);
        }
        match read(&b) {
            Ok(rec) => {
                prop_assert!(rec.completed || rec.cut_short.is_some());
                use_all(&rec);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// `open` on `path`, failing the test if it takes more than a few seconds (a FIFO would block).
fn open_bounded(path: &Path) -> Result<squall_store::Recording, StoreError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(open(&p));
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("open({}) did not return", path.display()))
}

#[test]
fn special_paths_are_refused_with_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let q = |p: &Path| format!("`{}`", p.display());

    let e = open_bounded(d).unwrap_err();
    assert!(matches!(e, StoreError::NotAFile { what: "a directory", .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("{} is a directory, not a recording file: pass a recording file (`.sqrec`) that squall saved", q(d))
    );

    let fifo = d.join("pipe.sqrec");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated C string alive across the call; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = open_bounded(&fifo).unwrap_err();
    assert!(matches!(e, StoreError::NotAFile { what: "a FIFO (named pipe)", .. }), "{e}");

    let e = open_bounded(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`/dev/zero` is a character device, not a recording file: pass a recording file (`.sqrec`) that squall saved"
    );

    let sock = d.join("sock.sqrec");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let e = open_bounded(&sock).unwrap_err();
    assert!(matches!(e, StoreError::NotAFile { what: "a socket", .. }), "{e}");

    let (a, b) = (d.join("a.sqrec"), d.join("b.sqrec"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let e = open_bounded(&a).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} is a symbolic link loop (or a chain of too many links) that never reaches a file: point it at a recording file (`.sqrec`)",
            q(&a)
        )
    );

    let dangling = d.join("dangling.sqrec");
    std::os::unix::fs::symlink(d.join("gone.sqrec"), &dangling).unwrap();
    let e = open_bounded(&dangling).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no recording at {} (it is a symbolic link to {}, which does not exist): check the path (`squall run` prints it at the end)",
            q(&dangling),
            q(&d.join("gone.sqrec"))
        )
    );

    let empty = d.join("empty.sqrec");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(open_bounded(&empty).unwrap_err(), StoreError::Empty { .. }));

    // A link to a recording reads the recording.
    let real = d.join("real.sqrec");
    std::fs::write(&real, common::write(true)).unwrap();
    let link = d.join("link.sqrec");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(open_bounded(&link).unwrap().completed);
}

#[test]
fn a_huge_foreign_file_is_refused_from_its_first_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeros.sqrec");
    // Sparse: 3 GiB of zeros that take no disk.
    std::fs::File::create(&path).unwrap().set_len(3 << 30).unwrap();
    let t = Instant::now();
    let e = open_bounded(&path).unwrap_err();
    assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("it starts with bytes 00 00 00 00 00 00 00 00"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}: the whole file was read", t.elapsed());
}
