//! Persistence: the file sink that saves the live recording while the program runs (`sink`: the
//! flusher thread, the hand-over to `squall_store`'s writer). Above the recorder, below the
//! bindings (`tests/test_rust_module_cycles.py`).

pub(crate) mod sink;
