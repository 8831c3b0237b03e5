//! Thin PyO3 bindings over the core queries: entries become dicts in FlowStorm's shape.

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use squall_trace::{merge_call_stats, Decoded, Drift, Entry, Kind, TraceError, ValRef, Value};

use squall_trace::{Forms, NodeEntries, Timeline, ValueStore};

use crate::recorder::engine::Engine;

/// One thread's timeline as a backend shows it.
pub struct TlView<'a> {
    /// Part of every value ref made from this timeline.
    pub number: u32,
    pub thread_id: u64,
    pub name: &'a str,
    pub tl: &'a Timeline,
    pub values: usize,
    pub limit_hit: Option<String>,
}

/// What the queries need from a recording: the live one in this process, or one read from a
/// file. Every query is written once, against this.
pub trait Backend {
    fn forms(&self) -> &Forms;
    /// Flows in order, each with its timelines in creation order.
    fn flows(&self) -> Vec<(u32, Vec<TlView<'_>>)>;
    fn by_number(&self, number: u32) -> Result<TlView<'_>, PyErr>;
    /// Value-table slot `slot` of timeline `view`, whole, as recorded.
    fn slot_snap(&self, view: &TlView<'_>, slot: u32) -> PyResult<squall_trace::Snap>;
    /// The value store of timeline `view`.
    fn store(&self, view: &TlView<'_>) -> Option<&ValueStore>;
    /// The value store of timeline `number` (queries that read recorded states: writes).
    fn store_of(&self, number: u32) -> Option<&squall_trace::ValueStore>;

    fn view(&self, flow: u32, thread_id: u64) -> Option<TlView<'_>> {
        self.flows().into_iter().find(|(f, _)| *f == flow)?.1.into_iter().find(|v| v.thread_id == thread_id)
    }
}

/// A value ref as users see it: which recording, whether it names a call's arguments, and the
/// entry-level ref (or call idx). Opaque to users; stable until `clear_recordings`.
pub(crate) const ARGS_BIT: u64 = 1 << 32;
pub(crate) const NUMBER_SHIFT: u32 = 33;

pub fn value_ref(rec: &TlView<'_>, v: ValRef) -> Option<u64> {
    (v != ValRef::ABSENT).then(|| (u64::from(rec.number) << NUMBER_SHIFT) | u64::from(v.0))
}

/// The ref of entry `idx`'s value (`e`): a value ref, or for a float the entry holds (no node
/// backs it) a ref shaped as an args ref naming the entry, which `deref_value` reads the float
/// from.
pub fn entry_value_ref(rec: &TlView<'_>, idx: usize, e: &Entry) -> Option<u64> {
    match e.value() {
        Value::Ref(v) => value_ref(rec, v),
        Value::Float(_) => Some(args_ref(rec, idx as u32)),
    }
}

fn args_ref(rec: &TlView<'_>, call_idx: u32) -> u64 {
    (u64::from(rec.number) << NUMBER_SHIFT) | ARGS_BIT | u64::from(call_idx)
}

/// The ref of "the target of write entry `write_idx` as of that write": shaped as an args ref
/// (which names a call entry), told apart by the kind of the entry it names.
fn after_write_ref(rec: &TlView<'_>, write_idx: u32) -> u64 {
    args_ref(rec, write_idx)
}

/// The target of write entry `idx` as of that write: its newest state stored before the write,
/// with the writes to it since (up to this one) applied. `None`: no state of it was recorded.
pub(crate) fn after_write(store: &ValueStore, tl: &Timeline, forms: &Forms, idx: u32) -> Option<squall_trace::Snap> {
    let (obj, _, store_len) = tl.write_record(idx as usize)?;
    squall_trace::sync_writes(tl, forms, store);
    let state = store.latest_before(obj, store_len)?;
    Some(store.node_as_of(state, idx, squall_trace::ExpandBudget::FULL))
}

pub fn trace_err(e: TraceError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub fn rec_of<B: Backend + ?Sized>(b: &B, flow_id: u32, thread_id: u64) -> PyResult<TlView<'_>> {
    b.view(flow_id, thread_id).ok_or_else(|| {
        let known: Vec<String> = b
            .flows()
            .iter()
            .map(|(f, views)| {
                let tids: Vec<String> = views.iter().map(|v| v.thread_id.to_string()).collect();
                format!("{f}: [{}]", tids.join(", "))
            })
            .collect();
        PyKeyError::new_err(format!(
            "no recording for flow {flow_id}, thread {thread_id}; recorded flows and threads are {{{}}} (see all_flows())",
            known.join(", ")
        ))
    })
}

fn coord_tuple<'py>(py: Python<'py>, forms: &Forms, site: u32) -> PyResult<Bound<'py, PyAny>> {
    match forms.site(site) {
        Some(s) => Ok(PyTuple::new(py, [s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col])?.into_any()),
        None => Ok(py.None().into_bound(py)),
    }
}

