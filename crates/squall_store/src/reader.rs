//! The reader: validates the prefix and header, then loads every complete, valid chunk in order
//! and stops at the first truncated or corrupt one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use squall_trace::{
    Coord, Entry, Form, FormKind, Forms, Node, Outputs, Site, SiteKind, SiteReads, Snap, SourceFile, Timeline,
    ValueStore,
};

use crate::codec::{decode_entries, EntriesPart};
use crate::nodecodec::get_node;
use crate::outputs::{apply_outputs, get_outputs, OutputsPart};
use crate::snapcodec::get_snap;
use crate::wire::{
    chunk, frame_crc, get_body, Bad, Rd, FLAG_OPTIONAL, FORMAT_VERSION, FRAME_LEN, MAGIC, MAX_PAYLOAD, PREFIX_LEN,
};
use crate::{Header, LoadedTimeline, Progress, Recording, StoreError, ThreadMeta, MISSING_VALUE};

/// Opens and loads the recording at `path`.
pub fn open(path: &Path) -> Result<Recording, StoreError> {
    open_with_progress(path, None)
}

/// Bytes read to recognise a file before the rest of it is read.
const HEAD_LEN: u64 = 4096;

/// [`open`], reporting progress in bytes of the file.
///
/// Only a regular file is read (a FIFO would block, a device never end), its first bytes are
/// checked before the rest is read, and no more than the size it had when opened is read.
pub fn open_with_progress(path: &Path, progress: Option<Progress>) -> Result<Recording, StoreError> {
    use std::io::Read;

    let name = format!("`{}`", path.display());
    let io = |action: &'static str| move |source| StoreError::Io { action, path: path.display().to_string(), source };
    let mut file = open_regular(path, &name)?;
    let len = file.metadata().map_err(io("read"))?.len();
    let mut bytes = Vec::new();
    (&mut file).take(HEAD_LEN.min(len)).read_to_end(&mut bytes).map_err(io("read"))?;
    check_prefix(&bytes, &name)?;
    let rest = len.saturating_sub(bytes.len() as u64);
    bytes.try_reserve_exact(usize::try_from(rest).unwrap_or(usize::MAX)).map_err(|_| StoreError::Io {
        action: "read",
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::OutOfMemory, format!("{len} bytes do not fit in memory")),
    })?;
    file.take(rest).read_to_end(&mut bytes).map_err(io("read"))?;
    read_named(&bytes, &name, progress)
}

/// Opens `path` for reading if it is a regular file (after following links).
fn open_regular(path: &Path, name: &str) -> Result<std::fs::File, StoreError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        // Opening a FIFO for reading blocks until a writer comes; non-blocking, it returns at once
        // and the type check below refuses it. Regular files ignore the flag.
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(|source| open_error(path, name, source))?;
    let meta = file.metadata().map_err(|source| open_error(path, name, source))?;
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(file);
    }
    let what = if ft.is_dir() { "a directory" } else { special_file_kind(&ft) };
    Err(StoreError::NotAFile { name: name.to_string(), what })
}

