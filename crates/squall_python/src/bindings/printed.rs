//! The recorded value a user-facing ref names, as the core's `Snap`, for the core's printer:
//! the Python API prints with the same function as the UI server (no printer of its own).

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use squall_trace::{Decoded, Entry, Kind, SeqKind, Snap, ValRef, Value};

use crate::query::{after_write, Backend, TlView, ARGS_BIT, NUMBER_SHIFT};

/// What `deref_value` gives for ref `r`, as a `Snap`: a value, a call's arguments as a list, or
/// the target of a write as of that write. Same refs, same errors.
pub fn snap_of_ref<B: Backend + ?Sized>(b: &B, r: u64) -> PyResult<Snap> {
    let number = u32::try_from(r >> NUMBER_SHIFT)
        .map_err(|_| PyKeyError::new_err(format!("value ref {r} was not made by this recording")))?;
    let local = (r & 0xFFFF_FFFF) as u32;
    let rec = b
        .by_number(number)
        .map_err(|e| Python::attach(|py| PyKeyError::new_err(format!("value ref {r}: {}", e.value(py)))))?;
    if r & ARGS_BIT != 0 && rec.tl.get(local as usize).is_some_and(|e| e.kind() == Kind::Write) {
        return b.store(&rec).and_then(|store| after_write(store, rec.tl, b.forms(), local)).ok_or_else(|| {
            PyKeyError::new_err(format!("value ref {r}: no state of the target of write entry {local} was recorded"))
        });
    }
    if let Some(Value::Float(f)) =
        rec.tl.get(local as usize).filter(|e| r & ARGS_BIT != 0 && e.holds_float()).map(Entry::value)
    {
        return Ok(Snap::Float(f));
    }
    if r & ARGS_BIT != 0 {
        let call = rec.tl.get(local as usize).filter(|e| e.kind().is_call()).ok_or_else(|| {
            PyKeyError::new_err(format!("value ref {r} names the args of entry {local}, which is not a call"))
        })?;
        let nparams =
            if call.kind() == Kind::Resume { 1 } else { b.forms().form(call.id()).map_or(0, |f| f.params.len()) };
        let items: PyResult<Vec<Snap>> =
            rec.tl.call_args(local as usize, nparams).into_iter().map(|v| leaf(b, &rec, v)).collect();
        let items = items?;
        let len = items.len() as u64;
        return Ok(Snap::Seq { kind: SeqKind::List, type_name: "list".into(), id: 0, items, len });
    }
    leaf(b, &rec, ValRef(local))
}

fn leaf<B: Backend + ?Sized>(b: &B, rec: &TlView<'_>, v: ValRef) -> PyResult<Snap> {
    Ok(match v.decode() {
        Decoded::Int(i) => Snap::Int(i),
        Decoded::Float(f) => Snap::Float(f),
        Decoded::None | Decoded::Absent => Snap::None,
        Decoded::Bool(x) => Snap::Bool(x),
        Decoded::Slot(i) => b.slot_snap(rec, i)?,
    })
}
