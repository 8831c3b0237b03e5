//! Streaming the live recording to a file while the program runs.
//!
//! A background thread (a Rust thread: the program's `threading` sees nothing of it) takes the
//! GIL every half second and appends what was recorded since the last flush: new forms, new
//! thread timelines, entries, args, and the new nodes of each value store (values were encoded
//! when recorded: a flush reads only squall's own data and runs no Python code). A flush runs
//! whole under the GIL, so `close_sink` never sees one half done. A program killed at any moment
//! leaves a file readable up to the last flush. `close` flushes the rest and writes the end
//! marker.
//!
//! A flush hands over passes of at most a 32nd of the memory limit (`pass_bytes`), each written
//! with the GIL released before the next is made; the memory limit counts the writer's buffers
//! (`Engine::writer_bytes`). docs/DESIGN.md, "Memory: what the limit counts".

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use squall_store::{Header, Held, ThreadMeta, Writer, Written};

use crate::gil_cell::GilCell;
use crate::recorder::engine::{Engine, ThreadRec, ENGINE};

#[derive(Default, Clone, Copy)]
struct Flushed {
    thread_written: bool,
    entries: usize,
    args: usize,
    /// Args that belong to saved entries only (the args' length when every entry was saved):
    /// the args evicted go no further, whatever the args saved.
    args_evictable: usize,
    /// Switch marks written (see `Timeline::switches`), and the last one.
    switches: usize,
    last_switch: Option<(u32, u64)>,
}

struct Sink {
    writer: Option<Writer<BufWriter<File>>>,
    path: PathBuf,
    flushed: Vec<Flushed>,
    error: Option<String>,
    stop: Stop,
    flusher: Option<JoinHandle<()>>,
    /// The process writing the file: a child made by `os.fork()` inherits the sink (its file
    /// descriptor, not its flusher thread) and must not write into the parent's file.
    pid: u32,
    /// Entries a timeline keeps in memory once they are saved (`open_sink`'s `memory_window`);
    /// `None`: all of them, up to half the memory limit.
    window: Option<usize>,
    /// Per timeline, how many entries and value nodes it had at each flush, oldest first: the
    /// nodes stored before its first entry in memory was recorded were made for entries that
    /// left (entries in memory may still name some: `evict_saved`).
    marks: Vec<VecDeque<(usize, usize)>>,
}

static SINK: GilCell<Option<Sink>> = GilCell::new(None);
static FLUSHER_RUNNING: AtomicBool = AtomicBool::new(false);

pub const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// How often the flusher looks while the recordings hold half the memory limit or more
/// (`PAST_HALF`): a program that records faster than the writer saves must not fill its tables
/// past their room between two looks (at a billion bytes of entries a second, 20 MB).
const FLUSH_EVERY_PAST_HALF: Duration = Duration::from_millis(20);
/// Whether the recordings were last found at half the memory limit or more (by a flush, or by
/// the recorder's memory check: `past_half`).
static PAST_HALF: AtomicBool = AtomicBool::new(false);
/// The running flusher's wake-up (its stop flag's condition variable).
static FLUSHER_WAKE: Mutex<Option<Stop>> = Mutex::new(None);

/// The recorder's memory check found the recordings at half the memory limit or more while
/// saving: the flusher looks now (once: then every `FLUSH_EVERY_PAST_HALF`, while its flushes
/// find the recordings there). Never blocks (the recording thread calls it).
fn past_half() {
    if PAST_HALF.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Ok(wake) = FLUSHER_WAKE.try_lock() {
        if let Some(stop) = wake.as_ref() {
            stop.1.notify_one();
        }
    }
}

/// What one flush pass hands to the writer at most (entries copied plus value nodes encoded),
/// as a share of the memory limit: a second to record a lot costs a few passes, each written
/// before the next is made, instead of one copy of it all in the writer's queue (which held 40%
/// of a 128 MiB limit, uncounted, and RSS went 1.66x past the limit while saving).
fn pass_bytes(limit: Option<u64>) -> usize {
    limit.map_or(MAX_PASS_BYTES, |l| (l / 32) as usize).clamp(MIN_PASS_BYTES, MAX_PASS_BYTES)
}
const MIN_PASS_BYTES: usize = 1 << 20;
const MAX_PASS_BYTES: usize = 16 << 20;
/// Passes `close_sink` makes before it hands the rest over whole.
const MAX_CLOSING_PASSES: usize = 10_000;

