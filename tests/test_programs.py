"""The program corpus: every ``tests/programs/*.py`` is run

1. with plain ``python`` and with ``squall run --no-summary``: stdout, stderr and the exit code
   must be identical (addresses ``0x...`` normalised);
2. under squall in a recording subprocess (``_record_program.py``) that renders every thread's
   call tree (``squall._render.render_flow``); the rendering, with addresses and the programs'
   directory normalised, must equal ``tests/programs/expected/<name>.txt``.

Adding a case: drop a program in tests/programs/, run
``SQUALL_UPDATE_SNAPSHOTS=1 pytest tests/test_programs.py -k <name>``, then READ the snapshot and
check that it shows what the program really did before committing it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
EXPECTED = PROGRAMS / "expected"
RECORDER = HERE / "_record_program.py"
PYTHON = sys.executable
SQUALL = Path(sys.executable).parent / "squall"
UPDATE = os.environ.get("SQUALL_UPDATE_SNAPSHOTS") == "1"

CASES = sorted(p.stem for p in PROGRAMS.glob("*.py"))

_ADDR = re.compile(r"0x[0-9a-fA-F]+")


def _env() -> dict:
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONSTARTUP", "SQUALL_INCLUDE", "SQUALL_SKIP", "SQUALL_SKIP_REGEX", "SQUALL_MODE"):
        env.pop(k, None)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def _run(cmd: list) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=str(PROGRAMS), env=_env(), capture_output=True, text=True, timeout=60)


def _addr(text: str) -> str:
    return _ADDR.sub("0x?", text)


# What 3.13 adds to every class body's namespace.
_CLASS_BODY_EXTRAS = re.compile(r"'__firstlineno__': \d+, |'__static_attributes__': \([^)]*\), ")


def _normalise_tree(text: str) -> str:
    text = _CLASS_BODY_EXTRAS.sub("", _addr(text).replace(str(PROGRAMS) + os.sep, "<programs>/"))
    return _renumber_ids(text)


def _renumber_ids(text: str) -> str:
    """Recorded identities (`Node#12`) numbered by first appearance: the numbers depend on what
    the Python version allocates and records before, not on the program."""
    seen: dict = {}
    return re.sub(r"(?<=[A-Za-z_>])#(\d+)", lambda m: "#" + str(seen.setdefault(m.group(1), len(seen) + 1)), text)


def test_corpus_is_big_enough():
    assert len(CASES) >= 20, CASES


@pytest.mark.skipif(not SQUALL.exists(), reason="the squall command is not installed")
@pytest.mark.parametrize("name", CASES)
def test_same_as_python(name):
    prog = f"{name}.py"
    py = _run([PYTHON, prog])
    sq = _run([str(SQUALL), "run", "--no-summary", prog])
    assert sq.returncode == py.returncode, (py.returncode, sq.returncode, sq.stderr)
    assert sq.stdout == py.stdout
    assert _addr(sq.stderr) == _addr(py.stderr)


@pytest.mark.parametrize("name", CASES)
def test_call_tree(name):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tree.txt"
        r = _run([PYTHON, str(RECORDER), f"{name}.py", str(out)])
        assert out.exists(), f"the recorder wrote nothing (exit {r.returncode}):\n{r.stderr}"
        tree = _normalise_tree(out.read_text(encoding="utf-8"))
    snap = EXPECTED / f"{name}.txt"
    if UPDATE:
        EXPECTED.mkdir(exist_ok=True)
        snap.write_text(tree, encoding="utf-8")
        return
    assert snap.exists(), f"no snapshot {snap}: run with SQUALL_UPDATE_SNAPSHOTS=1 and check it"
    assert tree == snap.read_text(encoding="utf-8")


def test_every_snapshot_has_a_program():
    stale = sorted(p.stem for p in EXPECTED.glob("*.txt") if p.stem not in CASES)
    assert not stale, f"snapshots without a program: {stale}"


# --- beyond the corpus ------------------------------------------------------------------------


def _record_source(tmp_path: Path, source: str) -> str:
    prog = tmp_path / "prog.py"
    prog.write_text(source, encoding="utf-8")
    out = tmp_path / "tree.txt"
    r = subprocess.run(
        [PYTHON, str(RECORDER), str(prog), str(out)],
        cwd=str(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.exists(), r.stderr
    return _addr(out.read_text(encoding="utf-8"))


ASYNC_FOR = """
import asyncio