pub fn entry_dict<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    rec: &TlView<'_>,
    idx: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let forms = b.forms();
    let e: &Entry =
        rec.tl.get(idx).ok_or_else(|| trace_err(TraceError::IdxOutOfRange { idx: idx as u64, len: rec.tl.len() }))?;
    let d = PyDict::new(py);
    d.set_item("type", e.kind().type_name())?;
    d.set_item("idx", idx)?;
    match e.kind() {
        Kind::Call | Kind::Resume => {
            let form = forms.form(e.id());
            d.set_item("fn_ns", form.map(|f| &*f.ns))?;
            d.set_item("fn_name", form.map(|f| &*f.name))?;
            d.set_item("form_id", e.id())?;
            d.set_item("fn_args_ref", args_ref(rec, idx as u32))?;
            d.set_item("parent_idx", e.parent_idx())?;
            d.set_item("ret_idx", e.ret_idx())?;
            d.set_item("resumed", e.kind() == Kind::Resume)?;
        }
        Kind::Return => {
            let site = forms.site(e.id());
            let call = rec.tl.get(e.fn_call_idx() as usize);
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("result_ref", entry_value_ref(rec, idx, e))?;
            d.set_item("coord", coord_tuple(py, forms, e.id())?)?;
            d.set_item("form_id", call.map(|c| c.id()))?;
            d.set_item("kind", site.map_or("return", |s| s.kind.name()))?;
        }
        Kind::Unwind => {
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("throwable_ref", entry_value_ref(rec, idx, e))?;
            d.set_item("coord", py.None())?;
            d.set_item("form_id", e.id())?;
        }
        Kind::Expr => {
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("result_ref", entry_value_ref(rec, idx, e))?;
            d.set_item("coord", coord_tuple(py, forms, e.id())?)?;
            d.set_item("form_id", forms.site(e.id()).map(|s| s.form))?;
        }
        Kind::Bind => {
            let site = forms.site(e.id());
            d.set_item("fn_call_idx", e.fn_call_idx())?;
            d.set_item("symbol", site.and_then(|s| s.symbol.as_deref()))?;
            d.set_item("value_ref", entry_value_ref(rec, idx, e))?;
            d.set_item("coord", coord_tuple(py, forms, e.id())?)?;
            d.set_item("visible_after", idx)?;
            d.set_item("form_id", site.map(|s| s.form))?;
        }
        Kind::Write => write_fields(py, b, rec, idx, e, &d)?,
    }
    Ok(d)
}

/// The fields a `write` entry adds to its dict (see `entry_dict`).
pub fn write_fields<B: Backend + ?Sized>(
    py: Python<'_>,
    b: &B,
    rec: &TlView<'_>,
    idx: usize,
    e: &Entry,
    d: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let forms = b.forms();
    let site = forms.site(e.id());
    d.set_item("fn_call_idx", e.fn_call_idx())?;
    d.set_item("coord", site.map(|s| (s.coord.line, s.coord.col, s.coord.end_line, s.coord.end_col)))?;
    d.set_item("form_id", site.map(|s| s.form))?;
    d.set_item("symbol", site.and_then(|s| s.symbol.as_deref()))?;
    d.set_item("value_ref", entry_value_ref(rec, idx, e))?;
    d.set_item("deleted", e.value() == ValRef::ABSENT)?;
    let record = rec.tl.write_record(idx);
    d.set_item("obj_id", record.map(|r| r.0))?;
    d.set_item("key_ref", record.and_then(|r| value_ref(rec, r.1)))?;
    let _ = py;
    Ok(())
}