/// The writer's buffers, counted by the memory limit (`Engine::bytes`) while saving.
fn set_writer_held(held: Option<Arc<Held>>) {
    // SAFETY: GIL held (every caller is a pyfunction of this module); no other reference to
    // ENGINE is alive in them at these points.
    let eng = unsafe { ENGINE.get() };
    eng.writer_held = held;
    eng.writer_reserve = writer_reserve(eng.limits.memory_limit);
}

/// The most the writer's buffers hold, counted by the memory limit while saving (when they
/// hold less): a pass (`pass_bytes`) queued, and the chunks' buffers of both of its threads.
fn writer_reserve(limit: Option<u64>) -> u64 {
    (pass_bytes(limit) + WRITER_BUFFERS) as u64
}
/// The writer's buffers besides a pass, measured (`Held::parts` sampled every 5 ms, 128 MiB
/// limit, 4 MiB passes): at most 15.6 MiB (the caller's chunk buffers 3 MiB, pooled chunks 2 MiB
/// and what is queued past the pass, the writer thread's chunk, compression buffers and zstd
/// context 7.3 MiB).
const WRITER_BUFFERS: usize = 16 << 20;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Starts streaming to `path` (created or truncated).
#[pyfunction]
#[pyo3(signature = (path, program, argv, python, squall, cwd, memory_window=None))]
pub fn open_sink(
    path: PathBuf,
    program: String,
    argv: Vec<String>,
    python: String,
    squall: String,
    cwd: String,
    memory_window: Option<u64>,
) -> PyResult<()> {
    // SAFETY: GIL held (pyfunction).
    let slot = unsafe { SINK.get() };
    if slot.is_some() {
        return Err(PyRuntimeError::new_err("squall is already saving a recording; close it first"));
    }
    let header = Header { program, argv, python, squall, started_unix_ms: now_ms(), cwd };
    let writer = Writer::create(&path, &header)
        .and_then(Writer::in_background)
        .map_err(|e| PyOSError::new_err(format!("cannot write the recording to `{}`: {e}", path.display())))?;
    let (stop, flusher) = spawn_flusher()?;
    set_writer_held(Some(writer.held()));
    FLUSHER_RUNNING.store(true, Ordering::Relaxed);
    crate::recorder::bigalloc::start_prefaulter();
    *slot = Some(Sink {
        writer: Some(writer),
        path,
        flushed: Vec::new(),
        error: None,
        stop,
        flusher: Some(flusher),
        pid: std::process::id(),
        window: memory_window.map(|b| (b as usize / std::mem::size_of::<squall_trace::Entry>()).max(1)),
        marks: Vec::new(),
    });
    Ok(())
}

type Stop = Arc<(Mutex<bool>, Condvar)>;