#[cfg(unix)]
fn special_file_kind(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_file_kind(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

fn open_error(path: &Path, name: &str, source: std::io::Error) -> StoreError {
    let name = name.to_string();
    #[cfg(unix)]
    if source.raw_os_error() == Some(libc::ELOOP) {
        return StoreError::SymlinkLoop { name };
    }
    if source.kind() == std::io::ErrorKind::NotFound {
        let detail = match std::fs::read_link(path) {
            Ok(target) => format!(" (it is a symbolic link to `{}`, which does not exist)", target.display()),
            Err(_) => String::new(),
        };
        return StoreError::NotFound { name, detail };
    }
    // A socket cannot be opened at all (ENXIO): say what it is rather than the OS error.
    if let Ok(meta) = std::fs::metadata(path) {
        let ft = meta.file_type();
        if !ft.is_file() && !ft.is_dir() {
            return StoreError::NotAFile { name, what: special_file_kind(&ft) };
        }
    }
    StoreError::Io { action: "open", path: path.display().to_string(), source }
}

/// Loads a recording from bytes in memory.
pub fn read(bytes: &[u8]) -> Result<Recording, StoreError> {
    read_named(bytes, "the recording", None)
}

/// [`read`], reporting progress in bytes.
pub fn read_with_progress(bytes: &[u8], progress: Option<Progress>) -> Result<Recording, StoreError> {
    read_named(bytes, "the recording", progress)
}

fn sniff(b: &[u8]) -> String {
    let trimmed = b.iter().position(|c| !c.is_ascii_whitespace()).map_or(&b[..0], |i| &b[i..]);
    if b.starts_with(b"SQLite format 3\0") {
        "it is an SQLite database, perhaps a squall export: open it with sqlite3".into()
    } else if trimmed.starts_with(b"{") || trimmed.starts_with(b"[") {
        "it looks like JSON, perhaps a Chrome trace export: open it in Perfetto".into()
    } else if b.starts_with(&[0x1f, 0x8b]) {
        "it is gzip-compressed: decompress it first".into()
    } else if b.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "it is zstd-compressed: decompress it first".into()
    } else if b.starts_with(b"PK\x03\x04") {
        "it is a zip archive: extract the recording first".into()
    } else {
        let hex: Vec<String> = b.iter().take(8).map(|c| format!("{c:02x}")).collect();
        format!("it starts with bytes {}, not the squall magic", hex.join(" "))
    }
}

fn parse_header(p: &[u8]) -> Result<Header, Bad> {
    let mut r = Rd::new(p);
    let program = r.string()?;
    let n = r.count()?;
    let mut argv = Vec::with_capacity(n);
    for _ in 0..n {
        argv.push(r.string()?);
    }
    Ok(Header { program, argv, python: r.string()?, squall: r.string()?, started_unix_ms: r.uv()?, cwd: r.string()? })
}

/// One chunk's frame, checked.
struct Frame<'a> {
    ty: u8,
    flags: u8,
    payload: &'a [u8],
    at: usize,
}

enum FrameErr {
    Truncated(String),
    Corrupt(String),
}

fn frame_at(b: &[u8], pos: usize) -> Result<Frame<'_>, FrameErr> {
    let left = b.len() - pos;
    if left < FRAME_LEN {
        return Err(FrameErr::Truncated(format!("its frame needs {FRAME_LEN} bytes, {left} left")));
    }
    let f = &b[pos..pos + FRAME_LEN];
    let len = u32::from_le_bytes([f[4], f[5], f[6], f[7]]);
    let crc = u32::from_le_bytes([f[8], f[9], f[10], f[11]]);
    if len > MAX_PAYLOAD {
        return Err(FrameErr::Corrupt(format!("impossible length {len}")));
    }
    let end = pos + FRAME_LEN + len as usize;
    if end > b.len() {
        return Err(FrameErr::Truncated(format!("it declares {len} bytes, {} left", left - FRAME_LEN)));
    }
    let payload = &b[pos + FRAME_LEN..end];
    if frame_crc(&f[..8], payload) != crc || f[2] != 0 || f[3] != 0 {
        return Err(FrameErr::Corrupt("checksum mismatch".into()));
    }
    Ok(Frame { ty: f[0], flags: f[1], payload, at: pos })
}

enum Part {
    Forms { first_form: u64, forms: Vec<Form>, first_site: u64, sites: Vec<Site> },
    Thread(ThreadMeta),
    Entries(EntriesPart),
    Values { timeline: u32, first_slot: u64, values: Vec<Snap> },
    Nodes { timeline: u32, first_name: u64, names: Vec<String>, first_node: u64, nodes: Vec<Node> },
    End { ended: u64, stats: Vec<(String, u64)> },
    Switches { timeline: u32, marks: Vec<(u32, u64)> },
    Sources(Vec<SourceFile>),
    Outputs(OutputsPart),
    SiteReads(Vec<(u32, SiteReads)>),
    Skip,
}

