"""The seed's FlowStorm page (shared/seed), step by step, in squall's words.

Run by tests/test_seed_workflow.py as its own process: `python walkthrough.py EXAMPLES_DIR`.
Every step asserts what a FlowStorm user would check by eye.
"""

import sys
from collections import Counter

sys.path.insert(0, sys.argv[1])  # examples/invoices: the `billing` package

# ;; 1. Connect FlowStorm and start recording
import squall
from squall import api as fs

fs.start_recording()  # also installs the import hook: the gotcha "won't record without this" is
assert fs.is_recording()  # the only step, and `squall run` does it for you

# ;; 2. Instrument namespace in the Browser panel / 3. RELOAD the namespace (critical!)
# squall instruments at import: importing after start_recording() is all it takes.
from billing.models import Customer, Invoice
from billing.processing import InvoiceError, process_invoice

assert squall.config.explain("billing.processing").instrumented, squall.config.explain("billing.processing")

# ;; 4. Call your function
ana = Customer("Ana", "UY", loyalty_years=4)
invoice = Invoice("INV-9", ana).add("A-1", "Keyboard", 2, 45.0).add("A-2", "Mouse", 12, 15.5)
result = process_invoice(invoice)
bad = Invoice("INV-10", Customer("Bob", "US")).add("E-1", "Dock", 0, 89.0)
try:
    process_invoice(bad)
except InvoiceError:
    pass

# ;; 5. Check recordings
from squall import indexes as fs_api

flows = fs_api.all_flows()  # => {0: [thread_id]}
assert list(flows) == [0] and len(flows[0]) == 1, flows
tid = flows[0][0]
import threading

assert tid == threading.get_native_id()

# Analyzing Recordings
from squall import values as vals

tl = fs_api.get_referenced_maps_timeline(0, tid)
n = len(tl)  # (count tl)
assert n > 10, n
fn_calls = [e for e in tl if e["type"] == "fn-call"]

call = next(e for e in fn_calls if e["fn_name"] == "process_invoice")
ret_entry = tl[call["ret_idx"]]
inspected = {
    "fn": f"{call['fn_ns']}/{call['fn_name']}",
    "args": vals.deref_val_id(call["fn_args_ref"]),
    "result": vals.deref_val_id(ret_entry["result_ref"]),
}
assert inspected["fn"] == "billing.processing/process_invoice", inspected
# The recorded argument is the invoice as it was at the call (a snapshot, not the live object).
(arg,) = inspected["args"]
assert arg.number == invoice.number and [i.sku for i in arg.items] == [i.sku for i in invoice.items], arg
assert inspected["result"] == result == {"number": "INV-9", "net": 256.03, "tax": 56.33, "total": 312.36}, inspected

# Value Dereferencing
unwind = next(e for e in tl if e["type"] == "fn-unwind")
exc = vals.deref_val_id(unwind["throwable_ref"])  # get exception
assert exc.type_name.endswith("InvoiceError") and "quantity 0" in str(exc), exc
assert tl[unwind["fn_call_idx"]]["fn_name"] == "validate"

# For large values: *print-level* 3, *print-length* 10
printed = vals.val_pprint(ret_entry["result_ref"], print_level=3, print_length=2)
assert printed == "{'number': 'INV-9', 'net': 256.03, ...}", printed

# Common Patterns: find calls to a specific function
calls = [e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "process_invoice"]
assert len(calls) == 2
# Find exceptions
unwinds = [e for e in tl if e["type"] == "fn-unwind"]
assert [tl[u["fn_call_idx"]]["fn_name"] for u in unwinds] == ["validate", "process_invoice"]
# Navigate call graph
validate_call = tl[unwinds[0]["fn_call_idx"]]
assert tl[validate_call["parent_idx"]]["fn_name"] == "process_invoice"  # go up to parent
assert tl[call["ret_idx"]]["type"] == "fn-return"  # go to return entry
assert tl[tl[call["ret_idx"]]["fn_call_idx"]] == call  # go back to call

# Call frequency
freq = Counter(f"{e['fn_ns']}/{e['fn_name']}" for e in tl if e["type"] == "fn-call").most_common()
stats = fs_api.fn_call_stats(0, tid)
assert dict(freq) == {f"{s['fn_ns']}/{s['fn_name']}": s["cnt"] for s in stats}, (freq, stats)
assert freq[0][1] == max(s["cnt"] for s in stats)

# Skipped Namespaces: check the config, and ask why a module is or is not recorded
cfg = squall.config.get_storm_instrumentation()
assert "billing.processing" in cfg["instrumented_modules"], cfg
why = squall.config.explain("json")
assert not why.instrumented and "standard library" in why.reason, str(why)

print("walkthrough ok:", n, "entries;", freq[0])
