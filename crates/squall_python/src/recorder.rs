//! The recorder: what runs inside the recorded program's threads. The entry points the rewritten
//! code calls (`record`, `write_entry`, `write_slot`, `loop_iter`, `awaiting`), the engine that
//! holds the timelines (`engine`, `delegation`, `delegation_state`, `recursion`), the value
//! encoder (`encode`, `ints`), identities and deaths (`identity`, `addr_filter`, `deaths`), the
//! output tee (`outputs`) and the allocator of the big tables (`bigalloc`). It names nothing of
//! `persistence` or `bindings` (`tests/test_rust_module_cycles.py`).

pub(crate) mod addr_filter;
pub(crate) mod awaiting;
pub(crate) mod bigalloc;
pub(crate) mod deaths;
pub(crate) mod delegation;
pub(crate) mod delegation_state;
pub(crate) mod encode;
pub(crate) mod engine;
pub(crate) mod identity;
pub(crate) mod ints;
pub(crate) mod loop_iter;
pub(crate) mod outputs;
pub(crate) mod record;
pub(crate) mod recursion;
pub(crate) mod write_entry;
pub(crate) mod write_slot;
