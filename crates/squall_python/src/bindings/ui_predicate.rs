//! The UI server's custom power-step predicates, run in Python for the live and the file UI
//! alike: compiled by `squall.agent_predicate.compile_predicate` (the agent's `calls --where`
//! language, read with `ast` and never `eval`'d) and called with the entry's names: `v` (its
//! value as recorded, a Python object as `Recording.deref` gives it), `kind`, `name` and `fn`
//! (`crates/squall_server/src/predicate.rs`).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use squall_server::{Candidate, Predicates, Test};

pub struct PyPredicates;

/// The message of a Python exception: a `PredicateError` (a `ValueError`) is the user's; any
/// other is said to have failed.
fn message(py: Python<'_>, e: &PyErr) -> String {
    let value = e.value(py);
    let msg = value.str().map(|s| s.to_string()).unwrap_or_default();
    if e.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
        msg
    } else {
        let ty = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        format!("the predicate failed: {ty}: {msg}")
    }
}

fn names<'py>(py: Python<'py>, c: &Candidate<'_>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("v", crate::bindings::snap::to_python(py, c.value)?)?;
    d.set_item("kind", c.kind)?;
    d.set_item("name", c.name)?;
    d.set_item("fn", c.function)?;
    Ok(d)
}

impl Predicates for PyPredicates {
    fn with_predicate(&self, text: &str, scan: &mut dyn FnMut(&Test<'_>)) -> Result<(), String> {
        Python::attach(|py| {
            // squall's own Python is not recorded (a live program's recording is paused too).
            crate::recorder::engine::without_recording(|| {
                let pred = py
                    .import("squall.agent_predicate")
                    .and_then(|m| m.getattr("compile_predicate")?.call1((text, "entry")))
                    .map_err(|e| message(py, &e))?;
                // A predicate that reads no name is true or false for every entry alike: most
                // likely text typed without `text:` (`'JP'`).
                let reads_any = pred.getattr("reads").and_then(|r| r.is_truthy()).map_err(|e| message(py, &e))?;
                if !reads_any {
                    let quoted = pyo3::types::PyString::new(py, text).repr().map(|r| r.to_string()).unwrap_or_default();
                    return Err(format!(
                        "{quoted} reads none of the entry's names (v, kind, name, fn), so it holds for every entry or none: write e.g. `v == 3`, or text:{text} for the printed value"
                    ));
                }
                let test = |c: &Candidate<'_>| -> Result<bool, String> {
                    let d = names(py, c).map_err(|e| message(py, &e))?;
                    pred.call1((d,)).and_then(|r| r.is_truthy()).map_err(|e| message(py, &e))
                };
                scan(&test);
                Ok(())
            })
        })
    }
}
