//! Python objects to language-neutral [`Snap`] trees (what a recording file keeps of a value),
//! and back to Python objects when a file is read.
//!
//! Serializing runs `repr` and reads attributes, which is user code: it runs with recording
//! paused and any exception it raises is caught and described instead.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyList, PySet, PyTuple};
use squall_trace::{SeqKind, Snap};

use crate::capture::{str_of, type_name};
use crate::engine::without_recording;

pub struct SnapBudget {
    pub max_depth: u32,
    pub max_length: usize,
    /// Characters of `repr` kept for the value itself.
    pub max_repr: usize,
    /// Characters of `repr` kept for objects nested inside it (their attributes carry the rest).
    pub max_nested_repr: usize,
    /// Values visited for one snapshot, all levels together (what is past it is cut): bounds the
    /// work of saving one value whatever its shape (50 items per level, 4 levels deep could be
    /// millions).
    pub max_nodes: usize,
}

/// What a file keeps of each value. Reprs of nested objects are short: an object's repr usually
/// repeats its attributes' reprs, and the attributes are kept as a tree anyway.
pub const FILE_BUDGET: SnapBudget =
    SnapBudget { max_depth: 4, max_length: 50, max_repr: 300, max_nested_repr: 60, max_nodes: 500 };

/// A structural snapshot of `o` as it is now. Never panics: a snapshot that fails is described.
pub fn snap_of(o: &Bound<'_, PyAny>, budget: &SnapBudget) -> Snap {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| snap_of_inner(o, budget))).unwrap_or_else(|_| {
        // SAFETY: GIL held (a Bound exists).
        unsafe { crate::engine::ENGINE.get().snapshot_errors += 1 };
        Snap::Opaque { type_name: qualified_type_name(o), repr: "<squall could not snapshot this value>".into() }
    })
}

fn snap_of_inner(o: &Bound<'_, PyAny>, budget: &SnapBudget) -> Snap {
    without_recording(|| {
        // SAFETY: GIL held (a Bound exists).
        let eng = unsafe { crate::engine::ENGINE.get() };
        match crate::query::resolve_class_ref(eng, o.clone()) {
            Ok(resolved) => snap(resolved.bind(o.py()), budget, budget.max_depth, &mut budget.max_nodes.clone()),
            Err(_) => snap(o, budget, budget.max_depth, &mut budget.max_nodes.clone()),
        }
    })
}

/// What a batch of snapshots looks up once: type names by type address, and module reprs
/// (`module.__repr__` runs importlib's Python code, and a namespace dict holds dozens of modules).
#[derive(Default)]
struct SnapCache {
    /// The batch holds its objects, and so their types: an address cannot be reused meanwhile.
    type_names: std::collections::HashMap<usize, String>,
    /// Each module held, so that its address cannot be reused while cached.
    module_reprs: std::collections::HashMap<usize, (Py<PyAny>, String)>,
}