fn spawn_flusher() -> PyResult<(Stop, JoinHandle<()>)> {
    let stop: Stop = Arc::new((Mutex::new(false), Condvar::new()));
    crate::recorder::engine::set_past_half_hook(past_half);
    if let Ok(mut wake) = FLUSHER_WAKE.lock() {
        *wake = Some(Arc::clone(&stop));
    }
    let flusher = {
        let stop = Arc::clone(&stop);
        squall_trace::quiet_thread::spawn(std::thread::Builder::new().name("squall-flusher".into()), move || {
            flusher_loop(&stop)
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start squall's flusher thread: {e}")))?
    };
    Ok((stop, flusher))
}

/// Tells the flusher to stop and waits for it, with the GIL released (it may be waiting for it).
/// The sink must be out of `SINK` meanwhile: a flush the flusher starts then finds nothing.
fn stop_flusher(py: Python<'_>, stop: &Stop, handle: JoinHandle<()>) {
    {
        let (lock, cv) = &**stop;
        if let Ok(mut stopped) = lock.lock() {
            *stopped = true;
        }
        cv.notify_all();
    }
    py.detach(|| {
        let _ = handle.join();
    });
}

/// Before `os.fork()`: the flusher stops, so that the process forks with the program's threads
/// only (3.12+ warns at a fork with other threads running, a DeprecationWarning the program
/// would not get without squall). [`resume_flusher`] starts it again in the parent.
#[pyfunction]
pub fn pause_flusher(py: Python<'_>) {
    // The prefault thread and the writer's stop too: the fork then has the program's threads
    // only, and no lock of theirs held.
    py.detach(crate::recorder::bigalloc::stop_prefaulter);
    // SAFETY: GIL held (pyfunction).
    let slot = unsafe { SINK.get() };
    let Some(mut sink) = slot.take() else { return };
    if let (Some(handle), true) = (sink.flusher.take(), sink.pid == std::process::id()) {
        stop_flusher(py, &sink.stop, handle);
    }
    if sink.pid == std::process::id() {
        let paused = match sink.writer.as_mut() {
            Some(w) => py.detach(|| w.pause()),
            None => Ok(()),
        };
        if let Err(e) = paused {
            stop_saving(&mut sink, &e);
        }
    }
    // SAFETY: GIL held again; nothing else opens a sink while a fork is being prepared.
    *unsafe { SINK.get() } = Some(sink);
}

/// After `os.fork()`, in the parent: the flusher paused by [`pause_flusher`] starts again, once
/// `os.fork()` has returned (3.13 counts the process's threads after the fork hooks ran).
#[pyfunction]
pub fn resume_flusher() {
    // SAFETY: GIL held (pyfunction); the call runs later in the main thread, with the GIL.
    unsafe { pyo3::ffi::Py_AddPendingCall(Some(restart_flusher), std::ptr::null_mut()) };
}

extern "C" fn restart_flusher(_: *mut std::os::raw::c_void) -> std::os::raw::c_int {
    // SAFETY: a pending call: main thread, GIL held.
    let Some(sink) = unsafe { SINK.get() }.as_mut() else { return 0 };
    if sink.flusher.is_some() || sink.pid != std::process::id() || sink.error.is_some() {
        return 0;
    }
    crate::recorder::bigalloc::start_prefaulter();
    if let Some(Err(e)) = sink.writer.as_mut().map(|w| w.resume()) {
        stop_saving(sink, &e);
        return 0;
    }
    match spawn_flusher() {
        Ok((stop, flusher)) => {
            sink.stop = stop;
            sink.flusher = Some(flusher);
        }
        Err(_) => {
            let msg = format!(
                "squall: saving the recording to `{}` failed (its flusher thread could not start again after a fork); it stops here",
                sink.path.display()
            );
            eprintln!("{msg}");
            sink.error = Some(msg);
        }
    }
    0
}

struct Defer<F: FnMut()>(F);
impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn flusher_loop(stop: &(Mutex<bool>, Condvar)) {
    let (lock, cv) = stop;
    // Whether the last pass left something to hand over: the next one starts at once.
    let mut more = false;
    loop {
        let Ok(guard) = lock.lock() else { return };
        let guard = if more {
            guard
        } else {
            let every = if PAST_HALF.load(Ordering::Relaxed) { FLUSH_EVERY_PAST_HALF } else { FLUSH_EVERY };
            let Ok((guard, _)) = cv.wait_timeout(guard, every) else { return };
            guard
        };
        if *guard {
            return;
        }
        drop(guard);
        if interpreter_gone() {
            // The program's exit did not close the sink (no atexit handlers ran): attaching now
            // would panic or hang. The file stays cut at the last flush.
            return;
        }
        // SAFETY of the flush: it runs with the GIL held, like every other engine access. A panic
        // must not end the flusher (memory would then grow unbounded): it ends the saving,
        // reported like any other saving error.
        let written = Python::attach(|py| {
            let t0 = std::time::Instant::now();
            let _report = Defer(move || {
                if std::env::var_os("SQUALL_DEBUG_PAUSES").is_some() && t0.elapsed().as_millis() > 30 {
                    eprintln!("squall flush: {} ms", t0.elapsed().as_millis());
                }
            });
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| catch_up(py))) {
                Ok(pass) => pass,
                Err(_) => {
                    // SAFETY: inside `Python::attach` (GIL held); the reference `flush_now` took
                    // was dropped by the unwinding that brought us here.
                    if let Some(sink) = unsafe { SINK.get() }.as_mut() {
                        if sink.error.is_none() {
                            let msg = format!(
                                "squall: saving the recording to `{}` failed (internal error); it stops here",
                                sink.path.display()
                            );
                            eprintln!("{msg}");
                            sink.error = Some(msg);
                        }
                    }
                    None
                }
            }
        });
        // The writer's thread compresses and writes what the flush handed over, without the
        // GIL; the next flush starts once it is on disk, so a killed program loses at most the
        // last half second, as before.
        more = written.as_ref().is_some_and(|p| p.more);
        if let Some(Pass { written, ticket, .. }) = written {
            written.wait(ticket);
            if let Some(e) = written.failed() {
                // SAFETY: GIL held inside `attach`.
                Python::attach(|_py| {
                    // SAFETY: GIL held inside `attach`; no other reference from SINK is alive on
                    // this thread.
                    if let Some(sink) = unsafe { SINK.get() }.as_mut() {
                        stop_saving(sink, &e);
                    }
                });
            }
        }
    }
}

