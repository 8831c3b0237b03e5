//! `squall._engine`: the CPython recorder and thin bindings over `squall_trace`'s queries.

// The layers, lowest first: `recorder` (runs in the program's threads), `persistence` (the file
// sink), `bindings` (the Python surface); each a folder whose modules are named by their path,
// `crate::recorder::engine` (ARCHITECTURE.md).
mod bindings;
mod gil_cell;
mod persistence;
mod recorder;

use std::ffi::CStr;
use std::ptr::null_mut;

use pyo3::ffi;
use pyo3::prelude::*;

#[global_allocator]
static ALLOC: recorder::bigalloc::BigAlloc = recorder::bigalloc::BigAlloc;

type FastFn = unsafe extern "C" fn(*mut ffi::PyObject, *mut *mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject;

/// Adds a raw `METH_FASTCALL` function to the module (not `#[pyfunction]`: see record.rs).
fn add_fast(m: &Bound<'_, PyModule>, name: &'static CStr, doc: &'static CStr, f: FastFn) -> PyResult<()> {
    // CPython keeps a pointer to the method def for the function's lifetime: leak it.
    let def: &'static mut ffi::PyMethodDef = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: f },
        ml_flags: ffi::METH_FASTCALL,
        ml_doc: doc.as_ptr(),
    }));
    let py = m.py();
    // SAFETY: a valid static method def; a NULL self; the module's name as __module__.
    let func = unsafe {
        let ptr = ffi::PyCFunction_NewEx(def, null_mut(), m.name()?.as_ptr());
        Bound::from_owned_ptr_or_err(py, ptr)?
    };
    m.add(name.to_str().unwrap_or("?"), func)
}

/// The method defs of the bound entry points (`bound_entry`), made once and never freed.
static BOUND_DEFS: std::sync::OnceLock<[usize; 16]> = std::sync::OnceLock::new();

fn bound_defs() -> &'static [usize; 16] {
    BOUND_DEFS.get_or_init(|| {
        let leak = |name: &'static CStr, doc: &'static CStr, meth: ffi::PyMethodDefPointer, flags| {
            Box::leak(Box::new(ffi::PyMethodDef {
                ml_name: name.as_ptr(),
                ml_meth: meth,
                ml_flags: flags,
                ml_doc: doc.as_ptr(),
            })) as *mut ffi::PyMethodDef as usize
        };
        [
            leak(
                c"call",
                c"call(*param_values) -> None: a frame of the bound form starts.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::record::call_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"ret",
                c"ret(value) -> value: a frame returns at the bound site.",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::ret_bound },
                ffi::METH_O,
            ),
            leak(
                c"expr",
                c"expr(value) -> value: the bound site's sub-expression value.",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::expr_bound },
                ffi::METH_O,
            ),
            leak(
                c"bind",
                c"bind(value) -> value: a local binding at the bound site.",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::bind_bound },
                ffi::METH_O,
            ),
            leak(
                c"wattr",
                c"wattr(value, obj, name) -> value: obj.name = value, recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::write_attr_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"witem",
                c"witem(value, obj, key) -> value: obj[key] = value, recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::write_item_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"wdelattr",
                c"wdelattr(obj, name) -> None: del obj.name, recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::del_attr_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"wdelitem",
                c"wdelitem(obj, key) -> None: del obj[key], recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::del_item_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"waugattr",
                c"waugattr(obj, name, op, operand) -> None: obj.name op= operand, recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::aug_attr_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"waugitem",
                c"waugitem(obj, key, op, operand) -> None: obj[key] op= operand, recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::aug_item_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"wsetattr",
                c"wsetattr(obj, name, value) -> None: setattr(obj, name, value), recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_entry::set_attr_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"binds",
                c"binds(*values) -> True: the bindings of one statement's names, at the bound site and the ones after it.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::record::binds_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"suspend",
                c"suspend(value) -> value: a resumable frame suspends at the bound site.",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::suspend_bound },
                ffi::METH_O,
            ),
            leak(
                c"resume",
                c"resume(sent) -> sent: a resumable frame of the bound form resumes.",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::resume_bound },
                ffi::METH_O,
            ),
            leak(
                c"wslot",
                c"wslot(obj, key, item) -> WriteSlot: the target obj.key or obj[key], stored and recorded at the bound site.",
                ffi::PyMethodDefPointer { PyCFunctionFast: recorder::write_slot::wslot_bound },
                ffi::METH_FASTCALL,
            ),
            leak(
                c"recv",
                c"recv(value) -> value: the bound site's receiver (the x of x.a, x[k], x.m()).",
                ffi::PyMethodDefPointer { PyCFunction: recorder::record::recv_bound },
                ffi::METH_O,
            ),
        ]
    })
}

