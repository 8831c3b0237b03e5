//! The recorder's global state: forms, flows, per-thread recordings, limits.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use pyo3::ffi;
use squall_trace::{display_name, Forms, LimitHit, Limits, Recorded, Timeline};

use crate::gil_cell::GilCell;

unsafe extern "C" {
    // Exported by CPython >= 3.8 on every platform squall supports; pyo3-ffi does not declare it.
    fn PyThread_get_thread_native_id() -> std::ffi::c_ulong;
}

/// One thread's recording in one flow: its timeline and the objects its entries refer to.
pub struct ThreadRec {
    pub tl: Timeline,
    /// Strong references, owned; released by `clear`.
    pub values: Vec<*mut ffi::PyObject>,
    pub flow: u32,
    pub thread_id: u64,
    pub name: String,
    /// This recording's index in `Engine::recs`; part of every value ref handed to users.
    pub number: u32,
    /// Slots below this were saved to the recording file and their objects released (their
    /// pointers are null); they are read back from the file.
    pub released_upto: usize,
    /// Estimated bytes of the objects this recording keeps alive (snapshots and references),
    /// counted against the memory limit.
    pub kept_bytes: u64,
    /// `kept_bytes` at which the memory limit is checked next.
    pub next_memory_check: Cell<u64>,
    /// Where each saved run of slots starts in the file: (first slot, count, byte offset).
    pub value_chunks: Vec<(u64, u64, u64)>,
    /// Snapshots of slots released by a garbage collection (`collect.rs`; their pointers are
    /// null), until the flusher has saved them.
    pub snaps: foldhash::HashMap<usize, std::sync::Arc<squall_trace::Snap>>,
}

pub struct SnapshotBudget {
    pub max_depth: u32,
    pub max_length: usize,
    /// Items copied by one snapshot, all levels together.
    pub max_items: usize,
}

pub struct Engine {
    pub forms: Forms,
    pub recs: Vec<Option<Box<ThreadRec>>>,
    pub flows: BTreeMap<u32, Vec<u32>>,
    pub current_flow: u32,
    pub limits: Limits,
    pub hits: Vec<(u32, LimitHit)>,
    pub namer: Option<*mut ffi::PyObject>,
    pub truncation_marker: Option<*mut ffi::PyObject>,
    /// `squall.values.ClassRef`: classes defined by the program are recorded through it (a weak
    /// reference), so recording them does not keep them alive (`__subclasses__`, finalizers).
    pub class_ref: Option<*mut ffi::PyObject>,
    pub snapshotters: Vec<(*mut ffi::PyTypeObject, *mut ffi::PyObject)>,
    pub copy_fn: Option<*mut ffi::PyObject>,
    pub deque_type: *mut ffi::PyTypeObject,
    pub budget: SnapshotBudget,
    pub dropped: u64,
    pub unmatched: u64,
    pub snapshot_errors: u64,
    /// Events not recorded because the live UI was reading the recording at that moment.
    pub lost_during_ui: u64,
    pub memory_stopped: bool,
    /// While saving to a file: how many of each thread's most recent values stay alive as
    /// objects; older ones are released once saved and read back from the file when asked for.
    /// `None`: keep every object (nothing is released).
    pub keep_alive: Option<usize>,
    /// The file released values are read back from.
    pub value_file: Option<std::path::PathBuf>,
}

pub static ENGINE: GilCell<Engine> = GilCell::new(Engine {
    forms: Forms::new(),
    recs: Vec::new(),
    flows: BTreeMap::new(),
    current_flow: 0,
    limits: Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: Some(DEFAULT_MEMORY_LIMIT) },
    hits: Vec::new(),
    namer: None,
    truncation_marker: None,
    class_ref: None,
    snapshotters: Vec::new(),
    copy_fn: None,
    deque_type: null_mut(),
    budget: SnapshotBudget { max_depth: 5, max_length: 1000, max_items: 10_000 },
    dropped: 0,
    unmatched: 0,
    snapshot_errors: 0,
    lost_during_ui: 0,
    memory_stopped: false,
    keep_alive: Some(DEFAULT_KEEP_ALIVE),
    value_file: None,
});

/// Objects kept alive per thread while saving to a file (see `Engine::keep_alive`).
pub const DEFAULT_KEEP_ALIVE: usize = 100_000;

pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;

/// Recording on or off. Checked first by every entry point.
pub static RECORDING: AtomicBool = AtomicBool::new(false);
/// Recording is paused while the live UI reads the timelines; events meanwhile are counted.
pub static UI_PAUSE: AtomicBool = AtomicBool::new(false);
/// Bumped whenever cached thread-local recordings may be stale (flow change, clear, restart).
pub static EPOCH: AtomicU32 = AtomicU32::new(1);
/// The recording that wrote last (its number), and the global step count: when another thread's
/// recording writes next, it marks a switch with a new step, which orders all threads' entries.
static LAST_WRITER: AtomicU32 = AtomicU32::new(u32::MAX);
static STEP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[inline(always)]
fn claim(rec: &mut ThreadRec) -> &mut ThreadRec {
    if LAST_WRITER.load(Ordering::Relaxed) != rec.number {
        LAST_WRITER.store(rec.number, Ordering::Relaxed);
        rec.tl.mark_switch(STEP.fetch_add(1, Ordering::Relaxed));
    }
    // SAFETY: GIL held (every caller of `claim` holds it).
    unsafe { *LAST_REC.get() = (EPOCH.load(Ordering::Relaxed), &raw mut *rec) };
    LAST_KEY.store(thread_key(), Ordering::Relaxed);
    rec
}

/// The thread that claimed a recording last (its `thread_key`, 0: none) and that recording
/// with its epoch. While the same thread goes on recording, its events find their recording
/// here, without the thread-local lookup (a `__tls_get_addr` call in a shared library) and
/// without a switch check (it is the last writer).
static LAST_KEY: AtomicUsize = AtomicUsize::new(0);
static LAST_REC: GilCell<(u32, *mut ThreadRec)> = GilCell::new((0, null_mut()));

/// A nonzero value unique to the running thread among live threads: its thread pointer where
/// reading it is one instruction, else the address of a thread-local.
#[inline(always)]
fn thread_key() -> usize {
    let key: usize;
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    // SAFETY: on x86-64 Linux `fs:0` holds the thread control block's own address (TLS ABI).
    unsafe {
        std::arch::asm!("mov {}, fs:0", out(reg) key, options(nostack, readonly, preserves_flags, pure));
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux"))]
    // SAFETY: reads the thread pointer register.
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) key, options(nostack, nomem, preserves_flags, pure));
    }
    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux")))]
    {
        key = CURRENT.with(|c| c as *const _ as usize);
    }
    key
}

/// Forgets `LAST_KEY` when its thread ends: a thread started later may get the same key.
struct ForgetOnExit(usize);

