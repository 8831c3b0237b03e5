//! Streaming the live recording to a file while the program runs.
//!
//! A background thread (a Rust thread: the program's `threading` sees nothing of it) takes the
//! GIL about once a second and appends what was recorded since the last flush: new forms, new
//! thread timelines, entries, args and values (serialized to `Snap`s now; mutable values were
//! already copied when recorded). A program killed at any moment leaves a file readable up to the
//! last flush. `close` flushes the rest and writes the end marker.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use squall_store::{Header, ThreadMeta, Writer};

use crate::engine::{Engine, ENGINE};
use crate::gil_cell::GilCell;
use crate::snap::{snap_of, FILE_BUDGET};

#[derive(Default, Clone, Copy)]
struct Flushed {
    thread_written: bool,
    entries: usize,
    args: usize,
    values: usize,
    /// Switch marks written (see `Timeline::switches`), and the last one.
    switches: usize,
    last_switch: Option<(u32, u64)>,
}

struct Sink {
    writer: Option<Writer<BufWriter<File>>>,
    path: PathBuf,
    flushed: Vec<Flushed>,
    error: Option<String>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    flusher: Option<JoinHandle<()>>,
}

static SINK: GilCell<Option<Sink>> = GilCell::new(None);
static FLUSHER_RUNNING: AtomicBool = AtomicBool::new(false);

pub const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Values snapshotted, written and dropped at a time.
const VALUE_CHUNK: usize = 4096;

/// Longest the flusher holds the GIL at a stretch while it snapshots values.
const GIL_SLICE: Duration = Duration::from_millis(10);

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Starts streaming to `path` (created or truncated).
#[pyfunction]
#[pyo3(signature = (path, program, argv, python, squall, cwd))]
pub fn open_sink(
    path: PathBuf,
    program: String,
    argv: Vec<String>,
    python: String,
    squall: String,
    cwd: String,
) -> PyResult<()> {
    // SAFETY: GIL held (pyfunction).
    let slot = unsafe { SINK.get() };
    if slot.is_some() {
        return Err(PyRuntimeError::new_err("squall is already saving a recording; close it first"));
    }
    let header = Header { program, argv, python, squall, started_unix_ms: now_ms(), cwd };
    let writer = Writer::create(&path, &header)
        .map_err(|e| PyOSError::new_err(format!("cannot write the recording to `{}`: {e}", path.display())))?;
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let flusher = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("squall-flusher".into())
            .spawn(move || flusher_loop(&stop))
            .map_err(|e| PyOSError::new_err(format!("cannot start squall's flusher thread: {e}")))?
    };
    FLUSHER_RUNNING.store(true, Ordering::Relaxed);
    *slot = Some(Sink { writer: Some(writer), path, flushed: Vec::new(), error: None, stop, flusher: Some(flusher) });
    Ok(())
}

struct Defer<F: FnMut()>(F);
impl<F: FnMut()> Drop for Defer<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn flusher_loop(stop: &(Mutex<bool>, Condvar)) {
    let (lock, cv) = stop;
    loop {
        let Ok(guard) = lock.lock() else { return };
        let Ok((guard, _)) = cv.wait_timeout(guard, FLUSH_EVERY) else { return };
        if *guard {
            return;
        }
        drop(guard);
        // SAFETY of the flush: it runs with the GIL held, like every other engine access. A panic
        // must not end the flusher (memory would then grow unbounded): it ends the saving,
        // reported like any other saving error.
        Python::attach(|py| {
            let t0 = std::time::Instant::now();
            let _report = Defer(move || {
                if std::env::var_os("SQUALL_DEBUG_PAUSES").is_some() && t0.elapsed().as_millis() > 30 {
                    eprintln!("squall flush: {} ms", t0.elapsed().as_millis());
                }
            });
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flush_now(py))).is_err() {
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
            }
        });
    }
}

/// Appends everything recorded since the last flush. Errors are kept and reported at close; the
/// program is never disturbed.
fn flush_now(py: Python<'_>) {
    // SAFETY: GIL held.
    let Some(sink) = (unsafe { SINK.get() }).as_mut() else { return };
    if sink.error.is_some() {
        return;
    }
    // A garbage collection is between its start and stop: released slots have no snapshot yet.
    if crate::collect::collecting() {
        return;
    }
    let eng = unsafe { ENGINE.get() };
    if let Err(e) = crate::collect::busy(|| flush_into(py, sink, eng)) {
        let msg = format!("squall: saving the recording to `{}` failed ({e}); it stops here", sink.path.display());
        eprintln!("{msg}");
        sink.error = Some(msg);
    }
}

