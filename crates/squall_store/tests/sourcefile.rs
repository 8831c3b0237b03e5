//! Source files named by a recording: their recorded size and hash round-trip through the
//! optional SOURCES chunk, and `sourcefile::read_source` serves only regular files under the cap
//! whose hash matches (older recordings: unverified, `.py` only), refusing devices, FIFOs,
//! directories and symlinks out of the recorded tree.

use std::sync::Arc;

use squall_store::sourcefile::{read_source, sha256, SourceError, SOURCE_MAX_BYTES};
use squall_store::{Header, Writer};
use squall_trace::{Form, FormKind, Forms, SourceFile};

fn form(file: &str) -> Form {
    Form { ns: "m".into(), name: "f".into(), file: file.into(), line: 1, params: vec![], kind: FormKind::Function }
}

fn src(file: &str, data: &[u8]) -> SourceFile {
    SourceFile { file: Arc::from(file), size: data.len() as u64, sha256: sha256(data) }
}

/// Forms naming `files`, each with the recorded contents given (None: no hash, an older recording).
fn forms_of(files: &[(&str, Option<&[u8]>)]) -> Forms {
    let mut f = Forms::new();
    for (file, data) in files {
        f.add_form(form(file)).unwrap();
        if let Some(d) = data {
            f.add_source(src(file, d));
        }
    }
    f
}

#[test]
fn sources_round_trip_through_the_file_across_flushes() {
    let mut forms = Forms::new();
    forms.add_form(form("/p/a.py")).unwrap();
    forms.add_source(src("/p/a.py", b"x = 1\n"));
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&forms).unwrap();
    forms.add_form(form("/p/b.py")).unwrap();
    forms.add_source(src("/p/b.py", b"y = 2\n"));
    forms.add_source(src("/p/a.py", b"x = 1\n")); // noted again, same contents: kept once
    forms.add_source(src("/p/a.py", b"x = 3\n")); // recompiled with other contents
    w.forms(&forms).unwrap();
    let bytes = w.finish(0, &[]).unwrap();
    let rec = squall_store::read(&bytes).unwrap();
    assert_eq!(rec.forms.sources(), forms.sources());
    assert_eq!(rec.forms.sources().len(), 3);
    assert_eq!(rec.forms.source_versions("/p/a.py").count(), 2);
}

#[test]
fn a_reader_that_does_not_know_sources_skips_them() {
    // The chunk is written with the OPTIONAL flag: flipping its type to an unknown one must
    // still load (what a reader from before SOURCES sees).
    let mut forms = forms_of(&[("/p/a.py", Some(b"x = 1\n"))]);
    forms.add_form(form("/p/b.py")).unwrap();
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&forms).unwrap();
    let mut bytes = w.finish(0, &[]).unwrap();
    let at = find_chunk(&bytes, 9).expect("a SOURCES chunk");
    assert_eq!(bytes[at + 1] & 1, 1, "SOURCES must be optional");
    bytes[at] = 200;
    // fix the frame crc after the edit
    let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    let mut crc = crc32c::crc32c(&bytes[at..at + 8]);
    crc = crc32c::crc32c_append(crc, &bytes[at + 12..at + 12 + len]);
    bytes[at + 8..at + 12].copy_from_slice(&crc.to_le_bytes());
    let rec = squall_store::read(&bytes).unwrap();
    assert!(rec.completed);
    assert!(rec.forms.sources().is_empty());
    assert_eq!(rec.forms.forms().len(), 2);
}

/// Offset of the first chunk of type `ty` (after the 12-byte prefix).
fn find_chunk(b: &[u8], ty: u8) -> Option<usize> {
    let mut at = 12;
    while at + 12 <= b.len() {
        let len = u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
        if b[at] == ty {
            return Some(at);
        }
        at += 12 + len;
    }
    None
}

#[test]
fn a_matching_file_is_served_verified() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.py");
    std::fs::write(&p, "def f():\n    return 1\n").unwrap();
    let f = p.to_str().unwrap();
    let forms = forms_of(&[(f, Some(b"def f():\n    return 1\n"))]);
    let got = read_source(&forms, f).unwrap();
    assert!(got.verified);
    assert_eq!(got.text, "def f():\n    return 1\n");
    assert_eq!(got.note(f), None);
}