#[cfg(not(Py_3_13))]
extern "C" {
    fn _Py_IsFinalizing() -> std::os::raw::c_int;
}

/// True once the interpreter is being finalized, or was: no thread may attach to it then.
fn interpreter_gone() -> bool {
    // SAFETY: both read the runtime's state and need no attached thread (`sys.is_finalizing`).
    unsafe {
        if pyo3::ffi::Py_IsInitialized() == 0 {
            return true;
        }
        #[cfg(Py_3_13)]
        let finalizing = pyo3::ffi::Py_IsFinalizing();
        #[cfg(not(Py_3_13))]
        let finalizing = _Py_IsFinalizing();
        finalizing != 0
    }
}

/// A pass handed to the writer: what to wait on for it to be written (the writer's thread and
/// the pass's ticket), whether more is left for another pass, and whether the program must wait
/// for the writer (`behind`).
struct Pass {
    written: Written,
    ticket: u64,
    more: bool,
    behind: bool,
}

/// Appends what was recorded since the last flush, a pass's worth at most (`pass_bytes`);
/// with `help`, this thread encodes and compresses every other chunk of the pass while the
/// writer's thread does the others (`Writer::set_helping`: it would wait for that thread
/// anyway). Errors are kept and reported at close; the program is never disturbed.
fn flush_now(_py: Python<'_>, help: bool) -> Option<Pass> {
    // SAFETY: GIL held.
    let sink = (unsafe { SINK.get() }).as_mut()?;
    if sink.error.is_some() || sink.pid != std::process::id() {
        return None;
    }
    // SAFETY: GIL held (`py`); the SINK reference above and this one are different cells.
    let eng = unsafe { ENGINE.get() };
    let budget = pass_bytes(eng.limits.memory_limit);
    eng.writer_reserve = writer_reserve(eng.limits.memory_limit);
    if let Some(w) = sink.writer.as_mut() {
        w.set_helping(help);
    }
    match flush_into(sink, eng, budget) {
        Ok((ticket, more)) => {
            // `behind` first: it also notes whether the recordings are past half the limit.
            let behind = behind(sink, eng) && more;
            Some(Pass { written: sink.writer.as_ref()?.written()?, ticket, more, behind })
        }
        Err(e) => {
            stop_saving(sink, &e);
            None
        }
    }
}

/// A flush by the flusher: a pass, or while the writer is behind (`behind`) passes written one
/// after the other with the GIL kept, so that the program waits for the writer instead of its
/// recording stopping at the memory limit with entries that were only waiting to be saved
/// (unpack_sequence records 66 M entries a second, the writer saves ~30 M: docs/benchmarks.md,
/// "Fifteenth session"). The program's threads wait at their next bytecode, as for any thread
/// holding the GIL; the flush reads only squall's own data. While the program waits, this
/// thread helps the writer's (`flush_now`'s `help`): with the program stopped, a core is free.
fn catch_up(py: Python<'_>) -> Option<Pass> {
    let mut pass = flush_now(py, false)?;
    while pass.behind && pass.written.failed().is_none() {
        pass.written.wait(pass.ticket);
        pass = flush_now(py, true)?;
    }
    Some(pass)
}

/// Whether the recordings hold half the memory limit or more (`evict_saved` then makes room by
/// evicting saved entries) while entries and args not handed to the writer yet take an eighth
/// of it: the program records faster than the writer saves, and waits for it (`catch_up`).
/// Below that backlog the program and the writer run side by side.
fn behind(sink: &Sink, eng: &Engine) -> bool {
    let Some(limit) = eng.limits.memory_limit else { return false };
    let past_half = eng.bytes() >= limit / 2;
    PAST_HALF.store(past_half, Ordering::Relaxed);
    if !past_half {
        return false;
    }
    let unsaved: u64 = eng
        .recs
        .iter()
        .enumerate()
        .filter_map(|(number, rec)| Some((sink.flushed.get(number).copied().unwrap_or_default(), rec.as_deref()?)))
        .map(|(done, rec)| {
            let entries = rec.tl.len().saturating_sub(done.entries) * std::mem::size_of::<squall_trace::Entry>();
            let args = rec.tl.args_len().saturating_sub(done.args) * std::mem::size_of::<u32>();
            (entries + args) as u64
        })
        .sum();
    unsaved >= limit / 8
}