fn flush_into(py: Python<'_>, sink: &mut Sink, eng: &mut Engine) -> Result<(), squall_store::StoreError> {
    let Some(writer) = sink.writer.as_mut() else { return Ok(()) };
    writer.forms(&eng.forms)?;
    eng.value_file = Some(sink.path.clone());
    for number in 0..eng.recs.len() {
        // SAFETY: GIL held; looked up afresh each turn (user code runs in the loop).
        let eng = unsafe { ENGINE.get() };
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
        if len > done.entries || args_len > done.args {
            writer.entries(
                number as u32,
                done.entries as u64,
                &entries[done.entries - first..],
                done.args as u64,
                &args[done.args - args_first..],
            )?;
            done.entries = len;
            done.args = args_len;
        }
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
        let (mut from, upto) = (done.values, rec.values.len());
        // In chunks: a batch's snapshots are held until written (memory), and the GIL is let go
        // between them.
        while from < upto {
            let to = upto.min(from + VALUE_CHUNK);
            // SAFETY: GIL held; looked up afresh (user code ran since).
            let Some(rec) = unsafe { ENGINE.get() }.recs.get_mut(number).and_then(|r| r.as_deref_mut()) else {
                break;
            };
            // Owned references first: snapshotting runs `repr` (user code), during which other
            // threads may record into this table (and move it). A slot released by a garbage
            // collection has its snapshot in `snaps` instead.
            let owned: Vec<Option<Py<PyAny>>> = rec.values[from..to]
                .iter()
                // SAFETY: non-null slots own a strong reference.
                .map(|&p| (!p.is_null()).then(|| unsafe { Bound::from_borrowed_ptr(py, p) }.unbind()))
                .collect();
            // An object recorded many times in a chunk (a method's `self`) is snapshotted once.
            let mut snaps: Vec<squall_trace::Snap> = Vec::with_capacity(owned.len());
            let mut first_at: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
            let mut slice_start = std::time::Instant::now();
            crate::snap::with_snap_cache(|| {
                for (i, o) in owned.iter().enumerate() {
                    if i > 0 && slice_start.elapsed() > GIL_SLICE {
                        // Long flushes must not pause the program (timing-sensitive tests, UIs):
                        // let it run a moment. Type names are looked up afresh after.
                        crate::snap::forget_snap_cache();
                        py.detach(std::thread::yield_now);
                        slice_start = std::time::Instant::now();
                    }
                    let snap = match o {
                        Some(o) => match first_at.get(&(o.as_ptr() as usize)) {
                            Some(&j) => snaps[j].clone(),
                            None => {
                                first_at.insert(o.as_ptr() as usize, i);
                                snap_of(o.bind(py), &FILE_BUDGET)
                            }
                        },
                        None => released_snap(number, from + i),
                    };
                    snaps.push(snap);
                }
            });
            drop(owned);
            let offset = writer.bytes_written();
            writer.values(number as u32, from as u64, &snaps)?;
            // SAFETY: GIL held; the recording is looked up again after the user code above.
            if let Some(rec) = unsafe { ENGINE.get() }.recs.get_mut(number).and_then(|r| r.as_deref_mut()) {
                rec.value_chunks.push((from as u64, snaps.len() as u64, offset));
                for slot in from..to {
                    rec.snaps.remove(&slot);
                }
            }
            sink.flushed[number].values = to;
            from = to;
            if from < upto {
                crate::snap::forget_snap_cache();
                py.detach(std::thread::yield_now);
            }
        }
    }
    writer.flush()?;
    release_saved(sink, eng);
    evict_saved(sink, eng);
    Ok(())
}

/// The snapshot of a slot released by a garbage collection.
fn released_snap(number: usize, slot: usize) -> squall_trace::Snap {
    // SAFETY: GIL held (the flusher's callers).
    let eng = unsafe { ENGINE.get() };
    eng.recs
        .get(number)
        .and_then(|r| r.as_deref())
        .and_then(|r| r.snaps.get(&slot).map(|s| (**s).clone()))
        .unwrap_or(squall_trace::Snap::Opaque { type_name: "object".into(), repr: "<released>".into() })
}

/// Over half the memory limit, entries and args already saved leave memory: the recording
/// goes on in the file, and live queries answer for what is still in memory (and say so for
/// the rest). This is what keeps a long run's memory bounded while it is saved.
fn evict_saved(sink: &Sink, eng: &mut Engine) {
    let Some(limit) = eng.limits.memory_limit else { return };
    if eng.bytes() < limit / 2 {
        return;
    }
    for (number, rec) in eng.recs.iter_mut().enumerate() {
        let Some(rec) = rec.as_deref_mut() else { continue };
        if let Some(done) = sink.flushed.get(number) {
            rec.tl.evict_before(done.entries, done.args);
        }
    }
}

