//! The recorder's global state: forms, flows, per-thread recordings, limits.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;

use pyo3::ffi;
use squall_trace::{display_name, Forms, LimitHit, Limits, Recorded, Timeline, ValRef, Value, ValueStore};

use crate::gil_cell::GilCell;
use crate::recorder::encode::{Budget, EncodeCache, DEFAULT_BUDGET};

unsafe extern "C" {
    // Exported by CPython >= 3.8 on every platform squall supports; pyo3-ffi does not declare it.
    fn PyThread_get_thread_native_id() -> std::ffi::c_ulong;
}

/// One thread's recording in one flow: its timeline and the values its entries refer to.
pub struct ThreadRec {
    pub tl: Timeline,
    /// The values, encoded when recorded (`encode.rs`); entries' slots are its nodes.
    pub values: ValueStore,
    pub enc: EncodeCache,
    pub flow: u32,
    pub thread_id: u64,
    pub name: String,
    /// This recording's index in `Engine::recs`; part of every value ref handed to users.
    pub number: u32,
    /// Value store size at which the memory limit is checked next.
    pub next_memory_check: Cell<u64>,
    /// Generators and coroutines waiting on a delegate, and the frames re-opened for one.
    pub deleg: crate::recorder::delegation_state::Delegation,
}

pub struct Engine {
    pub forms: Forms,
    pub recs: Vec<Option<Box<ThreadRec>>>,
    pub flows: BTreeMap<u32, Vec<u32>>,
    pub current_flow: u32,
    pub limits: Limits,
    pub hits: Vec<(u32, LimitHit)>,
    pub namer: Option<*mut ffi::PyObject>,
    /// Encoders the user registered for types (`values.register_snapshot`).
    pub snapshotters: Vec<(*mut ffi::PyTypeObject, *mut ffi::PyObject)>,
    pub budget: Budget,
    pub dropped: u64,
    pub unmatched: u64,
    pub snapshot_errors: u64,
    /// Events not recorded because the live UI was reading the recording at that moment.
    pub lost_during_ui: u64,
    pub memory_stopped: bool,
    /// While saving, the file writer's buffers (set by `sink.rs`): the memory limit counts them.
    pub writer_held: Option<std::sync::Arc<squall_store::Held>>,
    /// The most the writer's buffers may hold (a flush pass and its chunks' buffers).
    pub writer_reserve: u64,
}

pub static ENGINE: GilCell<Engine> = GilCell::new(Engine {
    forms: Forms::new(),
    recs: Vec::new(),
    flows: BTreeMap::new(),
    current_flow: 0,
    limits: Limits { thread_trace_limit: None, fn_call_limit: None, memory_limit: Some(DEFAULT_MEMORY_LIMIT) },
    hits: Vec::new(),
    namer: None,
    snapshotters: Vec::new(),
    budget: DEFAULT_BUDGET,
    dropped: 0,
    unmatched: 0,
    snapshot_errors: 0,
    lost_during_ui: 0,
    memory_stopped: false,
    writer_held: None,
    writer_reserve: 0,
});

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
/// Also check the memory limit each time a thread's value store grew by this much, or by a
/// 64th of the limit if that is less (so a small limit is not overshot by a whole step).
const KEPT_BYTES_CHECK_EVERY: u64 = 1 << 20;

fn value_check_step(limits: &Limits) -> u64 {
    limits.memory_limit.map_or(KEPT_BYTES_CHECK_EVERY, |l| KEPT_BYTES_CHECK_EVERY.min(l / 64).max(4096))
}

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
    // SAFETY: this fn's contract: the GIL is held, which `current_rec_cached` requires.
    if let Some(rec) = unsafe { current_rec_cached() } {
        return Some(rec);
    }
    let (epoch, rec) = CURRENT.with(Cell::get);
    if epoch == EPOCH.load(Ordering::Relaxed) && !rec.is_null() {
        // SAFETY: the pointer is a live Box in ENGINE.recs while its epoch is current.
        return Some(claim(unsafe { &mut *rec }));
    }
    // SAFETY: this fn's contract: the GIL is held, which `current_rec_slow` requires.
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
    // SAFETY: this fn's contract (GIL held); this reference is not used once the namer may run
    // Python code.
    let eng = unsafe { ENGINE.get() };
    let flow = eng.current_flow;
    // The native id (`threading.get_native_id()`), not `get_ident()`: the latter is reused as
    // soon as a thread ends, and a new thread would be merged into the old one's timeline.
    // SAFETY: a plain C call of CPython's, valid from any thread that holds the GIL.
    let thread_id = unsafe { PyThread_get_thread_native_id() } as u64;
    let existing = eng.flows.get(&flow).and_then(|nums| {
        nums.iter().copied().find(|&n| eng.recs[n as usize].as_ref().is_some_and(|r| r.thread_id == thread_id))
    });
    let number = match existing {
        Some(n) => n,
        None => {
            // The namer runs Python code, during which other threads may take the GIL and the
            // engine: no reference from ENGINE is held across it (GilCell::get's contract).
            let namer = eng.namer;
            // SAFETY: this fn's contract (GIL held); `namer` is the engine's live reference, read
            // just above.
            let name = unsafe { thread_name(namer) };
            // SAFETY: GIL held (this fn's contract); the reference taken before the namer ran
            // is no longer used.
            let eng = unsafe { ENGINE.get() };
            let number = eng.recs.len() as u32;
            eng.recs.push(Some(Box::new(ThreadRec {
                tl: Timeline::new(),
                values: ValueStore::new(),
                enc: EncodeCache::default(),
                flow,
                thread_id,
                name,
                number,
                next_memory_check: Cell::new(value_check_step(&eng.limits)),
                deleg: Default::default(),
            })));
            eng.flows.entry(flow).or_default().push(number);
            number
        }
    };
    // SAFETY: GIL held (this fn's contract); taken again after the namer may have run.
    let eng = unsafe { ENGINE.get() };
    let rec: *mut ThreadRec = match eng.recs[number as usize].as_mut() {
        Some(b) => &mut **b,
        None => return None,
    };
    CURRENT.with(|c| c.set((EPOCH.load(Ordering::Relaxed), rec)));
    FORGET_ON_EXIT.with(|_| {});
    // SAFETY: `rec` points into a Box owned by ENGINE.recs, which stays put for the epoch; no other
    // reference to that recording is alive on this thread.
    Some(claim(unsafe { &mut *rec }))
}

