//! Recorded values ([`Snap`] trees made from a timeline's value store) as Python objects:
//! builtins as themselves, containers rebuilt (with a `Truncated` marker where the budget cut
//! items), other objects as `squall.values` snapshot objects carrying the type name, identity,
//! squall's repr and the recorded attributes.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyList, PySet, PyTuple};
use squall_trace::{SeqKind, Snap};

/// The Python value a recorded tree stands for.
pub fn to_python(py: Python<'_>, s: &Snap) -> PyResult<Py<PyAny>> {
    let values = py.import("squall.values")?;
    to_py(py, &values, s)
}

fn to_py(py: Python<'_>, values: &Bound<'_, PyModule>, s: &Snap) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Snap::None => py.None(),
        Snap::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Snap::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Snap::BigInt(text) => py.get_type::<pyo3::types::PyInt>().call1((text.as_str(),))?.unbind(),
        Snap::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Snap::Complex { re, im } => pyo3::types::PyComplex::from_doubles(py, *re, *im).into_any().unbind(),
        Snap::Str(text) => text.into_pyobject(py)?.into_any().unbind(),
        Snap::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
        Snap::Seq { kind, type_name, id, items, len } => {
            let mut out: Vec<Py<PyAny>> = items.iter().map(|i| to_py(py, values, i)).collect::<PyResult<_>>()?;
            let cut = (*len as usize).saturating_sub(items.len());
            if cut > 0 {
                out.push(values.getattr("Truncated")?.call1((type_name.as_str(), *len, cut))?.unbind());
            }
            match kind {
                SeqKind::List if type_name == "list" => PyList::new(py, out)?.into_any().unbind(),
                SeqKind::Tuple if type_name == "tuple" => PyTuple::new(py, out)?.into_any().unbind(),
                SeqKind::Set | SeqKind::FrozenSet if cut == 0 && (type_name == "set" || type_name == "frozenset") => {
                    let hashable = PySet::new(py, &out);
                    match (hashable, kind) {
                        (Ok(set), SeqKind::Set) => set.into_any().unbind(),
                        (Ok(_), _) => PyFrozenSet::new(py, &out)?.into_any().unbind(),
                        (Err(_), _) => values
                            .getattr("SeqSnapshot")?
                            .call1((type_name.as_str(), PyList::new(py, out)?, *id))?
                            .unbind(),
                    }
                }
                _ => values.getattr("SeqSnapshot")?.call1((type_name.as_str(), PyList::new(py, out)?, *id))?.unbind(),
            }
        }
        Snap::Map { type_name, id, entries, len } => {
            let d = PyDict::new(py);
            let mut unhashable = Vec::new();
            for (k, v) in entries {
                let key = to_py(py, values, k)?;
                let val = to_py(py, values, v)?;
                if d.set_item(key.bind(py), val.bind(py)).is_err() {
                    unhashable.push((key, val));
                }
            }
            let cut = (*len as usize).saturating_sub(entries.len());
            if cut > 0 {
                let m = values.getattr("Truncated")?.call1((type_name.as_str(), *len, cut))?;
                d.set_item(&m, &m)?;
            }
            if type_name == "dict" && unhashable.is_empty() {
                d.into_any().unbind()
            } else {
                values.getattr("MapSnapshot")?.call1((type_name.as_str(), d, *id))?.unbind()
            }
        }
        Snap::Object { type_name, id, repr, attrs } => {
            let d = PyDict::new(py);
            for (k, v) in attrs {
                d.set_item(k, to_py(py, values, v)?)?;
            }
            values.getattr("ObjectSnapshot")?.call1((type_name.as_str(), repr.as_str(), d, *id))?.unbind()
        }
        Snap::Opaque { type_name, id, repr } => {
            values.getattr("ObjectSnapshot")?.call1((type_name.as_str(), repr.as_str(), PyDict::new(py), *id))?.unbind()
        }
        Snap::Cut { type_name, id, len } => {
            values.getattr("Truncated")?.call1((type_name.as_str(), *len, 0, *id))?.unbind()
        }
        Snap::Earlier { slot, idx, value } => values
            .getattr("Earlier")?
            .call1((to_py(py, values, value)?, value.type_name(), value.id(), *slot, *idx))?
            .unbind(),
        Snap::StrCut { prefix, len } => values.getattr("CutStr")?.call1((prefix.as_str(), *len))?.unbind(),
        Snap::BytesCut { prefix, len } => values.getattr("CutBytes")?.call1((PyBytes::new(py, prefix), *len))?.unbind(),
    })
}
