"""The modules of ``crates/squall_python/src`` form no dependency cycle: a module that names
``crate::X`` depends on ``X`` (its top-level module; a folder's files count as the folder's
module). Tarjan's strongly connected components over that graph; any cycle fails here. (The
last one, ``encode`` <-> ``engine``, was broken: the encoder reads the engine through the
``Settings`` / ``Target`` traits the engine implements.)"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "squall_python" / "src"


def _graph(src: Path) -> dict:
    deps: dict = {}
    for path in src.rglob("*.rs"):
        top = path.relative_to(src).parts[0].removesuffix(".rs")
        if top == "lib":
            continue
        text = re.sub(r"//[^\n]*", "", path.read_text())
        named = set(re.findall(r"\bcrate::(\w+)", text))
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            named |= set(re.findall(r"(?:^|,)\s*(\w+)", group))
        deps.setdefault(top, set()).update(n for n in named if n != top)
    return {m: {d for d in ds if d in deps} for m, ds in deps.items()}


def _cycles(deps: dict) -> list:
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: list = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_graph_is_read():
    deps = _graph(SRC)
    assert "identity" in deps["deaths"] and "addr_filter" in deps["identity"]


def test_a_cycle_is_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_cycle():
    assert _cycles(_graph(SRC)) == []