/// Saving failed with `e`: says so once, on stderr, and keeps it for the summary.
fn stop_saving(sink: &mut Sink, e: &dyn std::fmt::Display) {
    if sink.error.is_none() {
        let msg = format!("squall: saving the recording to `{}` failed ({e}); it stops here", sink.path.display());
        eprintln!("{msg}");
        sink.error = Some(msg);
    }
}

/// Hands what was recorded since the last flush to the writer, about `budget` bytes at most
/// (entries copied and value nodes encoded; at least one chunk's worth, so each pass makes
/// progress); returns the flush's ticket and whether more is left.
fn flush_into(sink: &mut Sink, eng: &mut Engine, budget: usize) -> Result<(u64, bool), squall_store::StoreError> {
    let Some(writer) = sink.writer.as_mut() else { return Ok((0, false)) };
    let mut budget = budget;
    let mut more = false;
    writer.forms(&eng.forms)?;
    for number in 0..eng.recs.len() {
        let Some(rec) = eng.recs.get_mut(number).and_then(|r| r.as_deref_mut()) else { continue };
        if sink.flushed.len() <= number {
            sink.flushed.resize(number + 1, Flushed::default());
        }
        let done = &mut sink.flushed[number];
        if !done.thread_written {
            writer.thread(&ThreadMeta {
                timeline: number as u32,
                flow: rec.flow,
                thread_id: rec.thread_id,
                name: rec.name.clone(),
            })?;
            done.thread_written = true;
        }
        // Idxs are absolute: entries before `first_idx()` (and args before `args_len() -
        // args().len()`) were evicted after an earlier flush, which had saved them.
        let entries = rec.tl.entries();
        let args = rec.tl.args();
        let (first, len) = (rec.tl.first_idx(), rec.tl.len());
        let (args_first, args_len) = (rec.tl.args_len() - args.len(), rec.tl.args_len());
        if (len > done.entries || args_len > done.args) && budget > 0 {
            // The args (a stream of their own in the file, small next to the entries) are
            // handed over whole; the entries as far as the budget goes.
            let n = (len - done.entries).min(budget / std::mem::size_of::<squall_trace::Entry>()).max(1);
            let n = n.min(len - done.entries);
            let m = args_len - done.args;
            let from = done.entries - first;
            let args_from = done.args - args_first;
            writer.entries(
                number as u32,
                done.entries as u64,
                &entries[from..from + n],
                done.args as u64,
                &args[args_from..args_from + m],
            )?;
            budget = budget.saturating_sub(n * std::mem::size_of::<squall_trace::Entry>() + m * 4);
            done.entries += n;
            done.args += m;
            if done.entries == len {
                // Every arg recorded so far belongs to a saved entry.
                done.args_evictable = args_len;
            }
        }
        more |= done.entries < len || done.args < args_len;
        // Thread-switch marks (an optional chunk): only those entries were written after, since
        // the recorder may still change the step of a mark at the timeline's end.
        let marks = rec.tl.switches();
        if marks.len() > done.switches {
            let new: Vec<(u32, u64)> = marks[done.switches..]
                .iter()
                .copied()
                .take_while(|m| (m.0 as usize) < done.entries)
                .filter(|m| done.last_switch.is_none_or(|l| m.0 > l.0 && m.1 > l.1))
                .collect();
            let taken = marks[done.switches..].iter().take_while(|m| (m.0 as usize) < done.entries).count();
            writer.switches(number as u32, &new)?;
            done.switches += taken;
            done.last_switch = new.last().copied().or(done.last_switch);
        }
        more |= !writer.values_within(number as u32, &rec.values, &mut budget)?;
    }
    // After the entries: every output chunk is linked to an entry written before it (so, only
    // once every entry recorded is handed over).
    if !more {
        // SAFETY: GIL held (every flush runs under it).
        writer.outputs(unsafe { crate::recorder::outputs::OUTPUTS.get() })?;
    }
    let ticket = writer.flush()?;
    evict_saved(sink, eng);
    Ok((ticket, more))
}