/// `bound_entry(entry, id)`: the entry point `entry` ("call", "ret", "expr", "bind" or a write:
/// "wattr", "witem", "wdelattr", "wdelitem", "waugattr", "waugitem", "wsetattr", "wslot", "binds", "suspend", "resume", "recv") bound to one
/// form (call) or site (the others): `bound_entry("expr", S)(v)` records what
/// `expr(S, v)` records. The rewriter holds these as constants of the code that calls them,
/// which saves passing the id and, for ret/expr/bind, uses CPython's fastest call (`METH_O`).
/// `id` is an int (the rewriter passes an int subclass that pickles, so that code holding
/// these can be pickled by value, as cloudpickle does); it is the function's `self`.
#[pyfunction]
fn bound_entry<'py>(py: Python<'py>, entry: &str, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let i = match entry {
        "call" => 0,
        "ret" => 1,
        "expr" => 2,
        "bind" => 3,
        "wattr" => 4,
        "witem" => 5,
        "wdelattr" => 6,
        "wdelitem" => 7,
        "waugattr" => 8,
        "waugitem" => 9,
        "wsetattr" => 10,
        "binds" => 11,
        "suspend" => 12,
        "resume" => 13,
        "wslot" => 14,
        "recv" => 15,
        _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("no bound entry point {entry:?}"))),
    };
    // SAFETY: GIL held; a valid object.
    if unsafe { crate::recorder::ints::id_of(id.as_ptr()) }.is_none() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a form or site id is an int in 0..2**32, not {}",
            id.repr()?
        )));
    }
    let def = bound_defs()[i] as *mut ffi::PyMethodDef;
    // SAFETY: a valid, never freed method def; `self` is the id, which the function keeps alive.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, id.as_ptr(), null_mut())) }
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_fast(m, c"call", c"call(form_id, *param_values) -> None: a frame starts.", recorder::record::call)?;
    add_fast(m, c"ret", c"ret(site_id, value) -> value: a frame returns.", recorder::record::ret)?;
    add_fast(
        m,
        c"unwind",
        c"unwind(form_id, exc) -> None: a frame is left by an exception.",
        recorder::record::unwind,
    )?;
    add_fast(
        m,
        c"suspend",
        c"suspend(site_id, value) -> value: a resumable frame suspends.",
        recorder::record::suspend,
    )?;
    add_fast(m, c"resume", c"resume(form_id, sent) -> sent: a resumable frame resumes.", recorder::record::resume)?;
    add_fast(m, c"expr", c"expr(site_id, value) -> value: a sub-expression's value.", recorder::record::expr)?;
    add_fast(
        m,
        c"recv",
        c"recv(site_id, value) -> value: a receiver's value (the x of x.a, x[k], x.m()).",
        recorder::record::recv,
    )?;
    add_fast(m, c"bind", c"bind(site_id, value) -> value: a local binding.", recorder::record::bind)?;
    add_fast(
        m,
        c"binds",
        c"binds(first_site_id, *values) -> True: local bindings at consecutive sites.",
        recorder::record::binds,
    )?;
    add_fast(
        m,
        c"wattr",
        c"wattr(site_id, value, obj, name) -> value: obj.name = value, recorded.",
        recorder::write_entry::write_attr,
    )?;
    add_fast(
        m,
        c"witem",
        c"witem(site_id, value, obj, key) -> value: obj[key] = value, recorded.",
        recorder::write_entry::write_item,
    )?;
    add_fast(
        m,
        c"wdelattr",
        c"wdelattr(site_id, obj, name) -> None: del obj.name, recorded.",
        recorder::write_entry::del_attr,
    )?;
    add_fast(
        m,
        c"wdelitem",
        c"wdelitem(site_id, obj, key) -> None: del obj[key], recorded.",
        recorder::write_entry::del_item,
    )?;
    add_fast(
        m,
        c"waugattr",
        c"waugattr(site_id, obj, name, op, operand) -> None: obj.name op= operand, recorded.",
        recorder::write_entry::aug_attr,
    )?;
    add_fast(
        m,
        c"waugitem",
        c"waugitem(site_id, obj, key, op, operand) -> None: obj[key] op= operand, recorded.",
        recorder::write_entry::aug_item,
    )?;
    add_fast(
        m,
        c"wsetattr",
        c"wsetattr(site_id, obj, name, value) -> None: setattr(obj, name, value), recorded.",
        recorder::write_entry::set_attr,
    )?;
    m.add_function(wrap_pyfunction!(bound_entry, m)?)?;
    recorder::awaiting::register(m)?;
    recorder::delegation::init_names(m.py());
    recorder::loop_iter::register(m)?;

    // The kind codes register_form / register_site take, from the core's enums (their one
    // definition).
    for k in squall_trace::FormKind::ALL {
        m.add(format!("FORM_{}", k.const_name()), k as u8)?;
    }
    for k in squall_trace::SiteKind::ALL {
        m.add(format!("SITE_{}", k.const_name()), k as u8)?;
    }

    let py = m.py();
    // The encoder calls a user-registered encoder through the engine, which it does not name.
    crate::recorder::encode::set_call_unrecorded(crate::recorder::engine::call_unrecorded);
    if crate::recorder::encode::deque_type().is_null() {
        let deque = py.import("collections")?.getattr("deque")?;
        crate::recorder::encode::set_deque_type(deque.as_ptr().cast());
        // Held for good: the engine compares types with it.
        std::mem::forget(deque);
    }

    recorder::outputs::register(m)?;
    m.add_function(wrap_pyfunction!(bindings::control::register_form, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::note_source, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::read_source, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::register_site, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::start_recording, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::stop_recording, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::is_recording, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::clear_recordings, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::set_flow, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::current_flow, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::set_thread_namer, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::register_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::set_snapshot_budget, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::get_snapshot_budget, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::set_limits, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::get_limits, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::limits_hit, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::engine_stats, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::next_ids, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::control::registrations_since, m)?)?;

    // The queries: methods of the one recording class, over the live recording (`live()`) or
    // a file (`load_recording`).
    m.add_function(wrap_pyfunction!(bindings::query::object_id, m)?)?;
    m.add_class::<bindings::file::PyRecording>()?;
    m.add_function(wrap_pyfunction!(bindings::file::live, m)?)?;

    bindings::agent_queries::register(m)?;
    m.add_function(wrap_pyfunction!(bindings::file::load_recording, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::open_sink, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::flush_sink, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::sink_path, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::close_sink, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::pause_flusher, m)?)?;
    m.add_function(wrap_pyfunction!(persistence::sink::resume_flusher, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::ui::serve_file, m)?)?;
    m.add_function(wrap_pyfunction!(bindings::ui::serve_live, m)?)?;
    m.add_function(wrap_pyfunction!(recorder::recursion::recursion_used, m)?)?;
    recorder::write_slot::register(m)?;
    m.add_function(wrap_pyfunction!(recorder::recursion::shift_recursion, m)?)?;
    Ok(())
}