fn decode(f: &Frame, version: u32) -> Result<Part, Bad> {
    if f.ty == chunk::HEADER {
        return Err(Bad("a second header chunk"));
    }
    if f.ty == chunk::SOURCES {
        let raw = get_body(f.payload)?;
        let mut r = Rd::new(&raw);
        let n = r.count()?;
        let mut sources = Vec::with_capacity(n);
        for _ in 0..n {
            let file: Arc<str> = r.str()?.into();
            let size = r.uv()?;
            let sha256 = r.bytes(32)?.try_into().map_err(|_| Bad("source hash"))?;
            sources.push(SourceFile { file, size, sha256 });
        }
        return Ok(Part::Sources(sources));
    }
    if f.ty == chunk::OUTPUTS {
        return Ok(Part::Outputs(get_outputs(&get_body(f.payload)?)?));
    }
    if f.ty == chunk::SITE_READS {
        let raw = get_body(f.payload)?;
        let mut r = Rd::new(&raw);
        let n = r.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let site = r.u32v()?;
            let span = Coord { line: r.u32v()?, col: r.u32v()?, end_line: r.u32v()?, end_col: r.u32v()? };
            let k = r.count()?;
            let mut names = Vec::with_capacity(k);
            for _ in 0..k {
                names.push(r.str()?.into());
            }
            let attr = match r.uv()? {
                0 => None,
                _ => Some(r.str()?.into()),
            };
            out.push((site, SiteReads { span, names, attr }));
        }
        return Ok(Part::SiteReads(out));
    }
    if !(chunk::FORMS..=chunk::NODES).contains(&f.ty) {
        return if f.flags & FLAG_OPTIONAL != 0 { Ok(Part::Skip) } else { Err(Bad("unknown required chunk type")) };
    }
    let raw = get_body(f.payload)?;
    let mut r = Rd::new(&raw);
    Ok(match f.ty {
        chunk::FORMS => {
            let first_form = r.uv()?;
            let n = r.count()?;
            let mut forms = Vec::with_capacity(n);
            for _ in 0..n {
                let ns: Arc<str> = r.str()?.into();
                let name: Arc<str> = r.str()?.into();
                let file: Arc<str> = r.str()?.into();
                let line = r.u32v()?;
                let kind = FormKind::from_code(i64::from(r.u8()?)).map_err(|_| Bad("unknown form kind"))?;
                let np = r.count()?;
                let mut params = Vec::with_capacity(np);
                for _ in 0..np {
                    params.push(r.str()?.into());
                }
                forms.push(Form { ns, name, file, line, params, kind });
            }
            let first_site = r.uv()?;
            let n = r.count()?;
            let mut sites = Vec::with_capacity(n);
            for _ in 0..n {
                let form = r.u32v()?;
                let kind = SiteKind::from_code(i64::from(r.u8()?)).map_err(|_| Bad("unknown site kind"))?;
                let coord = Coord { line: r.u32v()?, col: r.u32v()?, end_line: r.u32v()?, end_col: r.u32v()? };
                let symbol = match r.uv()? {
                    0 => None,
                    n => {
                        let n = usize::try_from(n - 1).map_err(|_| Bad("symbol length"))?;
                        let b = r.bytes(n)?;
                        Some(std::str::from_utf8(b).map_err(|_| Bad("invalid UTF-8"))?.into())
                    }
                };
                sites.push(Site { form, kind, coord, symbol });
            }
            Part::Forms { first_form, forms, first_site, sites }
        }
        chunk::THREAD => {
            Part::Thread(ThreadMeta { timeline: r.u32v()?, flow: r.u32v()?, thread_id: r.uv()?, name: r.string()? })
        }
        chunk::ENTRIES => Part::Entries(decode_entries(&raw, version)?),
        chunk::SWITCHES => {
            let timeline = r.u32v()?;
            let n = r.count()?;
            let mut marks = Vec::with_capacity(n);
            let (mut idx, mut step) = (0u64, 0u64);
            for i in 0..n {
                let (di, ds) = (r.uv()?, r.uv()?);
                if i > 0 && (di == 0 || ds == 0) {
                    return Err(Bad("switch marks not increasing"));
                }
                idx = idx.checked_add(di).ok_or(Bad("switch idx out of range"))?;
                step = step.checked_add(ds).ok_or(Bad("switch step out of range"))?;
                marks.push((u32::try_from(idx).map_err(|_| Bad("switch idx out of range"))?, step));
            }
            Part::Switches { timeline, marks }
        }
        chunk::VALUES => {
            let timeline = r.u32v()?;
            let first_slot = r.uv()?;
            let n = r.count()?;
            let mut values = Vec::with_capacity(n);
            for _ in 0..n {
                values.push(get_snap(&mut r, 0)?);
            }
            Part::Values { timeline, first_slot, values }
        }
        chunk::NODES => {
            let timeline = r.u32v()?;
            let first_name = r.uv()?;
            let n = r.count()?;
            let names = (0..n).map(|_| r.string()).collect::<Result<Vec<_>, _>>()?;
            let first_node = r.uv()?;
            let n = r.count()?;
            let base = u32::try_from(first_node).map_err(|_| Bad("value node out of range"))?;
            let mut nodes = Vec::with_capacity(n);
            for i in 0..n {
                nodes.push(get_node(&mut r, base.checked_add(i as u32).ok_or(Bad("value node out of range"))?)?);
            }
            Part::Nodes { timeline, first_name, names, first_node, nodes }
        }
        _ => {
            let ended = r.uv()?;
            let n = r.count()?;
            let mut stats = Vec::with_capacity(n);
            for _ in 0..n {
                let k = r.string()?;
                stats.push((k, r.uv()?));
            }
            Part::End { ended, stats }
        }
    })
}

