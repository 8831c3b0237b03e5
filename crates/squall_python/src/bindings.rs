//! The Python surface over the recorder and the core's queries: the one recording class
//! (`file`: `Recording`, live or a file) and the queries it binds (`query`, `query_threads`,
//! `agent_queries`, `writes`, `arg_refs`, `printed`, `snap`), recording control and
//! registration (`control`) and the UI server (`ui`). The top layer: nothing below names it
//! (`tests/test_rust_module_cycles.py`).

pub(crate) mod agent_queries;
pub(crate) mod arg_refs;
pub(crate) mod control;
pub(crate) mod file;
pub(crate) mod printed;
pub(crate) mod query;
pub(crate) mod query_threads;
pub(crate) mod snap;
pub(crate) mod ui;
pub(crate) mod writes;
