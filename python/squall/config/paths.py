"""Where a module's file lives: the standard library, site-packages, squall itself, or the user's
code; and dotted-prefix matching."""

import os
import site
import sys
import sysconfig
from typing import Dict, Iterable, List, Optional, Tuple


def _norm(p: str) -> str:
    return os.path.normcase(os.path.realpath(p))


def _under(path: str, roots: Iterable[str]) -> Optional[str]:
    for r in roots:
        if path == r or path.startswith(r.rstrip(os.sep) + os.sep):
            return r
    return None


def _sysconfig_paths() -> Dict[str, str]:
    """``sysconfig.get_paths()``; on 3.13.0 it can raise AttributeError('abi_thread') when the
    config vars were not computed yet, so those are passed explicitly then."""
    try:
        return sysconfig.get_paths()
    except Exception:  # noqa: BLE001
        try:
            return sysconfig.get_paths(vars=dict(sysconfig.get_config_vars()))
        except Exception:  # noqa: BLE001
            return {}


def _stdlib_roots() -> List[str]:
    roots = set()
    for key in ("stdlib", "platstdlib"):
        p = _sysconfig_paths().get(key)
        if p:
            roots.add(_norm(p))
    for base in {sys.base_prefix, sys.base_exec_prefix}:
        v = dict(sysconfig.get_config_vars())  # 3.13 needs e.g. abi_thread in the vars
        v.update(installed_base=base, base=base)
        v.setdefault("abi_thread", "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
        try:
            p = sysconfig.get_path("stdlib", vars=v)
        except Exception:  # noqa: BLE001 - an odd sysconfig: the roots above still hold
            p = None
        if p:
            roots.add(_norm(p))
    return sorted(roots, key=len, reverse=True)


def _site_roots() -> List[str]:
    roots = set()
    try:
        roots.update(site.getsitepackages())
    except Exception:  # some embedded/virtualenv site modules lack it
        pass
    try:
        roots.add(site.getusersitepackages())
    except Exception:
        pass
    for key in ("purelib", "platlib"):
        p = _sysconfig_paths().get(key)
        if p:
            roots.add(p)
    return sorted({_norm(r) for r in roots if r}, key=len, reverse=True)


def _squall_root() -> str:
    return _norm(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # squall/, above config/


def classify_path(origin: Optional[str]) -> Tuple[str, Optional[str]]:
    """("site-packages" | "stdlib" | "squall" | "user", root) for a module's file."""
    if not origin:
        return "user", None
    p = _norm(origin)
    r = _under(p, [_squall_root()])
    if r:
        return "squall", r
    r = _under(p, _site_roots())
    if r:
        return "site-packages", r
    parts = p.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return "site-packages", None
    r = _under(p, _stdlib_roots())
    if r:
        return "stdlib", r
    return "user", None


def _prefix_match(name: str, prefixes: Iterable[str]) -> Optional[str]:
    for pre in prefixes:
        pre = pre.strip().rstrip(".")
        if pre and (name == pre or name.startswith(pre + ".")):
            return pre
    return None