struct Building {
    meta: ThreadMeta,
    entries: Vec<Entry>,
    args: Vec<u32>,
    values: ValueStore,
    switches: Vec<(u32, u64)>,
}

struct State {
    forms: Forms,
    nsites: u64,
    timelines: Vec<Building>,
    by_number: HashMap<u32, usize>,
    ended: Option<(u64, Vec<(String, u64)>)>,
    outputs: Outputs,
    /// Capacity for the next declared timeline (from the decoded chunks' sizes).
    reserve: Option<(usize, usize)>,
}

impl State {
    fn apply(&mut self, part: Part) -> Result<(), Bad> {
        match part {
            Part::Skip => {}
            Part::Sources(sources) => sources.into_iter().for_each(|s| self.forms.add_source(s)),
            Part::Outputs(part) => {
                let (by_number, timelines) = (&self.by_number, &self.timelines);
                apply_outputs(&mut self.outputs, part, |n| {
                    by_number.get(&n).map(|&i| (i as u32, timelines[i].entries.len()))
                })?;
            }
            // Optional data: a site it names that is not registered (a writer bug) is ignored.
            Part::SiteReads(reads) => {
                for (site, r) in reads {
                    let _ = self.forms.set_site_reads(site, r);
                }
            }
            Part::Forms { first_form, forms, first_site, sites } => {
                if first_form != self.forms.forms().len() as u64 || first_site != self.nsites {
                    return Err(Bad("forms or sites out of order"));
                }
                for f in forms {
                    self.forms.add_form(f).map_err(|_| Bad("too many forms"))?;
                }
                for s in sites {
                    self.forms.add_site(s).map_err(|_| Bad("a site of an unknown form"))?;
                    self.nsites += 1;
                }
            }
            Part::Thread(meta) => {
                if self.by_number.contains_key(&meta.timeline) {
                    return Err(Bad("a timeline declared twice"));
                }
                self.by_number.insert(meta.timeline, self.timelines.len());
                let (n, a) = self.reserve.take().unwrap_or_default();
                self.timelines.push(Building {
                    meta,
                    entries: Vec::with_capacity(n),
                    args: Vec::with_capacity(a),
                    values: ValueStore::new(),
                    switches: Vec::new(),
                });
            }
            Part::Entries(p) => {
                let &i = self.by_number.get(&p.timeline).ok_or(Bad("entries of an undeclared timeline"))?;
                let tl = &mut self.timelines[i];
                if p.first_idx != tl.entries.len() as u64 || p.args_first != tl.args.len() as u64 {
                    return Err(Bad("entries not contiguous with the previous chunk"));
                }
                if p.forms_needed > self.forms.forms().len() as u64 || p.sites_needed > self.nsites {
                    return Err(Bad("an entry names a form or site not registered before it"));
                }
                for &(_, a) in &p.outside {
                    if !tl.entries.get(a as usize).is_some_and(|e| e.kind().is_call()) {
                        return Err(Bad("an entry's parent or fn-call idx is not a call"));
                    }
                }
                if tl.entries.is_empty() && tl.entries.capacity() < p.entries.len() {
                    tl.entries = p.entries;
                } else {
                    tl.entries.extend_from_slice(&p.entries);
                }
                tl.args.extend_from_slice(&p.args);
            }
            Part::Values { timeline, first_slot, values } => {
                let &i = self.by_number.get(&timeline).ok_or(Bad("values of an undeclared timeline"))?;
                let tl = &mut self.timelines[i];
                let have = tl.values.legacy_len() as u64;
                if first_slot < have {
                    return Err(Bad("value slots written twice"));
                }
                if first_slot - have > u64::from(u32::MAX) {
                    return Err(Bad("value slot out of range"));
                }
                let missing = Snap::Opaque { type_name: MISSING_VALUE.into(), id: 0, repr: "<value not saved>".into() };
                for _ in 0..first_slot - have {
                    tl.values.push_legacy(&missing);
                }
                for v in &values {
                    tl.values.push_legacy(v);
                }
            }
            Part::Nodes { timeline, first_name, names, first_node, nodes } => {
                let &i = self.by_number.get(&timeline).ok_or(Bad("value nodes of an undeclared timeline"))?;
                self.timelines[i]
                    .values
                    .extend_checked(first_name, names, first_node, nodes)
                    .map_err(|_| Bad("value nodes out of order or pointing forwards"))?;
            }
            Part::Switches { timeline, marks } => {
                let &i = self.by_number.get(&timeline).ok_or(Bad("switch marks of an undeclared timeline"))?;
                let tl = &mut self.timelines[i];
                if let (Some(last), Some(first)) = (tl.switches.last(), marks.first()) {
                    if first.0 <= last.0 || first.1 <= last.1 {
                        return Err(Bad("switch marks not increasing"));
                    }
                }
                tl.switches.extend(marks);
            }
            Part::End { ended, stats } => self.ended = Some((ended, stats)),
        }
        Ok(())
    }
}

