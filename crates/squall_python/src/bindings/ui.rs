//! The web UI: serves a recording file over HTTP (squall_server) from a background thread.

use std::path::PathBuf;
use std::sync::Arc;

use std::sync::atomic::Ordering;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::recorder::engine::{Engine, ENGINE, RECORDING, UI_PAUSE};

fn options(host: &str, port: u16, token: Option<String>) -> PyResult<squall_server::ServeOptions> {
    if let Some(why) = token.as_deref().and_then(squall_server::check_token_text) {
        return Err(PyValueError::new_err(why));
    }
    Ok(squall_server::ServeOptions { host: host.to_string(), port, token, ..Default::default() })
}

/// Loads the recording at `path`, starts the UI server on `host:port` (0: any free port) in a
/// background thread, and returns the URL to open (it carries the access token: `token`, or a
/// random one).
#[pyfunction]
#[pyo3(signature = (path, host="127.0.0.1", port=0, token=None))]
pub fn serve_file(py: Python<'_>, path: PathBuf, host: &str, port: u16, token: Option<String>) -> PyResult<String> {
    let opts = options(host, port, token)?;
    py.detach(move || {
        let src = squall_server::FileSource::open(&path).map_err(PyValueError::new_err)?;
        let server = squall_server::spawn(Arc::new(src), &opts).map_err(PyOSError::new_err)?;
        Ok(server.url)
    })
}

/// The live recording of this process as a UI source. Each query takes the GIL and pauses
/// recording for its duration: reading a value can run Python code (a `repr`), which may let
/// other threads run, and they must not append to the timelines being read. Events of other
/// threads during that pause are counted (`engine_stats()["lost_during_ui"]`) and reported.
struct LiveSource;

struct LiveView<'py> {
    py: Python<'py>,
    eng: &'static Engine,
}

impl squall_server::View for LiveView<'_> {
    fn forms(&self) -> &squall_trace::Forms {
        &self.eng.forms
    }

    fn timelines(&self) -> Vec<squall_server::TlInfo<'_>> {
        self.eng
            .recs
            .iter()
            .flatten()
            .map(|r| squall_server::TlInfo { flow: r.flow, thread_id: r.thread_id, name: &r.name, timeline: &r.tl })
            .collect()
    }

    fn values(&self, tl: usize) -> Option<&squall_trace::ValueStore> {
        self.eng.recs.iter().flatten().nth(tl).map(|r| &r.values)
    }

    fn info(&self) -> serde_json::Value {
        let argv: Vec<String> = self.py.import("sys").and_then(|s| s.getattr("argv")?.extract()).unwrap_or_default();
        serde_json::json!({
            "live": true,
            "program": argv.first().cloned().unwrap_or_default(),
            "argv": argv,
            "pid": std::process::id(),
            "recording": RECORDING.load(Ordering::Relaxed) || UI_PAUSE.load(Ordering::Relaxed),
            "entries": self.eng.recs.iter().flatten().map(|r| r.tl.len()).sum::<usize>(),
            "forms": self.eng.forms.forms().len(),
            "completed": false,
        })
    }

    fn outputs(&self) -> Option<&squall_trace::Outputs> {
        // SAFETY: GIL held for the view's lifetime (`LiveSource::with_view`), recording paused.
        Some(unsafe { crate::recorder::outputs::OUTPUTS.get() })
    }

    fn output_tl(&self, number: u32) -> Option<usize> {
        // Positions skip cleared recordings (`timelines` flattens them).
        self.eng.recs.get(number as usize)?.as_ref()?;
        Some(self.eng.recs[..number as usize].iter().flatten().count())
    }
}

impl squall_server::RecordingSource for LiveSource {
    fn with_view(&self, f: &mut dyn FnMut(&dyn squall_server::View)) {
        Python::attach(|py| {
            let was_recording = RECORDING.swap(false, Ordering::Relaxed);
            UI_PAUSE.store(was_recording, Ordering::Relaxed);
            // SAFETY: GIL held; recording is paused, so nothing appends while the view is used.
            let eng: &'static Engine = unsafe { ENGINE.get() };
            crate::recorder::engine::without_recording(|| f(&LiveView { py, eng }));
            if UI_PAUSE.swap(false, Ordering::Relaxed) && !RECORDING.load(Ordering::Relaxed) {
                RECORDING.store(true, Ordering::Relaxed);
            }
        });
    }

    fn live(&self) -> bool {
        true
    }

    /// Runs `squall.ui_control.run(action, arg)` under the GIL, with this thread's recording
    /// suspended (squall's own Python is not recorded). A Python exception is the message.
    fn control(&self, action: &str, arg: &serde_json::Value) -> Result<serde_json::Value, String> {
        Python::attach(|py| {
            crate::recorder::engine::without_recording(|| {
                let out: String = py
                    .import("squall.ui_control")
                    .and_then(|m| m.getattr("run")?.call1((action, arg.to_string()))?.extract())
                    .map_err(|e| {
                        let value = e.value(py);
                        let msg = value.str().map(|s| s.to_string()).unwrap_or_default();
                        if e.is_instance_of::<PyValueError>(py) {
                            msg
                        } else {
                            let ty = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                            format!("`{action}` failed in the program: {ty}: {msg}")
                        }
                    })?;
                serde_json::from_str(&out).map_err(|e| format!("`{action}` answered bad JSON: {e}"))
            })
        })
    }
}

/// Starts the UI over this process's live recording; returns the URL (with its access token).
#[pyfunction]
#[pyo3(signature = (host="127.0.0.1", port=0, token=None))]
pub fn serve_live(py: Python<'_>, host: &str, port: u16, token: Option<String>) -> PyResult<String> {
    let opts = options(host, port, token)?;
    py.detach(move || {
        let server = squall_server::spawn(Arc::new(LiveSource), &opts).map_err(PyOSError::new_err)?;
        Ok(server.url)
    })
}
