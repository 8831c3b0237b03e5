"""The `_engine.pyi` stub names exactly what the built engine exports; `py.typed` ships."""

import ast
from pathlib import Path

import squall
from squall import _engine

PKG = Path(squall.__file__).parent


def test_engine_stub_matches_the_engine():
    tree = ast.parse((PKG / "_engine.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    exported = {n for n in dir(_engine) if not n.startswith("_")}
    assert exported - stubbed == set(), "exported but not in _engine.pyi"
    assert stubbed - exported == set(), "in _engine.pyi but not exported"


def test_py_typed_ships():
    assert (PKG / "py.typed").exists()
