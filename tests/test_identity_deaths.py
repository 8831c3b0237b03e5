"""The recorder learns of the deaths of the objects it gave identities to (``deaths.rs``), for
every type whose deallocation it can watch, so that a later object at the same address is a new
identity; and watching must not change how CPython frees (its trashcan for deep structures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parent / "identity_programs"
SQUALL = Path(sys.executable).parent / "squall"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQUALL_")}
    return subprocess.run([*args], cwd=str(PROGRAMS), env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def reuse() -> dict:
    r = _run(str(SQUALL), "run", "-q", "--no-save", "reuse.py")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


KINDS = [
    "list",
    "dict",
    "set",
    "list subclass",
    "object",
    "generator",
    "coroutine",
    "exception",
    "function",
    "bound method",
    "deque",
]


@pytest.mark.parametrize("kind", KINDS)
def test_an_object_at_a_freed_ones_address_is_a_new_identity(reuse, kind):
    assert reuse[kind]["reused"], f"CPython did not reuse a {kind}'s address here: {reuse}"
    assert reuse[kind]["identified"], f"a recorded {kind} got no identity"
    assert not reuse[kind]["merged"], f"the recorder took a new {kind} for the freed one"


def test_deep_structures_free_as_without_squall():
    plain = _run(sys.executable, "deep_free.py")
    recorded = _run(str(SQUALL), "run", "-q", "--no-save", "deep_free.py")
    assert plain.returncode == 0, plain.stderr
    assert (recorded.returncode, recorded.stdout) == (plain.returncode, plain.stdout), recorded.stderr[-2000:]
