"""Every value a recording shows is its state at that entry's moment (issue 11, DESIGN.md
"Values").

The programs in ``tests/value_programs/`` record values (call arguments, return values,
expression values) and change them afterwards: in the caller, in another function, from C code,
from another thread. Each is recorded twice:

- in this process (rewritten in full mode, ``squall.api.start_recording``), queried through the
  live API: ``squall.indexes`` and ``squall.values.deref_val_id``;
- by ``squall run --mode full -o FILE`` in a subprocess, queried through ``squall.load(FILE)``
  (``rec.deref_val_id``) and the text of ``squall query FILE calls FN``.

What a value derefs to: builtins (list, tuple, dict, set, str, int, float, bytes) as themselves
(rebuilt copies); list and dict subclasses and ``deque`` as ``squall.values.SeqSnapshot`` /
``MapSnapshot`` with ``.type_name``; other objects as ``squall.values.ObjectSnapshot`` with
``.type_name``, their recorded fields as attributes and ``.obj_id``, a recording-wide identity.
An expression's object that was recorded before is ``values.Earlier`` around that snapshot.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import squall
from squall import api, indexes, values
from squall._instrument import rewrite

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "value_programs"
SQUALL = Path(sys.executable).parent / "squall"

KINDS = (
    "plain",
    "dataclass",
    "slots",
    "property",
    "list",
    "dict",
    "set",
    "nested",
    "list_subclass",
    "dict_subclass",
    "deque",
    "defaultdict",
    "tuple_of_list",
)
HOWS = ("caller", "function", "c", "thread")
SITES = ("argument", "return", "expression")
OBJECT_KINDS = ("plain", "dataclass", "slots", "property")
FRONTENDS = ("live", "file")

#: Each kind's state when it was recorded, as ``recorded_state`` reads it (kinds.py ``new``).
OLD_STATE: Dict[str, Any] = {
    "plain": {"name": "pen", "price": 1.25},
    "dataclass": {"name": "pen", "price": 1.25},
    "slots": {"name": "pen", "price": 1.25},
    "property": {"name": "pen", "_price": 1.25},
    "list": [31, 11, 21],
    "dict": {"b": 31, "a": 11},
    "set": [11, 31],
    "nested": [{"n": 31}, {"n": 11}],
    "list_subclass": [31, 11, 21],
    "dict_subclass": {"b": 31, "a": 11},
    "deque": [31, 11, 21],
    "defaultdict": {"a": [31]},
    "tuple_of_list": (31, [11, 21]),
}

#: The numbers a preview of each kind shows, in order, when it shows the recorded state.
OLD_NUMBERS: Dict[str, List[str]] = {
    "plain": ["1.25"],
    "dataclass": ["1.25"],
    "slots": ["1.25"],
    "property": ["1.25"],
    "list": ["31", "11", "21"],
    "dict": ["31", "11"],
    "set": ["11", "31"],
    "nested": ["31", "11"],
    "list_subclass": ["31", "11", "21"],
    "dict_subclass": ["31", "11"],
    "deque": ["31", "11", "21"],
    "defaultdict": ["31"],
    "tuple_of_list": ["31", "11", "21"],
}
#: The numbers only a later state has (kinds.py writes 7.75 into objects, 99 into containers).
LATER_NUMBERS = ("7.75", "99")


# --- recording ------------------------------------------------------------------------------------


def _env() -> dict:
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONSTARTUP", "SQUALL_INCLUDE", "SQUALL_SKIP", "SQUALL_SKIP_REGEX", "SQUALL_MODE"):
        env.pop(k, None)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def _run(cmd: List[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], cwd=str(PROGRAMS), env=_env(), capture_output=True, text=True, timeout=timeout
    )


def record_to_file(program: str, out: Path) -> str:
    """``squall run --mode full -o out program``; the program's stdout."""
    r = _run([SQUALL, "run", "--no-summary", "--mode", "full", "-o", out, PROGRAMS / program])
    assert r.returncode == 0, r.stderr
    assert out.exists(), r.stderr
    return r.stdout