/// The Python object for a value ref, as recorded.
pub fn deref_value<B: Backend + ?Sized>(py: Python<'_>, b: &B, r: u64) -> PyResult<Py<PyAny>> {
    let number = u32::try_from(r >> NUMBER_SHIFT)
        .map_err(|_| PyKeyError::new_err(format!("value ref {r} was not made by this recording")))?;
    let local = (r & 0xFFFF_FFFF) as u32;
    let rec = b
        .by_number(number)
        .map_err(|e| Python::attach(|py| PyKeyError::new_err(format!("value ref {r}: {}", e.value(py)))))?;
    if r & ARGS_BIT != 0 && rec.tl.get(local as usize).is_some_and(|e| e.kind() == Kind::Write) {
        let snap = b.store(&rec).and_then(|store| after_write(store, rec.tl, b.forms(), local)).ok_or_else(|| {
            PyKeyError::new_err(format!("value ref {r}: no state of the target of write entry {local} was recorded"))
        })?;
        return crate::bindings::snap::to_python(py, &snap);
    }
    if let Some(Value::Float(f)) =
        rec.tl.get(local as usize).filter(|e| r & ARGS_BIT != 0 && e.holds_float()).map(Entry::value)
    {
        return Ok(f.into_pyobject(py)?.into_any().unbind());
    }
    if r & ARGS_BIT != 0 {
        let call = rec.tl.get(local as usize).filter(|e| e.kind().is_call()).ok_or_else(|| {
            PyKeyError::new_err(format!("value ref {r} names the args of entry {local}, which is not a call"))
        })?;
        let nparams =
            if call.kind() == Kind::Resume { 1 } else { b.forms().form(call.id()).map_or(0, |f| f.params.len()) };
        let vals: PyResult<Vec<Py<PyAny>>> =
            rec.tl.call_args(local as usize, nparams).into_iter().map(|v| decode(py, b, &rec, v)).collect();
        return Ok(PyList::new(py, vals?)?.into_any().unbind());
    }
    decode(py, b, &rec, ValRef(local))
}

fn decode<B: Backend + ?Sized>(py: Python<'_>, b: &B, rec: &TlView<'_>, v: ValRef) -> PyResult<Py<PyAny>> {
    Ok(match v.decode() {
        Decoded::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Decoded::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Decoded::None | Decoded::Absent => py.None(),
        Decoded::Bool(x) => x.into_pyobject(py)?.to_owned().into_any().unbind(),
        Decoded::Slot(i) => crate::bindings::snap::to_python(py, &b.slot_snap(rec, i)?)?,
    })
}

impl Backend for Engine {
    fn forms(&self) -> &Forms {
        &self.forms
    }

    fn flows(&self) -> Vec<(u32, Vec<TlView<'_>>)> {
        self.flows.iter().map(|(&f, nums)| (f, nums.iter().filter_map(|&n| self.live_view(n)).collect())).collect()
    }

    fn by_number(&self, number: u32) -> Result<TlView<'_>, PyErr> {
        match self.recs.get(number as usize) {
            Some(Some(_)) => self.live_view(number).ok_or_else(|| PyKeyError::new_err("gone")),
            Some(None) => {
                Err(PyKeyError::new_err("it belongs to a recording that was cleared (squall.api.clear_recordings())"))
            }
            None => Err(PyKeyError::new_err("it was not made by this process's recorder")),
        }
    }

    fn store_of(&self, number: u32) -> Option<&squall_trace::ValueStore> {
        self.recs.get(number as usize).and_then(|r| r.as_deref()).map(|r| &r.values)
    }

    fn slot_snap(&self, view: &TlView<'_>, slot: u32) -> PyResult<squall_trace::Snap> {
        let rec = self
            .recs
            .get(view.number as usize)
            .and_then(|r| r.as_deref())
            .ok_or_else(|| PyKeyError::new_err("recording cleared"))?;
        if slot as usize >= rec.values.len() {
            return Err(PyKeyError::new_err(format!("value slot {slot} is not recorded")));
        }
        squall_trace::sync_writes(&rec.tl, &self.forms, &rec.values);
        let mut snap = rec.values.to_snap(ValRef(slot), squall_trace::ExpandBudget::FULL);
        squall_trace::earlier_idx::mark_earlier_idx(&mut snap, &rec.tl, &self.forms, &rec.values);
        Ok(snap)
    }

    fn store(&self, view: &TlView<'_>) -> Option<&ValueStore> {
        Some(&self.recs.get(view.number as usize)?.as_deref()?.values)
    }
}