/// Entries and args already saved leave memory: the recording goes on in the file, and live
/// queries answer for what is still in memory (and say so for the rest; call counts and
/// exceptions stay whole: `Timeline::evict_before`). This is what keeps a long run's memory
/// bounded while it is saved.
///
/// - With a window (`open_sink`'s `memory_window`, which `squall run` gives when nothing will
///   query the live recording after the run but its summary): a timeline holding more entries
///   than the window evicts those saved. Its table stays about the window's size, its pages
///   reused: a long run's entries no longer cost fresh pages the kernel must zero, and the
///   recording's memory stays near its values' (nbody saved: 2.0 -> 1.1 GB peak, work 0.88x;
///   docs/benchmarks.md, "Twentieth session").
/// - Without one, over half the memory limit. A timeline's tables keep their capacity when
///   entries leave (the next entries reuse those pages instead of fresh ones), so the count
///   stays over half the limit once there: a table is evicted from when it is three quarters
///   full, as it was when the count reached half the limit and the table shrank: live queries
///   keep a window of up to three quarters of the table.
///
/// Value nodes follow their entries out: those saved and stored before the first entry still in
/// memory was recorded (`Sink::marks` bounds them from below), once they are at least a quarter
/// of those held. Entries in memory may still name such a node (an unchanged value's node
/// reused, a list's changes against an earlier full state): the file has it, and live queries
/// show it as in the file. The recorder reads an evicted node as unknown and encodes the value
/// afresh. The exceptions carried from evicted entries keep their texts first.
fn evict_saved(sink: &mut Sink, eng: &mut Engine) {
    if sink.marks.len() < eng.recs.len() {
        sink.marks.resize_with(eng.recs.len(), Default::default);
    }
    for (rec, marks) in eng.recs.iter().zip(&mut sink.marks) {
        if let Some(rec) = rec.as_deref() {
            if marks.back().is_none_or(|&(e, n)| e < rec.tl.len() || n < rec.values.len()) {
                if marks.len() >= MAX_MARKS {
                    // Thinned, not dropped: the oldest still bounds the first entries' nodes.
                    let mut k = 0;
                    marks.retain(|_| {
                        k += 1;
                        k % 2 == 1
                    });
                }
                marks.push_back((rec.tl.len(), rec.values.len()));
            }
        }
    }
    let past_half = eng.limits.memory_limit.is_some_and(|limit| eng.bytes() >= limit / 2);
    if !past_half && sink.window.is_none() {
        return;
    }
    for (number, rec) in eng.recs.iter_mut().enumerate() {
        let Some(rec) = rec.as_deref_mut() else { continue };
        if let (Some(marks), Some(writer)) = (sink.marks.get_mut(number), sink.writer.as_ref()) {
            evict_saved_nodes(rec, marks, writer.nodes_written(number as u32));
        }
        if let Some(done) = sink.flushed.get(number) {
            let held = rec.tl.len() - rec.tl.first_idx();
            let full = match sink.window {
                Some(window) if !past_half => held >= window,
                _ => held >= rec.tl.capacity() / 4 * 3,
            };
            if !full {
                continue;
            }
            // Evicting moves the entries not saved yet to the front: done when at least as
            // many are saved, so that a backlog handed over in many passes is not moved at each.
            let saved = done.entries.saturating_sub(rec.tl.first_idx());
            if saved > 0 && saved >= rec.tl.len() - done.entries {
                rec.tl.evict_before(done.entries, done.args_evictable, Some(&rec.values));
            }
        }
    }
}

/// The most marks a timeline keeps (`Sink::marks`; a flush every 20 ms past half the limit
/// with no entry leaving would add one each).
const MAX_MARKS: usize = 4096;

/// Evicts `rec`'s value nodes that are saved (below `written`) and older than its first entry
/// in memory (by `marks`, whose older marks it drops), when they are at least a quarter of the
/// nodes held (each eviction moves the rest to the front of the table).
fn evict_saved_nodes(rec: &mut ThreadRec, marks: &mut VecDeque<(usize, usize)>, written: usize) {
    let first_entry = rec.tl.first_idx();
    let newest_before = marks.partition_point(|&(e, _)| e <= first_entry);
    let Some(k) = newest_before.checked_sub(1) else { return };
    marks.drain(..k);
    let bound = marks[0].1.min(written);
    let (held_from, len) = (rec.values.first_held(), rec.values.len());
    // More written than stored: the recordings were cleared under the sink (whose writer then
    // refuses this store): nothing here is known to be saved.
    if written > len || bound <= held_from || (bound - held_from) * 4 < len - held_from {
        return;
    }
    rec.tl.keep_exception_texts(&rec.values, bound as u32);
    rec.values.evict_below(bound);
}

