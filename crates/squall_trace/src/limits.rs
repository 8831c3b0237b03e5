//! Recording limits (FlowStorm's threadTraceLimit, threadFnCallLimits, heapLimit) and their hits.

/// `None` means unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Entries per thread timeline; the thread stops recording when it is reached.
    pub thread_trace_limit: Option<u64>,
    /// Recorded calls per function per thread; later calls of that function are not recorded
    /// (their callees still are, under the nearest recorded caller).
    pub fn_call_limit: Option<u32>,
    /// Estimated bytes of all recordings; recording stops everywhere when it is reached.
    pub memory_limit: Option<u64>,
}

/// A limit that was reached. Each is reported once, when it happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    ThreadTrace { limit: u64 },
    FnCalls { form: u32, limit: u32 },
    Memory { limit: u64 },
}
