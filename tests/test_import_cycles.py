"""No module of the ``squall`` package imports, directly or through others, a module that imports
it back: imports inside functions count too (a lazy import hides a cycle, it does not remove it).
The graph is read from the source with ``ast``; ``from pkg import name`` is an edge to the
submodule ``pkg.name`` when there is one, else to ``pkg`` itself."""

import ast
import pathlib
import textwrap
from typing import Dict, List, Set

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "python" / "squall"


def _modules(root: pathlib.Path) -> Dict[str, pathlib.Path]:
    out = {}
    for p in root.rglob("*.py"):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_module(name: str, mods: Dict[str, pathlib.Path], root: pathlib.Path) -> bool:
    # extension modules (squall._engine) are known by their stub
    stub = root.parent.joinpath(*name.split(".")).with_suffix(".pyi")
    return name in mods or stub.exists()


def import_graph(root: pathlib.Path) -> Dict[str, Set[str]]:
    mods = _modules(root)
    top = root.name
    graph: Dict[str, Set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        deps: Set[str] = set()
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(n, ast.Import):
                deps.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = here[: len(here) - (n.level - 1)]
                    m = ".".join(base + ([n.module] if n.module else []))
                else:
                    m = n.module or ""
                for a in n.names:
                    sub = m + "." + a.name
                    deps.add(sub if _is_module(sub, mods, root) else m)
        graph[name] = {d for d in deps if d in mods and d != name and d.split(".")[0] == top}
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


def _explain(graph: Dict[str, Set[str]], comp: List[str]) -> str:
    return "\n".join(f"  {m} imports {sorted(graph[m] & set(comp))}" for m in comp)


def test_the_squall_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "squall._instrument.rewrite.full" in graph and "squall.config" in graph  # the walk found the tree
    found = cycles(graph)
    assert not found, "import cycles in python/squall:\n" + "\n\n".join(_explain(graph, c) for c in found)


def test_the_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        textwrap.dedent("""
        def later():
            from .. import c
    """)
    )
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from pkg import a\n")  # imports into the cycle, not part of it
    graph = import_graph(pkg)
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