def query_text(path: Path, *args: str) -> str:
    r = _run([SQUALL, "query", path, *args])
    assert r.returncode == 0, r.stderr
    return r.stdout


class Front:
    """One way of reading a recording: ``q`` answers the queries of ``squall.indexes``,
    ``deref`` gives a value back, ``ns`` is the module the program's functions were recorded in."""

    def __init__(self, q: Any, deref: Callable[[Optional[int]], Any], ns: str, result: Any) -> None:
        self.q = q
        self.deref = deref
        self.ns = ns
        self.result = result  # what the program's main() returned (live) or printed (file)

    def entries(self) -> List[Tuple[int, dict]]:
        out = []
        for tid in self.q.all_flows().get(0, []):
            out.extend((tid, e) for e in self.q.get_referenced_maps_timeline(0, tid))
        return out

    def calls(self, fn_name: str) -> List[Tuple[int, dict, list]]:
        """(thread id, fn-call entry, derefed args) of every call of ``fn_name``, in order."""
        out = []
        for tid, e in self.entries():
            if e["type"] == "fn-call" and e["fn_ns"] == self.ns and e["fn_name"] == fn_name:
                out.append((tid, e, self.deref(e["fn_args_ref"])))
        return out

    def result_of(self, tid: int, call: dict) -> Any:
        ret = self.q.get_referenced_maps_timeline(0, tid)[call["ret_idx"]]
        assert ret["type"] == "fn-return", ret
        return self.deref(ret["result_ref"])


def run_live(program: str) -> Tuple[types.ModuleType, Any]:
    """Rewrites ``program`` in full mode as module ``vp_<name>``, runs its ``main()`` recording."""
    path = PROGRAMS / program
    name = "vp_" + path.stem
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    sys.modules[name] = mod
    exec(rewrite.compile_instrumented(path.read_text(encoding="utf-8"), str(path), name, mode="full"), mod.__dict__)
    return mod, mod.main()


