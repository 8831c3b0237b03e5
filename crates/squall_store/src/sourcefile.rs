//! Reading the source file a recording names, safely: a recording is input like any other (it may
//! be shared, damaged or crafted), so the file it names is read only if it is a regular file of
//! bounded size, not through a symlink that leaves the recorded tree, and is shown as recorded
//! only when its size and SHA-256 match what the recorder compiled (`Forms::sources`).

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use squall_trace::{Forms, SourceFile};

/// Largest source file read (Python modules of a few MB exist; nothing a debugger shows is
/// bigger).
pub const SOURCE_MAX_BYTES: u64 = 16 << 20;

/// A source file's text as read now.
#[derive(Debug, Clone)]
pub struct SourceText {
    /// The file's bytes as text (invalid UTF-8 replaced).
    pub text: String,
    /// True: its size and SHA-256 are the recorded ones. False: the recording holds no hash for
    /// it (older than source hashes), so it cannot be verified.
    pub verified: bool,
}

impl SourceText {
    /// What to tell a reader when the text is not known to be the recorded one.
    pub fn note(&self, file: &str) -> Option<String> {
        (!self.verified).then(|| {
            format!("cannot verify {file}: the recording holds no hash of it (recorded before squall stored source hashes); it may have changed since")
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("`{0}` is not a source file of this recording")]
    NotRecorded(String),
    #[error("cannot read {path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("refusing to read {path}: it is {what}, not a regular file")]
    NotRegular { path: String, what: &'static str },
    #[error("refusing to read {path}: {size} bytes, more than the {cap}-byte limit for source files")]
    TooLarge { path: String, size: u64, cap: u64 },
    #[error("refusing to read {path}: it is a symlink to {target}, outside the recorded source tree")]
    LinkLeavesTree { path: String, target: String },
    #[error(
        "refusing to read {path}: the recording holds no hash of it and it is not a .py file (recorded before squall stored source hashes, or a crafted recording)"
    )]
    UnverifiableNonPython { path: String },
    #[error("source changed since recording: {path} (recorded sha256 {recorded_sha}, size {recorded_size}; now sha256 {now_sha}, size {now_size})")]
    Changed { path: String, recorded_sha: String, recorded_size: u64, now_sha: String, now_size: u64 },
}

/// Lowercase hex of a hash.
pub fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn kind_of(m: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if m.is_dir() {
        "a directory"
    } else if m.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// The directories the recording's source files are in (canonical): a symlink among the sources
/// may point anywhere inside them.
fn recorded_tree(forms: &Forms) -> Vec<PathBuf> {
    let mut files: Vec<&str> = forms.forms().iter().map(|f| &*f.file).collect();
    files.extend(forms.sources().iter().map(|s| &*s.file));
    files.sort_unstable();
    files.dedup();
    let mut dirs: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| Path::new(f).parent())
        .filter(|d| !d.as_os_str().is_empty())
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    dirs
}

fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO swapped in after the checks must not block.
        o.custom_flags(libc::O_NONBLOCK);
    }
    o.open(path)
}

/// Reads source file `file` of a recording whose forms are `forms`, by the rules in the module
/// comment. `Err` says why not, quoting the path (and the hashes when the file changed).
pub fn read_source(forms: &Forms, file: &str) -> Result<SourceText, SourceError> {
    let named = forms.forms().iter().any(|f| &*f.file == file) || forms.source_versions(file).next().is_some();
    if !named {
        return Err(SourceError::NotRecorded(file.to_string()));
    }
    let path = Path::new(file);
    let io = |err| SourceError::Io { path: file.to_string(), err };
    let link = std::fs::symlink_metadata(path).map_err(io)?;
    if link.file_type().is_symlink() {
        let target = std::fs::canonicalize(path).map_err(io)?;
        if !recorded_tree(forms).iter().any(|d| target.starts_with(d)) {
            return Err(SourceError::LinkLeavesTree { path: file.to_string(), target: target.display().to_string() });
        }
    }
    let versions: Vec<&SourceFile> = forms.source_versions(file).collect();
    if versions.is_empty() && !matches!(path.extension().and_then(|e| e.to_str()), Some("py" | "pyw")) {
        return Err(SourceError::UnverifiableNonPython { path: file.to_string() });
    }
    let check = |m: &Metadata| {
        if !m.is_file() {
            return Err(SourceError::NotRegular { path: file.to_string(), what: kind_of(m) });
        }
        if m.len() > SOURCE_MAX_BYTES {
            return Err(SourceError::TooLarge { path: file.to_string(), size: m.len(), cap: SOURCE_MAX_BYTES });
        }
        Ok(())
    };
    check(&std::fs::metadata(path).map_err(io)?)?;
    let f = open_nonblocking(path).map_err(io)?;
    // The checks again on what was opened (the path may have changed in between).
    check(&f.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    f.take(SOURCE_MAX_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > SOURCE_MAX_BYTES {
        return Err(SourceError::TooLarge { path: file.to_string(), size: bytes.len() as u64, cap: SOURCE_MAX_BYTES });
    }
    let verified = match versions.last() {
        None => false,
        Some(last) => {
            let now = sha256(&bytes);
            if !versions.iter().any(|v| v.size == bytes.len() as u64 && v.sha256 == now) {
                return Err(SourceError::Changed {
                    path: file.to_string(),
                    recorded_sha: hex(&last.sha256),
                    recorded_size: last.size,
                    now_sha: hex(&now),
                    now_size: bytes.len() as u64,
                });
            }
            true
        }
    };
    Ok(SourceText { text: String::from_utf8_lossy(&bytes).into_owned(), verified })
}
