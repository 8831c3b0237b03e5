"""A cache of instrumented code across runs.

Rewriting and compiling a module is most of what instrumenting costs at import. The cache keeps,
per module, the instrumented code object (``marshal``) with the forms and sites its rewrite
registered. An entry is keyed by the source's hash, the file path, the module name, the mode,
squall's version, the rewriter's own source hash and the Python version
(``importlib.util.MAGIC_NUMBER``).

Form and site ids are baked into instrumented code as constants, so a cached code object is only
valid where the engine would give the same ids: when the engine's next form and site ids equal
the ones the entry was made with. That is the usual case — a program imports its modules in the
same order each run — and the entry's registrations are then replayed, giving exactly those ids.
Otherwise the module is rewritten and the entry replaced.

Location: ``$SQUALL_CACHE_DIR``, else ``$XDG_CACHE_HOME/squall``, else ``~/.cache/squall``.
``SQUALL_CACHE=0`` turns the cache off. A cache that cannot be read or written is skipped
silently: it only ever costs a rewrite.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import tempfile
import types
from typing import Any, Callable, Optional

from squall import _engine

from . import rewrite

_FORMAT = b"squall-code-cache-1"

#: hits / misses / stored in this process (for tests and `engine_stats`-style reporting)
stats = {"hits": 0, "misses": 0, "stored": 0}


def _enabled() -> bool:
    return os.environ.get("SQUALL_CACHE", "1") not in ("0", "false", "no", "off")


def cache_dir() -> str:
    explicit = os.environ.get("SQUALL_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "squall")


_fingerprint: Optional[bytes] = None


def _instrumenter_fingerprint() -> bytes:
    """The rewriter's own source (every file of the ``rewrite`` package): a squall whose rewriter
    changed (same version number, say in development) must not reuse code rewritten by the old one."""
    global _fingerprint
    if _fingerprint is None:
        _fingerprint = _sources_digest(os.path.dirname(os.path.abspath(rewrite.__file__)))
    return _fingerprint


def _sources_digest(directory: str) -> bytes:
    h = hashlib.sha256()
    try:
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py"):
                with open(os.path.join(directory, name), "rb") as f:
                    data = f.read()
                for part in (name.encode(), data):
                    h.update(len(part).to_bytes(8, "little"))
                    h.update(part)
    except OSError:
        return b"unknown"
    return h.digest()


def _key(source: bytes, path: str, module_name: str, mode: str) -> str:
    from squall._version import __version__

    h = hashlib.sha256()
    for part in (
        _FORMAT,
        importlib.util.MAGIC_NUMBER,
        __version__.encode(),
        _instrumenter_fingerprint(),
        mode.encode(),
        module_name.encode(),
        os.path.abspath(path).encode(),
        source,
    ):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _entry_path(key: str) -> str:
    return os.path.join(cache_dir(), "code", key[:2], key[2:] + ".bin")


def cached_or_instrument(
    source: Any, path: str, module_name: str, mode: str, instrument: Callable[[], Optional[types.CodeType]]
) -> Optional[types.CodeType]:
    """The instrumented code for a module: from the cache when an entry fits, else from
    ``instrument()`` (whose result is stored)."""
    if not _enabled():
        return instrument()
    raw = source if isinstance(source, bytes) else str(source).encode("utf-8", "surrogatepass")
    key = _key(raw, path, module_name, mode)
    entry = _entry_path(key)
    start = _engine.next_ids()
    code = _load(entry, start)
    if code is not None:
        stats["hits"] += 1
        return code
    stats["misses"] += 1
    code = instrument()
    if code is not None:
        _store(entry, start, code)
    return code


def _load(entry: str, start: tuple[int, int]) -> Optional[types.CodeType]:
    try:
        with open(entry, "rb") as f:
            blob = f.read()
        first_form, first_site, forms, sites, code = marshal.loads(blob)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if (first_form, first_site) != tuple(start) or not isinstance(code, types.CodeType):
        return None
    for ns, name, file, line, params, kind in forms:
        _engine.register_form(ns, name, file, line, list(params), kind)
    for site in sites:  # (form, kind, line, col, end_line, end_col, symbol, reads)
        _engine.register_site(*site)
    if tuple(_engine.next_ids()) != (first_form + len(forms), first_site + len(sites)):
        return None  # another thread registered meanwhile: the baked ids would be wrong
    return code


def _store(entry: str, start: tuple[int, int], code: types.CodeType) -> None:
    forms, sites = _engine.registrations_since(*start)
    try:
        blob = marshal.dumps((start[0], start[1], forms, sites, code))
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(entry), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, entry)  # readers never see a partial entry
        stats["stored"] += 1
    except (OSError, ValueError):
        pass
