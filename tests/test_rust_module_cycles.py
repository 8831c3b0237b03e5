"""The modules of ``crates/squall_python/src`` form no dependency cycle, and its layers depend
downward only: a module that names ``crate::LAYER::X`` (or ``crate::X``, a module of its own
under ``src`` like ``gil_cell``) depends on ``X``. A
module is a file directly under ``src`` or under a layer folder (``recorder/``,
``persistence/``, ``bindings/``); the files of a module's own folder (``recorder/encode/``) count
as that module. Tarjan's strongly connected components over that graph; any cycle fails here.
(The last one, ``encode`` <-> ``engine``, was broken: the engine hands the encoder what it needs,
``engine::capture``.) The layers, lowest first, are ``recorder`` (runs in the program's threads),
``persistence`` (the file sink), ``bindings`` (the Python surface): a module names none of a
higher layer."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "squall_python" / "src"
# Lowest first.
LAYERS = ["recorder", "persistence", "bindings"]


def _module(path: Path, src: Path) -> tuple:
    """``(layer or None, module)`` of a source file."""
    parts = path.relative_to(src).parts
    if parts[0] in LAYERS and len(parts) > 1:
        return parts[0], parts[1].removesuffix(".rs")
    return None, parts[0].removesuffix(".rs")


def _graph(src: Path) -> dict:
    deps: dict = {}
    for path in src.rglob("*.rs"):
        layer, top = _module(path, src)
        if top in ("lib", *LAYERS):
            continue
        text = re.sub(r"//[^\n]*", "", path.read_text())
        text = re.sub(r"\bcrate::(?:%s)::" % "|".join(LAYERS), "crate::", text)
        named = set(re.findall(r"\bcrate::(\w+)", text))
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            named |= set(re.findall(r"(?:^|,)\s*(\w+)", group))
        deps.setdefault(top, set()).update(n for n in named if n != top)
    return {m: {d for d in ds if d in deps} for m, ds in deps.items()}


def _layers(src: Path) -> dict:
    """Each module's layer (None: a module of its own under ``src``, like ``gil_cell``)."""
    return {m: layer for layer, m in (_module(p, src) for p in src.rglob("*.rs"))}


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
    assert "engine" in deps["sink"] and "query" in deps["file"]
    layers = _layers(SRC)
    assert (layers["engine"], layers["sink"], layers["query"], layers["gil_cell"]) == (
        "recorder",
        "persistence",
        "bindings",
        None,
    )


def test_a_cycle_is_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_cycle():
    assert _cycles(_graph(SRC)) == []


def _upward(deps: dict, layers: dict) -> list:
    """``(module, dependency)`` pairs where a module names one of a higher layer."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return sorted(
        (m, d)
        for m, ds in deps.items()
        for d in ds
        if layers[m] is not None and layers[d] is not None and rank[layers[d]] > rank[layers[m]]
    )


def test_an_upward_dependency_is_found():
    deps = {"engine": {"query", "gil_cell"}, "query": {"engine"}, "sink": {"engine"}, "gil_cell": set()}
    layers = {"engine": "recorder", "query": "bindings", "sink": "persistence", "gil_cell": None}
    assert _upward(deps, layers) == [("engine", "query")]


def test_the_layers_depend_downward_only():
    assert _upward(_graph(SRC), _layers(SRC)) == [], "a module names a module of a higher layer"