impl Drop for ForgetOnExit {
    fn drop(&mut self) {
        let _ = LAST_KEY.compare_exchange(self.0, 0, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// An epoch value never current: marks the thread-local cache as "inside the engine".
const BUSY_EPOCH: u32 = 0;
const MEMORY_CHECK_EVERY: usize = 1 << 16;
/// Also check the memory limit each time a thread's kept objects grew by this much.
const KEPT_BYTES_CHECK_EVERY: u64 = 1 << 20;

thread_local! {
    /// (epoch, recording) of the current thread; valid only when the epoch is current.
    static CURRENT: Cell<(u32, *mut ThreadRec)> = const { Cell::new((0, null_mut())) };
    static BUSY: Cell<bool> = const { Cell::new(false) };
    static FORGET_ON_EXIT: ForgetOnExit = ForgetOnExit(thread_key());
}

/// The current thread's recording in the current flow, creating it on first use. `None` while
/// the engine itself runs Python code on this thread (re-entrant events are not recorded).
///
/// # Safety
/// GIL held.
#[inline(always)]
pub unsafe fn current_rec() -> Option<&'static mut ThreadRec> {
    if let Some(rec) = unsafe { current_rec_cached() } {
        return Some(rec);
    }
    let (epoch, rec) = CURRENT.with(Cell::get);
    if epoch == EPOCH.load(Ordering::Relaxed) && !rec.is_null() {
        // SAFETY: the pointer is a live Box in ENGINE.recs while its epoch is current.
        return Some(claim(unsafe { &mut *rec }));
    }
    unsafe { current_rec_slow() }
}

/// `current_rec` when this thread's recording is already known (the usual case), else `None`
/// (then `current_rec` creates or finds it). Cannot panic.
///
/// # Safety
/// GIL held.
#[inline(always)]
pub unsafe fn current_rec_cached() -> Option<&'static mut ThreadRec> {
    if LAST_KEY.load(Ordering::Relaxed) == thread_key() {
        // SAFETY: GIL held.
        let (_epoch, rec) = unsafe { *LAST_REC.get() };
        // No epoch check: `bump_epoch` forgets `LAST_KEY`, so a key that matches was claimed
        // in the current epoch.
        debug_assert!(_epoch == EPOCH.load(Ordering::Relaxed));
        if !rec.is_null() {
            // SAFETY: the pointer is a live Box in ENGINE.recs while its epoch is current.
            return Some(unsafe { &mut *rec });
        }
    }
    None
}

#[cold]
unsafe fn current_rec_slow() -> Option<&'static mut ThreadRec> {
    if BUSY.with(Cell::get) {
        return None;
    }
    let eng = unsafe { ENGINE.get() };
    let flow = eng.current_flow;
    // The native id (`threading.get_native_id()`), not `get_ident()`: the latter is reused as
    // soon as a thread ends, and a new thread would be merged into the old one's timeline.
    let thread_id = unsafe { PyThread_get_thread_native_id() } as u64;
    let existing = eng.flows.get(&flow).and_then(|nums| {
        nums.iter().copied().find(|&n| eng.recs[n as usize].as_ref().is_some_and(|r| r.thread_id == thread_id))
    });
    let number = match existing {
        Some(n) => n,
        None => {
            let name = unsafe { thread_name(eng) };
            let number = eng.recs.len() as u32;
            eng.recs.push(Some(Box::new(ThreadRec {
                tl: Timeline::new(),
                values: Vec::new(),
                flow,
                thread_id,
                name,
                number,
                released_upto: 0,
                kept_bytes: 0,
                next_memory_check: Cell::new(KEPT_BYTES_CHECK_EVERY),
                value_chunks: Vec::new(),
                snaps: Default::default(),
            })));
            eng.flows.entry(flow).or_default().push(number);
            number
        }
    };
    let rec: *mut ThreadRec = match eng.recs[number as usize].as_mut() {
        Some(b) => &mut **b,
        None => return None,
    };
    CURRENT.with(|c| c.set((EPOCH.load(Ordering::Relaxed), rec)));
    FORGET_ON_EXIT.with(|_| {});
    Some(claim(unsafe { &mut *rec }))
}

/// Runs `f` with this thread's recording suspended: events caused by Python code that `f` runs
/// (a thread namer, a snapshot function, `copy.copy`) are not recorded and cannot re-enter.
pub fn without_recording<R>(f: impl FnOnce() -> R) -> R {
    let saved = CURRENT.with(|c| c.replace((BUSY_EPOCH, null_mut())));
    // Not found by `current_rec_cached` either, until `current_rec` claims it again.
    LAST_KEY.store(0, Ordering::Relaxed);
    let was_busy = BUSY.with(|b| b.replace(true));
    let out = f();
    BUSY.with(|b| b.set(was_busy));
    CURRENT.with(|c| c.set(saved));
    out
}

unsafe fn thread_name(eng: &Engine) -> String {
    let Some(namer) = eng.namer else { return String::new() };
    without_recording(|| unsafe {
        let r = ffi::PyObject_CallNoArgs(namer);
        if r.is_null() {
            ffi::PyErr_Clear();
            return String::new();
        }
        let s = crate::capture::str_of(r);
        ffi::Py_DecRef(r);
        s
    })
}

/// Invalidates every thread's cached recording.
pub fn bump_epoch() {
    let next = EPOCH.load(Ordering::Relaxed).wrapping_add(1);
    EPOCH.store(if next == BUSY_EPOCH { 1 } else { next }, Ordering::Relaxed);
    // `current_rec_cached` trusts a matching key without checking the epoch.
    LAST_KEY.store(0, Ordering::Relaxed);
}