/// How many of recording `number`'s value slots the file has saved (0 when not saving).
pub fn saved_values(number: usize) -> usize {
    // SAFETY: GIL held by every caller (engine code).
    unsafe { SINK.get() }.as_ref().and_then(|s| s.flushed.get(number)).map_or(0, |f| f.values)
}

/// True while a recording file is being written (the memory limit then evicts instead of
/// stopping).
pub fn saving() -> bool {
    // SAFETY: GIL held by every caller (engine code).
    unsafe { SINK.get() }.is_some()
}

/// Releases the objects of saved slots older than the keep-alive window (all saved ones past
/// half the memory limit): the program's objects are no longer held by the recording
/// (finalizers run, memory stays bounded).
fn release_saved(sink: &Sink, eng: &mut Engine) {
    let Some(keep) = eng.keep_alive else { return };
    // Past half the memory limit the window shrinks to nothing: every saved value is released
    // (the window counts values, and a few big snapshots can weigh more than the limit).
    let over = eng.limits.memory_limit.is_some_and(|limit| eng.bytes() >= limit / 2);
    let keep = if over { 0 } else { keep };
    eng.value_file = Some(sink.path.clone());
    let mut freed: Vec<*mut pyo3::ffi::PyObject> = Vec::new();
    for (number, rec) in eng.recs.iter_mut().enumerate() {
        let Some(rec) = rec.as_deref_mut() else { continue };
        let saved = sink.flushed.get(number).map_or(0, |f| f.values);
        let upto = saved.min(rec.values.len().saturating_sub(keep));
        let alive = (rec.values.len() - rec.released_upto) as u64;
        if upto > rec.released_upto && alive > 0 {
            // Sizes are not kept per slot: release the average share.
            let share = rec.kept_bytes / alive;
            rec.kept_bytes -= share * (upto - rec.released_upto) as u64;
        }
        for slot in rec.released_upto..upto {
            let p = std::mem::replace(&mut rec.values[slot], std::ptr::null_mut());
            if !p.is_null() {
                freed.push(p);
            }
        }
        rec.released_upto = rec.released_upto.max(upto);
    }
    // Releasing can run finalizers (user code): not while recording into these timelines.
    crate::engine::without_recording(|| {
        for p in freed {
            // SAFETY: GIL held; the recording owned these references.
            unsafe { pyo3::ffi::Py_DecRef(p) };
        }
    });
}

/// Flushes now (also done every half second by the flusher).
#[pyfunction]
pub fn flush_sink(py: Python<'_>) {
    flush_now(py);
}

/// The file being written, if any.
#[pyfunction]
pub fn sink_path() -> Option<PathBuf> {
    // SAFETY: GIL held (pyfunction).
    unsafe { SINK.get() }.as_ref().map(|s| s.path.clone())
}

/// Stops the flusher, flushes the rest and writes the end marker with `stats`. Returns the path
/// written. An error met while saving is raised here, with the path.
#[pyfunction]
#[pyo3(signature = (stats))]
pub fn close_sink(py: Python<'_>, stats: Vec<(String, u64)>) -> PyResult<Option<PathBuf>> {
    // SAFETY: GIL held (pyfunction).
    let Some(mut sink) = (unsafe { SINK.get() }).take() else { return Ok(None) };
    {
        let (lock, cv) = &*sink.stop;
        if let Ok(mut stopped) = lock.lock() {
            *stopped = true;
        }
        cv.notify_all();
    }
    if let Some(handle) = sink.flusher.take() {
        // The flusher may be waiting for the GIL this thread holds: let it run to its end.
        py.detach(|| {
            let _ = handle.join();
        });
    }
    FLUSHER_RUNNING.store(false, Ordering::Relaxed);
    let eng = unsafe { ENGINE.get() };
    if sink.error.is_none() {
        if let Err(e) = crate::collect::busy(|| flush_into(py, &mut sink, eng)) {
            sink.error = Some(format!("saving the recording to `{}` failed: {e}", sink.path.display()));
        }
    }
    if let Some(msg) = sink.error {
        return Err(PyOSError::new_err(msg));
    }
    if let Some(writer) = sink.writer.take() {
        writer.finish(now_ms(), &stats).map_err(|e| {
            PyOSError::new_err(format!("finishing the recording `{}` failed: {e}", sink.path.display()))
        })?;
    }
    Ok(Some(sink.path))
}