thread_local! {
    static CACHE: std::cell::RefCell<Option<SnapCache>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` (which takes snapshots of objects it holds) with type names and module reprs cached.
pub fn with_snap_cache<R>(f: impl FnOnce() -> R) -> R {
    let outer = CACHE.with(|c| c.borrow().is_some());
    if !outer {
        CACHE.with(|c| *c.borrow_mut() = Some(SnapCache::default()));
    }
    let out = f();
    if !outer {
        // Dropped outside the borrow: releasing a module runs no code, but stay safe.
        let cache = CACHE.with(|c| c.borrow_mut().take());
        drop(cache);
    }
    out
}

/// Empties the cache (the batch let other code run: types may have been freed).
pub fn forget_snap_cache() {
    let old = CACHE.with(|c| c.borrow_mut().as_mut().map(std::mem::take));
    drop(old);
}

fn qualified_type_name(o: &Bound<'_, PyAny>) -> String {
    let key = o.get_type().as_ptr() as usize;
    if let Some(name) = CACHE.with(|c| c.borrow().as_ref().and_then(|m| m.type_names.get(&key).cloned())) {
        return name;
    }
    let name = qualified_type_name_uncached(o);
    CACHE.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            m.type_names.insert(key, name.clone());
        }
    });
    name
}

/// `safe_repr`, looked up in the batch's cache for modules.
fn cached_repr(o: &Bound<'_, PyAny>, max: usize) -> String {
    // SAFETY: a type check on a valid object.
    if unsafe { ffi::Py_TYPE(o.as_ptr()) } != &raw mut ffi::PyModule_Type {
        return safe_repr(o, max);
    }
    let key = o.as_ptr() as usize;
    if let Some(r) = CACHE.with(|c| c.borrow().as_ref().and_then(|m| m.module_reprs.get(&key).map(|(_, r)| r.clone())))
    {
        return cut(r, max);
    }
    let full = safe_repr(o, usize::MAX);
    CACHE.with(|c| {
        if let Some(m) = c.borrow_mut().as_mut() {
            m.module_reprs.insert(key, (o.clone().unbind(), full.clone()));
        }
    });
    cut(full, max)
}

fn cut(s: String, max: usize) -> String {
    if s.chars().count() > max {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}...")
    } else {
        s
    }
}

/// Objects shown by their repr alone: their attributes are code or a namespace, not a state.
fn opaque_kind(o: &Bound<'_, PyAny>) -> bool {
    // SAFETY: type checks on a valid object.
    unsafe {
        let p = o.as_ptr();
        ffi::PyModule_Check(p) != 0
            || ffi::PyType_Check(p) != 0
            || ffi::PyFunction_Check(p) != 0
            || ffi::PyCFunction_Check(p) != 0
            || ffi::PyCode_Check(p) != 0
    }
}

fn qualified_type_name_uncached(o: &Bound<'_, PyAny>) -> String {
    let tp = o.get_type();
    let module: Option<String> = tp.getattr("__module__").ok().and_then(|m| m.extract().ok());
    let name: String = tp.getattr("__qualname__").ok().and_then(|m| m.extract().ok()).unwrap_or_else(|| {
        // SAFETY: `o` is a valid object.
        unsafe { type_name(o.as_ptr()) }
    });
    match module.as_deref() {
        None | Some("builtins") => name,
        Some(m) => format!("{m}.{name}"),
    }
}

fn safe_repr(o: &Bound<'_, PyAny>, max: usize) -> String {
    // `object.__repr__` itself, without calling it: what it would say.
    // SAFETY: reading the type slots of a valid object.
    let default_repr = unsafe { ffi::PyBaseObject_Type.tp_repr.map(|f| f as usize) };
    if unsafe { (*ffi::Py_TYPE(o.as_ptr())).tp_repr.map(|f| f as usize) } == default_repr {
        return format!("<{} object at {:#x}>", qualified_type_name(o), o.as_ptr() as usize);
    }
    match o.repr() {
        Ok(r) => cut(r.to_string_lossy().into_owned(), max),
        Err(e) => {
            let py = o.py();
            // SAFETY: a valid exception object.
            let msg = unsafe { str_of(e.value(py).as_ptr()) };
            format!(
                "<{} object; repr raised {}: {}>",
                qualified_type_name(o),
                e.get_type(py).name().map(|n| n.to_string()).unwrap_or_default(),
                msg
            )
        }
    }
}

fn len_of(o: &Bound<'_, PyAny>) -> u64 {
    o.len().map(|l| l as u64).unwrap_or(0)
}

fn snap(o: &Bound<'_, PyAny>, budget: &SnapBudget, depth: u32, left: &mut usize) -> Snap {
    let py = o.py();
    if o.is_none() {
        return Snap::None;
    }
    if *left == 0 {
        // SAFETY: `o` is a valid object.
        return Snap::Cut { type_name: unsafe { type_name(o.as_ptr()) }, len: 0 };
    }
    *left -= 1;
    // SAFETY: type checks on a valid object.
    let exact = |tp: *mut ffi::PyTypeObject| unsafe { ffi::Py_TYPE(o.as_ptr()) == tp };
    if exact(&raw mut ffi::PyBool_Type) {
        return Snap::Bool(o.is_truthy().unwrap_or(false));
    }
    if exact(&raw mut ffi::PyLong_Type) {
        return match o.extract::<i64>() {
            Ok(v) => Snap::Int(v),
            Err(_) => Snap::BigInt(o.str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()),
        };
    }
    if exact(&raw mut ffi::PyFloat_Type) {
        return Snap::Float(o.extract::<f64>().unwrap_or(f64::NAN));
    }
    if exact(&raw mut ffi::PyComplex_Type) {
        let re = o.getattr("real").and_then(|v| v.extract::<f64>()).unwrap_or(f64::NAN);
        let im = o.getattr("imag").and_then(|v| v.extract::<f64>()).unwrap_or(f64::NAN);
        return Snap::Complex { re, im };
    }
    if exact(&raw mut ffi::PyUnicode_Type) {
        return Snap::Str(o.extract::<String>().unwrap_or_else(|_| o.to_string()));
    }
    if exact(&raw mut ffi::PyBytes_Type) {
        return Snap::Bytes(o.extract::<Vec<u8>>().unwrap_or_default());
    }
    let type_name = qualified_type_name(o);
    let seq_kind = if o.is_instance_of::<PyList>() {
        Some(SeqKind::List)
    } else if o.is_instance_of::<PyTuple>() {
        Some(SeqKind::Tuple)
    } else if o.is_instance_of::<PySet>() {
        Some(SeqKind::Set)
    } else if o.is_instance_of::<PyFrozenSet>() {
        Some(SeqKind::FrozenSet)
    } else if type_name == "collections.deque" || exact(&raw mut ffi::PyByteArray_Type) {
        Some(SeqKind::Other)
    } else {
        None
    };
    if let Some(kind) = seq_kind {
        let len = len_of(o);
        if depth == 0 {
            return Snap::Cut { type_name, len };
        }
        let mut items = Vec::new();
        if let Ok(iter) = o.try_iter() {
            for item in iter.take(budget.max_length) {
                match item {
                    Ok(item) => items.push(snap(&item, budget, depth - 1, left)),
                    Err(_) => break,
                }
            }
        }
        return Snap::Seq { kind, type_name, items, len };
    }
    if let Ok(d) = o.cast::<PyDict>() {
        let len = d.len() as u64;
        if depth == 0 {
            return Snap::Cut { type_name, len };
        }
        // A copy: snapshotting the items runs `repr` (user code, other threads), which may
        // change the dict meanwhile.
        let Ok(d) = d.copy() else { return Snap::Cut { type_name, len } };
        let entries = d
            .iter()
            .take(budget.max_length)
            .map(|(k, v)| (snap(&k, budget, depth - 1, &mut *left), snap(&v, budget, depth - 1, &mut *left)))
            .collect();
        return Snap::Map { type_name, entries, len };
    }
    let repr = cached_repr(o, if depth == budget.max_depth { budget.max_repr } else { budget.max_nested_repr });
    if depth == 0 || opaque_kind(o) {
        return Snap::Opaque { type_name, repr };
    }
    let mut attrs: Vec<(String, Snap)> = Vec::new();
    if o.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        if let Ok(args) = o.getattr("args") {
            attrs.push(("args".to_string(), snap(&args, budget, depth - 1, left)));
        }
        // What `str(exc)` said: the message a traceback shows.
        let text = o.str().map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
        attrs.push(("__str__".to_string(), Snap::Str(text)));
    }
    // Instance attributes only: reading `__dict__` runs no user code (unlike `getattr`).
    if let Ok(dict) = o.getattr("__dict__") {
        if let Some(dict) = dict.cast::<PyDict>().ok().and_then(|d| d.copy().ok()) {
            for (k, v) in dict.iter().take(budget.max_length) {
                let key = k.extract::<String>().unwrap_or_else(|_| k.to_string());
                attrs.push((key, snap(&v, budget, depth - 1, left)));
            }
        }
    }
    let _ = py;
    if attrs.is_empty() && !o.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        return Snap::Opaque { type_name, repr };
    }
    Snap::Object { type_name, repr, attrs }
}

/// The Python value a file's snapshot stands for: builtins as themselves, containers rebuilt
/// (with a `Truncated` marker where items were cut), other objects as `squall.values` snapshot
/// objects carrying the type name, repr and attributes.
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
        Snap::Seq { kind, type_name, items, len } => {
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
                        (Err(_), _) => {
                            values.getattr("SeqSnapshot")?.call1((type_name.as_str(), PyList::new(py, out)?))?.unbind()
                        }
                    }
                }
                _ => values.getattr("SeqSnapshot")?.call1((type_name.as_str(), PyList::new(py, out)?))?.unbind(),
            }
        }
        Snap::Map { type_name, entries, len } => {
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
                values.getattr("MapSnapshot")?.call1((type_name.as_str(), d))?.unbind()
            }
        }
        Snap::Object { type_name, repr, attrs } => {
            let d = PyDict::new(py);
            for (k, v) in attrs {
                d.set_item(k, to_py(py, values, v)?)?;
            }
            values.getattr("ObjectSnapshot")?.call1((type_name.as_str(), repr.as_str(), d))?.unbind()
        }
        Snap::Opaque { type_name, repr } => {
            values.getattr("ObjectSnapshot")?.call1((type_name.as_str(), repr.as_str(), PyDict::new(py)))?.unbind()
        }
        Snap::Cut { type_name, len } => values.getattr("Truncated")?.call1((type_name.as_str(), *len, 0))?.unbind(),
    })
}