@pytest.fixture(scope="module")
def live_runs():
    """Every program of this file run in this process while recording, queried live."""
    api.stop_recording()
    api.clear_recordings()
    api.set_flow(0)
    api.start_recording(install_hook=False)
    mods = {}
    try:
        for program in ("kinds.py", "retry_mutation.py", "identity.py"):
            mods[program] = run_live(program)
    finally:
        api.stop_recording()
    yield {p: Front(indexes, values.deref_val_id, mod.__name__, result) for p, (mod, result) in mods.items()}, mods
    api.clear_recordings()
    for mod, _ in mods.values():
        sys.modules.pop(mod.__name__, None)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every program of this file recorded by ``squall run --mode full -o``: {program: (path, stdout)}."""
    d = tmp_path_factory.mktemp("value_recordings")
    return {
        p: (d / (p[:-3] + ".sqrec"), record_to_file(p, d / (p[:-3] + ".sqrec")))
        for p in ("kinds.py", "retry_mutation.py", "identity.py")
    }


@pytest.fixture(scope="module")
def fronts(live_runs, saved):
    """{"live": {program: Front}, "file": {program: Front}}."""
    files = {}
    for program, (path, stdout) in saved.items():
        rec = squall.load(path)
        files[program] = Front(rec, rec.deref_val_id, "__main__", stdout)
    return {"live": live_runs[0], "file": files}


# --- the values of kinds.py ----------------------------------------------------------------------


def kinds_sites(front: Front) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """{(kind, how): {"argument": value, "return": value, "expression": value}} of kinds.py:
    ``observe``'s argument, ``produce``'s return value, and the ``box[0]`` at EXPR-SITE."""
    source = (PROGRAMS / "kinds.py").read_text(encoding="utf-8").splitlines()
    (expr_line,) = [i + 1 for i, line in enumerate(source) if line.rstrip().endswith("# EXPR-SITE")]
    sites: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for _, _, (kind, how, v) in front.calls("observe"):
        sites.setdefault((kind, how), {})["argument"] = v
    for tid, call, (kind, how, _) in front.calls("produce"):
        sites.setdefault((kind, how), {})["return"] = front.result_of(tid, call)
    scenario_of = {(tid, call["idx"]): (args[0], args[1]) for tid, call, args in front.calls("run_scenario")}
    for tid, e in front.entries():
        if e["type"] != "expr" or (tid, e["fn_call_idx"]) not in scenario_of:
            continue
        l0, c0, l1, c1 = e["coord"]
        if l0 == l1 == expr_line and source[l0 - 1][c0:c1] == "box[0]":
            sites.setdefault(scenario_of[tid, e["fn_call_idx"]], {})["expression"] = front.deref(e["result_ref"])
    return sites


@pytest.fixture(scope="module")
def kinds(fronts):
    out = {name: kinds_sites(by_program["kinds.py"]) for name, by_program in fronts.items()}
    for name, sites in out.items():
        assert len(sites) == len(KINDS) * len(HOWS), (name, sorted(sites))
        for key, found in sites.items():
            assert sorted(found) == sorted(SITES), (name, key, sorted(found))
    return out


def recorded_state(kind: str, v: Any) -> Any:
    """The state a recorded value shows, read through attributes and iteration only, so that it
    reads a live object, a copy and a snapshot alike."""
    if kind in ("plain", "dataclass", "slots"):
        return {"name": v.name, "price": v.price}
    if kind == "property":
        return {"name": v.name, "_price": v._price}  # never the property: it counts its calls
    if kind in ("list", "list_subclass", "deque"):
        return list(v)
    if kind in ("dict", "dict_subclass"):
        return dict(v)
    if kind == "set":
        return sorted(v)
    if kind == "nested":
        return [dict(d) for d in v]
    if kind == "defaultdict":
        return {k: list(x) for k, x in dict(v).items()}
    if kind == "tuple_of_list":
        return (v[0], list(v[1]))
    raise ValueError(kind)


def _kinds_params(frontends=("live", "file"), sites=SITES):
    return [
        pytest.param(kind, how, site, frontend, id=f"{kind}-{how}-{site}-{frontend}")
        for kind in KINDS
        for how in HOWS
        for site in sites
        for frontend in frontends
    ]


@pytest.mark.parametrize("kind,how,site,frontend", _kinds_params())
def test_a_value_changed_after_its_entry_shows_its_state_at_the_entry(kinds, kind, how, site, frontend):
    v = kinds[frontend][kind, how][site]
    assert recorded_state(kind, v) == OLD_STATE[kind]


def _shape_params():
    return [
        pytest.param(kind, site, frontend, id=f"{kind}-{site}-{frontend}")
        for kind in KINDS
        for site in SITES
        for frontend in ("live", "file")
    ]


EXPECTED_TYPE_NAME = {
    "plain": "Item",
    "dataclass": "DataItem",
    "slots": "SlotItem",
    "property": "PropItem",
    "list_subclass": "MyList",
    "dict_subclass": "MyDict",
    "deque": "deque",
    "defaultdict": "defaultdict",
}


def check_shape(kind: str, v: Any) -> None:
    if kind in OBJECT_KINDS:
        assert isinstance(v, values.ObjectSnapshot), type(v)
        assert v.type_name.endswith(EXPECTED_TYPE_NAME[kind]), v.type_name
        assert isinstance(v.obj_id, int) and not isinstance(v.obj_id, bool)
        text = repr(v)
        assert EXPECTED_TYPE_NAME[kind] in text and f"#{v.obj_id}" in text, text
    elif kind in ("list_subclass", "deque"):
        assert isinstance(v, values.SeqSnapshot), type(v)
        assert v.type_name.endswith(EXPECTED_TYPE_NAME[kind]), v.type_name
        assert EXPECTED_TYPE_NAME[kind] in repr(v)
    elif kind in ("dict_subclass", "defaultdict"):
        assert isinstance(v, values.MapSnapshot), type(v)
        assert v.type_name.endswith(EXPECTED_TYPE_NAME[kind]), v.type_name
        assert EXPECTED_TYPE_NAME[kind] in repr(v)
        if kind == "defaultdict":
            assert type(v["a"]) is list
    elif kind == "nested":
        assert type(v) is list and [type(d) for d in v] == [dict, dict]
    elif kind == "tuple_of_list":
        assert type(v) is tuple and type(v[1]) is list
    else:
        assert type(v) is {"list": list, "dict": dict, "set": set}[kind], type(v)


@pytest.mark.parametrize("kind,site,frontend", _shape_params())
def test_a_value_derefs_as_a_builtin_copy_or_a_snapshot(kinds, kind, site, frontend):
    v = kinds[frontend][kind, "caller"][site]
    if site == "expression" and kind in OBJECT_KINDS:
        # An expression's object that the recording holds a state of (here `produce`'s return
        # and `observe`'s argument) is a reference to that state, one object level less than an
        # argument (encode.rs `encode_expr`): values.Earlier, read through to the snapshot.
        assert isinstance(v, values.Earlier), type(v)
        assert v.idx is not None and v.obj_id == v.value.obj_id
        v = v.value
    check_shape(kind, v)


SCALARS = ["pen", 7, 1.25, b"\x00ab", 2**70, None, True]


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_scalars_deref_as_themselves(fronts, frontend):
    front = fronts[frontend]["kinds.py"]
    ((tid, call, args),) = front.calls("scalars")
    assert args == SCALARS and [type(a) for a in args] == [type(a) for a in SCALARS]
    returned = front.result_of(tid, call)
    assert returned == tuple(SCALARS) and type(returned) is tuple
    ((tid, call, _),) = front.calls("main")
    got = front.result_of(tid, call)
    assert got == {"scenarios": 52, "property_calls": 0} and type(got) is dict


def test_recording_and_querying_never_call_a_property(live_runs, kinds):
    """PropItem.price counts its calls: the recorder must read the object's storage, not call
    its descriptors, and neither may a query of its values (deref, preview)."""
    _, mods = live_runs
    mod, result = mods["kinds.py"]
    assert result["property_calls"] == 0
    for name in ("live", "file"):
        for how in HOWS:
            for site in SITES:
                v = kinds[name]["property", how][site]
                values.pformat(v)
                repr(v)
    assert mod.PROPERTY_CALLS[0] == 0


# --- the CLI: `squall query FILE calls FN` ----------------------------------------------------------

_CALL_LINE = re.compile(r"\.(observe|produce)\(kind='(\w+)', how='(\w+)', v=(.*)\) -> (.*)$")


@pytest.fixture(scope="module")
def kinds_cli(saved):
    path, _ = saved["kinds.py"]
    previews: Dict[Tuple[str, str, str], str] = {}
    for fn in ("observe", "produce"):
        text = query_text(path, "calls", fn, "--limit", "1000", "--max-bytes", "0")
        for line in text.splitlines()[1:]:
            m = _CALL_LINE.search(line)
            assert m, line
            name, kind, how, arg, ret = m.groups()
            previews["argument" if name == "observe" else "return", kind, how] = arg if name == "observe" else ret
    assert len(previews) == 2 * len(KINDS) * len(HOWS)
    return previews


def preview_numbers(text: str) -> List[str]:
    """The numbers a preview shows, without identities (``#12``) and addresses (``0x7f...``)."""
    text = re.sub(r"#\d+", "", re.sub(r"0x[0-9a-fA-F]+", "", text))
    return re.findall(r"\d+(?:\.\d+)?", text)


def _is_subsequence(part: List[str], whole: List[str]) -> bool:
    it = iter(whole)
    return all(x in it for x in part)


@pytest.mark.parametrize("kind,how,site,frontend", _kinds_params(frontends=("cli",), sites=("argument", "return")))
def test_cli_calls_preview_shows_the_state_at_the_entry(kinds_cli, kind, how, site, frontend):
    preview = kinds_cli[site, kind, how]
    numbers = preview_numbers(preview)
    assert not any(n in numbers for n in LATER_NUMBERS), preview
    expected = OLD_NUMBERS[kind]
    if kind == "set":
        assert sorted(n for n in numbers if n in expected) == expected, preview
    else:
        assert _is_subsequence(expected, numbers), preview


# --- retry_mutation.py: an argument changed in place by the function, called twice -------------------


def _price(v: Any) -> Any:
    return v.price


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_retried_call_arguments_show_the_price_at_each_call(fronts, frontend):
    front = fronts[frontend]["retry_mutation.py"]
    charges = front.calls("charge")
    assert [_price(args[0]) for _, _, args in charges] == [10, 20]
    # and the whole call: checkout got the item before either charge
    ((_, _, (item,)),) = front.calls("checkout")
    assert _price(item) == 10


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_make_item_return_shows_the_price_it_had_when_returned(fronts, frontend):
    front = fronts[frontend]["retry_mutation.py"]
    ((tid, call, _),) = front.calls("make_item")
    assert _price(front.result_of(tid, call)) == 10


def test_retry_program_ran_as_without_squall(fronts, saved):
    plain = _run([sys.executable, PROGRAMS / "retry_mutation.py"])
    assert plain.stdout == "charged 40, item price now 40, attempts [20, 40]\n"
    assert saved["retry_mutation.py"][1] == plain.stdout
    assert fronts["live"]["retry_mutation.py"].result == plain.stdout.strip()


def test_cli_shows_the_price_at_each_retried_call(saved):
    path, _ = saved["retry_mutation.py"]
    lines = query_text(path, "calls", "charge").splitlines()[1:]
    assert len(lines) == 2
    first = preview_numbers(lines[0].split("charge(", 1)[1].split(") ", 1)[0])
    second = preview_numbers(lines[1].split("charge(", 1)[1].split(") ", 1)[0])
    assert "10" in first and "20" not in first and "40" not in first, lines[0]
    assert "20" in second and "40" not in second, lines[1]
    (made,) = query_text(path, "calls", "make_item").splitlines()[1:]
    returned = made.split(" -> ", 1)[1]
    assert preview_numbers(returned) == ["10"], made


# --- identity.py ---------------------------------------------------------------------------------


def observed(front: Front) -> List[Tuple[str, Any]]:
    return [(args[0], args[1]) for _, _, args in front.calls("observe")]


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_one_object_recorded_twice_has_one_identity(fronts, frontend):
    seen = dict(observed(fronts[frontend]["identity.py"]))
    first, second = seen["a-first"], seen["a-second"]
    assert isinstance(first.obj_id, int) and first.obj_id == second.obj_id
    # the same identity, each entry with its own state
    assert (first.price, second.price) == (1.5, 2.5)


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_two_equal_objects_have_two_identities(fronts, frontend):
    seen = dict(observed(fronts[frontend]["identity.py"]))
    b, c = seen["b"], seen["c"]
    assert (b.name, b.price) == (c.name, c.price) == ("twin", 1.5)
    assert isinstance(b.obj_id, int) and isinstance(c.obj_id, int)
    assert b.obj_id != c.obj_id


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_an_object_at_a_freed_objects_address_is_a_new_identity(fronts, frontend):
    front = fronts[frontend]["identity.py"]
    assert "'address reused': True" in str(front.result), front.result
    seen = observed(front)
    tags = [t for t, _ in seen]
    y_at = tags.index("y")
    x = [v for t, v in seen[:y_at] if t == "x"][-1]
    y = seen[y_at][1]
    assert (x.name, y.name) == ("first", "second")
    assert x.obj_id != y.obj_id


def test_cli_previews_show_each_objects_identity(saved):
    path, _ = saved["identity.py"]
    rec = squall.load(path)
    ids = {}
    for tid in rec.all_flows()[0]:
        for e in rec.get_referenced_maps_timeline(0, tid):
            if e["type"] == "fn-call" and e["fn_name"] == "observe":
                tag, v = rec.deref_val_id(e["fn_args_ref"])
                ids.setdefault(tag, v.obj_id)
    lines = query_text(path, "calls", "observe", "--limit", "100").splitlines()[1:]
    by_tag = {}
    for line in lines:
        m = re.search(r"observe\(tag='([\w-]+)', v=(.*)\) -> ", line)
        assert m, line
        by_tag.setdefault(m.group(1), m.group(2))
    for tag in ("a-first", "a-second", "b", "c"):
        assert re.search(rf"#{ids[tag]}\b", by_tag[tag]), (tag, ids[tag], by_tag[tag])
    assert not re.search(rf"#{ids['c']}\b", by_tag["b"])


# --- big containers recorded again (fingerprints) ------------------------------------------------


def _agrees(recorded: Any, expected: Any, where: str) -> None:
    """``recorded`` (a deref) is ``expected`` as far as the snapshot budget kept it: a
    ``Truncated`` marker stands for the items left out and says how many there were."""
    if isinstance(recorded, values.Truncated):
        assert recorded.length == len(expected), (where, recorded, expected)
        return
    if isinstance(expected, (list, tuple)):
        assert type(recorded) is type(expected), (where, type(recorded))
        items = [x for x in recorded if not isinstance(x, values.Truncated)]
        cut = [x for x in recorded if isinstance(x, values.Truncated)]
        if cut:
            assert cut[0].length == len(expected) and len(items) + cut[0].omitted == len(expected), (where, cut[0])
        else:
            assert len(items) == len(expected), (where, len(items), len(expected))
        for i, (a, b) in enumerate(zip(items, expected)):
            _agrees(a, b, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        assert type(recorded) is dict and list(recorded.items()) == list(expected.items()), (where, recorded)
        return
    if isinstance(expected, (set, frozenset)):
        items = {x for x in recorded if not isinstance(x, values.Truncated)}
        cut = [x for x in recorded if isinstance(x, values.Truncated)]
        if cut:
            assert items <= set(expected) and len(items) + cut[0].omitted == len(expected), (where, cut[0])
        else:
            assert items == set(expected), (where, sorted(items ^ set(expected)))
        return
    if type(expected).__name__ == "array":
        assert isinstance(recorded, values.ObjectSnapshot) and recorded.type_name == "array.array", (where, recorded)
        return
    assert recorded == expected and type(recorded) is type(expected), (where, recorded, expected)


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_big_containers_recorded_again_show_each_change(tmp_path, frontend):
    """tests/value_programs/big_containers.py: lists, sets, frozensets, tuples and dicts of 16
    items or more recorded again unchanged, changed in place (by Python and C code), changed to an equal
    value, grown, past max_length and past max_items: each record shows the state at its call."""
    if frontend == "live":
        api.stop_recording()
        api.clear_recordings()
        api.set_flow(0)
        api.start_recording(install_hook=False)
        try:
            mod, seen = run_live("big_containers.py")
        finally:
            api.stop_recording()
        front = Front(indexes, values.deref_val_id, mod.__name__, seen)
    else:
        out = tmp_path / "big.sqrec"
        record_to_file("big_containers.py", out)
        rec = squall.load(out)
        front = Front(rec, rec.deref_val_id, "__main__", None)
        mod, seen = run_live("big_containers.py")  # the program's own copies, run again
    calls = [args for _, _, args in front.calls("observe")]
    assert [a[0] for a in calls[: len(seen)]] == [tag for tag, _ in seen]
    for n, ((tag, expected), args) in enumerate(zip(seen, calls)):
        _agrees(args[1], expected, f"call {n} ({tag})")
    cycles = calls[len(seen) :]
    assert [c[0] for c in cycles] == ["cycle", "cycle"]
    assert cycles[0][1][:20] == cycles[1][1][:20] == list(range(20))
    if frontend == "live":
        api.clear_recordings()
    sys.modules.pop(mod.__name__, None)