/// Encodes `o` into `rec`'s store with `eng`'s budget (`encode::encode`: the encoder is handed
/// what it needs of the engine, which it does not name).
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture(eng: &mut Engine, rec: &mut ThreadRec, o: *mut ffi::PyObject) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe { crate::recorder::encode::encode(&eng.budget, &eng.snapshotters, &mut rec.values, &mut rec.enc, o) }
}

/// `capture` for a receiver (`encode::encode_receiver`): an instance already recorded on this
/// timeline becomes a reference to its earlier state.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture_receiver(eng: &mut Engine, rec: &mut ThreadRec, o: *mut ffi::PyObject) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe {
        crate::recorder::encode::encode_receiver(&eng.budget, &eng.snapshotters, &mut rec.values, &mut rec.enc, o)
    }
}

/// `capture` for an expression's value (`encode::encode_expr`): one level of instances less
/// than a value passed, returned or bound.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture_expr(eng: &mut Engine, rec: &mut ThreadRec, o: *mut ffi::PyObject) -> ValRef {
    // SAFETY: this fn's contract.
    unsafe { crate::recorder::encode::encode_expr(&eng.budget, &eng.snapshotters, &mut rec.values, &mut rec.enc, o) }
}

/// What an entry that can hold a float (a return, an expression, a binding) records for `o`: an
/// exact `float` itself (no node: `squall_trace::entry`), anything else encoded (`capture`).
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn capture_entry_value(eng: &mut Engine, rec: &mut ThreadRec, o: *mut ffi::PyObject) -> Value {
    // SAFETY: this fn's contract.
    unsafe {
        match exact_float(o) {
            Some(f) => Value::Float(f),
            None => capture(eng, rec, o).into(),
        }
    }
}

/// The value of `o` if it is an exact `float` (a subclass is an object with fields).
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn exact_float(o: *mut ffi::PyObject) -> Option<f64> {
    // SAFETY: this fn's contract: `o` is live, so its type and, for a float, its value are readable.
    unsafe { (ffi::Py_TYPE(o) == &raw mut ffi::PyFloat_Type).then(|| ffi::PyFloat_AS_DOUBLE(o)) }
}

/// `encode::scalar` into `rec`'s store.
///
/// # Safety
/// GIL held; `o` a valid borrowed reference.
#[inline(always)]
pub unsafe fn scalar(rec: &mut ThreadRec, max_string: usize, o: *mut ffi::PyObject) -> Option<ValRef> {
    // SAFETY: this fn's contract.
    unsafe { crate::recorder::encode::scalar(&mut rec.values, &mut rec.enc, max_string, o) }
}