/// Decodes chunk bodies (of a file of format `version`) on all cores; results come back in file
/// order.
fn decode_all(frames: &[Frame], version: u32) -> Vec<Result<Part, Bad>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8).min(frames.len().max(1));
    if workers <= 1 || frames.len() < 4 {
        return frames.iter().map(|f| decode(f, version)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut out: Vec<Option<Result<Part, Bad>>> = (0..frames.len()).map(|_| None).collect();
    let done: Vec<Vec<(usize, Result<Part, Bad>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= frames.len() {
                            break;
                        }
                        mine.push((i, decode(&frames[i], version)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    for (i, r) in done.into_iter().flatten() {
        out[i] = Some(r);
    }
    out.into_iter().map(|r| r.unwrap_or(Err(Bad("decoder thread failed")))).collect()
}

/// Checks the magic and version in the first bytes of a file (`b`: the file, or at least its first
/// [`HEAD_LEN`] bytes); returns the version.
fn check_prefix(b: &[u8], name: &str) -> Result<u32, StoreError> {
    let name = name.to_string();
    let total = b.len() as u64;
    if b.is_empty() {
        return Err(StoreError::Empty { name });
    }
    if b.len() < MAGIC.len() && MAGIC.starts_with(b) {
        return Err(StoreError::TruncatedHeader { name, len: total });
    }
    if !b.starts_with(&MAGIC) {
        if b.starts_with(&MAGIC[..6]) {
            return Err(StoreError::CorruptHeader {
                name,
                detail: "the magic bytes were altered, as by a text-mode transfer that rewrote line endings".into(),
            });
        }
        return Err(StoreError::Foreign { what: sniff(b), name });
    }
    if b.len() < PREFIX_LEN {
        return Err(StoreError::TruncatedHeader { name, len: total });
    }
    let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    if version == 0 {
        return Err(StoreError::CorruptHeader { name, detail: "format version 0 does not exist".into() });
    }
    if version > FORMAT_VERSION {
        return Err(StoreError::NewerVersion { name, found: version, supported: FORMAT_VERSION });
    }
    Ok(version)
}

pub(crate) fn read_named(b: &[u8], name: &str, mut progress: Option<Progress>) -> Result<Recording, StoreError> {
    let name = name.to_string();
    let total = b.len() as u64;
    let version = check_prefix(b, &name)?;
    let hf = match frame_at(b, PREFIX_LEN) {
        Ok(f) => f,
        Err(FrameErr::Truncated(_)) => return Err(StoreError::TruncatedHeader { name, len: total }),
        Err(FrameErr::Corrupt(d)) => {
            return Err(StoreError::CorruptHeader { name, detail: format!("header chunk: {d}") })
        }
    };
    if hf.ty != chunk::HEADER {
        return Err(StoreError::CorruptHeader {
            name,
            detail: format!("the first chunk has type {}, not the header", hf.ty),
        });
    }
    let header = parse_header(hf.payload)
        .map_err(|e| StoreError::CorruptHeader { name: name.clone(), detail: format!("header fields: {}", e.0) })?;

    // Pass 1: frames and checksums, up to the end marker or the first bad frame.
    let mut frames = Vec::new();
    let mut pos = PREFIX_LEN + FRAME_LEN + hf.payload.len();
    let mut cut: Option<String> = None;
    while pos < b.len() {
        match frame_at(b, pos) {
            Ok(f) => {
                pos += FRAME_LEN + f.payload.len();
                let end = f.ty == chunk::END;
                frames.push(f);
                if end {
                    break;
                }
            }
            Err(FrameErr::Truncated(d)) => {
                cut = Some(format!(
                    "truncated chunk at byte {pos}: the file ends inside it ({d}); the program was killed or the disk filled while it was written"
                ));
                break;
            }
            Err(FrameErr::Corrupt(d)) => {
                cut = Some(format!(
                    "corrupt chunk at byte {pos} ({d}); the file was damaged there, the rest was not read"
                ));
                break;
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p(pos as u64 / 4, total);
    }

    // Pass 2: decode bodies in parallel, apply them in order.
    let decoded = decode_all(&frames, version);
    let mut st = State {
        forms: Forms::new(),
        nsites: 0,
        timelines: Vec::new(),
        by_number: HashMap::new(),
        ended: None,
        outputs: Outputs::new(),
        reserve: None,
    };
    let mut reserve: HashMap<u32, (usize, usize)> = HashMap::new();
    for p in decoded.iter().flatten() {
        if let Part::Entries(e) = p {
            let r = reserve.entry(e.timeline).or_default();
            r.0 += e.entries.len();
            r.1 += e.args.len();
        }
    }
    let mut last_report = 0u64;
    for (f, part) in frames.iter().zip(decoded) {
        if let Ok(Part::Thread(m)) = &part {
            if let Some(&(n, a)) = reserve.get(&m.timeline) {
                if !st.by_number.contains_key(&m.timeline) {
                    st.reserve = Some((n, a));
                }
            }
        }
        if let Err(e) = part.and_then(|p| st.apply(p)) {
            cut = Some(format!("corrupt chunk at byte {} (type {}: {}); the rest was not read", f.at, f.ty, e.0));
            st.ended = None;
            break;
        }
        if let Some(p) = progress.as_mut() {
            let done = total / 4 + (f.at as u64) * 3 / 4;
            if done - last_report > total / 200 {
                p(done, total);
                last_report = done;
            }
        }
    }
    let completed = st.ended.is_some();
    if cut.is_none() && !completed {
        cut = Some("no end marker: the program was killed or crashed after the last flush".into());
    }
    let (ended_unix_ms, stats) = match st.ended {
        Some((t, s)) => (Some(t), s),
        None => (None, Vec::new()),
    };
    let timelines = st
        .timelines
        .into_iter()
        .map(|t| {
            let mut timeline = Timeline::from_parts(t.entries, t.args);
            timeline.set_switches(t.switches);
            // Earlier states shown for references get the writes made since (squall_trace).
            squall_trace::sync_writes(&timeline, &st.forms, &t.values);
            LoadedTimeline { meta: t.meta, timeline, values: t.values }
        })
        .collect();
    if let Some(p) = progress.as_mut() {
        p(total, total);
    }
    Ok(Recording {
        header,
        forms: st.forms,
        timelines,
        completed,
        ended_unix_ms,
        stats,
        file_bytes: total,
        cut_short: cut,
        outputs: st.outputs,
    })
}
