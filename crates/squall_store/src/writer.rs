//! The streaming writer.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use squall_trace::{Entry, Forms, Outputs, ValueStore};

use crate::codec::{encode_entries, Streams};
use crate::nodecodec::put_node;
use crate::outputs::put_outputs;
use crate::wire::{
    chunk, put_body_with, put_chunk, put_str, put_uv, Codec, Compressor, FLAG_OPTIONAL, FORMAT_VERSION, MAGIC,
};
use crate::{Header, StoreError, ThreadMeta};

/// Entries per ENTRIES chunk at most: bounds a chunk's memory and lets readers decode in parallel.
/// 1 MiB of entries in memory: the writer's buffers are a few chunks, and a recording saved under
/// a small memory limit counts them (4 MiB chunks made them 40 MiB).
const ENTRIES_PER_CHUNK: usize = 1 << 16;
/// Raw value bytes per NODES chunk, roughly.
const VALUE_BYTES_PER_CHUNK: usize = 1 << 20;

#[derive(Default)]
struct TlState {
    entries: u64,
    args: u64,
    /// Nodes and names of the value store written.
    nodes: u64,
    names: u64,
    /// The last switch mark written: (idx, step).
    last_switch: Option<(u32, u64)>,
}

/// Streams a recording to `W`: a header, then chunks as the recorder hands over data. Every chunk
/// is written whole with one `write_all`; after [`Writer::flush`] the data so far survives the
/// process being killed. Call [`Writer::finish`] to mark the recording complete.
///
/// After [`Writer::in_background`], chunk bodies are compressed and written by a thread of the
/// writer's own, in order: the caller only encodes (a recorder flushing under a lock its program
/// needs holds it for less). [`Writer::written`] then tells when what was handed over is written.
pub struct Writer<W: Write> {
    out: Out<W>,
    forms: u32,
    sites: u32,
    /// Source files written (`Forms::sources` is append-only).
    sources: usize,
    nparams: Vec<u32>,
    timelines: HashMap<u32, TlState>,
    streams: Streams,
    raw: Vec<u8>,
    /// A NODES chunk's nodes, before its header (which counts them) is known.
    body: Vec<u8>,
    /// The bytes this writer's buffers hold, on both threads (`Held`).
    held: Arc<Held>,
    /// How chunk bodies are compressed (the chunker's codec, known here for `Helper`).
    codec: Codec,
    /// The caller's share of encoding entries, while it helps (`Writer::set_helping`).
    helper: Option<Helper>,
}

/// The caller's own compressor, for the ENTRIES chunks it encodes and frames itself while it
/// helps the background thread: every other piece of a hand-over, so that both threads encode
/// and compress at once, and the chunks still reach the file in order (the thread writes a
/// framed one as it comes, after the pieces before it).
#[derive(Default)]
struct Helper {
    zstd: Compressor,
    payload: Vec<u8>,
    /// Pieces handed over while helping: the odd ones are framed here.
    pieces: u64,
}

/// The bytes a writer's buffers hold, kept up to date by both of its threads, so that a caller
/// bounding its memory (the recorder's `--memory-limit`) counts them: the caller's own buffers,
/// the chunks queued for the background thread or pooled for reuse, the background thread's
/// buffers and its zstd context.
#[derive(Debug, Default)]
pub struct Held {
    caller: AtomicU64,
    queued: AtomicU64,
    thread: AtomicU64,
}

impl Held {
    /// The bytes held now.
    pub fn bytes(&self) -> u64 {
        self.caller.load(Ordering::Relaxed) + self.queued.load(Ordering::Relaxed) + self.thread.load(Ordering::Relaxed)
    }

    /// (the caller's buffers, the queued and pooled chunks, the background thread's buffers).
    pub fn parts(&self) -> (u64, u64, u64) {
        (self.caller.load(Ordering::Relaxed), self.queued.load(Ordering::Relaxed), self.thread.load(Ordering::Relaxed))
    }

    fn add_queued(&self, n: usize) {
        self.queued.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn sub_queued(&self, n: usize) {
        // Saturating: a count must never wrap to a huge number that would stop a recording.
        let _ = self.queued.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| Some(q.saturating_sub(n as u64)));
    }
}

/// The bytes an entries job's buffers hold (their capacities).
fn entry_buffers_bytes(entries: &Vec<Entry>, args: &Vec<u32>) -> usize {
    entries.capacity() * std::mem::size_of::<Entry>() + args.capacity() * 4
}

/// Hands the pages of freed chunks back to the system (glibc keeps what a thread frees in that
/// thread's arena, resident: the chunk buffers freed after each flush pass stayed counted
/// nowhere). Called by the writer's thread after each flush, off the recording's path.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim takes no pointer and may be called from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Runs its closure when dropped.
struct Defer<F: FnMut()>(F);

impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// Compresses chunk bodies and writes chunks to `W`.
struct Chunker<W> {
    w: W,
    codec: Codec,
    zstd: Compressor,
    payload: Vec<u8>,
    out: Vec<u8>,
    bytes: Arc<AtomicU64>,
}

impl<W: Write> Chunker<W> {
    /// The bytes this chunker's buffers and zstd context hold.
    fn held(&mut self) -> usize {
        self.payload.capacity() + self.out.capacity() + self.zstd.held()
    }

    fn emit(&mut self, ty: u8, flags: u8, raw: &[u8]) -> Result<(), StoreError> {
        self.out.clear();
        frame(&mut self.out, &mut self.payload, &mut self.zstd, self.codec, ty, flags, raw);
        self.w.write_all(&self.out)?;
        self.bytes.fetch_add(self.out.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Appends to `out` the chunk of type `ty` whose body is `raw` compressed by `codec` (through
/// `payload`, a buffer kept between chunks).
fn frame(out: &mut Vec<u8>, payload: &mut Vec<u8>, zstd: &mut Compressor, codec: Codec, ty: u8, flags: u8, raw: &[u8]) {
    payload.clear();
    put_body_with(payload, codec, raw, zstd);
    put_chunk(out, ty, flags, payload);
}

/// The bytes the caller's own buffers hold: the raw chunk, a NODES chunk's body, the entry
/// streams, and a helper's payload and compressor.
fn caller_bytes(raw: &Vec<u8>, body: &Vec<u8>, streams: &Streams, helper: Option<&mut Helper>) -> usize {
    raw.capacity() + body.capacity() + streams.held() + helper.map_or(0, |h| h.payload.capacity() + h.zstd.held())
}

enum Job {
    Chunk(u8, u8, Vec<u8>),
    /// Whole chunks, compressed and framed by the caller (`Helper`): written as they are.
    Framed(Vec<u8>),
    /// Entries to encode into ENTRIES chunks there (`Writer::entries`' arguments, copied).
    Entries {
        timeline: u32,
        first_idx: u64,
        entries: Vec<Entry>,
        args_first: u64,
        args: Vec<u32>,
    },
    /// Parameter counts of forms added since (entries' encoding needs them).
    Params(Vec<u32>),
    Flush(u64),
}

/// How many chunks may wait for the background thread before the caller waits for it.
const QUEUED_CHUNKS: usize = 16;
/// How many spent buffers of each kind are kept for reuse (the rest are freed): as many as the
/// queue holds, so that every buffer a pass hands over comes back for the next one. With one
/// kept, most passes took fresh blocks of up to 4 MiB for their copies of the entries, which
/// the kernel zeroed page by page while the caller held the GIL (saved nbody: 136 K page faults
/// on the flusher, 1.75 -> 0.8 s of the GIL held; docs/benchmarks.md, "Twenty-first session").
/// The pool is counted with the queue (`Held`), so the memory limit sees it.
const POOLED_BUFFERS: usize = QUEUED_CHUNKS;

/// What the background thread has written: the ticket of the last [`Writer::flush`] it did, or
/// the error it stopped at.
#[derive(Default)]
struct Progress {
    flushed: u64,
    failed: Option<String>,
}

/// A handle on the background thread's progress, usable without the writer.
#[derive(Clone, Default)]
pub struct Written(Arc<(Mutex<Progress>, Condvar)>);

impl Written {
    /// Waits until the flush that returned `ticket` is written (or the thread stopped).
    pub fn wait(&self, ticket: u64) {
        let (lock, cv) = &*self.0;
        let Ok(mut p) = lock.lock() else { return };
        while p.flushed < ticket && p.failed.is_none() {
            p = match cv.wait(p) {
                Ok(p) => p,
                Err(_) => return,
            };
        }
    }

    /// The error the thread stopped at, if it did.
    pub fn failed(&self) -> Option<String> {
        self.0 .0.lock().ok().and_then(|p| p.failed.clone())
    }

    fn set(&self, f: impl FnOnce(&mut Progress)) {
        let (lock, cv) = &*self.0;
        if let Ok(mut p) = lock.lock() {
            f(&mut p);
        }
        cv.notify_all();
    }
}

/// Ends a [`Written`] as failed when the writer's thread unwinds from a panic: whoever waits
/// for a ticket (the flusher, with the GIL held while it catches up) is let go instead of
/// waiting for ever.
struct FailWhenUnwinding(Written);

impl Drop for FailWhenUnwinding {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.set(|p| {
                p.failed.get_or_insert_with(|| "the file writer's thread failed (internal error)".into());
            });
        }
    }
}

enum Out<W> {
    Here(Chunker<W>),
    Background {
        tx: Option<SyncSender<Job>>,
        /// Raw buffers the thread is done with, for reuse.
        spent: Receiver<Vec<u8>>,
        /// Entry and args buffers the thread is done with, for reuse: fresh ones of a chunk's
        /// size would be mapped anew, and their pages zeroed, at every flush.
        spent_entries: Receiver<(Vec<Entry>, Vec<u32>)>,
        thread: Option<JoinHandle<Result<Chunker<W>, StoreError>>>,
        written: Written,
        tickets: u64,
        bytes: Arc<AtomicU64>,
    },
}

impl Writer<BufWriter<File>> {
    /// Creates (or truncates) the file at `path` and writes the header.
    pub fn create(path: &Path, header: &Header) -> Result<Self, StoreError> {
        let f = File::create(path).map_err(|source| StoreError::Io {
            action: "create",
            path: path.display().to_string(),
            source,
        })?;
        let mut w = Writer::new(BufWriter::with_capacity(1 << 20, f), header)?;
        w.flush()?;
        Ok(w)
    }
}

impl<W: Write> Writer<W> {
    /// Starts a recording on `w`: writes the magic, the format version and the header chunk.
    pub fn new(w: W, header: &Header) -> Result<Self, StoreError> {
        let mut me = Writer {
            out: Out::Here(Chunker {
                w,
                codec: Codec::default(),
                zstd: Compressor::default(),
                payload: Vec::new(),
                out: Vec::new(),
                bytes: Arc::default(),
            }),
            forms: 0,
            sites: 0,
            sources: 0,
            nparams: Vec::new(),
            timelines: HashMap::new(),
            streams: Streams::default(),
            raw: Vec::new(),
            body: Vec::new(),
            held: Arc::default(),
            codec: Codec::default(),
            helper: None,
        };
        let mut p = Vec::new();
        put_str(&mut p, &header.program);
        put_uv(&mut p, header.argv.len() as u64);
        for a in &header.argv {
            put_str(&mut p, a);
        }
        put_str(&mut p, &header.python);
        put_str(&mut p, &header.squall);
        put_uv(&mut p, header.started_unix_ms);
        put_str(&mut p, &header.cwd);
        let mut out = Vec::with_capacity(p.len() + 32);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        put_chunk(&mut out, chunk::HEADER, 0, &p);
        if let Out::Here(c) = &mut me.out {
            c.w.write_all(&out)?;
            c.bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
        }
        Ok(me)
    }

    /// Chooses how later chunk bodies are compressed (default: zstd level 1). For benchmarks and
    /// tests; every reader reads every codec. Call it before [`Writer::in_background`].
    pub fn set_codec(&mut self, codec: Codec) {
        if let Out::Here(c) = &mut self.out {
            c.codec = codec;
            self.codec = codec;
        }
    }

    /// With `true`, the caller encodes and compresses every other ENTRIES chunk of what it hands
    /// over to the background thread itself, at the same time as the thread does the others: for
    /// a caller that would otherwise wait for the thread (a recorder whose program records faster
    /// than the file is written, or the save at its end), the saving goes at the speed of two
    /// threads. `false` (the default) hands everything over, for the background thread alone.
    /// Without a background thread it changes nothing.
    pub fn set_helping(&mut self, help: bool) {
        if !help {
            self.helper = None;
        } else if self.helper.is_none() {
            self.helper = Some(Helper::default());
        }
        self.note_caller();
    }

    /// Gives back the underlying stream without writing the end marker (after flushing it): the
    /// file reads as cut short, as after a crash. For tests and for abandoning a recording.
    pub fn into_inner(mut self) -> Result<W, StoreError> {
        let mut c = self.join()?;
        c.w.flush()?;
        Ok(c.w)
    }

    /// Bytes handed to the underlying stream so far.
    pub fn bytes_written(&self) -> u64 {
        match &self.out {
            Out::Here(c) => c.bytes.load(Ordering::Relaxed),
            Out::Background { bytes, .. } => bytes.load(Ordering::Relaxed),
        }
    }

    /// The background thread's progress ([`Written::wait`] on a [`Writer::flush`]'s ticket);
    /// `None` when chunks are written by the caller.
    pub fn written(&self) -> Option<Written> {
        match &self.out {
            Out::Here(_) => None,
            Out::Background { written, .. } => Some(written.clone()),
        }
    }

    fn emit(&mut self, ty: u8, flags: u8) -> Result<(), StoreError> {
        match &mut self.out {
            Out::Here(c) => {
                let r = c.emit(ty, flags, &self.raw);
                self.note_caller();
                r
            }
            Out::Background { tx, spent, .. } => {
                let mut next = spent.try_recv().unwrap_or_default();
                self.held.sub_queued(next.capacity());
                next.clear();
                let raw = std::mem::replace(&mut self.raw, next);
                let n = raw.capacity();
                self.held.add_queued(n);
                let caller = caller_bytes(&self.raw, &self.body, &self.streams, self.helper.as_mut());
                self.held.caller.store(caller as u64, Ordering::Relaxed);
                if tx.as_ref().is_some_and(|tx| tx.send(Job::Chunk(ty, flags, raw)).is_ok()) {
                    return Ok(());
                }
                self.held.sub_queued(n);
                // The thread stopped at an error: it says which.
                self.join().map(|_| ()).and(Err(StoreError::Usage("the writer's thread stopped".into())))
            }
        }
    }

    /// The bytes this writer's buffers hold now, on both of its threads.
    pub fn held_bytes(&self) -> u64 {
        self.held.bytes()
    }

    /// A handle on [`Writer::held_bytes`] that can be read without the writer (the recorder's
    /// memory limit reads it while another thread uses the writer).
    pub fn held(&self) -> Arc<Held> {
        Arc::clone(&self.held)
    }

    /// Notes what the caller's own buffers hold (and, without a background thread, the
    /// chunker's: the caller compresses then).
    fn note_caller(&mut self) {
        let mut n = caller_bytes(&self.raw, &self.body, &self.streams, self.helper.as_mut());
        if let Out::Here(c) = &mut self.out {
            n += c.held();
        }
        self.held.caller.store(n as u64, Ordering::Relaxed);
    }

    /// Stops the background thread (if any) after everything handed over, and takes its chunker.
    fn join(&mut self) -> Result<Chunker<W>, StoreError> {
        match std::mem::replace(
            &mut self.out,
            Out::Background {
                tx: None,
                spent: sync_channel(0).1,
                spent_entries: sync_channel(0).1,
                thread: None,
                written: Written::default(),
                tickets: 0,
                bytes: Arc::default(),
            },
        ) {
            Out::Here(c) => Ok(c),
            Out::Background { tx, thread, .. } => {
                drop(tx);
                // The thread's buffers and the pooled ones are freed with it and its channels.
                let held = Arc::clone(&self.held);
                let _forget = Defer(move || {
                    held.queued.store(0, Ordering::Relaxed);
                    held.thread.store(0, Ordering::Relaxed);
                });
                match thread.map(JoinHandle::join) {
                    Some(Ok(r)) => r,
                    Some(Err(_)) => Err(StoreError::Usage("the writer's thread panicked".into())),
                    None => Err(StoreError::Usage("the writer was already finished".into())),
                }
            }
        }
    }

    /// Writes the forms and sites registered since the last call (ids are indexes, append-only).
    /// Call it before writing entries that use them.
    pub fn forms(&mut self, forms: &Forms) -> Result<(), StoreError> {
        self.sources(forms)?;
        let all = forms.forms();
        let first_form = self.forms as usize;
        let first_site = self.sites;
        let mut nsites = 0u32;
        while forms.site(first_site + nsites).is_some() {
            nsites += 1;
        }
        if first_form >= all.len() && nsites == 0 {
            return Ok(());
        }
        let new = all.get(first_form..).unwrap_or(&[]);
        let r = &mut self.raw;
        r.clear();
        put_uv(r, first_form as u64);
        put_uv(r, new.len() as u64);
        for f in new {
            put_str(r, &f.ns);
            put_str(r, &f.name);
            put_str(r, &f.file);
            put_uv(r, u64::from(f.line));
            r.push(f.kind as u8);
            put_uv(r, f.params.len() as u64);
            for p in &f.params {
                put_str(r, p);
            }
            self.nparams.push(f.params.len() as u32);
        }
        put_uv(r, u64::from(first_site));
        put_uv(r, u64::from(nsites));
        for i in first_site..first_site + nsites {
            let Some(s) = forms.site(i) else { break };
            put_uv(r, u64::from(s.form));
            r.push(s.kind as u8);
            for v in [s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col] {
                put_uv(r, u64::from(v));
            }
            match &s.symbol {
                None => put_uv(r, 0),
                Some(sym) => {
                    put_uv(r, sym.len() as u64 + 1);
                    r.extend_from_slice(sym.as_bytes());
                }
            }
        }
        self.forms = all.len() as u32;
        self.sites = first_site + nsites;
        if let Out::Background { tx: Some(tx), .. } = &self.out {
            let params = self.nparams[first_form.min(self.nparams.len())..].to_vec();
            if !params.is_empty() {
                let _ = tx.send(Job::Params(params));
            }
        }
        self.emit(chunk::FORMS, 0)?;
        self.site_reads(forms, first_site..first_site + nsites)
    }

    /// Writes the `SiteReads` of the sites `new` (just written) in an optional SITE_READS chunk
    /// (readers that do not know it skip it: their `origin` answers say less).
    fn site_reads(&mut self, forms: &Forms, new: std::ops::Range<u32>) -> Result<(), StoreError> {
        let r = &mut self.raw;
        r.clear();
        let mut n = 0u64;
        let mut body = Vec::new();
        for site in new {
            let Some(reads) = forms.site_reads(site) else { continue };
            n += 1;
            put_uv(&mut body, u64::from(site));
            let c = reads.span;
            for v in [c.line, c.col, c.end_line, c.end_col] {
                put_uv(&mut body, u64::from(v));
            }
            put_uv(&mut body, reads.names.len() as u64);
            for name in &reads.names {
                put_str(&mut body, name);
            }
            match &reads.attr {
                None => put_uv(&mut body, 0),
                Some(a) => {
                    put_uv(&mut body, 1);
                    put_str(&mut body, a);
                }
            }
        }
        if n == 0 {
            return Ok(());
        }
        put_uv(r, n);
        r.extend_from_slice(&body);
        self.emit(chunk::SITE_READS, FLAG_OPTIONAL)
    }

    /// Declares a timeline: once per timeline, before its entries and values.
    pub fn thread(&mut self, meta: &ThreadMeta) -> Result<(), StoreError> {
        if self.timelines.contains_key(&meta.timeline) {
            return Err(StoreError::Usage(format!("timeline {} was declared twice", meta.timeline)));
        }
        self.timelines.insert(meta.timeline, TlState::default());
        let r = &mut self.raw;
        r.clear();
        put_uv(r, u64::from(meta.timeline));
        put_uv(r, u64::from(meta.flow));
        put_uv(r, meta.thread_id);
        put_str(r, &meta.name);
        self.emit(chunk::THREAD, 0)
    }

    fn state(&mut self, timeline: u32) -> Result<&mut TlState, StoreError> {
        self.timelines
            .get_mut(&timeline)
            .ok_or_else(|| StoreError::Usage(format!("timeline {timeline} was not declared with `thread` first")))
    }

    /// Appends entries `first_idx..` and args-arena words `args_first..` of a timeline. Both must
    /// continue exactly where the previous call for that timeline stopped. A call's ret idx (`b`)
    /// is not stored: readers recompute it from the exits.
    pub fn entries(
        &mut self,
        timeline: u32,
        first_idx: u64,
        entries: &[Entry],
        args_first: u64,
        args: &[u32],
    ) -> Result<(), StoreError> {
        let st = self.state(timeline)?;
        if first_idx != st.entries || args_first != st.args {
            return Err(StoreError::Usage(format!(
                "timeline {timeline}: entries must be appended contiguously: expected entry {} and arg {}, got {first_idx} and {args_first}",
                st.entries, st.args
            )));
        }
        if first_idx + entries.len() as u64 >= u64::from(u32::MAX) {
            return Err(StoreError::Usage(format!("timeline {timeline}: more than 2^32-1 entries")));
        }
        st.entries += entries.len() as u64;
        st.args += args.len() as u64;
        if entries.is_empty() && args.is_empty() {
            return Ok(());
        }
        if let Out::Background { tx, spent, spent_entries, .. } = &self.out {
            // Encoded by the writer's thread: the caller only copies them, a chunk's worth per
            // job (the queue's bound then bounds the copies). A helping caller frames every
            // other chunk itself.
            for (idx, piece, args_at, piece_args) in chunk_pieces(first_idx, entries, args_first, args) {
                if let Some(h) = self.helper.as_mut() {
                    h.pieces += 1;
                    if h.pieces % 2 == 0 {
                        let mut out = spent.try_recv().unwrap_or_default();
                        self.held.sub_queued(out.capacity());
                        out.clear();
                        self.raw.clear();
                        encode_entries(
                            &mut self.raw,
                            &mut self.streams,
                            timeline,
                            idx,
                            piece,
                            args_at,
                            piece_args,
                            &self.nparams,
                        );
                        frame(&mut out, &mut h.payload, &mut h.zstd, self.codec, chunk::ENTRIES, 0, &self.raw);
                        let n = out.capacity();
                        self.held.add_queued(n);
                        let caller = caller_bytes(&self.raw, &self.body, &self.streams, Some(h));
                        self.held.caller.store(caller as u64, Ordering::Relaxed);
                        if tx.as_ref().is_none_or(|tx| tx.send(Job::Framed(out)).is_err()) {
                            self.held.sub_queued(n);
                            return self
                                .join()
                                .map(|_| ())
                                .and(Err(StoreError::Usage("the writer's thread stopped".into())));
                        }
                        continue;
                    }
                }
                let (mut e, mut g) = spent_entries.try_recv().unwrap_or_default();
                self.held.sub_queued(entry_buffers_bytes(&e, &g));
                e.clear();
                e.extend_from_slice(piece);
                g.clear();
                g.extend_from_slice(piece_args);
                let n = entry_buffers_bytes(&e, &g);
                self.held.add_queued(n);
                let job = Job::Entries { timeline, first_idx: idx, entries: e, args_first: args_at, args: g };
                if tx.as_ref().is_none_or(|tx| tx.send(job).is_err()) {
                    self.held.sub_queued(n);
                    return self.join().map(|_| ()).and(Err(StoreError::Usage("the writer's thread stopped".into())));
                }
            }
            return Ok(());
        }
        let Out::Here(c) = &mut self.out else { unreachable!("handled above") };
        let r = entry_chunks(
            c,
            &mut self.raw,
            &mut self.streams,
            &self.nparams,
            timeline,
            first_idx,
            entries,
            args_first,
            args,
        );
        self.note_caller();
        r
    }

    /// Appends what `store` (a timeline's value store) holds beyond what was written before:
    /// its new names and nodes. A store only grows, so each call writes its new end.
    pub fn values(&mut self, timeline: u32, store: &ValueStore) -> Result<(), StoreError> {
        let mut unbounded = usize::MAX;
        self.values_within(timeline, store, &mut unbounded).map(|_| ())
    }

    /// [`Writer::values`], handing over about `budget` bytes of encoded nodes at most (at least
    /// one chunk's worth, so each call makes progress), and taking what it handed over from
    /// `budget`. Returns whether every node of `store` is written; the next call goes on where
    /// this one stopped. A caller bounding its memory uses it to hand over a long recording
    /// in pieces, each written before the next is made.
    pub fn values_within(&mut self, timeline: u32, store: &ValueStore, budget: &mut usize) -> Result<bool, StoreError> {
        let st = self.state(timeline)?;
        let (mut node, mut name) = (st.nodes as usize, st.names as usize);
        if node > store.len() || name > store.names_len() {
            return Err(StoreError::Usage(format!(
                "timeline {timeline}: {node} value nodes were written, but the store has {}",
                store.len()
            )));
        }
        // Nodes leave memory only once written (`ValueStore::evict_below`), so the next to
        // write is held: `nodes[k]` is slot `first + k`.
        let first = store.first_held();
        if node < first {
            return Err(StoreError::Usage(format!(
                "timeline {timeline}: {node} value nodes were written, but the store evicted those below {first}"
            )));
        }
        let (nodes, names) = (store.nodes(), store.names());
        let end = first + nodes.len();
        while (node < end || name < names.len()) && *budget > 0 {
            self.raw.clear();
            put_uv(&mut self.raw, u64::from(timeline));
            put_uv(&mut self.raw, name as u64);
            put_uv(&mut self.raw, (names.len() - name) as u64);
            for n in &names[name..] {
                put_str(&mut self.raw, n);
            }
            name = names.len();
            let body = &mut self.body;
            body.clear();
            let start = node;
            while node < end && body.len() < VALUE_BYTES_PER_CHUNK {
                put_node(body, node as u32, &nodes[node - first]);
                node += 1;
            }
            put_uv(&mut self.raw, start as u64);
            put_uv(&mut self.raw, (node - start) as u64);
            self.raw.extend_from_slice(body);
            *budget = budget.saturating_sub(self.raw.len());
            // Written so far (before `emit`, which may fail: the chunk is then lost with the
            // writer, whose error every later call returns).
            let st = self.timelines.get_mut(&timeline).expect("declared: checked above");
            st.nodes = node as u64;
            st.names = name as u64;
            self.emit(chunk::NODES, 0)?;
        }
        self.note_caller();
        Ok(node == end && name == names.len())
    }

    /// How many value nodes of `timeline` were handed over (encoded into chunks): those may
    /// leave memory (`ValueStore::evict_below`).
    pub fn nodes_written(&self, timeline: u32) -> usize {
        self.timelines.get(&timeline).map_or(0, |st| st.nodes as usize)
    }

    /// Writes the source files noted since the last call, in an optional SOURCES chunk (readers
    /// that do not know it skip it: their recordings just cannot verify sources).
    fn sources(&mut self, forms: &Forms) -> Result<(), StoreError> {
        let new = forms.sources().get(self.sources..).unwrap_or(&[]);
        if new.is_empty() {
            return Ok(());
        }
        let r = &mut self.raw;
        r.clear();
        put_uv(r, new.len() as u64);
        for s in new {
            put_str(r, &s.file);
            put_uv(r, s.size);
            r.extend_from_slice(&s.sha256);
        }
        self.sources += new.len();
        self.emit(chunk::SOURCES, FLAG_OPTIONAL)
    }

    /// Appends thread-switch marks of a timeline (`Timeline::switches`: the first idx written after
    /// another thread recorded, and the recorder's global step then), in an optional chunk that
    /// readers without switch support skip. Marks must increase in idx and step and continue after
    /// the ones written before; write a mark only once entries reach past its idx (the recorder
    /// may still change the step of a mark at the timeline's end).
    pub fn switches(&mut self, timeline: u32, marks: &[(u32, u64)]) -> Result<(), StoreError> {
        let st = self.state(timeline)?;
        let mut last = st.last_switch;
        for &m in marks {
            if last.is_some_and(|l| m.0 <= l.0 || m.1 <= l.1) {
                return Err(StoreError::Usage(format!(
                    "timeline {timeline}: switch marks must increase in idx and step: {m:?} after {last:?}"
                )));
            }
            last = Some(m);
        }
        if marks.is_empty() {
            return Ok(());
        }
        st.last_switch = last;
        let r = &mut self.raw;
        r.clear();
        put_uv(r, u64::from(timeline));
        put_uv(r, marks.len() as u64);
        let (mut pi, mut ps) = (0u64, 0u64);
        for &(idx, step) in marks {
            // Deltas from the previous mark of this chunk (the first from 0): small varints.
            put_uv(r, u64::from(idx) - pi);
            put_uv(r, step - ps);
            (pi, ps) = (u64::from(idx), step);
        }
        self.emit(chunk::SWITCHES, FLAG_OPTIONAL)
    }

    /// Appends the chunks of `outputs` not saved yet (they are saved from now on), in an optional
    /// OUTPUTS chunk. Call it after the entries they are linked to.
    pub fn outputs(&mut self, outputs: &mut Outputs) -> Result<(), StoreError> {
        let not_kept = outputs.not_kept();
        let new = outputs.take_unsaved();
        if new.is_empty() {
            return Ok(());
        }
        self.raw.clear();
        put_outputs(&mut self.raw, new, not_kept);
        self.emit(chunk::OUTPUTS, FLAG_OPTIONAL)
    }

    /// Hands everything written so far to the OS: it survives the process being killed (not a
    /// power loss: there is no fsync).
    /// With a background thread, returns a ticket for [`Written::wait`]: the flush is done once
    /// the thread reaches it.
    pub fn flush(&mut self) -> Result<u64, StoreError> {
        match &mut self.out {
            Out::Here(c) => {
                c.w.flush()?;
                Ok(0)
            }
            Out::Background { tx, tickets, .. } => {
                *tickets += 1;
                let ticket = *tickets;
                if tx.as_ref().is_some_and(|tx| tx.send(Job::Flush(ticket)).is_ok()) {
                    return Ok(ticket);
                }
                self.join().map(|_| 0).and(Err(StoreError::Usage("the writer's thread stopped".into())))
            }
        }
    }

    /// Writes the end marker (the recording completed) with the recorder's closing statistics,
    /// flushes, and returns the underlying stream.
    pub fn finish(mut self, ended_unix_ms: u64, stats: &[(String, u64)]) -> Result<W, StoreError> {
        let r = &mut self.raw;
        r.clear();
        put_uv(r, ended_unix_ms);
        put_uv(r, stats.len() as u64);
        for (k, v) in stats {
            put_str(r, k);
            put_uv(r, *v);
        }
        self.emit(chunk::END, 0)?;
        let mut c = self.join()?;
        c.w.flush()?;
        Ok(c.w)
    }
}

/// Encodes entries (and their args) into ENTRIES chunks of at most `ENTRIES_PER_CHUNK` entries.
#[allow(clippy::too_many_arguments)]
fn entry_chunks<W: Write>(
    c: &mut Chunker<W>,
    raw: &mut Vec<u8>,
    streams: &mut Streams,
    nparams: &[u32],
    timeline: u32,
    first_idx: u64,
    entries: &[Entry],
    args_first: u64,
    args: &[u32],
) -> Result<(), StoreError> {
    for (idx, e, args_at, g) in chunk_pieces(first_idx, entries, args_first, args) {
        raw.clear();
        encode_entries(raw, streams, timeline, idx, e, args_at, g, nparams);
        c.emit(chunk::ENTRIES, 0, raw)?;
    }
    Ok(())
}

/// How entries `first_idx..` and their args `args_first..` are cut into ENTRIES chunks: at most
/// `ENTRIES_PER_CHUNK` entries each (at least one chunk), the args shared out evenly. Each
/// piece: its first idx, its entries, its first arg's offset, its args.
fn chunk_pieces<'a>(
    first_idx: u64,
    entries: &'a [Entry],
    args_first: u64,
    args: &'a [u32],
) -> impl Iterator<Item = (u64, &'a [Entry], u64, &'a [u32])> {
    let nchunks = entries.len().div_ceil(ENTRIES_PER_CHUNK).max(1);
    let args_per = args.len().div_ceil(nchunks);
    (0..nchunks).map(move |k| {
        let lo = (k * ENTRIES_PER_CHUNK).min(entries.len());
        let hi = ((k + 1) * ENTRIES_PER_CHUNK).min(entries.len());
        let a = (k * args_per).min(args.len());
        let b = (a + args_per).min(args.len());
        (first_idx + (k * ENTRIES_PER_CHUNK) as u64, &entries[lo..hi], args_first + a as u64, &args[a..b])
    })
}

impl<W: Write + Send + 'static> Writer<W> {
    /// From now on, chunk bodies are compressed and written by a thread of this writer's own.
    /// Errors it meets are returned by the next call (and by [`Writer::finish`]).
    pub fn in_background(mut self) -> Result<Self, StoreError> {
        self.start_background()?;
        Ok(self)
    }