/// `f(o)` with this thread's recording suspended (`encode::CallUnrecorded`: a user-registered
/// encoder runs the user's code).
///
/// # Safety
/// GIL held; `f` and `o` live.
pub unsafe fn call_unrecorded(f: *mut ffi::PyObject, o: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: this fn's contract (GIL held, `f` and `o` live).
    without_recording(|| unsafe { ffi::PyObject_CallOneArg(f, o) })
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

/// # Safety
/// GIL held; `namer` a live callable (the engine's reference to it).
unsafe fn thread_name(namer: Option<*mut ffi::PyObject>) -> String {
    let Some(namer) = namer else { return String::new() };
    // SAFETY: GIL held and `namer` live (this fn's contract); it is held by a reference of its
    // own for the call, in case the program replaces the namer (dropping the engine's reference)
    // while it runs.
    without_recording(|| unsafe {
        ffi::Py_IncRef(namer);
        let r = ffi::PyObject_CallNoArgs(namer);
        ffi::Py_DecRef(namer);
        if r.is_null() {
            ffi::PyErr_Clear();
            return String::new();
        }
        let s = crate::recorder::engine::str_of(r);
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
    rec.tl.len() & (MEMORY_CHECK_EVERY - 1) == 0 || rec.values.bytes() >= rec.next_memory_check.get()
}

impl Engine {
    /// Accounts for one recorder outcome: counts, reports a reached limit once on stderr.
    #[inline(always)]
    pub fn note(&mut self, rec: &ThreadRec, outcome: Recorded) {
        match outcome {
            Recorded::Written => {
                if memory_check_due(rec) {
                    rec.next_memory_check.set(rec.values.bytes() + value_check_step(&self.limits));
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

    /// Memory the recordings hold: timelines, value stores (with the indexes queries build over
    /// them), the encoders' caches, the identity map and, while saving, the file writer's
    /// buffers.
    pub fn bytes(&self) -> u64 {
        // SAFETY: an `Engine` is only reached through the ENGINE GilCell, so `&self` means the GIL
        // is held; no other reference to IDS is alive here.
        let ids = unsafe { crate::recorder::identity::IDS.get() }.bytes();
        ids + self.writer_bytes()
            + self
                .recs
                .iter()
                .flatten()
                .map(|r| r.tl.bytes() + r.values.bytes() + r.values.index_bytes() + r.enc.bytes())
                .sum::<u64>()
    }

    /// While saving, what the file writer's buffers hold, or the room reserved for them if that
    /// is more (`writer_reserve`): they grow and shrink with each flush pass, on another thread,
    /// so what is counted when the limit is checked must be what they may reach.
    pub fn writer_bytes(&self) -> u64 {
        self.writer_held.as_ref().map_or(0, |h| h.bytes().max(self.writer_reserve))
    }

    #[cold]
    fn check_memory(&mut self, rec_number: u32) {
        let Some(limit) = self.limits.memory_limit else { return };
        let bytes = self.bytes();
        // While saving to a file the flusher evicts saved entries past half the limit, so a
        // long run goes on (and the program waits for it when it falls behind: it is told to
        // look now); value stores stay, and what is held stops at the limit either way (it
        // allowed half as much again while saving: pyparsing's suite peaked at twice a 2 GiB
        // limit).
        if self.writer_held.is_some() && bytes >= limit / 2 {
            if let Some(hook) = PAST_HALF_HOOK.get() {
                hook();
            }
        }
        if !self.memory_stopped && bytes >= limit {
            self.memory_stopped = true;
            RECORDING.store(false, Ordering::Relaxed);
            self.report(rec_number, LimitHit::Memory { limit });
        }
    }

    /// Drops every recording. Nothing of the program is held, so nothing of it runs.
    ///
    /// # Safety
    /// GIL held.
    pub unsafe fn clear(&mut self) {
        bump_epoch();
        // Numbers are never reused, so a value ref from before the clear cannot resolve to a
        // value recorded after it.
        for r in self.recs.iter_mut() {
            r.take();
        }
        self.flows.clear();
        self.hits.clear();
        self.memory_stopped = false;
        // SAFETY: an `Engine` is only reached through the ENGINE GilCell, so `&mut self` means the
        // GIL is held; no other reference to IDS is alive here.
        unsafe { crate::recorder::identity::IDS.get() }.clear();
    }
}

/// What `check_memory` calls while a file is saved and the recordings hold half the memory limit
/// or more: the file sink's flusher looks at once (`persistence::sink`, which the recorder does
/// not depend on, sets it).
static PAST_HALF_HOOK: OnceLock<fn()> = OnceLock::new();

pub fn set_past_half_hook(hook: fn()) {
    let _ = PAST_HALF_HOOK.set(hook);
}

/// `str(o)`, or an empty string if that fails (for the engine's own objects, such as a thread
/// name the namer returned).
///
/// # Safety
/// GIL held; `o` a valid object.
pub unsafe fn str_of(o: *mut ffi::PyObject) -> String {
    // SAFETY: this fn's contract (GIL held, `o` live); the string made is released before
    // returning.
    unsafe {
        let s = ffi::PyObject_Str(o);
        if s.is_null() {
            ffi::PyErr_Clear();
            return String::new();
        }
        let mut size: ffi::Py_ssize_t = 0;
        let p = ffi::PyUnicode_AsUTF8AndSize(s, &mut size);
        let out = if p.is_null() {
            ffi::PyErr_Clear();
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p.cast::<u8>(), size as usize)).into_owned()
        };
        ffi::Py_DecRef(s);
        out
    }
}