#[test]
fn a_changed_file_is_refused_saying_how() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.py");
    std::fs::write(&p, "x = 2\n").unwrap();
    let f = p.to_str().unwrap();
    let forms = forms_of(&[(f, Some(b"x = 1\n"))]);
    let e = read_source(&forms, f).unwrap_err();
    assert!(matches!(e, SourceError::Changed { .. }));
    let msg = e.to_string();
    let (rec, now) =
        (squall_store::sourcefile::hex(&sha256(b"x = 1\n")), squall_store::sourcefile::hex(&sha256(b"x = 2\n")));
    assert_eq!(
        msg,
        format!("source changed since recording: {f} (recorded sha256 {rec}, size 6; now sha256 {now}, size 6)")
    );
    // the same size and an edit in place are told apart by the hash; a recompiled version matches
    let mut forms = forms;
    forms.add_source(src(f, b"x = 2\n"));
    assert!(read_source(&forms, f).unwrap().verified);
}

#[test]
fn an_older_recording_serves_py_files_unverified_and_nothing_else() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.py");
    std::fs::write(&p, "x = 1\n").unwrap();
    let f = p.to_str().unwrap();
    let forms = forms_of(&[(f, None), ("/etc/passwd", None)]);
    let got = read_source(&forms, f).unwrap();
    assert!(!got.verified);
    assert!(got.note(f).unwrap().contains("cannot verify"));
    let e = read_source(&forms, "/etc/passwd").unwrap_err();
    assert!(matches!(e, SourceError::UnverifiableNonPython { .. }), "{e}");
    assert!(e.to_string().contains("/etc/passwd"));
}

#[test]
fn files_the_recording_does_not_name_are_refused() {
    let forms = forms_of(&[("/p/a.py", Some(b""))]);
    let e = read_source(&forms, "/etc/passwd").unwrap_err();
    assert_eq!(e.to_string(), "`/etc/passwd` is not a source file of this recording");
}

#[cfg(unix)]
#[test]
fn devices_fifos_and_directories_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("f.py");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated C string alive across the call; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let dir = d.path().join("pkg.py");
    std::fs::create_dir(&dir).unwrap();
    let (fifo, dir) = (fifo.to_str().unwrap(), dir.to_str().unwrap());
    // Even a crafted hash does not make them readable (and a FIFO must not hang the reader).
    let forms = forms_of(&[(fifo, Some(b"")), (dir, None), ("/dev/zero", Some(b"")), ("/dev/null", None)]);
    for (file, what) in [(fifo, "a FIFO"), (dir, "a directory"), ("/dev/zero", "a device")] {
        let e = read_source(&forms, file).unwrap_err();
        assert_eq!(e.to_string(), format!("refusing to read {file}: it is {what}, not a regular file"));
    }
    assert!(read_source(&forms, "/dev/null").is_err());
}

#[cfg(unix)]
#[test]
fn symlinks_may_not_leave_the_recorded_tree() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real.py");
    std::fs::write(&real, "x = 1\n").unwrap();
    let inside = d.path().join("inside.py");
    std::os::unix::fs::symlink(&real, &inside).unwrap();
    let out = d.path().join("out.py");
    std::os::unix::fs::symlink("/dev/zero", &out).unwrap();
    let out2 = d.path().join("passwd.py");
    std::os::unix::fs::symlink("/etc/passwd", &out2).unwrap();
    let (inside, out, out2) = (inside.to_str().unwrap(), out.to_str().unwrap(), out2.to_str().unwrap());
    let forms = forms_of(&[(inside, Some(b"x = 1\n")), (out, None), (out2, None)]);
    assert!(read_source(&forms, inside).unwrap().verified);
    for f in [out, out2] {
        let e = read_source(&forms, f).unwrap_err();
        assert!(matches!(e, SourceError::LinkLeavesTree { .. }), "{f}: {e}");
        assert!(e.to_string().contains("outside the recorded source tree"), "{e}");
    }
}

#[test]
fn files_over_the_cap_are_refused_without_reading_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("big.py");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(SOURCE_MAX_BYTES + 1).unwrap(); // sparse: nothing is written or read
    let f = p.to_str().unwrap();
    let forms = forms_of(&[(f, None)]);
    let e = read_source(&forms, f).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "refusing to read {f}: {} bytes, more than the {SOURCE_MAX_BYTES}-byte limit for source files",
            SOURCE_MAX_BYTES + 1
        )
    );
}