    /// Stops the background thread once it wrote everything handed over; chunks are then
    /// written by the caller until [`Writer::resume`] (a process about to fork stops its threads).
    pub fn pause(&mut self) -> Result<(), StoreError> {
        if let Out::Background { .. } = self.out {
            let c = self.join()?;
            self.out = Out::Here(c);
        }
        Ok(())
    }

    /// Starts a background thread again after [`Writer::pause`].
    pub fn resume(&mut self) -> Result<(), StoreError> {
        match self.out {
            Out::Here(_) => self.start_background(),
            Out::Background { .. } => Ok(()),
        }
    }

    fn start_background(&mut self) -> Result<(), StoreError> {
        let mut c = self.join()?;
        let (tx, rx) = sync_channel::<Job>(QUEUED_CHUNKS);
        let (spent_tx, spent) = sync_channel::<Vec<u8>>(POOLED_BUFFERS);
        let (spent_entries_tx, spent_entries) = sync_channel::<(Vec<Entry>, Vec<u32>)>(POOLED_BUFFERS);
        let held = Arc::clone(&self.held);
        let written = Written::default();
        let bytes = c.bytes.clone();
        let progress = written.clone();
        let mut nparams = self.nparams.clone();
        let thread =
            squall_trace::quiet_thread::spawn(std::thread::Builder::new().name("squall-writer".into()), move || {
                let _unwinding = FailWhenUnwinding(progress.clone());
                let (mut raw, mut streams) = (Vec::new(), Streams::default());
                for job in rx {
                    let r = match job {
                        Job::Entries { timeline, first_idx, entries, args_first, args } => {
                            let r = entry_chunks(
                                &mut c,
                                &mut raw,
                                &mut streams,
                                &nparams,
                                timeline,
                                first_idx,
                                &entries,
                                args_first,
                                &args,
                            );
                            let n = entry_buffers_bytes(&entries, &args);
                            if spent_entries_tx.try_send((entries, args)).is_err() {
                                held.sub_queued(n);
                            }
                            r
                        }
                        Job::Params(more) => {
                            nparams.extend_from_slice(&more);
                            Ok(())
                        }
                        Job::Framed(out) => {
                            let r = c.w.write_all(&out).map_err(StoreError::from);
                            if r.is_ok() {
                                c.bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
                            }
                            let n = out.capacity();
                            if spent_tx.try_send(out).is_err() {
                                held.sub_queued(n);
                            }
                            r
                        }
                        Job::Chunk(ty, flags, raw) => {
                            let r = c.emit(ty, flags, &raw);
                            let n = raw.capacity();
                            if spent_tx.try_send(raw).is_err() {
                                held.sub_queued(n);
                            }
                            r
                        }
                        Job::Flush(ticket) => {
                            let r = c.w.flush().map_err(StoreError::from);
                            progress.set(|p| p.flushed = ticket);
                            give_back_freed_memory();
                            r
                        }
                    };
                    held.thread.store((raw.capacity() + streams.held() + c.held()) as u64, Ordering::Relaxed);
                    if let Err(e) = r {
                        progress.set(|p| p.failed = Some(e.to_string()));
                        return Err(e);
                    }
                }
                Ok(c)
            })
            .map_err(|e| StoreError::Usage(format!("cannot start the writer's thread: {e}")))?;
        self.out =
            Out::Background { tx: Some(tx), spent, spent_entries, thread: Some(thread), written, tickets: 0, bytes };
        Ok(())
    }
}
