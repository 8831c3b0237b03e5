"""Generators and coroutines run by `yield from` / `await` nest under their delegator in the
call tree (crates/squall_python/src/recorder/delegation.rs), and the program still does what it did.

The rewriter records `yield from X` as the delegator's suspension before it delegates; without
the delegation notes the delegate's call and resumes hung off whoever resumed the delegator, so
a recursive generator showed every level flat under its consumer.
"""

import asyncio
import json
import re
import subprocess
import sys
import threading
import traceback
import urllib.request
from pathlib import Path

import pytest
from squall import api, indexes, values
from squall._instrument import rewrite

WALK = """
def walk(node, depth=0):
    label, children = node
    got = yield (depth, label)
    if got is not None:
        label = got
    for child in children:
        yield from walk(child, depth + 1)
    return label

def consume(tree):
    return list(walk(tree))
"""

TREE = ("a", [("b", [("c", [])]), ("d", [])])


@pytest.fixture
def rec():
    """Instruments a source snippet as module `snippet`, records while the test runs."""
    api.clear_recordings()
    api.set_flow(0)

    def load(source: str) -> dict:
        ns = {"__name__": "snippet"}
        exec(rewrite.compile_instrumented(source, "<snippet>", "snippet"), ns)
        return ns

    api.start_recording(install_hook=False)
    yield load
    api.stop_recording()
    api.clear_recordings()


def plain(source: str) -> dict:
    ns = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    return ns


def timeline():
    return indexes.get_referenced_maps_timeline(0, threading.get_native_id())


def depth_of(call):
    return values.deref_val_id(call["fn_args_ref"])[1]


def chain(entries, idx):
    """The names of the frame at `idx` and its ancestors, innermost first."""
    by_idx = {e["idx"]: e for e in entries}
    names = []
    while idx is not None:
        e = by_idx[idx]
        names.append(e["fn_name"] + (" resumed" if e["resumed"] else ""))
        idx = e["parent_idx"]
    return names


def test_a_recursive_walk_keeps_its_recursion(rec):
    ns = rec(WALK)
    assert ns["consume"](TREE) == [(0, "a"), (1, "b"), (2, "c"), (1, "d")]
    tl = timeline()
    walks = [e for e in tl if e["type"] in ("fn-call", "fn-resume") and e["fn_name"] == "walk"]
    (deepest,) = [e for e in walks if e["type"] == "fn-call" and depth_of(e) == 2]
    assert chain(tl, deepest["idx"]) == ["walk", "walk resumed", "walk resumed", "consume"]
    # the depth-2 walk's resume (it returns) sits under the depth-1 walk's, under depth 0's
    (c_resume,) = [e for e in walks if e["resumed"] and e["idx"] > deepest["idx"] and len(chain(tl, e["idx"])) == 4]
    assert chain(tl, c_resume["idx"]) == ["walk resumed"] * 3 + ["consume"]
    # the call tree the UI and the API walk shows the same nesting
    root = indexes.callstack_root_node(0, threading.get_native_id())
    (consume,) = indexes.callstack_node_childs(root)
    level0 = indexes.callstack_node_childs(consume)
    assert {c["fn_name"] for c in level0} == {"walk"}
    level1 = [k for c in level0 for k in indexes.callstack_node_childs(c)]
    level2 = [k for c in level1 for k in indexes.callstack_node_childs(c)]
    assert [c["idx"] for c in level2 if not c["resumed"]] == [deepest["idx"]]


def test_values_pass_out_through_each_level(rec):
    ns = rec(WALK)
    ns["consume"](TREE)
    tl = timeline()
    by_idx = {e["idx"]: e for e in tl}
    # a segment of the top walk that held the depth-2 call ends yielding that call's value
    c_call = next(e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "walk" and depth_of(e) == 2)
    top = by_idx[by_idx[c_call["parent_idx"]]["parent_idx"]]
    assert values.deref_val_id(by_idx[top["ret_idx"]]["result_ref"]) == (2, "c")
    assert by_idx[top["ret_idx"]]["kind"] == "await"


def test_a_delegate_that_is_not_recorded_leaves_the_delegator_closed(rec):
    helper = plain("def numbers():\n    yield 1\n    yield 2\n")
    ns = rec(
        "def gen(src):\n    yield from src()\n\n"
        "def note(x):\n    return x\n\n"
        "def consume(src):\n    return [note(x) for x in gen(src)]\n"
    )
    assert ns["consume"](helper["numbers"]) == [1, 2]
    tl = timeline()
    notes = [e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "note"]
    assert len(notes) == 2
    for n in notes:
        assert chain(tl, n["idx"])[1:2] != ["gen"] and "gen resumed" not in chain(tl, n["idx"])


def test_awaited_coroutines_nest_under_their_awaiter(rec):
    ns = rec(
        "import asyncio\n"
        "async def leaf(x):\n    await asyncio.sleep(0)\n    return x + 1\n\n"
        "async def mid(x):\n    return await leaf(x) * 2\n\n"
        "async def top():\n    return await mid(1) + await mid(2)\n"
    )
    assert asyncio.run(ns["top"]()) == 10
    tl = timeline()
    for leaf in [e for e in tl if e["type"] in ("fn-call", "fn-resume") and e["fn_name"] == "leaf"]:
        names = [n.split(" ")[0] for n in chain(tl, leaf["idx"])]
        assert names == ["leaf", "mid", "top"], names
    # mid's segment goes on when leaf returns: the await's result is the value at its site
    mid_form = next(e["form_id"] for e in tl if e.get("fn_name") == "mid")
    got = [values.deref_val_id(e["result_ref"]) for e in tl if e["type"] == "expr" and e["form_id"] == mid_form]
    assert got == [2, 3]