async def ticks(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i

def mark(x):
    return x

async def other():
    for i in range(2):
        mark(i)
        await asyncio.sleep(0)

async def consumer_for():
    out = []
    async for t in ticks(2):
        out.append(t)
    return out

async def main():
    return await asyncio.gather(consumer_for(), other())

print(asyncio.run(main()))
"""


def test_async_for_suspends(tmp_path):
    # While consumer_for waits in `async for`, the other task's calls are not its children
    # (crates/squall_python/src/recorder/awaiting.rs).
    tree = _record_source(tmp_path, ASYNC_FOR)
    lines = tree.splitlines()
    # other() runs in its own task: each of its segments is a root of the thread's tree
    assert all(ln.startswith("  __main__.other") for ln in lines if "__main__.other" in ln), tree
    # ticks' `__anext__()` runs ticks inside consumer_for's segment, which ends when what ticks
    # awaits (asyncio.sleep's coroutine) passes out through it
    first = lines.index(next(ln for ln in lines if ln.startswith("  __main__.consumer_for()")))
    passed = lines[first].split(" -> await ")[1]
    assert passed.startswith("<coroutine#"), tree
    assert lines[first + 1] == f"    __main__.ticks(n=2) -> await {passed}", tree
    # ticks runs inside consumer_for's segments (crates/squall_python/src/recorder/delegation.rs)
    end = lines.index("  __main__.consumer_for resumed(None) -> [0, 1]")
    assert lines[end + 1 : end + 3] == [
        "    __main__.ticks resumed(None) -> yield 1",
        "    __main__.ticks resumed(None) -> None",
    ], tree


ASYNC_PROTOCOLS = HERE / "async_protocols.py"


@pytest.mark.skipif(not SQUALL.exists(), reason="the squall command is not installed")
@pytest.mark.parametrize("mode", ["full", "calls"])
def test_async_protocols_same_as_python(mode):
    # `async for` / `async with` / async comprehensions at their edges (errors and their messages,
    # chaining, tracebacks, send/throw/close by hand, cancellation): the same output with and
    # without squall. In calls mode also the finalization order of async generators left by
    # `break` (full mode records the generator itself, which keeps it alive: see the program).
    env = _env()
    if mode == "calls":
        env["ASYNC_PROTOCOLS_FINALIZATION"] = "1"
    env_sq = dict(env, SQUALL_MODE=mode)
    kw = dict(cwd=str(HERE), capture_output=True, text=True, timeout=120)
    py = subprocess.run([PYTHON, str(ASYNC_PROTOCOLS)], env=env, **kw)
    sq = subprocess.run([str(SQUALL), "run", "--no-summary", str(ASYNC_PROTOCOLS)], env=env_sq, **kw)
    assert py.returncode == 0, py.stderr
    assert sq.returncode == py.returncode, sq.stderr
    assert "Traceback" in py.stdout and "squall" not in sq.stdout
    assert _addr(sq.stdout) == _addr(py.stdout)
    assert _addr(sq.stderr) == _addr(py.stderr)


KEEPS_ALIVE = """
import gc


class Base:
    pass


def describe(cls):
    return cls.__name__


def main():
    class Tmp(Base):
        pass

    describe(Tmp)


main()
gc.collect()
print(Base.__subclasses__())
"""


@pytest.mark.skipif(not SQUALL.exists(), reason="the squall command is not installed")
def test_recorded_objects_are_not_kept_alive(tmp_path):
    # Classes are recorded through weak references (squall.values.ClassRef): a class passed as an
    # argument must not stay in __subclasses__ after it is dropped (attrs 24.2.0:
    # test_no_references_to_original differed for that reason).
    prog = tmp_path / "prog.py"
    prog.write_text(KEEPS_ALIVE, encoding="utf-8")
    py = subprocess.run([PYTHON, str(prog)], env=_env(), capture_output=True, text=True, timeout=60)
    sq = subprocess.run(
        [str(SQUALL), "run", "--no-summary", str(prog)], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert py.stdout == "[]\n"
    assert sq.stdout == py.stdout


SEQUENTIAL_THREADS = """
import threading

def work(label):
    return label

idents = []
for name in ("first", "second"):
    t = threading.Thread(target=work, args=(name,), name=name)
    t.start()
    idents.append(t.ident)
    t.join()
print("reused" if idents[0] == idents[1] else "distinct")
"""


def test_sequential_threads_get_their_own_timelines(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(SEQUENTIAL_THREADS, encoding="utf-8")
    out = tmp_path / "tree.txt"
    r = subprocess.run(
        [PYTHON, str(RECORDER), str(prog), str(out)],
        cwd=str(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Whether or not the OS reused the first thread's ident (`r.stdout`), each thread must have
    # its own timeline.
    assert r.returncode == 0, r.stderr
    assert out.read_text(encoding="utf-8") == (
        "thread first:\n"
        "  __main__.work(label='first') -> 'first'\n"
        "thread second:\n"
        "  __main__.work(label='second') -> 'second'\n"
    )


RENDER = """
import threading
from squall import _render, indexes

def inner(d):
    return _render.render_call_tree(0, indexes.all_threads()[0][1], print_level=2, print_length=3)

def outer():
    return inner({"k": [[1, 2], [3]], "big": dict.fromkeys(range(2000))})

print(outer())
"""


def test_render_running_calls_depth_and_cut_dicts(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(RENDER, encoding="utf-8")
    r = subprocess.run(
        [str(SQUALL), "run", "--no-summary", str(prog)],
        cwd=str(tmp_path),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "__main__.outer() -> <no exit recorded>",
        "  __main__.inner(d={'k': [[...], [...]], 'big': {0: None, 1: None, 2: None, ..., "
        "<...1900 more of dict[2000]: cut by squall's snapshot budget>}}) -> <no exit recorded>",
    ]