/// After an entry was written: whether `Engine::note` must check the memory limit now.
#[inline(always)]
pub fn memory_check_due(rec: &ThreadRec) -> bool {
    rec.tl.len() & (MEMORY_CHECK_EVERY - 1) == 0 || rec.kept_bytes >= rec.next_memory_check.get()
}

impl Engine {
    /// Accounts for one recorder outcome: counts, reports a reached limit once on stderr.
    #[inline(always)]
    pub fn note(&mut self, rec: &ThreadRec, outcome: Recorded) {
        match outcome {
            Recorded::Written => {
                if memory_check_due(rec) {
                    rec.next_memory_check.set(rec.kept_bytes + KEPT_BYTES_CHECK_EVERY);
                    self.check_memory(rec.number);
                }
            }
            other => self.note_unusual(rec.number, other),
        }
    }

    #[cold]
    fn note_unusual(&mut self, rec_number: u32, outcome: Recorded) {
        match outcome {
            Recorded::Written | Recorded::Skipped => {}
            Recorded::Unmatched => self.unmatched += 1,
            Recorded::LimitReached(hit) => self.report(rec_number, hit),
        }
    }

    pub fn report(&mut self, rec_number: u32, hit: LimitHit) {
        let (thread, flow) = match self.recs.get(rec_number as usize) {
            Some(Some(r)) => (format!("thread `{}` (id {})", r.name, r.thread_id), r.flow),
            _ => ("a thread".to_string(), self.current_flow),
        };
        let msg = match hit {
            LimitHit::ThreadTrace { limit } => format!(
                "squall: {thread} in flow {flow} reached the thread trace limit of {limit} entries; \
                 its recording stops here (the program goes on). Raise it with \
                 `squall.api.set_limits(thread_trace_limit=N)` or `--thread-trace-limit N`."
            ),
            LimitHit::FnCalls { form, limit } => format!(
                "squall: `{}` was called more than {limit} times on {thread} in flow {flow}; \
                 its further calls are not recorded (their callees are). Raise it with \
                 `squall.api.set_limits(fn_call_limit=N)` or `--fn-call-limit N`.",
                display_name(&self.forms, form)
            ),
            LimitHit::Memory { limit } => format!(
                "squall: the recordings reached the memory limit of {} MiB; recording stops \
                 everywhere (the program goes on). Raise it with \
                 `squall.api.set_limits(memory_limit=BYTES)` or `--memory-limit MIB`.",
                limit >> 20
            ),
        };
        eprintln!("{msg}");
        self.hits.push((rec_number, hit));
    }

    pub fn bytes(&self) -> u64 {
        self.recs.iter().flatten().map(|r| r.tl.bytes() + (r.values.len() * 8) as u64 + r.kept_bytes).sum()
    }

    /// Objects the recordings keep alive now.
    pub fn objects_alive(&self) -> u64 {
        self.recs
            .iter()
            .flatten()
            .map(|r| r.values[r.released_upto..].iter().filter(|p| !p.is_null()).count() as u64)
            .sum()
    }

    #[cold]
    fn check_memory(&mut self, rec_number: u32) {
        let Some(limit) = self.limits.memory_limit else { return };
        // While saving to a file the flusher evicts saved entries past half the limit; stop only
        // if it cannot keep up.
        let stop_at = if crate::sink::saving() { limit.saturating_add(limit / 2) } else { limit };
        if !self.memory_stopped && self.bytes() >= stop_at {
            self.memory_stopped = true;
            RECORDING.store(false, Ordering::Relaxed);
            self.report(rec_number, LimitHit::Memory { limit });
        }
    }

    /// Releases every recording and the objects it kept alive.
    ///
    /// # Safety
    /// GIL held.
    pub unsafe fn clear(&mut self) {
        bump_epoch();
        // Numbers are never reused, so a value ref from before the clear cannot resolve to a
        // value recorded after it.
        let recs: Vec<Box<ThreadRec>> = self.recs.iter_mut().filter_map(Option::take).collect();
        self.flows.clear();
        self.hits.clear();
        self.memory_stopped = false;
        // Releasing objects can run finalizers, which may be instrumented code.
        without_recording(|| {
            for rec in recs {
                for &v in &rec.values {
                    if !v.is_null() {
                        unsafe { ffi::Py_DecRef(v) };
                    }
                }
            }
        });
    }
}
