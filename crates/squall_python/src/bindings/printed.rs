//! The recorded value a user-facing ref names, as the core's `Snap`, for the core's printer:
//! the Python API prints with the same function as the UI server (no printer of its own).

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use squall_trace::value_tree::{self, ChildKey};
use squall_trace::{Decoded, Entry, Kind, SeqKind, Snap, ValRef, Value};

use crate::bindings::query::{after_write, Backend, TlView, ARGS_BIT, NUMBER_SHIFT};

/// What `deref_value` gives for ref `r`, as a `Snap`: a value, a call's arguments as a list, or
/// the target of a write as of that write. Same refs, same errors.
pub fn snap_of_ref<B: Backend + ?Sized>(b: &B, r: u64) -> PyResult<Snap> {
    let (rec, local) = timeline_of_ref(b, r)?;
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

/// The timeline a user-facing ref `r` belongs to, and its local part (a value ref of that
/// timeline, or with `ARGS_BIT` a call's or write's idx).
pub fn timeline_of_ref<B: Backend + ?Sized>(b: &B, r: u64) -> PyResult<(TlView<'_>, u32)> {
    let number = u32::try_from(r >> NUMBER_SHIFT)
        .map_err(|_| PyKeyError::new_err(format!("value ref {r} was not made by this recording")))?;
    let rec = b
        .by_number(number)
        .map_err(|e| Python::attach(|py| PyKeyError::new_err(format!("value ref {r}: {}", e.value(py)))))?;
    Ok((rec, (r & 0xFFFF_FFFF) as u32))
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

/// One level of the value a ref names (`squall_trace::value_tree::expand`, the UI's `/api/value`
/// paging): the node `path` names and its children `offset..offset + limit`, each printed by the
/// core's printer within `print_level` / `print_length` (see `_engine.pyi`).
#[allow(clippy::too_many_arguments)]
pub fn val_expand<'py, B: Backend + ?Sized>(
    py: Python<'py>,
    b: &B,
    r: u64,
    path: &[usize],
    offset: usize,
    limit: usize,
    print_level: usize,
    print_length: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let root = snap_of_ref(b, r)?;
    let x = value_tree::expand(&root, path, offset, limit)
        .map_err(|e| PyValueError::new_err(format!("value ref {r}: {e}")))?;
    let d = node_dict(py, x.node, print_level, print_length)?;
    d.set_item("path", path)?;
    d.set_item("offset", x.offset)?;
    d.set_item("more", x.more())?;
    let children = PyList::empty(py);
    for (key, c, p) in &x.children {
        let cd = node_dict(py, c, print_level, print_length)?;
        let (kind, exact) = match key {
            ChildKey::Index(_) => ("item", true),
            ChildKey::Key { exact, .. } => ("key", *exact),
            ChildKey::Attr(_) => ("attr", true),
        };
        cd.set_item("key", key.text())?;
        cd.set_item("key_kind", kind)?;
        cd.set_item("key_exact", exact)?;
        cd.set_item("path", p)?;
        children.append(cd)?;
    }
    d.set_item("children", children)?;
    Ok(d)
}

/// What a node of a value tree shows: `type`, `id` (0: none), `len`, `earlier` (and
/// `earlier_idx`: the entry that state is as of, when known), `repr`,
/// `children_total` (children the recording kept), `indexed` (its children are items by
/// position), `truncated_when_recorded`.
fn node_dict<'py>(py: Python<'py>, s: &Snap, print_level: usize, print_length: usize) -> PyResult<Bound<'py, PyDict>> {
    let bare = value_tree::bare(s);
    let earlier = matches!(s, Snap::Earlier { .. });
    let d = PyDict::new(py);
    d.set_item("type", bare.type_name())?;
    d.set_item("id", s.id())?;
    d.set_item("len", value_tree::total_len(bare))?;
    d.set_item("earlier", earlier)?;
    d.set_item("earlier_idx", if let Snap::Earlier { idx, .. } = s { *idx } else { None })?;
    d.set_item("repr", value_tree::text(s, print_level, print_length))?;
    d.set_item("children_total", value_tree::children_count(bare))?;
    d.set_item("indexed", matches!(bare, Snap::Seq { .. }))?;
    d.set_item("truncated_when_recorded", value_tree::cut_when_recorded(bare))?;
    Ok(d)
}
