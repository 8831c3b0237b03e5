"""Receivers are references (issue 11, DESIGN.md "Values": where recorded time goes).

The ``x`` of ``x.a``, ``x[k]`` and ``x.m()`` is recorded through the ``recv`` entry point: an
instance the thread recorded a state of already is a reference to that state, shown as
``values.Earlier`` with the writes recorded since applied, never a later state; one never
recorded is encoded in full; a container is encoded as it is. ``reference_programs/receivers.py``
adds to a cart through ``shop.cart.add(...)`` twice, then checks out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import squall
from _fake_engine import FakeEngine
from squall import values
from squall._instrument import rewrite
from test_value_references import _live as _live_recording
from test_values_as_recorded import SQUALL, _run

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "reference_programs" / "receivers.py"
ABSENT = 2147483647


def _text_at(lines, coord):
    line, col, end_line, end_col = coord
    assert line == end_line, coord
    return lines[line - 1][col:end_col]


def _values_by_text(q, deref):
    """(source text, derefed value) of every expression and binding entry of the main thread."""
    lines = PROGRAM.read_text(encoding="utf-8").splitlines()
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            if e["type"] in ("expr", "bind"):
                ref = e.get("result_ref", e.get("value_ref"))
                value = None if ref == ABSENT else deref(ref)
                out.append((_text_at(lines, e["coord"]), value))
    return out


def _live():
    return _live_recording(PROGRAM, _values_by_text)


def _file(tmp_path):
    out = tmp_path / "receivers.sqrec"
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAM])
    assert r.returncode == 0, r.stderr
    rec = squall.load(out)
    return _values_by_text(rec, rec.deref_val_id)


@pytest.fixture(params=["live", "file"])
def recorded(request, tmp_path):
    return _live() if request.param == "live" else _file(tmp_path)


def _of(recorded, text):
    return [v for t, v in recorded if t == text]


def test_a_known_instance_as_receiver_is_its_earlier_state_with_the_writes_since(recorded):
    first, second, third, fourth = _of(recorded, "shop.cart")
    for cart in (first, second, third, fourth):
        assert isinstance(cart, values.Earlier), cart
        assert cart.type_name.endswith("Cart")
        assert repr(cart).startswith("(earlier) Cart#")
    # `self.total += price` ran between them: each shows the writes before it, never a later one.
    assert [c.value.total for c in (first, second, third, fourth)] == [0, 3, 7, 7]
    # The list the cart holds is changed by `append`, no recorded write: an earlier state shows
    # the newest state of the list recorded before the entry (`self.items` before each append,
    # then `show(shop.cart.items)`), never a later one.
    assert [c.value.items for c in (first, second, third, fourth)] == [[], [], [3], [3, 4]]


def test_a_container_receiver_is_recorded_as_it_is(recorded):
    assert _of(recorded, "self.items") == [[], [3], [3, 4]]


def test_an_instance_never_recorded_is_encoded_in_full(recorded):
    (fraction,) = _of(recorded, "Fraction(total, 10)")
    assert isinstance(fraction, values.ObjectSnapshot), fraction
    assert (fraction._numerator, fraction._denominator) == (6, 5)


def test_bindings_and_arguments_still_show_the_whole_state(recorded):
    (cart,) = _of(recorded, "cart")
    assert isinstance(cart, values.ObjectSnapshot), cart
    assert (cart.items, cart.total) == ([3, 4, 5], 12)


def test_receivers_go_through_recv_in_full_mode_only():
    source = PROGRAM.read_text(encoding="utf-8")
    full = rewrite.instrumented_source_text(source, str(PROGRAM), "m", mode="full")
    assert "_recv_" in full and "(shop.cart).add(3)" in full
    calls = rewrite.instrumented_source_text(source, str(PROGRAM), "m", mode="calls")
    assert "_recv" not in calls


def test_an_engine_without_recv_records_receivers_as_expressions():
    eng = FakeEngine()
    source = "class A:\n    x = 5\nclass B:\n    a = A()\ndef f(b):\n    return b.a.x\n"
    ns: dict = {}
    exec(rewrite.compile_instrumented(source, "<recv>", "recv_engine", engine=eng, mode="full"), ns)
    assert ns["f"](ns["B"]()) == 5
    # `b.a`, the receiver of `.x`, through the engine's `expr` at its own coordinates
    assert [(coord, type(v).__name__) for kind, _, coord, v in eng.values if kind == "expr"] == [((6, 11, 6, 14), "A")]


def _receiver_states(q, deref):
    """(entry idx, the earlier state it shows, that object's history) of each ``shop.cart``."""
    lines = PROGRAM.read_text(encoding="utf-8").splitlines()
    out = []
    for tid in q.all_flows().get(0, []):
        for e in q.get_referenced_maps_timeline(0, tid):
            if e["type"] == "expr" and _text_at(lines, e["coord"]) == "shop.cart":
                cart = deref(e["result_ref"])
                out.append((e["idx"], cart, q.history(cart.obj_id, 0, tid)))
    return out


@pytest.mark.parametrize("front", ["live", "file"])
def test_an_earlier_receiver_says_which_entry_its_state_is_from(front, tmp_path):
    """The first ``shop.cart`` shows the state recorded when ``Shop.__init__`` stored the cart
    (no write to it since): its entry. Later ones show the last ``self.total += price`` applied."""
    if front == "live":
        shown = _live_recording(PROGRAM, _receiver_states)
    else:
        out = tmp_path / "receivers.sqrec"
        r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAM])
        assert r.returncode == 0, r.stderr
        rec = squall.load(out)
        shown = _receiver_states(rec, rec.deref_val_id)
    assert len(shown) == 4
    kinds = []
    for idx, cart, history in shown:
        assert isinstance(cart, values.Earlier), cart
        newest = max((c for c in history if c["idx"] is not None and c["idx"] < idx), key=lambda c: c["idx"])
        assert cart.idx == newest["idx"], (idx, cart.idx, history)
        kinds.append(newest["kind"])
    assert kinds[0] == "state" and "write" in kinds[1:], kinds
