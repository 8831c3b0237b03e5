//! Errors of the recording file: writing, opening, exporting.

use thiserror::Error;

/// Everything that can go wrong with a recording file. Each message says what is wrong and what to
/// do about it. Damage after a valid header is not an error: the reader loads what it can and sets
/// [`crate::Recording::cut_short`].
#[derive(Debug, Error)]
pub enum StoreError {
    /// The OS refused a read or write of a named file.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done: "create", "open", "read", "write".
        action: &'static str,
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing is at the path (or a symbolic link there points at nothing).
    #[error("no recording at {name}{detail}: check the path (`squall run` prints it at the end)")]
    NotFound {
        /// The path, quoted.
        name: String,
        /// Why, when more than "no such file": a dangling link names its target.
        detail: String,
    },
    /// The path is a symbolic link that never reaches a file (`ELOOP`).
    #[error("{name} is a symbolic link loop (or a chain of too many links) that never reaches a file: point it at a recording file (`.sqrec`)")]
    SymlinkLoop {
        /// The path, quoted.
        name: String,
    },
    /// The path is not a regular file: a directory, a FIFO, a device or a socket. Refused before
    /// reading, so a FIFO does not block and a device is not read without end.
    #[error("{name} is {what}, not a recording file: pass a recording file (`.sqrec`) that squall saved")]
    NotAFile {
        /// The path, quoted.
        name: String,
        /// What it is instead ("a directory", "a FIFO (named pipe)"...).
        what: &'static str,
    },
    /// Writing to the underlying stream failed.
    #[error("writing the recording failed: {0}")]
    Write(#[from] std::io::Error),
    /// The file has no bytes at all.
    #[error("{name} is empty: the program was stopped before squall wrote anything; record it again")]
    Empty {
        /// The file's name, quoted (`` `x.sqrec` ``), or "the recording" for bytes in memory.
        name: String,
    },
    /// The file does not start with the squall magic bytes.
    #[error("{name} is not a squall recording ({what}); pass a recording file (`.sqrec`) that squall saved")]
    Foreign {
        /// The file's name, quoted (`` `x.sqrec` ``), or "the recording" for bytes in memory.
        name: String,
        /// What it looks like instead.
        what: String,
    },
    /// A newer squall wrote the file.
    #[error(
        "{name} was written by format version {found}; this squall reads up to version {supported}: upgrade squall"
    )]
    NewerVersion {
        /// The file's name, quoted (`` `x.sqrec` ``), or "the recording" for bytes in memory.
        name: String,
        /// The file's format version.
        found: u32,
        /// [`crate::FORMAT_VERSION`].
        supported: u32,
    },
    /// The file ends before its header chunk is complete.
    #[error("{name} ends inside its header (after {len} bytes): the program was stopped before squall finished writing the header; nothing was recorded, record it again")]
    TruncatedHeader {
        /// The file's name, quoted (`` `x.sqrec` ``), or "the recording" for bytes in memory.
        name: String,
        /// The file's length.
        len: u64,
    },
    /// The header is damaged.
    #[error("{name} has a corrupt header ({detail}): the file was damaged after it was written; restore it from a copy or record again")]
    CorruptHeader {
        /// The file's name, quoted (`` `x.sqrec` ``), or "the recording" for bytes in memory.
        name: String,
        /// What failed.
        detail: String,
    },
    /// The writer was used against its contract (a programming error in the recorder).
    #[error("recording writer misuse: {0}")]
    Usage(String),
    /// The SQLite export failed.
    #[error("SQLite export failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}
