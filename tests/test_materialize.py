"""values.materialize: real objects rebuilt from recorded arguments, to re-run a call (issue 11).

``materialize_programs/shop.py`` calls ``total`` with dataclass instances (one of them twice) and
a ``__slots__`` object, then changes an argument in place; and ``describe`` with a cycle, a dict
subclass, a deque and an OrderedDict. Rebuilt from the recording (a file, read in this process,
where the classes are importable), each call gives the same result as when it was recorded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import squall
from squall import values
from test_values_as_recorded import SQUALL, _env

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    out = tmp_path_factory.mktemp("mat") / "shop.sqrec"
    env = _env()
    env["PYTHONPATH"] = str(HERE)
    r = subprocess.run(
        [str(SQUALL), "run", "--no-summary", "-o", str(out), str(HERE / "materialize_programs" / "run_shop.py")],
        cwd=str(HERE),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    rec = squall.load(out)
    tid = rec.all_flows()[0][0]
    calls = {}
    for e in rec.get_referenced_maps_timeline(0, tid):
        if e["type"] == "fn-call":
            calls.setdefault(e["fn_name"], e)
    return rec, calls, r.stdout


def test_a_call_rerun_with_its_rebuilt_arguments_gives_its_recorded_result(recording):
    from materialize_programs import shop

    rec, calls, _ = recording
    args = values.materialize_value(rec.deref_val_id(calls["total"]["fn_args_ref"]))
    items, discount, extra = args
    assert type(items[0]) is shop.Item and items[0].price == 1.5  # not 100.0: set after the call
    assert items[0] is items[2]  # one object recorded twice is one object again
    assert type(extra) is shop.Slotted and (extra.a, extra.b) == (2, 3)
    ret = rec.get_referenced_maps_timeline(0, rec.all_flows()[0][0])[calls["total"]["ret_idx"]]
    assert shop.total(*args) == rec.deref_val_id(ret["result_ref"]) == 12.53


def test_cycles_and_container_subclasses_come_back(recording):
    from collections import OrderedDict, deque

    from materialize_programs import shop

    rec, calls, stdout = recording
    node, counts, queue, od = values.materialize_value(rec.deref_val_id(calls["describe"]["fn_args_ref"]))
    assert node.peer.peer is node
    assert type(counts) is shop.Counts and counts == {"x": 1, "y": 2}
    assert type(queue) is deque and list(queue) == [1, 2]
    assert type(od) is OrderedDict and list(od.items()) == [("k", 1)]
    assert shop.describe(node, counts, queue, od) in stdout


def test_what_cannot_be_rebuilt_says_where(recording):
    with pytest.raises(values.MaterializeError, match=r"at \[1\]: class `nowhere.Gone` cannot be imported"):
        values.materialize_value([1, values.ObjectSnapshot("nowhere.Gone", "Gone#1()", {}, 1)])
    cut = values.Truncated("list", 300, 200)
    with pytest.raises(values.MaterializeError, match=r"at \[0\]\[1\]: .*cut by squall's snapshot budget"):
        values.materialize_value([[1, cut]])
    with pytest.raises(values.MaterializeError, match="recorded by its name only"):
        values.materialize_value(values.ObjectSnapshot("function", "<function f#3>", {}, 3))
    assert values.materialize_value([1, "a", (2.5, None)]) == [1, "a", (2.5, None)]