impl Engine {
    fn live_view(&self, number: u32) -> Option<TlView<'_>> {
        let rec = self.recs.get(number as usize)?.as_deref()?;
        let limit_hit = rec
            .tl
            .stopped()
            .map(|h| format!("{h:?}"))
            .or_else(|| self.hits.iter().find(|(n, _)| *n == number).map(|(_, h)| format!("{h:?}")));
        Some(TlView {
            number,
            thread_id: rec.thread_id,
            name: &rec.name,
            tl: &rec.tl,
            values: rec.values.len(),
            limit_hit,
        })
    }
}

// --- the queries, once, over any backend ------------------------------------------------------

pub mod q {
    use super::*;

    pub fn all_flows<'py, B: Backend + ?Sized>(py: Python<'py>, b: &B) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (flow, views) in b.flows() {
            d.set_item(flow, views.iter().map(|v| v.thread_id).collect::<Vec<u64>>())?;
        }
        Ok(d)
    }

    pub fn all_threads<B: Backend + ?Sized>(b: &B) -> Vec<(u32, u64)> {
        b.flows().into_iter().flat_map(|(f, views)| views.into_iter().map(move |v| (f, v.thread_id))).collect()
    }

    pub fn flow_threads_info<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let views = b.flows().into_iter().find(|(f, _)| *f == flow_id).map(|(_, v)| v).unwrap_or_default();
        views
            .iter()
            .map(|v| {
                let d = PyDict::new(py);
                d.set_item("flow_id", flow_id)?;
                d.set_item("thread_id", v.thread_id)?;
                d.set_item("thread_name", v.name)?;
                d.set_item("entries", v.tl.len())?;
                d.set_item("calls", v.tl.calls())?;
                d.set_item("values", v.values)?;
                d.set_item("limit_hit", v.limit_hit.clone())?;
                Ok(d)
            })
            .collect()
    }

    pub fn timeline_len<B: Backend + ?Sized>(b: &B, flow_id: u32, thread_id: u64) -> PyResult<usize> {
        Ok(rec_of(b, flow_id, thread_id)?.tl.len())
    }

    pub fn entry<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        entry_dict(py, b, &rec_of(b, flow_id, thread_id)?, idx)
    }

    pub fn entries<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        start: usize,
        end: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        // Entries evicted to the recording file are not in memory: a page starts after them.
        (start.max(rec.tl.first_idx())..end.min(rec.tl.len())).map(|i| entry_dict(py, b, &rec, i)).collect()
    }

    pub fn timeline_entry<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
        drift: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let drift = Drift::parse(drift).map_err(trace_err)?;
        let to = rec.tl.timeline_entry(idx, drift).map_err(trace_err)?;
        entry_dict(py, b, &rec, to as usize)
    }

    pub fn frame_data<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let call_idx = rec.tl.frame_of(idx).map_err(trace_err)?;
        let call = entry_dict(py, b, &rec, call_idx as usize)?;
        let d = PyDict::new(py);
        for key in ["fn_ns", "fn_name", "form_id", "parent_idx", "ret_idx", "resumed"] {
            d.set_item(key, call.get_item(key)?)?;
        }
        d.set_item("fn_call_idx", call_idx)?;
        d.set_item("args_ref", call.get_item("fn_args_ref")?)?;
        let form = rec.tl.get(call_idx as usize).and_then(|c| b.forms().form(c.id()));
        d.set_item("arg_names", form.map(|f| f.params.iter().map(|p| p.to_string()).collect::<Vec<_>>()))?;
        d.set_item("file", form.map(|f| &*f.file))?;
        d.set_item("line", form.map(|f| f.line))?;
        match rec.tl.get(call_idx as usize).and_then(|c| c.ret_idx()) {
            Some(r) => {
                let exit = entry_dict(py, b, &rec, r as usize)?;
                d.set_item("exit_type", exit.get_item("type")?)?;
                d.set_item("result_ref", exit.get_item("result_ref")?)?;
                d.set_item("throwable_ref", exit.get_item("throwable_ref")?)?;
            }
            None => {
                d.set_item("exit_type", py.None())?;
                d.set_item("result_ref", py.None())?;
                d.set_item("throwable_ref", py.None())?;
            }
        }
        let events = rec.tl.frame_events(u64::from(call_idx), None).map_err(trace_err)?;
        let mut binds = params_as_bindings(py, b, &rec, call_idx)?;
        let mut exprs = Vec::new();
        for i in events {
            let e = entry_dict(py, b, &rec, i as usize)?;
            if rec.tl.get(i as usize).is_some_and(|x| x.kind() == Kind::Bind) {
                binds.push(e);
            } else {
                exprs.push(e);
            }
        }
        latest_states(b, &rec, idx, &binds)?;
        d.set_item("bindings", binds)?;
        d.set_item("expr_executions", exprs)?;
        Ok(d)
    }

    /// A call's parameters as bindings visible from the call entry on.
    fn params_as_bindings<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        rec: &TlView<'_>,
        call_idx: u32,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let Some(call) = rec.tl.get(call_idx as usize) else { return Ok(Vec::new()) };
        if call.kind() != Kind::Call {
            return Ok(Vec::new());
        }
        let Some(form) = b.forms().form(call.id()) else { return Ok(Vec::new()) };
        let vals = rec.tl.call_args(call_idx as usize, form.params.len());
        form.params
            .iter()
            .zip(vals)
            .map(|(name, v)| {
                let d = PyDict::new(py);
                d.set_item("type", "bind")?;
                d.set_item("idx", call_idx)?;
                d.set_item("fn_call_idx", call_idx)?;
                d.set_item("symbol", &**name)?;
                d.set_item("value_ref", value_ref(rec, v))?;
                d.set_item("coord", py.None())?;
                d.set_item("visible_after", call_idx)?;
                d.set_item("form_id", call.id())?;
                Ok(d)
            })
            .collect()
    }

    /// The locals visible at `idx`: the frame's parameters, then each symbol's latest binding.
    pub fn bindings<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let frame = rec.tl.frame_of(idx).map_err(trace_err)?;
        let mut out = params_as_bindings(py, b, &rec, frame)?;
        for i in rec.tl.bindings_at(b.forms(), idx).map_err(trace_err)? {
            let e = entry_dict(py, b, &rec, i as usize)?;
            let sym: Option<String> = e.get_item("symbol")?.and_then(|s| s.extract().ok());
            out.retain(|p| p.get_item("symbol").ok().flatten().and_then(|s| s.extract::<String>().ok()) != sym);
            out.push(e);
        }
        latest_states(b, &rec, idx, &out)?;
        Ok(out)
    }

    /// Points each binding visible at `idx` whose value has an identity at that object's newest
    /// state recorded in this timeline at or before `idx` (not its state when bound), and says
    /// from which entry that state is (`state_idx`, set only when it is not the binding's own).
    fn latest_states<B: Backend + ?Sized>(
        b: &B,
        rec: &TlView<'_>,
        idx: u64,
        binds: &[Bound<'_, PyDict>],
    ) -> PyResult<()> {
        let Some(store) = b.store(rec) else { return Ok(()) };
        // Version 1 files numbered values per entry: a node slot is not a value ref there.
        if store.legacy_len() > 0 || binds.is_empty() {
            return Ok(());
        }
        let Ok(at) = u32::try_from(idx) else { return Ok(()) };
        let entries = NodeEntries::upto(rec.tl, b.forms(), store, at as usize + 1);
        squall_trace::sync_writes(rec.tl, b.forms(), store);
        for d in binds {
            if d.get_item("visible_after")?.and_then(|v| v.extract::<u64>().ok()).is_none_or(|v| v > idx) {
                continue;
            }
            let Some(r) = d.get_item("value_ref")?.and_then(|v| v.extract::<u64>().ok()) else { continue };
            // An args-shaped ref names an entry's float, which has no states.
            if r & ARGS_BIT != 0 {
                continue;
            }
            let Decoded::Slot(slot) = ValRef((r & 0xFFFF_FFFF) as u32).decode() else { continue };
            let obj = store.node(slot).map_or(0, squall_trace::Node::obj);
            let mut state_slot = slot;
            if let Some(state) = squall_trace::latest_state(store, &entries, obj, at, slot) {
                d.set_item("value_ref", value_ref(rec, ValRef(state.slot)))?;
                d.set_item("state_idx", state.idx)?;
                state_slot = state.slot;
            }
            // Writes recorded after that state (up to idx) are applied: the value is the object
            // as of the last of them (`state_idx`), `writes_applied` says how many.
            if let Some((n, last)) = store.writes_since(state_slot, at) {
                d.set_item("value_ref", after_write_ref(rec, last))?;
                d.set_item("state_idx", last)?;
                d.set_item("writes_applied", n)?;
            }
        }
        Ok(())
    }

    /// Every recorded state of object `obj` in flow `flow_id` (one thread's, or all threads'
    /// merged in the order they were recorded), oldest first: thread, entry idx that first
    /// recorded it, value ref.
    pub fn history<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        obj: u64,
        thread_id: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let Some((_, views)) = b.flows().into_iter().find(|(f, _)| *f == flow_id) else {
            return Err(PyKeyError::new_err(format!("flow {flow_id} was not recorded (see all_flows())")));
        };
        let views: Vec<TlView<'_>> = views.into_iter().filter(|v| thread_id.is_none_or(|t| t == v.thread_id)).collect();
        if let (Some(t), true) = (thread_id, views.is_empty()) {
            return Err(PyKeyError::new_err(format!("thread {t} has no timeline in flow {flow_id} (see all_flows())")));
        }
        let parts: Vec<(&Timeline, &ValueStore, NodeEntries)> = views
            .iter()
            .filter_map(|v| {
                let store = b.store(v)?;
                Some((v.tl, store, NodeEntries::new(v.tl, b.forms(), store)))
            })
            .collect();
        let refs: Vec<(&Timeline, &ValueStore, &NodeEntries)> = parts.iter().map(|p| (p.0, p.1, &p.2)).collect();
        squall_trace::history_with_writes(&refs, b.forms(), obj)
            .into_iter()
            .map(|m| {
                let view = &views[m.timeline];
                let store = refs[m.timeline].1;
                let d = PyDict::new(py);
                d.set_item("thread_id", view.thread_id)?;
                match m.change {
                    squall_trace::Change::State(state) => {
                        d.set_item("kind", "state")?;
                        d.set_item("idx", state.idx)?;
                        d.set_item("value_ref", value_ref(view, ValRef(state.slot)))?;
                        d.set_item("preview", squall_trace::printer::preview_ref(ValRef(state.slot), store, 200))?;
                    }
                    squall_trace::Change::Write(w) => {
                        // The object as of this write (its last state with the writes since
                        // applied), and what was written.
                        d.set_item("kind", "write")?;
                        d.set_item("idx", w.idx)?;
                        d.set_item("value_ref", after_write_ref(view, w.idx))?;
                        let after = after_write(store, view.tl, b.forms(), w.idx);
                        d.set_item("preview", after.map(|s| squall_trace::printer::preview(&s, 200)))?;
                        let name = match &w.name {
                            squall_trace::Snap::Str(s) if w.is_attr => s.clone(),
                            key => squall_trace::printer::preview(key, 80),
                        };
                        d.set_item("name", name)?;
                        d.set_item("is_attr", w.is_attr)?;
                        d.set_item("new_ref", w.new.and_then(|v| value_ref(view, v)))?;
                        d.set_item("new_preview", w.new.map(|v| squall_trace::printer::preview_ref(v, store, 200)))?;
                    }
                }
                Ok(d)
            })
            .collect()
    }

    /// The first expr (or, with `any_kind`, any entry) from `from_idx` matching every filter
    /// given: the exact source range `coord`, the `file` and `line` of its site (for calls, the
    /// def line), and `value_pred` on its value.
    #[expect(clippy::too_many_arguments, reason = "mirrors FlowStorm's find-expr-entry options")]
    pub fn find_expr_entry<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        coord: Option<(u32, u32, u32, u32)>,
        file: Option<&str>,
        line: Option<u32>,
        value_pred: Option<Bound<'py, PyAny>>,
        from_idx: Option<u64>,
        backward: bool,
        any_kind: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let forms = b.forms();
        let kinds: &[Kind] =
            if any_kind { &[Kind::Call, Kind::Return, Kind::Unwind, Kind::Expr, Kind::Bind] } else { &[Kind::Expr] };
        let found = rec.tl.find_entry(kinds, from_idx, backward, |i, e| -> PyResult<bool> {
            let (site_coord, form_id) = match e.kind() {
                Kind::Call | Kind::Resume => (None, Some(e.id())),
                Kind::Unwind => (None, Some(e.id())),
                _ => match forms.site(e.id()) {
                    Some(s) => (Some(s.coord), Some(s.form)),
                    None => (None, None),
                },
            };
            let form = form_id.and_then(|f| forms.form(f));
            if let Some((l, c, el, ec)) = coord {
                if site_coord.is_none_or(|sc| (sc.line, sc.col, sc.end_line, sc.end_col) != (l, c, el, ec)) {
                    return Ok(false);
                }
            }
            if let Some(f) = file {
                if form.is_none_or(|fm| !same_file(&fm.file, f)) {
                    return Ok(false);
                }
            }
            if let Some(l) = line {
                let at = site_coord.map(|sc| sc.line).or_else(|| form.filter(|_| e.kind().is_call()).map(|fm| fm.line));
                if at != Some(l) {
                    return Ok(false);
                }
            }
            if let Some(pred) = &value_pred {
                if e.kind().is_call() {
                    return Ok(false);
                }
                let v = match entry_value_ref(&rec, i as usize, e) {
                    Some(r) => deref_value(py, b, r)?,
                    None => return Ok(false),
                };
                let _ = i;
                return crate::recorder::engine::without_recording(|| pred.call1((v,))?.is_truthy());
            }
            Ok(true)
        })?;
        found.map(|i| entry_dict(py, b, &rec, i as usize)).transpose()
    }

    /// `recorded` (a path as the instrumenter saw it) names `wanted` (as a user typed it): equal,
    /// or `wanted` is a trailing part of it on a path-component boundary.
    fn same_file(recorded: &str, wanted: &str) -> bool {
        recorded == wanted || (recorded.ends_with(wanted) && recorded[..recorded.len() - wanted.len()].ends_with('/'))
    }

    pub fn stack_for_frame<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: u64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let frames = rec.tl.stack_for_frame(idx).map_err(trace_err)?;
        frames
            .into_iter()
            .map(|f| {
                let d = PyDict::new(py);
                let form = b.forms().form(f.form);
                d.set_item("fn_call_idx", f.fn_call_idx)?;
                d.set_item("form_id", f.form)?;
                d.set_item("fn_ns", form.map(|x| &*x.ns))?;
                d.set_item("fn_name", form.map(|x| &*x.name))?;
                d.set_item("file", form.map(|x| &*x.file))?;
                d.set_item("line", form.map(|x| x.line))?;
                Ok(d)
            })
            .collect()
    }

    pub fn callstack_node_childs<B: Backend + ?Sized>(
        b: &B,
        flow_id: u32,
        thread_id: u64,
        idx: Option<u64>,
        offset: usize,
        limit: Option<usize>,
    ) -> PyResult<Vec<u32>> {
        rec_of(b, flow_id, thread_id)?.tl.callstack_node_childs(idx, offset, limit).map_err(trace_err)
    }

    pub fn fn_call_stats<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let stats = match thread_id {
            Some(t) => rec_of(b, flow_id, t)?.tl.fn_call_stats(),
            None => {
                let views = b.flows().into_iter().find(|(f, _)| *f == flow_id).map(|(_, v)| v).unwrap_or_default();
                merge_call_stats(views.iter().map(|v| v.tl))
            }
        };
        stats
            .into_iter()
            .map(|s| {
                let d = PyDict::new(py);
                let form = b.forms().form(s.form);
                d.set_item("fn_ns", form.map(|f| &*f.ns))?;
                d.set_item("fn_name", form.map(|f| &*f.name))?;
                d.set_item("form_id", s.form)?;
                d.set_item("cnt", s.count)?;
                Ok(d)
            })
            .collect()
    }

    #[expect(clippy::too_many_arguments, reason = "mirrors FlowStorm's find-fn-call-entry options")]
    pub fn find_fn_call_entry<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        thread_id: u64,
        fn_ns: Option<&str>,
        fn_name: Option<&str>,
        args_pred: Option<Bound<'py, PyAny>>,
        from_idx: Option<u64>,
        backward: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let forms_ok = b.forms().matching(fn_ns, fn_name);
        let found = rec.tl.find_fn_call(&forms_ok, from_idx, backward, |idx| -> PyResult<bool> {
            match &args_pred {
                None => Ok(true),
                Some(pred) => {
                    let args = deref_value(py, b, args_ref(&rec, idx))?;
                    // The predicate is the user's code: it may be instrumented, and must not
                    // append to the timeline being searched.
                    crate::recorder::engine::without_recording(|| pred.call1((args,))?.is_truthy())
                }
            }
        })?;
        found.map(|i| entry_dict(py, b, &rec, i as usize)).transpose()
    }

    /// The calls (not resumptions) of the functions `fns` (`(fn_ns, fn_name)` pairs) in one
    /// timeline that the predicate `where_` holds for (`squall_trace::predicate::calls_where`;
    /// all of them without one), in order, and those it could not decide for with why.
    pub fn calls_where<B: Backend + ?Sized>(
        b: &B,
        flow_id: u32,
        thread_id: u64,
        fns: &[(String, String)],
        where_: Option<&str>,
    ) -> PyResult<(Vec<u32>, Vec<u32>, Option<&'static str>)> {
        use squall_trace::predicate::{calls_where, Predicate, Subject};
        let pred = where_
            .map(|w| Predicate::parse(w, Subject::Call))
            .transpose()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rec = rec_of(b, flow_id, thread_id)?;
        let forms = b.forms();
        let mut forms_ok = vec![false; forms.forms().len()];
        for (ns, name) in fns {
            for (ok, m) in forms_ok.iter_mut().zip(forms.matching(Some(ns), Some(name))) {
                *ok |= m;
            }
        }
        let empty = ValueStore::new();
        let store = b.store(&rec).unwrap_or(&empty);
        // A live timeline grows: its new writes apply to earlier states its values show.
        squall_trace::sync_writes(rec.tl, forms, store);
        let found = calls_where(pred.as_ref(), rec.tl, store, forms, &forms_ok)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok((found.holds, found.undecided, found.why.map(|w| w.text())))
    }

    pub fn forms<'py, B: Backend + ?Sized>(py: Python<'py>, b: &B) -> PyResult<Vec<Bound<'py, PyDict>>> {
        b.forms()
            .forms()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let d = PyDict::new(py);
                d.set_item("form_id", i)?;
                d.set_item("fn_ns", &*f.ns)?;
                d.set_item("fn_name", &*f.name)?;
                d.set_item("file", &*f.file)?;
                d.set_item("line", f.line)?;
                d.set_item("params", f.params.iter().map(|p| p.to_string()).collect::<Vec<_>>())?;
                d.set_item("kind", f.kind.name())?;
                Ok(d)
            })
            .collect()
    }

    /// Entries of every thread of a flow in the order they were recorded, from the `start`-th,
    /// at most `limit`; each entry dict also carries `thread_id`.
    pub fn total_order_timeline<'py, B: Backend + ?Sized>(
        py: Python<'py>,
        b: &B,
        flow_id: u32,
        start: usize,
        limit: usize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let views = b.flows().into_iter().find(|(f, _)| *f == flow_id).map(|(_, v)| v).unwrap_or_default();
        let tls: Vec<&squall_trace::Timeline> = views.iter().map(|v| v.tl).collect();
        let query = squall_trace::order::OrderQuery { start: Some(start), limit, ..Default::default() };
        let page = squall_trace::order::order_page(&tls, &query);
        let mut out = Vec::with_capacity(page.items.len());
        for item in &page.items {
            let view = &views[item.timeline];
            let d = entry_dict(py, b, view, item.idx as usize)?;
            d.set_item("thread_id", view.thread_id)?;
            d.set_item("thread_name", view.name)?;
            out.push(d);
        }
        Ok(out)
    }

    /// The idxs of the entries of one type (`fn-call`, `fn-resume`, `fn-return`, `fn-unwind`).
    pub fn idxs_of_type<B: Backend + ?Sized>(
        b: &B,
        flow_id: u32,
        thread_id: u64,
        entry_type: &str,
    ) -> PyResult<Vec<u32>> {
        let rec = rec_of(b, flow_id, thread_id)?;
        let want: fn(Kind) -> bool = match entry_type {
            "fn-call" => |k| k == Kind::Call,
            "fn-resume" => |k| k == Kind::Resume,
            "fn-return" => |k| k == Kind::Return,
            "fn-unwind" => |k| k == Kind::Unwind,
            "expr" => |k| k == Kind::Expr,
            "bind" => |k| k == Kind::Bind,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown entry type `{other}`; use fn-call, fn-resume, fn-return, fn-unwind, expr or bind"
                )))
            }
        };
        let first = rec.tl.first_idx();
        Ok(rec
            .tl
            .entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| want(e.kind()))
            .map(|(i, _)| (first + i) as u32)
            .collect())
    }
}

/// The recording's identity of the live object `obj` (`None`: it was never recorded).
#[pyfunction]
pub fn object_id(obj: &Bound<'_, PyAny>) -> Option<u64> {
    // SAFETY: GIL held (pyfunction); a valid object.
    unsafe { crate::recorder::identity::IDS.get().known(obj.as_ptr()) }
}
