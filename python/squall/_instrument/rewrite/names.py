"""The names rewritten code uses for the engine's entry points, and the exception's name in the
handler the calls pass adds."""

# body, `__x` would be mangled to `_C__x`.
ENTRY_NAMES = {
    "call": "_sq_call",
    "ret": "_sq_ret",
    "unwind": "_sq_unwind",
    "suspend": "_sq_suspend",
    "resume": "_sq_resume",
    "expr": "_sq_expr",
    "recv": "_sq_recv",
    "bind": "_sq_bind",
    "binds": "_sq_binds",
    "loop_iter": "_sq_for",
    "async_for": "_sq_afor",
    "async_with": "_sq_awith",
    # writes (full mode): the store runs inside the entry point, see crates/squall_python/src/recorder/write_entry.rs
    "wattr": "_sq_wattr",
    "witem": "_sq_witem",
    "wdelattr": "_sq_wdelattr",
    "wdelitem": "_sq_wdelitem",
    "waugattr": "_sq_waugattr",
    "waugitem": "_sq_waugitem",
    "wsetattr": "_sq_wsetattr",
    "wslot": "_sq_wslot",
}
EXC_NAME = "_sq_exc"
