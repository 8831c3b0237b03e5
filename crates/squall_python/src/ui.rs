//! The web UI: serves a recording file over HTTP (squall_server) from a background thread.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// Loads the recording at `path`, starts the UI server on `host:port` (0: any free port) in a
/// background thread, and returns the URL to open (it carries the access token).
#[pyfunction]
#[pyo3(signature = (path, host="127.0.0.1", port=0))]
pub fn serve_file(py: Python<'_>, path: PathBuf, host: &str, port: u16) -> PyResult<String> {
    let host = host.to_string();
    py.detach(move || {
        let src = squall_server::FileSource::open(&path).map_err(PyValueError::new_err)?;
        let server = squall_server::spawn(Arc::new(src), &host, port).map_err(PyOSError::new_err)?;
        Ok(server.url)
    })
}