/// Flushes now (also done every half second by the flusher): returns once it is written.
#[pyfunction]
pub fn flush_sink(py: Python<'_>) {
    // Pass after pass until everything is handed over (each written before the next: the
    // writer holds one pass at most).
    while let Some(Pass { written, ticket, more, .. }) = flush_now(py, false) {
        py.detach(|| written.wait(ticket));
        if !more {
            break;
        }
    }
}

/// The file being written, if any.
#[pyfunction]
pub fn sink_path() -> Option<PathBuf> {
    // SAFETY: GIL held (pyfunction).
    unsafe { SINK.get() }.as_ref().map(|s| s.path.clone())
}

/// Stops the flusher, flushes the rest and writes the end marker with `stats`. Returns the path
/// written. An error met while saving is raised here, with the path. The `entries` stat is
/// replaced by the number of entries the file holds: `stats` were taken before the close, and
/// threads still recording while it waits for the flusher add entries the last flush saves.
#[pyfunction]
#[pyo3(signature = (stats))]
pub fn close_sink(py: Python<'_>, mut stats: Vec<(String, u64)>) -> PyResult<Option<PathBuf>> {
    // SAFETY: GIL held (pyfunction).
    let Some(mut sink) = (unsafe { SINK.get() }).take() else { return Ok(None) };
    if sink.pid != std::process::id() {
        // A forked child: the flusher thread is the parent's (joining it here panicked) and so
        // is the file (writing the rest and an end marker into it would corrupt it). Leave both.
        std::mem::forget(sink.flusher.take());
        std::mem::forget(sink.writer.take());
        set_writer_held(None);
        return Err(PyOSError::new_err(format!(
            "this process (pid {}) is a fork of the one saving the recording to `{}` (pid {}): what it recorded \
             is not saved",
            std::process::id(),
            sink.path.display(),
            sink.pid
        )));
    }
    if let Some(handle) = sink.flusher.take() {
        stop_flusher(py, &sink.stop, handle);
    }
    FLUSHER_RUNNING.store(false, Ordering::Relaxed);
    py.detach(crate::recorder::bigalloc::stop_prefaulter);
    if sink.error.is_none() {
        // Pass after pass, each written (with the GIL released) before the next is made: the
        // rest of a long recording is not copied into the writer's queue all at once. The
        // program is done: this thread encodes every other chunk while the writer's does the
        // others.
        if let Some(w) = sink.writer.as_mut() {
            w.set_helping(true);
        }
        let mut passes = 0;
        loop {
            // SAFETY: GIL held (`py`, taken again after each wait); the sink was taken out of its
            // cell above, so no other reference to ENGINE or SINK is alive here.
            let eng = unsafe { ENGINE.get() };
            // Threads still recording as fast as it is written: after many passes, one takes
            // the rest whole.
            let budget = if passes < MAX_CLOSING_PASSES { pass_bytes(eng.limits.memory_limit) } else { usize::MAX };
            match flush_into(&mut sink, eng, budget) {
                Err(e) => {
                    // Said on stderr as when the flusher meets it: which flush meets a full disk
                    // is a matter of timing.
                    stop_saving(&mut sink, &e);
                    break;
                }
                Ok((_, false)) => break,
                Ok((ticket, true)) => {
                    if let Some(written) = sink.writer.as_ref().and_then(Writer::written) {
                        py.detach(|| written.wait(ticket));
                    }
                    passes += 1;
                }
            }
        }
    }
    set_writer_held(None);
    if let Some(msg) = sink.error {
        return Err(PyOSError::new_err(msg));
    }
    let written: usize = sink.flushed.iter().map(|f| f.entries).sum();
    for (key, value) in stats.iter_mut() {
        if key == "entries" {
            *value = written as u64;
        }
    }
    if let Some(writer) = sink.writer.take() {
        // The writer's thread may only now say that a chunk of the last flushes failed.
        if let Err(e) = writer.finish(now_ms(), &stats) {
            stop_saving(&mut sink, &e);
            return Err(PyOSError::new_err(sink.error.unwrap_or_default()));
        }
    }
    Ok(Some(sink.path))
}