def test_async_for_over_a_rewritten_async_generator_nests_it_once(rec):
    """`async for` over an async generator of rewritten code runs the generator's frame inside
    the loop's (its `__anext__()` is a delegate, as `await` of a rewritten coroutine is): each
    level of a recursive async generator is entered once per value. When each level's
    `__anext__()` ended the awaiting frame's segment instead, every level re-opened all its
    ancestors again: depth^2 / 2 resume entries per value (pyperformance's async_generators,
    depth 17: 148 per value)."""
    depth = 12
    ns = rec(
        "async def chain(n):\n"
        "    if n == 0:\n"
        "        yield 0\n"
        "        return\n"
        "    async for v in chain(n - 1):\n"
        "        yield v + 1\n\n"
        "async def top(n):\n"
        "    return [v async for v in chain(n)]\n"
    )
    assert asyncio.run(ns["top"](depth)) == [depth]
    tl = timeline()
    calls = [e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "chain"]
    assert len(calls) == depth + 1
    deepest = max(calls, key=lambda e: len(chain(tl, e["idx"])))
    assert [n.split(" ")[0] for n in chain(tl, deepest["idx"])][: depth + 1] == ["chain"] * (depth + 1)
    resumes = [e for e in tl if e["type"] == "fn-resume" and e["fn_name"] == "chain"]
    assert len(resumes) <= 2 * (depth + 1), len(resumes)


def test_delegates_nest_at_every_await_and_plain_code_objects_are_left_alone(rec):
    """A rewritten delegate's code is found rewritten once, then known by a mark in its code
    object's extra slot (delegation.rs): every later await takes that path and must nest the
    same. A delegate squall did not rewrite is asked each time and its code is not marked."""
    helper = plain("async def outside(x):\n    return x\n")
    size = sys.getsizeof(helper["outside"].__code__)
    ns = rec(
        "async def leaf(x):\n    return x + 1\n\n"
        "async def top(outside):\n"
        "    total = 0\n"
        "    for i in range(5):\n"
        "        total += await leaf(i) + await outside(i)\n"
        "    return total\n"
    )
    assert asyncio.run(ns["top"](helper["outside"])) == 25
    tl = timeline()
    leaves = [e for e in tl if e["type"] == "fn-call" and e["fn_name"] == "leaf"]
    assert len(leaves) == 5
    for leaf in leaves:
        assert [n.split(" ")[0] for n in chain(tl, leaf["idx"])] == ["leaf", "top"]
    assert sys.getsizeof(helper["outside"].__code__) == size


DELEGATION = """
import sys
import traceback

def inner():
    got = yield 1
    try:
        yield got
    except KeyError as e:
        yield "caught " + str(e)
    raise ValueError("inner failed")

def outer():
    try:
        r = yield from inner()
    except ValueError:
        yield [f.name for f in traceback.extract_tb(sys.exc_info()[2])]
    yield "end"

def drive():
    g = outer()
    seen = [next(g), g.send("sent")]
    seen.append(g.gi_yieldfrom.gi_code.co_name)
    seen.append(g.throw(KeyError("k")))
    seen.append(next(g))
    seen.append(next(g))
    g.close()
    seen.append(g.gi_frame is None)
    return seen
"""


def test_send_throw_close_and_tracebacks_through_yield_from_are_unchanged(rec):
    expected = plain(DELEGATION)["drive"]()
    assert rec(DELEGATION)["drive"]() == expected
    assert expected == [1, "sent", "inner", "caught 'k'", ["outer", "inner"], "end", True]


def test_an_exception_from_a_recursive_delegate_keeps_the_traceback(rec):
    src = (
        "def failing(n):\n    if n == 0:\n        raise ValueError('bottom')\n"
        "    yield n\n    yield from failing(n - 1)\n"
    )

    def run(ns):
        try:
            list(ns["failing"](3))
        except ValueError:
            return [f.name for f in traceback.extract_tb(sys.exc_info()[2])]

    assert run(rec(src)) == run(plain(src)) == ["run"] + ["failing"] * 4


def test_the_ui_call_tree_nests_a_recursive_walk(tmp_path):
    # `/api/children` (the UI's call tree) over a recording file of the corpus program
    bin_dir = Path(sys.executable).parent
    program = Path(__file__).resolve().parent / "programs" / "yield_from_recursive.py"
    rec_file = tmp_path / "walk.sqrec"
    r = subprocess.run(
        [str(bin_dir / "squall"), "run", "-q", "-o", str(rec_file), str(program)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(program.parent),
    )
    assert r.returncode == 0, r.stderr
    p = subprocess.Popen(
        [str(bin_dir / "squall"), "open", "--no-browser", str(rec_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        m = re.match(r"squall UI: (http://127\.0\.0\.1:\d+/)\?token=(\w+)", p.stdout.readline())
        assert m

        def children(call="root"):
            url = f"{m.group(1)}api/children?tl=0&call={call}&limit=1000&token={m.group(2)}"
            with urllib.request.urlopen(url, timeout=30) as resp:
                return json.load(resp)["items"]

        # how deep each walk call sits among the walk rows of the tree: the tree has three levels
        # (a; b, d; c), flat before the delegation notes
        levels = {}
        stack = [(n, 0) for n in children() if n["fn"].endswith("walk")]
        while stack:
            node, level = stack.pop()
            if not node["resumed"]:
                levels[node["idx"]] = level
            if node["has_children"]:
                stack.extend((k, level + 1) for k in children(node["idx"]) if k["fn"].endswith("walk"))
        assert sorted(set(levels.values())) == [0, 1, 2], levels
    finally:
        p.terminate()
        p.wait(timeout=30)
